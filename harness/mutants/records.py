"""Mutant classes of what a record's fate rests on (issue 46): an acceptance the broker refused counted
as settled, a second copy of a produced id never finished, an id no produce invoked.

Property: no-loss.
"""

from __future__ import annotations

import copy
import random
from typing import Any

from harness.history.schema import Op
from harness.mutants.edit import insert, renumber, where, with_value
from harness.mutants.facts import Facts, facts
from harness.mutants.registry import LOSS_KINDS, NEVER, Mutant, mutant_class

#: the broker's refusal, as librdkafka spells it (a definitive error: `ack_results.definitive`)
REFUSED = "INVALID_RECORD_STATE: Broker: The record state is invalid"


def _refusable_rounds(f: Facts) -> list[tuple[int, int, tuple, list]]:
    """(commit invoke, its ok, partition, the ACCEPTs it settled there) for each commit round whose
    result for the partition can turn into a refusal outside every allowance: each acknowledgement is
    the ACCEPT that settled its record (first result a success, from this round), the record was
    delivered below the limit and never again, too few session ends follow its delivery for
    `unobserved-acquisition` to archive it unseen, no disruption of the partition and no end of the
    consumer's sessions lie between the acknowledgements and the commit's end
    (`refusal-may-mask-landing`), and every callback listing the partition lists only it."""
    rounds: dict[tuple, list] = {}
    for a in f.ack_list:
        if a.commit_pos >= 0 and a.commit_end >= 0 and f.ops[a.commit_end].type == "ok":
            rounds.setdefault((a.commit_pos, a.key[:2]), []).append(a)
    spots = []
    sessions_count = not f.profile.session_release_decrements
    for (ci, tp), acks in sorted(rounds.items()):
        ce = f.commit_ends[ci]
        process = f.ops[ci].process
        if tp in f.excluded_tps or not any((r["topic"], r["partition"]) == tp and r.get("error") is None
                                           for r in f.ops[ce].value.get("results") or ()):
            continue
        first_time = min(a.time for a in acks)
        if f.disrupted(first_time, f.ops[ce].time, tp) or any(
                e.key[0] in ("fault", "error") for e in f.ends_between(first_time, f.ops[ce].time, process)):
            continue
        fine = True
        for a in acks:
            ds = f.deliveries.get(a.key, [])
            rid = f.record_id(a.key)
            if (a.type != "ACCEPT" or a.result != "ok" or f.settled_ok(a.key) is not a or not ds
                    or rid is None or rid in f.excluded_ids or ds[-1].pos > a.pos or ds[-1].count >= f.limit
                    or f.acks[a.key][-1] is not a
                    or (sessions_count and f.countable_ends(ds[-1].time, NEVER) >= f.limit - ds[-1].count)):
                fine = False
                break
            if any(len(f.ops[c].value.get("partitions") or ()) != 1 for c in a.callbacks):
                fine = False
                break
        if fine:
            spots.append((ci, ce, tp, acks))
    return spots


def _refused(f: Facts, ce: int, tp: tuple, acks: list) -> list[Op]:
    """The history with commit `ce`'s result for `tp`, and the callbacks listing `acks`, refused."""
    callbacks = {c for a in acks for c in a.callbacks}
    out = []
    for pos, op in enumerate(f.ops):
        v: Any = op.value
        if pos == ce:
            v = copy.deepcopy(v)
            for r in v["results"]:
                if (r["topic"], r["partition"]) == tp:
                    r["error"] = REFUSED
        elif pos in callbacks:
            v = dict(v, error=REFUSED)
        out.append(op if v is op.value else with_value(op, v))
    return renumber(out)


