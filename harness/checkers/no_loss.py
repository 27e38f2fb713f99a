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


def accepted_records(history: Sequence[Op]) -> dict[tuple[str, int, int], int]:
    """(topic, partition, offset) -> index of the commit that made its ACCEPT durable.

    A cheap forward pass the runner polls while draining (is everything accepted yet?);
    the verdict itself comes from `check`.
    """
    pending: dict[str, dict[tuple[str, int, int], str]] = {}  # process -> acks awaiting a commit result
    accepted: dict[tuple[str, int, int], int] = {}
    for op in history:
        if op.type != "ok" and not (op.f == "commit" and op.type in ("info", "fail")):
            continue
        if op.f == "poll":
            pending[op.process] = {}
        elif op.f == "acknowledge":
            for r in op.value["records"]:
                pending.setdefault(op.process, {})[(r["topic"], r["partition"], r["offset"])] = r["type"]
        elif op.f == "commit":
            acks = pending.pop(op.process, {})
            if op.type != "ok":
                continue
            ok_parts = {(r["topic"], r["partition"]) for r in op.value["results"] if r.get("error") is None}
            for key, ack_type in acks.items():
                if ack_type == "ACCEPT" and key[:2] in ok_parts:
                    accepted.setdefault(key, op.index)
    return accepted


def settled_records(history: Sequence[Op]) -> set[tuple[str, int, int]]:
    """Records accepted for sure, plus those whose ACCEPT went out with an unknown outcome (its commit
    timed out, or its consumer crashed holding it): only the broker knows, and the durable read after
    the drain asks it. The drain waits for this set, not for certainty it cannot get by waiting."""
    settled = set(accepted_records(history))
    pending: dict[str, set[tuple[str, int, int]]] = {}
    for op in history:
        if op.f == "acknowledge" and op.type == "ok":
            pending.setdefault(op.process, set()).update(
                (r["topic"], r["partition"], r["offset"]) for r in op.value["records"] if r["type"] == "ACCEPT")
        elif op.f == "commit" and op.type in ("ok", "fail", "info"):
            acks = pending.pop(op.process, set())
            if op.type != "ok":
                settled |= acks
        elif op.f == "crash" or (op.f == "close" and op.type == "info"):
            settled |= pending.pop(op.value.get("process", op.process) if op.f == "crash" else op.process, set())
    return settled
