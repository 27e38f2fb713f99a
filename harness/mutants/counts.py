"""Mutant classes of acquisitions and delivery counts: a record acquired twice at once, counts that
skip, pass the limit or go back, and a poll's batch out of offset order.

Properties: exclusive-acquisition, delivery-count, batch-order.
"""

from __future__ import annotations

import copy
import random
from collections import defaultdict

from harness.checkers.evidence import READ_SLACK_NS
from harness.history.schema import Op
from harness.mutants.edit import insert, replace_value, where
from harness.mutants.facts import Facts, facts
from harness.mutants.registry import Key, Mutant, mutant_class
from harness.mutants.scan import Delivery


def _tracked(f: Facts, key: Key, pos: int) -> bool:
    """A delivery of `key` at `pos` is checked as an acquisition: one record ever at that offset, not
    truncated, aborted, deleted, compacted or reset; not settled (accepted, rejected) before, and not
    delivered at the limit before (then it is archived: a later delivery is another check's)."""
    ds = f.deliveries.get(key)
    if not ds or key[:2] in f.excluded_tps or len({d.record["id"] for d in ds}) != 1 \
            or ds[0].record["id"] in f.excluded_ids:
        return False
    return f.settled_ok(key, pos) is None and not any(d.pos < pos and d.count >= f.limit for d in ds)


def _redeliveries(f: Facts, key: Key) -> list[tuple[Delivery, Delivery]]:
    """(previous, this) acquisition pairs of `key` (hand-backs of renewed records are not acquisitions)."""
    ds = f.deliveries[key]
    acq = [d for i, d in enumerate(ds) if not f.handback(ds, i)]
    return list(zip(acq, acq[1:]))


def _retouch_count(f: Facts, d: Delivery, count: int) -> list[Op]:
    v = copy.deepcopy(f.ops[d.pos].value)
    v["records"][d.j]["delivery_count"] = count
    return replace_value(f.ops, d.pos, v)


def _duplicable(f: Facts, key: Key, i: int, consumers: list[str]) -> bool:
    """Another consumer may get delivery i of `key` again 1 ns later, outside every allowance."""
    ds = f.deliveries[key]
    d = ds[i]
    if f.handback(ds, i) or not _tracked(f, key, d.pos):
        return False
    nxt = f.ops[d.pos + 1].time if d.pos + 1 < len(f.ops) else d.time + 1
    at = min(d.time + 1, nxt)
    if at - d.time >= f.lock_ns - f.tol_ns or f.disrupted(d.time, at, key[:2]):
        return False
    from harness.mutants.causes import previous_poll_time  # (item 8: acquired from its previous poll of tp on)
    fetched = previous_poll_time(f, d.process, key[:2], d.pos)
    if fetched is not None and at - fetched >= f.lock_ns - f.tol_ns:
        return False
    if f.ends_between(d.time, at, d.process):
        return False
    return any(c != d.process for c in consumers)


@mutant_class("duplicate-acquisition")
def duplicate_acquisition(ops: list[Op], rng: random.Random) -> Mutant | None:
    """Right after a poll delivered record r to consumer A, another consumer B gets r too (count + 1).
    Models a broker that hands out a record whose acquisition lock is live. No allowance:
    `acquired-lost-on-leader-change` needs a disruption window (leader-change / coordinator-loss fault
    until its heal plus settle_ms) overlapping the two acquisitions, and none does; A's session did not
    end in between (1 ns) and A released nothing; the lock (lock_duration_ms - lock_tolerance_ms) is live."""
    f = facts(ops)
    consumers = f.consumers()
    spots = [(d.pos, d.j, key) for key, ds in f.deliveries.items() for i, d in enumerate(ds)
             if _duplicable(f, key, i, consumers)]
    if not spots:
        return None
    pos, j, key = rng.choice(sorted(spots))
    d = next(dd for dd in f.deliveries[key] if dd.pos == pos)
    others = [c for c in consumers if c != d.process]
    live = [c for c in others if f.alive(c, pos)]
    b = rng.choice(live or others)
    record = dict(d.record, delivery_count=d.count + 1)
    mutated = insert(f.ops, pos, [(b, "ok", "poll", {"records": [record]})], dt=1)
    return Mutant("duplicate-acquisition", mutated, "exclusive-acquisition", ("acquired-while-locked",),
                  where(f, pos, key, f"{b} also polls it 1 ns later"))


