"""Mutant classes of a record that vanishes: the broker skips a record it should have delivered.

`skippable` says whether a record can vanish outside every allowance, `vanish` removes it from a
history (its delivery, acknowledgements, callback offsets and every state-topic write that held it);
the three classes differ in which records they pick and what else they add. Property: no-loss.
"""

from __future__ import annotations

import copy
import random
from typing import Any

from harness.history.schema import Op
from harness.mutants.edit import insert, renumber, where, with_value
from harness.mutants.facts import Facts, facts
from harness.mutants.registry import FINAL, LOSS_KINDS, RESTART, Key, Mutant, mutant_class
from harness.mutants.scan import AckInfo, Delivery

# ------------------------------------------------------------------ which records may vanish


def skippable(f: Facts, key: Key, after_start: bool = False) -> tuple[Delivery, AckInfo] | None:
    """(its delivery, its final acknowledgement) if the record `key` can be made to vanish outside every
    allowance: delivered exactly once, settled by an ACCEPT / REJECT whose result was a success (no
    error, no unknown outcome), by nobody else; not truncated, aborted, deleted, compacted or reset
    (their own allowances); not below where a `latest` share-partition started (`before-latest-start`);
    and `unobserved-acquisition` cannot archive it unseen (`_archivable_unseen`)."""
    ds = f.deliveries.get(key)
    if not ds or len(ds) != 1:
        return None
    d = ds[0]
    rid = d.record["id"]
    if rid in f.excluded_ids or key[:2] in f.excluded_tps or rid not in f.produce_ok or rid not in f.produce_invoke:
        return None
    if sum(1 for dd in ds if dd.record["id"] == rid) != 1:
        return None
    acks = f.acks.get(key, [])
    if not acks or any(a.process != d.process or a.result != "ok" for a in acks) or acks[-1].type not in FINAL:
        return None
    invoke = f.produce_invoke[rid]
    if after_start and invoke < f.first_start:
        return None
    if f.latest and _below_latest_start(f, key):  # produced before or after the first start: the history
        return None  # cannot place it against the share-partition's initialization (`no_loss.before_latest_start`)
    if _archivable_unseen(f, key, invoke):
        return None
    return d, acks[-1]


def _below_latest_start(f: Facts, key: Key) -> bool:
    """No other offset of the partition was delivered, or `key` is below all of them: a latest
    share-partition may have started above it (`before-latest-start`)."""
    others = [o for (t, p, o), dd in f.deliveries.items() if (t, p) == key[:2] and o != key[2]]
    return not others or key[2] < min(others)


def _archivable_unseen(f: Facts, key: Key, invoke: int) -> bool:
    """`unobserved-acquisition` could archive `key` unseen: at least limit sessions ended between its
    produce (op `invoke`) and the first start-offset read past it, and the state topic's writes do not
    prove it was never held (they must list every write from at or below it, and no disruption may
    overlap its time in flight: a leader change or coordinator loss may lose a write)."""
    read = f.first_read_past(key[:2], key[2])
    return read is not None and f.countable_ends(f.ops[invoke].time, *read) >= f.limit \
        and not (f.state_proves_skip(key[:2], key[2])
                 and not f.disrupted(f.ops[invoke].time, read[0], key[:2]))


def _pick_skippable(f: Facts, rng: random.Random, after_start: bool = False) -> tuple[Key, Delivery] | None:
    memo = f"skippable-{after_start}"
    if memo not in f.memo:
        f.memo[memo] = sorted(k for k in f.deliveries if skippable(f, k, after_start) is not None)
    candidates = f.memo[memo]
    if not candidates:
        return None
    key = rng.choice(candidates)
    return key, f.deliveries[key][0]


# ------------------------------------------------------------------ taking a record out


def _strip_ranges(ranges: list, offset: int) -> list:
    """[first, last(, ...)] ranges without `offset` (a range holding it is split)."""
    out = []
    for r in ranges:
        first, last = r[0], r[1]
        if first <= offset <= last:
            if first < offset:
                out.append([first, offset - 1, *r[2:]])
            if offset < last:
                out.append([offset + 1, last, *r[2:]])
        else:
            out.append(list(r))
    return out


def _strip_state(value: dict, tp: tuple, offset: int) -> dict:
    """A share-state read's value in which no write, batch or range of `tp` ever held `offset`."""
    value = copy.deepcopy(value)
    for part in value.get("partitions") or ():
        if (part["topic"], part["partition"]) != tp:
            continue
        part["batches"] = _strip_ranges(part.get("batches") or [], offset)
        for k in ("ever_written", "ever_archived"):
            if k in part:
                part[k] = _strip_ranges(part[k], offset)
        for write in part.get("writes") or ():
            write[3] = _strip_ranges(write[3], offset)
    return value


