"""Mutant classes of acknowledgements: a committed acceptance forgotten, an acknowledgement's result
never reported, a record acknowledged by a consumer never handed it, a result nobody asked for.

Properties: no-redelivery-after-ack, ack-results.
"""

from __future__ import annotations

import copy
import random
from collections import defaultdict
from typing import Any

from harness.history.schema import Op
from harness.mutants.edit import insert, renumber, replace_value, where, with_value
from harness.mutants.facts import Facts, facts
from harness.mutants.registry import FINAL, Mutant, mutant_class
from harness.mutants.scan import AckInfo


def _round_end(f: Facts, a: AckInfo) -> int:
    """The position after which the acknowledgement's commit round is over (its result, its commit's
    end, the callbacks listing it)."""
    return max([a.result_pos, a.commit_end, *a.callbacks])


@mutant_class("redeliver-accepted")
def redeliver_accepted(ops: list[Op], rng: random.Random) -> Mutant | None:
    """After a commit accepted (or rejected) record r, its consumer gets r again (count + 1). Models a
    broker that forgets a committed acknowledgement. No allowance: no admin reset moved the start
    back; on releases whose share coordinator may move the start offset back (known bug up to 4.3,
    `state-start-offset-regressed`) only records the state topic's writes do not show the start
    offset going back over are picked (those that do are excused by that known bug)."""
    f = facts(ops)
    spots = []
    for a in f.ack_list:
        if a.type not in FINAL or a.result != "ok" or a.key[:2] in f.excluded_tps:
            continue
        rid = f.record_id(a.key)
        if rid is None or rid in f.excluded_ids:
            continue
        if f.profile.state_start_may_regress and f.start_went_back_over(a.key[:2], a.key[2]):
            continue
        at = _round_end(f, a)
        before = [d for d in f.deliveries[a.key] if d.pos < at]
        if not before or before[-1].count + 1 > f.limit or f.settled_ok(a.key) is not a:
            continue
        spots.append((a.pos, a.key, at, before[-1], a.process))
    if not spots:
        return None
    _, key, at, prev, process = rng.choice(sorted(spots, key=lambda s: (s[0], s[1])))
    record = dict(prev.record, delivery_count=prev.count + 1)
    mutated = insert(f.ops, at, [(process, "ok", "poll", {"records": [record]})], dt=1)
    return Mutant("redeliver-accepted", mutated, "no-redelivery-after-ack", ("redelivered-after-ack",),
                  where(f, at, key, f"redelivered to {process} after its acceptance"))


# ------------------------------------------------------------------ drop-ack-result


def _result_rounds(f: Facts) -> list[tuple[int, int, int, tuple, list[AckInfo]]]:
    """(commit invoke, its ok, the consumer's next commit invoke, partition, the acknowledgements it
    carried) for each commit round whose results can vanish outside every allowance: the commit
    returned a result for the partition, each acknowledgement got its first result in that round (a
    callback or this commit's result), and the consumer neither crashed nor closed before its next commit."""
    rounds: dict[tuple, list[AckInfo]] = defaultdict(list)  # (commit invoke, tp) -> the acks it carried
    for a in f.ack_list:
        if a.commit_pos >= 0 and a.commit_end >= 0 and f.ops[a.commit_end].type == "ok":
            rounds[(a.commit_pos, a.key[:2])].append(a)
    spots = []
    for (ci, tp), acks in sorted(rounds.items()):
        ce = f.commit_ends[ci]
        process = f.ops[ci].process
        if not any((r["topic"], r["partition"]) == tp for r in f.ops[ce].value.get("results") or ()):
            continue
        nxt = f.next_commit(process, ce)
        first = min(a.pos for a in acks)
        if any(a.result not in ("ok", "error") or not first < a.result_pos < nxt for a in acks):
            continue
        if any(first < s < nxt for s in f.stops.get(process, ())):
            continue
        spots.append((ci, ce, nxt, tp, acks))
    return spots


