"""Mutant classes of acquisitions the history did not see, each of which needs a cause of its own
(issue 46, item 2): session ends that could not have released an unseen acquisition must not excuse one.

`unobserved-acquisition` (`harness.checkers.evidence.Evidence.unseen_acquisitions`) excuses a count
skip or a record terminal unseen only with a distinct event per unseen acquisition: the session end of a
consumer that was live then and could hold the record (not during another consumer's live lock on it),
or a lock expiry. The classes here add, where a record went wrong, session ends or errors that look like
causes but are none: other consumers' closes during the live lock of the delivery the history saw
(2a), closes of clients that never started (2a), a first delivery counted twice before its produce
returned (2c: the window starts at the produce's invoke, not at time 0), and errors a driver wrote about
its commands (2d). Property: no-loss, delivery-count.

`previous_poll_time` is the spot question item 8 adds for `counts.duplicate-acquisition`: a consumer
may have acquired what a poll handed over from its previous poll of that share-partition on.
"""

from __future__ import annotations

import bisect
import copy
import random
from typing import Any

from harness.checkers.evidence import READ_SLACK_NS
from harness.history.schema import Op
from harness.mutants.edit import insert, renumber, replace_value, where, with_value
from harness.mutants.facts import Facts, facts
from harness.mutants.registry import LOSS_KINDS, NEVER, RESTART, Key, Mutant, mutant_class
from harness.mutants.scan import Delivery
from harness.mutants.vanish import skippable, vanish

#: errors a driver or the harness writes about a command or itself (`harness.checkers.evidence.DRIVER_ERRORS`)
DRIVER_ERROR_MESSAGES = (
    "poll: IllegalStateException: Not all records from the previous poll were acknowledged",
    "ack: IllegalArgumentException: record was never returned by a poll",
    "commit_sync: panic: runtime error: invalid memory address or nil pointer dereference",
    "unparsable driver output: {\"type\": \"ok\", \"f\": \"poll\", \"val",
)

# ------------------------------------------------------------------ spot questions


def _polls(f: Facts) -> dict[tuple, tuple[list[int], list[int]]]:
    """(process, tp) -> (positions, times) of the polls that handed that process records of tp."""
    if "polls-by-tp" not in f.memo:
        found: dict[tuple, dict[int, int]] = {}
        for key, ds in f.deliveries.items():
            for d in ds:
                found.setdefault((d.process, key[:2]), {})[d.pos] = d.time
        f.memo["polls-by-tp"] = {k: (sorted(v), [v[p] for p in sorted(v)]) for k, v in found.items()}
    return f.memo["polls-by-tp"]


def previous_poll_time(f: Facts, process: str, tp: tuple, pos: int) -> int | None:
    """The time of `process`'s poll of `tp` before the one at `pos`, in the same session (no start of
    `process` between them), else of the start that began the session: it may have fetched (acquired) what
    the poll at `pos` handed over from then on (`Evidence.fetched_from`, issue 46 item 8). None: no start
    of `process` before `pos`."""
    positions, times = _polls(f).get((process, tp), ([], []))
    at = bisect.bisect_left(positions, pos) - 1
    starts = [s for s in f.starts.get(process, ()) if s < pos]
    if at >= 0 and not (starts and positions[at] < starts[-1]):
        return times[at]
    if not starts or f.ops[starts[-1]].time >= f.ops[pos].time:
        return None
    return f.ops[starts[-1]].time


def _pick_skippable(f: Facts, rng: random.Random) -> tuple[Key, Delivery] | None:
    """A record drop-delivery may make vanish (`vanish.skippable`), and its delivery."""
    if "skippable-False" not in f.memo:  # (the memo `vanish` keeps under that name: the same list)
        f.memo["skippable-False"] = sorted(k for k in f.deliveries if skippable(f, k) is not None)
    if not f.memo["skippable-False"]:
        return None
    key = rng.choice(f.memo["skippable-False"])
    return key, f.deliveries[key][0]


def _busy(f: Facts) -> dict[str, list[tuple[int, int]]]:
    """process -> sorted (first, last) position spans in which it held a record handed to it and not yet
    acknowledged with a result (a close then would end an acknowledgement or a holding)."""
    if "busy" not in f.memo:
        spans: dict[str, list[tuple[int, int]]] = {}
        for key, ds in f.deliveries.items():
            acks = f.acks.get(key, ())
            for d in ds:
                done = [a.result_pos for a in acks if a.process == d.process and a.pos > d.pos and a.result_pos > a.pos]
                spans.setdefault(d.process, []).append((d.pos, min(done) if done else NEVER))
        f.memo["busy"] = {p: sorted(s) for p, s in spans.items()}
    return f.memo["busy"]


def _idle(f: Facts, process: str, pos: int) -> bool:
    """`process` holds nothing unacknowledged at `pos` (every record handed to it before has a result)."""
    return not any(first < pos <= last for first, last in _busy(f).get(process, ()) if first < pos)


