"""No loss (at-least-once).

Every record whose produce was acknowledged, at an offset the group consumes,
is delivered, and by the end of the run is accepted or rejected (an ACCEPT or
REJECT whose commit result was success) or archived at the delivery limit
(delivered with count == limit and never accepted). Anomalies: `lost` (never
delivered), `not-accepted` (delivered, never finished), `phantom` (a delivered
id no produce created). An acknowledgement whose commit outcome is unknown
(`info`) makes the record's fate unknown unless a later start-offset read
(`share-offsets`) is past it; the verdict is then "unknown", never a pass.
"""

from __future__ import annotations

from typing import Any, Sequence

from harness.checkers import Result, property_result
from harness.checkers.ledger import ACCEPTED, GONE, MAYBE
from harness.history.schema import Op

NAME = "no-loss"


def check(history: Any) -> Result:
    return property_result(NAME, history)


def settlement(history: Sequence[Op]) -> tuple[set[tuple[str, int, int]], dict[tuple[str, int, int], int]]:
    """(records settled for sure, {record settled only by an unknown outcome: time of that outcome}).

    Settled: an ACCEPT or REJECT, or a RELEASE of the delivery at the delivery-count limit (the broker
    archives it), that a commit made durable. A cheap forward pass the runner polls while draining;
    the verdict itself comes from `check`.

    Unknown: the commit carrying its final acknowledgement raised, returned an error for its
    partition, or never returned (the consumer crashed or failed to close), or the acknowledgement's
    own result (the commit callback, which may come before the commit returns) was an error.

    If the broker never got such an acknowledgement, the record's lock expires and it is delivered
    again, so the drain waits a lock duration past that time before it trusts the durable read."""
    limit: int | None = None
    counts: dict[tuple[str, tuple[str, int, int]], int] = {}  # (process, record) -> its latest delivery count
    pending: dict[str, set[tuple[str, int, int]]] = {}  # process -> final acknowledgements awaiting a commit
    sure: set[tuple[str, int, int]] = set()
    maybe: dict[tuple[str, int, int], int] = {}
    for op in history:
        if op.f == "config" and op.type == "ok":
            limit = op.value.get("delivery_count_limit")
        elif op.f == "poll" and op.type == "ok":
            for r in op.value["records"]:
                counts[(op.process, (r["topic"], r["partition"], r["offset"]))] = r["delivery_count"]
        elif op.f == "acknowledge" and op.type == "ok":
            for r in op.value["records"]:
                key = (r["topic"], r["partition"], r["offset"])
                if r["type"] in ("ACCEPT", "REJECT") or (
                        r["type"] == "RELEASE" and limit is not None and counts.get((op.process, key), 0) >= limit):
                    pending.setdefault(op.process, set()).add(key)
        elif op.f == "callback" and op.type == "ok" and op.process in pending:
            # the acknowledgement's own result: the replay takes the first result an acknowledgement gets
            acks = pending[op.process]
            for part in op.value.get("partitions", ()):
                for offset in part.get("offsets", ()):
                    key = (part["topic"], part["partition"], offset)
                    if key in acks:
                        acks.discard(key)
                        if op.value.get("error") is None:
                            sure.add(key)
                        else:
                            maybe[key] = op.time
        elif op.f == "commit" and op.type in ("ok", "fail", "info"):
            acks = pending.pop(op.process, set())
            if op.type == "ok":
                ok_parts = {(r["topic"], r["partition"]) for r in op.value["results"] if r.get("error") is None}
                sure |= {key for key in acks if key[:2] in ok_parts}
                # An error for its partition (e.g. the leader moved): if the broker did not apply it, the
                # lock expires and the record comes back; if it did, only the durable read can tell.
                maybe.update((key, op.time) for key in acks if key[:2] not in ok_parts)
            else:
                maybe.update((key, op.time) for key in acks)
        elif op.f == "crash" or (op.f == "close" and op.type == "info"):
            process = op.value.get("process", op.process) if op.f == "crash" else op.process
            maybe.update((key, op.time) for key in pending.pop(process, set()))
    return sure, {key: t for key, t in maybe.items() if key not in sure}