def _without_results(f: Facts, ce: int, nxt: int, tp: tuple, process: str, offsets: set, first: int) -> list[Op]:
    """The history without commit `ce`'s result for `tp` and without `offsets` of `tp` in `process`'s
    callbacks between positions `first` and `nxt` (callbacks left empty are dropped)."""
    out = []
    for pos, op in enumerate(f.ops):
        v: Any = op.value
        if pos == ce:
            v = dict(v, results=[r for r in v["results"] if (r["topic"], r["partition"]) != tp])
        elif first < pos < nxt and op.process == process and op.f == "callback" and op.type == "ok" and any(
                (p["topic"], p["partition"]) == tp for p in v.get("partitions") or ()):
            v = copy.deepcopy(v)
            for p in v["partitions"]:
                if (p["topic"], p["partition"]) == tp:
                    p["offsets"] = [o for o in p["offsets"] if o not in offsets]
            v["partitions"] = [p for p in v["partitions"] if p["offsets"]]
            if not v["partitions"]:
                continue
        out.append(op if v is op.value else with_value(op, v))
    return renumber(out)


@mutant_class("drop-ack-result")
def drop_ack_result(ops: list[Op], rng: random.Random) -> Mutant | None:
    """An acknowledgement's callback and its commit's result for that partition vanish. Models a
    client that never reports an acknowledgement's outcome. No allowance: `ack-lost-with-consumer`
    needs the consumer killed (or its close unfinished) before the result came, and here its commit
    returned and it neither crashed nor closed before its next commit."""
    f = facts(ops)
    spots = _result_rounds(f)
    if not spots:
        return None
    ci, ce, nxt, tp, acks = rng.choice(spots)
    process = f.ops[ci].process
    offsets = {a.key[2] for a in acks}
    first = min(a.pos for a in acks)
    mutated = _without_results(f, ce, nxt, tp, process, offsets, first)
    return Mutant("drop-ack-result", mutated, "ack-results", ("ack-result-missing",),
                  where(f, ce, None, f"{process}'s results for {tp[0]}-{tp[1]} offsets "
                                     f"{sorted(offsets)[:5]}{'...' if len(offsets) > 5 else ''} removed"))


# ------------------------------------------------------------------ strangers and unsolicited results


@mutant_class("ack-by-stranger")
def ack_by_stranger(ops: list[Op], rng: random.Random) -> Mutant | None:
    """After consumer A's commit accepted record r, consumer B, never handed r, acknowledges it and
    commits. Models a client that acknowledges records it did not receive. No allowance: r is not
    truncated and no admin reset moved its partition (the only cases where a stray acknowledgement
    is excused)."""
    f = facts(ops)
    consumers = f.consumers()
    spots = []
    for a in f.ack_list:
        if a.type != "ACCEPT" or a.result != "ok" or a.key[:2] in f.excluded_tps:
            continue
        rid = f.record_id(a.key)
        if rid is None or rid in f.excluded_ids or f.settled_ok(a.key) is not a:
            continue
        handed = {d.process for d in f.deliveries[a.key]} | {x.process for x in f.acks[a.key]}
        at = _round_end(f, a)
        strangers = [c for c in consumers if c not in handed and f.alive(c, at + 1)]
        if strangers:
            spots.append((a.pos, a.key, at, strangers))
    if not spots:
        return None
    _, key, at, strangers = rng.choice(sorted(spots, key=lambda s: (s[0], s[1])))
    b = rng.choice(strangers)
    topic, partition, offset = key
    mutated = insert(f.ops, at, [
        (b, "ok", "acknowledge", {"records": [{"topic": topic, "partition": partition, "offset": offset,
                                               "type": "ACCEPT"}]}),
        (b, "invoke", "commit", {}),
        (b, "ok", "commit", {"results": [{"topic": topic, "partition": partition, "error": None}]})])
    return Mutant("ack-by-stranger", mutated, "ack-results", ("ack-undelivered",),
                  where(f, at, key, f"{b} (never handed it) accepts it"))


@mutant_class("unsolicited-result")
def unsolicited_result(ops: list[Op], rng: random.Random) -> Mutant | None:
    """A commit returns an extra result for a partition (one above any in the history) its consumer
    never acknowledged. Models a client reporting results for acknowledgements nobody made. No
    allowance: no acknowledgement of that partition exists at all."""
    f = facts(ops)
    spots = [pos for pos, op in enumerate(f.ops) if op.f == "commit" and op.type == "ok"
             and isinstance(op.value, dict)]
    if not spots or not f.topics:
        return None
    pos = rng.choice(spots)
    topic = rng.choice(f.topics)
    extra = {"topic": topic, "partition": f.max_partition + 1, "error": None}
    v = dict(f.ops[pos].value, results=[*(f.ops[pos].value.get("results") or []), extra])
    return Mutant("unsolicited-result", replace_value(f.ops, pos, v), "ack-results", ("ack-result-unsolicited",),
                  where(f, pos, None, f"extra result for {topic}-{f.max_partition + 1}"))