def _strip_acks(f: Facts, key: Key, d: Delivery) -> list[Op]:
    """The history without `d.process`'s acknowledgements of `key` and the callback offsets for it (ops left
    empty are dropped; the delivery and the commits' results stay)."""
    out: list[Op] = []
    tp = key[:2]
    for op in f.ops:
        v: Any = op.value
        if op.process == d.process and op.type == "ok" and op.f == "acknowledge" and any(
                (r["topic"], r["partition"], r["offset"]) == key for r in v["records"]):
            v = dict(v, records=[r for r in v["records"] if (r["topic"], r["partition"], r["offset"]) != key])
            if not v["records"]:
                continue
        elif op.process == d.process and op.type == "ok" and op.f == "callback" and any(
                (p["topic"], p["partition"]) == tp and key[2] in p["offsets"] for p in v.get("partitions") or ()):
            v = copy.deepcopy(v)
            for p in v["partitions"]:
                if (p["topic"], p["partition"]) == tp:
                    p["offsets"] = [o for o in p["offsets"] if o != key[2]]
            v["partitions"] = [p for p in v["partitions"] if p["offsets"]]
            if not v["partitions"]:
                continue
        out.append(op if v is op.value else with_value(op, v))
    return renumber(out)


# ------------------------------------------------------------------ 2a: no cause during a live lock


def _unacked_spots(f: Facts) -> list[Key]:
    """Records delivered once and accepted by their consumer (`vanish.skippable`), with a start-offset
    read past them, and fewer session ends of any kind between that delivery and the read than the
    acquisitions that would have to go unseen for them to end archived unacknowledged (limit - 1)."""
    if "unacked-spots" not in f.memo:
        spots = []
        for key in sorted(f.deliveries):
            found = skippable(f, key)
            read = f.first_read_past(key[:2], key[2])
            if found is None or read is None:
                continue
            if f.countable_ends(found[0].time, read[0], read[1]) < f.limit - 1:
                spots.append(key)
        f.memo["unacked-spots"] = spots
    return f.memo["unacked-spots"]


@mutant_class("unacked-others-closed-in-lock")
def unacked_others_closed_in_lock(ops: list[Op], rng: random.Random) -> Mutant | None:
    """A record delivered once to consumer A is never acknowledged (A's ACCEPT and its callback offset
    vanish), the start offset still moves past it, and right after A's poll (inside A's acquisition lock)
    other consumers holding nothing (up to limit - 1 of them, at least one) close and start again.
    Models a broker that archives (or skips) a record its consumer still holds. No allowance: at the
    boundary of `unobserved-acquisition` (issue 46, item 2a), a close cannot release an acquisition its
    consumer could not make, and no consumer can acquire a record while A's lock on it is live, so these
    closes explain none of the limit - 1 acquisitions the record would need to end archived; fewer
    session ends than that (of any kind) come after A's poll before the read, lock expiries do not count
    for a record ending terminal unseen, and the record is not truncated, deleted, aborted or reset
    (their own allowances)."""
    f = facts(ops)
    spots = list(_unacked_spots(f))
    rng.shuffle(spots)
    for key in spots:
        d = f.deliveries[key][0]
        others = [c for c in f.consumers() if c != d.process and f.alive(c, d.pos) and _idle(f, c, d.pos + 1)]
        if not others:
            continue
        closing = sorted(rng.sample(others, min(len(others), f.limit - 1)))
        extra = []
        for c in closing:
            extra += [(c, "invoke", "close", {}), (c, "ok", "close", {}), (c, "ok", "start", dict(RESTART))]
        mutated = insert(_strip_acks(f, key, d), d.pos, extra, dt=1)  # (all removed ops come after the poll)
        return Mutant("unacked-others-closed-in-lock", mutated, "no-loss", LOSS_KINDS,
                      where(f, d.pos, key, f"{d.process}'s acknowledgement removed; {', '.join(closing)} close "
                                           f"and restart 1 ns after its poll"))
    return None


@mutant_class("skip-record-with-unstarted-closes")
def skip_record_with_unstarted_closes(ops: list[Op], rng: random.Random) -> Mutant | None:
    """drop-delivery, plus `limit` closes, right after the record's produce, of consumers that never
    started (names no start operation ever had). Models a broker that skips a record in a run whose
    history holds session ends of clients that were never in the group. No allowance: at the boundary
    of `unobserved-acquisition` (issue 46, item 2a), only a consumer that was live (started) can have
    acquired what its session end released; the other conditions are drop-delivery's (fewer countable
    session ends than the limit between the produce and the read, or the state topic shows the skip)."""
    f = facts(ops)
    found = _pick_skippable(f, rng)
    if found is None:
        return None
    key, d = found
    invoke = f.produce_invoke[d.record["id"]]
    names = [f"consumer-unstarted-{i}" for i in range(f.limit)]
    if any(n in f.starts for n in names):
        return None
    extra = []
    for n in names:
        extra += [(n, "invoke", "close", {}), (n, "ok", "close", {})]
    mutated = insert(vanish(f, key, d), invoke, extra, dt=1)  # (everything removed lies after the produce)
    return Mutant("skip-record-with-unstarted-closes", mutated, "no-loss", LOSS_KINDS,
                  where(f, d.pos, key, f"delivery removed; {f.limit} closes of never-started consumers after its "
                                       f"produce (op {invoke})"))


