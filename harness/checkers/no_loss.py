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