@mutant_class("accept-refused")
def accept_refused(ops: list[Op], rng: random.Random) -> Mutant | None:
    """A commit's result for a partition says the broker refused its ACCEPTs (INVALID_RECORD_STATE), and
    the records are never delivered again, while the start offset moves past them. Models a broker that
    drops the records whose acceptance it refused (or a client lying about a success). No allowance: no
    disruption of the partition or end of the consumer's connections lies between the acknowledgements
    and the refusal (`refusal-may-mask-landing`), each record was below the limit, and too few session
    ends follow for `unobserved-acquisition`."""
    f = facts(ops)
    spots = _refusable_rounds(f)
    if not spots:
        return None
    ci, ce, tp, acks = rng.choice(spots)
    offsets = sorted(a.key[2] for a in acks)
    return Mutant("accept-refused", _refused(f, ce, tp, acks), "no-loss", LOSS_KINDS,
                  where(f, ce, None, f"{f.ops[ci].process}'s ACCEPTs of {tp[0]}-{tp[1]} offsets "
                                     f"{offsets[:5]}{'...' if len(offsets) > 5 else ''} refused"))


def _copy_spots(f: Facts) -> list[tuple[int, dict, str]]:
    """(position of a poll, one of its records, its consumer) where a poll of a live consumer hands over
    a record whose produce had returned (no-loss follows what a produce acknowledged) of a partition no
    fault or admin touched from then on."""
    spots = []
    for key, ds in sorted(f.deliveries.items()):
        if key[:2] in f.excluded_tps:
            continue
        d = ds[0]
        rid = d.record["id"]
        if rid in f.excluded_ids or rid not in f.produce_ok or f.produce_ok[rid] > d.pos \
                or not f.alive(d.process, d.pos + 1) or f.disrupted(d.time, NEVER, key[:2]):
            continue
        spots.append((d.pos, d.record, d.process))
    return spots


def _far_offset(f: Facts, tp: tuple) -> int:
    """An offset past every record of `tp` the history names (no produce or delivery ever reaches it)."""
    top = max([k[2] for k in f.deliveries if k[:2] == tp] or [0])
    return top + 1_000_000


@mutant_class("duplicate-copy-unfinished")
def duplicate_copy_unfinished(ops: list[Op], rng: random.Random) -> Mutant | None:
    """A poll hands over, with a record, a second copy of its id at an offset no produce reported (the
    log holds the id twice), and nobody ever acknowledges the copy. Models a broker that loses the
    second log copy of a produce after handing it out once (an idempotent retry across a restart wrote
    it). No allowance: the copy is a record of the log like any other (issue 46: a delivered id some
    produce invoked is never a phantom, and is followed by no-loss); no fault or admin action touches its
    partition from then on, and no start-offset read passes it (it lies past every record of the history)."""
    return _extra_poll(ops, rng, "duplicate-copy-unfinished", ("not-accepted",), lambda record: {},
                       "a copy at offset {offset} to {process}, never acknowledged")


@mutant_class("phantom-id")
def phantom_id(ops: list[Op], rng: random.Random) -> Mutant | None:
    """A poll hands over a record whose id no produce invoked. Models a broker that serves data nobody
    wrote (a corrupted or foreign batch). No allowance: no produce, truncation or transaction names the
    id (issue 46: only an id no produce invoked is a phantom)."""
    return _extra_poll(ops, rng, "phantom-id", ("phantom",),
                       lambda record: {"id": f"phantom-{rng.randrange(1 << 30)}"}, "id {id} no produce invoked")


def _extra_poll(ops: list[Op], rng: random.Random, cls: str, kinds: tuple[str, ...], change, what: str
                ) -> Mutant | None:
    """After a poll of `_copy_spots`, one more poll hands its consumer a copy of one of its records (with
    `change(record)` applied) at an offset past every record of its partition (`_far_offset`)."""
    f = facts(ops)
    spots = _copy_spots(f)
    if not spots:
        return None
    pos, record, process = rng.choice(spots)
    tp = (record["topic"], record["partition"])
    extra = dict(record, offset=_far_offset(f, tp), delivery_count=1, **change(record))
    mutated = insert(f.ops, pos, [(process, "ok", "poll", {"records": [extra]})], dt=1)
    return Mutant(cls, mutated, "no-loss", kinds,
                  where(f, pos, (tp[0], tp[1], record["offset"]), what.format(process=process, **extra)))