# ------------------------------------------------------------------ 2c: the window starts at the produce


@mutant_class("first-count-skip-before-produce-ok")
def first_count_skip_before_produce_ok(ops: list[Op], rng: random.Random) -> Mutant | None:
    """A record's only delivery comes before its produce returned (its produce's `ok` moved to just after
    the poll where the history had it before: a legal order, the producer's acknowledgement late) and has
    count 2 instead of 1. Models a broker that counts a fresh record's first acquisition twice. No
    allowance: at the boundary of `unobserved-acquisition` (issue 46, item 2c), the record could first
    be acquired at its produce's invoke, not at time 0, and between the invoke and the delivery (or up to
    `READ_SLACK_NS` after it) no session end of any kind happened, less than a lock duration passed
    (`-expired`) and no disruption of its partition overlapped (`-disrupted`); the record is not truncated, deleted, aborted or reset (their own allowances)."""
    f = facts(ops)
    if f.limit < 2:
        return None
    if "first-before-ok" not in f.memo:
        spots = []
        for key in sorted(f.deliveries):
            ds = f.deliveries[key]
            rid = ds[0].record["id"]
            if len(ds) != 1 or ds[0].count != 1 or key[:2] in f.excluded_tps or rid in f.excluded_ids:
                continue
            ok, invoke = f.produce_ok.get(rid), f.produce_invoke.get(rid)
            if ok is None or invoke is None or not invoke < ds[0].pos or f.ops[ok].type != "ok":
                continue
            t0 = f.ops[invoke].time
            if ds[0].time - t0 >= f.lock_ns or f.ends_between(t0, ds[0].time + READ_SLACK_NS) \
                    or f.disrupted(t0, ds[0].time, key[:2]):  # (`unobserved-acquisition-disrupted`)
                continue
            spots.append(key)
        f.memo["first-before-ok"] = spots
    spots = f.memo["first-before-ok"]
    if not spots:
        return None
    key = rng.choice(spots)
    d = f.deliveries[key][0]
    ok = f.produce_ok[d.record["id"]]
    v = copy.deepcopy(f.ops[d.pos].value)
    v["records"][d.j]["delivery_count"] = 2
    mutated = replace_value(f.ops, d.pos, v)
    moved = ""
    if ok < d.pos:  # the produce returns after the delivery instead
        op = mutated[ok]
        mutated = insert(mutated[:ok] + mutated[ok + 1:], d.pos - 1, [(op.process, op.type, op.f, op.value)])
        moved = f"; its produce's ok (op {ok}) moved after it"
    return Mutant("first-count-skip-before-produce-ok", mutated, "delivery-count", ("count-skipped",),
                  where(f, d.pos, key, f"count 2 at its first delivery, before its produce returned{moved}"))


# ------------------------------------------------------------------ 2d: a driver's error ends no session


@mutant_class("skip-record-with-driver-errors")
def skip_record_with_driver_errors(ops: list[Op], rng: random.Random) -> Mutant | None:
    """drop-delivery, plus, right after the record's produce, one `error` operation from each of up to
    `limit` live consumers (at least one) that a driver writes about a command (an API call that raised:
    IllegalStateException, a panic) or the harness about a driver line it could not parse. Models a
    broker that skips a record in a run whose drivers reported command errors. No allowance: at the
    boundary of `unobserved-acquisition` (issue 46, item 2d), only a client library's error may mean a lost
    connection and session, a command's error ends none; the other conditions are drop-delivery's."""
    f = facts(ops)
    found = _pick_skippable(f, rng)
    if found is None:
        return None
    key, d = found
    invoke = f.produce_invoke[d.record["id"]]
    live = [c for c in f.consumers() if f.alive(c, invoke)]
    if not live:
        return None
    chosen = sorted(rng.sample(live, min(len(live), f.limit)))
    extra = [(c, "info", "error", {"code": None, "message": rng.choice(DRIVER_ERROR_MESSAGES)}) for c in chosen]
    mutated = insert(vanish(f, key, d), invoke, extra, dt=1)  # (everything removed lies after the produce)
    return Mutant("skip-record-with-driver-errors", mutated, "no-loss", LOSS_KINDS,
                  where(f, d.pos, key, f"delivery removed; command errors of {', '.join(chosen)} after its "
                                       f"produce (op {invoke})"))