def lost_delivered(r, index: int, tp: tuple, offset: int, rid: str, unclean: bool, evidence: tuple) -> None:
    """A record the log truncated was delivered: only an unclean election can lose a delivered record."""
    if unclean:
        r.findings.allow(NAME, "lost-to-unclean-election", (*evidence, index))
    else:
        r.findings.anomaly(NAME, "truncated-delivered",
                           f"record {rid} at {tp[0]}-{tp[1]}@{offset} was delivered, but the log later truncated "
                           f"it: a share fetch returned a record that was never committed", evidence, offset=offset)


def before_latest_start(r, tp: tuple, offset: int, rec) -> bool:
    """With share.auto.offset.reset=latest: produced before the first consumer started, never
    delivered, and below the lowest offset the share-partition delivered (so before it was
    initialized at the log end)."""
    return (r.latest and rec.count == 0 and rec.produce_index < r.evidence.first_start
            and offset < r.ledger.lowest_delivered.get(tp, -1))


def settle(r, tp: tuple, o: int, rec, start: int) -> None:
    """How a record still in the ledger at the end is settled, or the anomaly it is."""
    n, evidence, findings = r.findings.n, r.evidence, r.findings
    if rec.produce_index < 0 or rec.status == GONE:
        return
    where = f"{tp[0]}-{tp[1]}@{o}"
    if rec.status >= ACCEPTED:
        n["accepted"] += 1
    elif rec.count >= r.limit:
        n["archived-at-limit"] += 1  # delivered at the limit and never accepted: archived by the broker
    elif o < start and rec.ack_seen:
        n["resolved-by-durable-state"] += 1
    elif before_latest_start(r, tp, o, rec):
        n["skipped-by-latest"] += 1
        findings.allow(NAME, "before-latest-start", (rec.produce_index, evidence.first_start))
    elif o < start and (unseen := evidence.archived_unseen(rec, *evidence.first_read_past(tp, o))):
        disagrees = evidence.state_disagrees(tp, rec, o, evidence.first_read_past(tp, o)[0])
        if disagrees is None:
            n["archived-at-limit"] += 1  # terminal per the broker; archived after acquisitions unseen
            findings.allow(NAME, *unseen)
        else:
            findings.anomaly(NAME, "skipped" if rec.count == 0 else "not-accepted",
                             f"record {rec.rid} at {where} was delivered {rec.count} times, never "
                             f"accepted, and the start offset moved past it, but {disagrees}",
                             (rec.produce_index, rec.last_index), offset=o)
    elif rec.status == MAYBE:
        n["unresolved-maybe"] += 1
    elif rec.count == 0:
        findings.anomaly(NAME, "lost", f"record {rec.rid} at {where} was acknowledged by the broker "
                         f"but never delivered", (rec.produce_index,), offset=o)
    else:
        findings.anomaly(NAME, "not-accepted", f"record {rec.rid} at {where} was delivered "
                         f"{rec.count} times but never accepted, rejected or archived",
                         (rec.produce_index, rec.last_index), offset=o)


def judge_end(r) -> None:
    """After the replay: every record produced is settled (accepted, rejected, archived at the limit,
    gone from the log), or terminal per a durable read with the evidence an allowance needs."""
    n, ledger, findings = r.findings.n, r.ledger, r.findings
    for tp, recs in ledger.recs.items():
        start = r.final_start.get(tp, (0, -1))[0]
        for o, rec in sorted(recs.items()):
            settle(r, tp, o, rec, start)
    for (tp, o), rec in sorted(ledger.reproduced.items()):  # written again at a settled offset
        settle(r, tp, o, rec, r.final_start.get(tp, (0, -1))[0])
    for rid, (produce_index, (topic, partition)) in ledger.unplaced.items():
        if rid not in ledger.truncated_ids:
            findings.anomaly(NAME, "lost", f"record {rid} was acknowledged by the broker to {topic}-{partition} "
                             f"(offset not reported) but never delivered", (produce_index,))
    for (topic, partition, offset, rid), (produce_index, _) in ledger.overwritten.items():
        findings.anomaly(NAME, "offset-reused",
                         f"record {rid} at {topic}-{partition}@{offset} was acknowledged by the broker, but another "
                         f"record was later acknowledged at the same offset and the history shows no truncation",
                         (produce_index,), offset=offset)
    # below the watermark: settled; those settled as GONE (deleted, aborted) were not accepted
    n["accepted"] += max(0, sum(ledger.watermark.values()) - n["gone-passed"])