def vanish(f: Facts, key: Key, d: Delivery) -> list[Op]:
    """The history without the record's delivery, its consumer's acknowledgements of it and the
    callback offsets for it (ops left empty are dropped; commit results stay), and with no state-topic
    write ever holding it."""
    out: list[Op] = []
    for pos, op in enumerate(f.ops):
        v = _without_record(pos, op, key, d)
        if v is None:
            continue
        out.append(op if v is op.value else with_value(op, v))
    return renumber(out)


def _without_record(pos: int, op: Op, key: Key, d: Delivery) -> Any:
    """The op's value with the record `key` taken out (the same object if it does not name it), None
    if nothing is left of the op."""
    v = op.value
    tp = key[:2]
    if pos == d.pos:
        v = copy.deepcopy(v)
        del v["records"][d.j]
        return v if v["records"] else None
    if op.process == d.process and op.f == "acknowledge" and op.type == "ok" and any(
            (r["topic"], r["partition"], r["offset"]) == key for r in v["records"]):
        v = copy.deepcopy(v)
        v["records"] = [r for r in v["records"] if (r["topic"], r["partition"], r["offset"]) != key]
        return v if v["records"] else None
    if op.process == d.process and op.f == "callback" and op.type == "ok" and any(
            (p["topic"], p["partition"]) == tp and key[2] in p["offsets"] for p in v.get("partitions") or ()):
        v = copy.deepcopy(v)
        for p in v["partitions"]:
            if (p["topic"], p["partition"]) == tp:
                p["offsets"] = [o for o in p["offsets"] if o != key[2]]
        v["partitions"] = [p for p in v["partitions"] if p["offsets"]]
        return v if v["partitions"] else None
    if op.f == "share-state" and op.type == "ok" and isinstance(v, dict) and v.get("partitions"):
        return _strip_state(v, tp, key[2])
    return v


# ------------------------------------------------------------------ the mutant classes


@mutant_class("drop-delivery")
def drop_delivery(ops: list[Op], rng: random.Random) -> Mutant | None:
    """The broker skips a record: delivered exactly once and accepted, it vanishes (its poll entry, its
    consumer's acknowledgements and callback offsets for it; state-topic writes never held it).
    Models a share-partition that moves its start offset past a record it never handed out.
    No allowance: the record is not truncated/deleted/aborted/reset; not below where a `latest`
    share-partition began (`before-latest-start`); and `unobserved-acquisition` cannot archive it
    unseen: fewer sessions ended between its produce and the start-offset read past it than the
    delivery limit, or the state topic's writes (from at or below it) show no write ever held it."""
    f = facts(ops)
    found = _pick_skippable(f, rng)
    if found is None:
        return None
    key, d = found
    return Mutant("drop-delivery", vanish(f, key, d), "no-loss", LOSS_KINDS, where(f, d.pos, key, "delivery removed"))


@mutant_class("skip-record-with-old-session-ends")
def skip_record_with_old_session_ends(ops: list[Op], rng: random.Random) -> Mutant | None:
    """drop-delivery, plus `limit` consumer crashes and restarts right before the record's produce.
    Models the same skip in a run whose consumers crashed earlier. Boundary of the
    `unobserved-acquisition` allowance: session ends that happened before the record existed cannot
    have acquired it, so however many there are they must not excuse it."""
    f = facts(ops)
    found = _pick_skippable(f, rng)
    consumers = f.consumers()
    if found is None or not consumers:
        return None
    key, d = found
    invoke = f.produce_invoke[d.record["id"]]
    started = [c for c in consumers if any(s < invoke for s in f.starts[c])]
    if not started:
        return None
    victim = rng.choice(started)
    vanished = vanish(f, key, d)
    # the produce invoke's position is unchanged: everything removed lies after it (poll, acks, callbacks)
    extra = []
    for _ in range(f.limit):
        extra.append(("harness", "info", "crash", {"process": victim}))
        extra.append((victim, "ok", "start", dict(RESTART)))
    mutated = insert(vanished, invoke - 1, extra)
    return Mutant("skip-record-with-old-session-ends", mutated, "no-loss", LOSS_KINDS,
                  where(f, d.pos, key, f"delivery removed; {f.limit} crashes of {victim} before its produce "
                                       f"(op {invoke})"))


@mutant_class("latest-skip-after-start")
def latest_skip_after_start(ops: list[Op], rng: random.Random) -> Mutant | None:
    """With share.auto.offset.reset=latest, drop-delivery of a record produced after the first consumer
    started, above the lowest offset its share-partition delivered. Models a share-partition that skipped
    a record it should deliver. Boundary of the `before-latest-start` allowance: a record below the lowest
    offset delivered may lie below where a latest share-partition began (initialized at its first share
    fetch, which the history does not show: unknown if produced after the first start), one above it not (`unobserved-acquisition` is ruled out as for
    drop-delivery)."""
    f = facts(ops)
    if not f.latest:
        return None
    found = _pick_skippable(f, rng, after_start=True)
    if found is None:
        return None
    key, d = found
    return Mutant("latest-skip-after-start", vanish(f, key, d), "no-loss", LOSS_KINDS,
                  where(f, d.pos, key, "delivery removed (produced after the first start)"))