@mutant_class("count-skip")
def count_skip(ops: list[Op], rng: random.Random) -> Mutant | None:
    """A redelivery's count jumps by two (c -> c + 2 instead of c + 1). Models a broker that counts an
    acquisition twice. No allowance: `unobserved-acquisition` needs a session end (close, crash,
    session-loss fault) or client error between the two deliveries, or stamped up to `READ_SLACK_NS`
    after the second (none), `-expired` a whole lock
    duration between them (the gap is shorter), `delivery-count-lag` and `-disrupted` a disruption window (none)."""
    f = facts(ops)
    spots = []
    for key in sorted(f.deliveries):
        for prev, d in _redeliveries(f, key):
            if d.count != prev.count + 1 or prev.count + 2 > f.limit or not _tracked(f, key, d.pos):
                continue
            if d.time - prev.time >= f.lock_ns or f.disrupted(prev.time, d.time, key[:2]):
                continue
            # (a session end stamped a little after the delivery may have come before it: READ_SLACK_NS)
            if f.ends_between(prev.time, d.time + READ_SLACK_NS) or any(prev.pos < e.pos < d.pos for e in f.ends):
                continue
            spots.append((key, prev, d))
    if not spots:
        return None
    key, prev, d = rng.choice(spots)
    return Mutant("count-skip", _retouch_count(f, d, prev.count + 2), "delivery-count", ("count-skipped",),
                  where(f, d.pos, key, f"count {prev.count + 2} after {prev.count} (op {prev.pos})"))


@mutant_class("count-past-limit")
def count_past_limit(ops: list[Op], rng: random.Random) -> Mutant | None:
    """One delivery's count becomes limit + 1. Models a broker that delivers a record past
    group.share.delivery.count.limit. No allowance excuses a count above the limit, whatever else the
    delivery is (a redelivery excused by `delivery-count-lag`, of a truncated record...): any delivery
    is picked."""
    f = facts(ops)
    all_ds = sorted(((d.pos, d.j), key) for key, ds in f.deliveries.items() for d in ds)
    if not all_ds:
        return None
    (pos, j), key = rng.choice(all_ds)
    d = next(dd for dd in f.deliveries[key] if dd.pos == pos and dd.j == j)
    return Mutant("count-past-limit", _retouch_count(f, d, f.limit + 1), "delivery-count", ("beyond-limit",),
                  where(f, pos, key, f"count {f.limit + 1} (limit {f.limit})"))


@mutant_class("count-regress")
def count_regress(ops: list[Op], rng: random.Random) -> Mutant | None:
    """A redelivery's count is lower than the previous delivery's. Models a broker that loses
    acquisitions from the count. No allowance: `delivery-count-lag` needs a disruption window
    overlapping the two deliveries (none), and the previous owner's session did not end in between
    (on 4.1 a session release decreases the count: those histories are skipped)."""
    f = facts(ops)
    if f.profile.session_release_decrements:
        return None
    spots = []
    for key in sorted(f.deliveries):
        for prev, d in _redeliveries(f, key):
            if prev.count < 2 or prev.count >= f.limit or not _tracked(f, key, d.pos):
                continue
            if f.disrupted(prev.time, d.time, key[:2]) or f.ends_between(prev.time, d.time, prev.process):
                continue
            spots.append((key, prev, d))
    if not spots:
        return None
    key, prev, d = rng.choice(spots)
    count = rng.randint(1, prev.count - 1)
    return Mutant("count-regress", _retouch_count(f, d, count), "delivery-count", ("count-regressed",),
                  where(f, d.pos, key, f"count {count} after {prev.count} (op {prev.pos})"))


@mutant_class("swap-in-batch")
def swap_in_batch(ops: list[Op], rng: random.Random) -> Mutant | None:
    """Two records of one share-partition swap places in a poll. Models a broker (or client) that
    returns a batch out of offset order. No allowance: within a batch offsets strictly increase."""
    f = facts(ops)
    spots = []
    for pos, op in enumerate(f.ops):
        if op.f == "poll" and op.type == "ok":
            recs = op.value.get("records") or []
            by_tp: dict[tuple, list[int]] = defaultdict(list)
            for j, r in enumerate(recs):
                by_tp[(r["topic"], r["partition"])].append(j)
            for js in by_tp.values():
                spots += [(pos, a, b) for x, a in enumerate(js) for b in js[x + 1:]]
    if not spots:
        return None
    pos, a, b = rng.choice(spots)
    v = copy.deepcopy(f.ops[pos].value)
    v["records"][a], v["records"][b] = v["records"][b], v["records"][a]
    ra, rb = v["records"][b], v["records"][a]
    return Mutant("swap-in-batch", replace_value(f.ops, pos, v), "batch-order", ("batch-order",),
                  where(f, pos, None, f"{ra['topic']}-{ra['partition']} offsets {ra['offset']} and {rb['offset']} "
                                      f"swapped"))
