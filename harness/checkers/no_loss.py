"""No loss (at-least-once): every acknowledged produce is delivered and accepted by the end.

A record counts as accepted when some consumer (1) received it in a poll,
(2) acknowledged it with ACCEPT, and (3) a later commit by the same consumer
returned success for its share-partition, before that consumer polled again.
A commit whose outcome is unknown (`info`) or that failed for the partition
does not count. Produces that failed or whose outcome is unknown are not
required (their records may or may not exist), but a delivered record that
no produce ever created is an anomaly.
"""

from __future__ import annotations

from typing import Sequence

from harness.checkers import Anomaly, Result
from harness.history.schema import Op

Key = tuple[str, int, int]  # topic, partition, offset


def accepted_records(history: Sequence[Op]) -> dict[Key, int]:
    """(topic, partition, offset) -> index of the commit that made its ACCEPT durable."""
    pending: dict[str, dict[Key, str]] = {}  # process -> acks awaiting a commit result
    accepted: dict[Key, int] = {}
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


def check(history: Sequence[Op]) -> Result:
    produced: dict[Key, Op] = {}
    for op in history:
        if op.f == "produce" and op.type == "ok":
            produced[(op.value["topic"], op.value["partition"], op.value["offset"])] = op
    delivered: dict[Key, Op] = {}
    attempted_ids = {op.value["id"] for op in history if op.f == "produce" and op.type == "invoke"}
    anomalies: list[Anomaly] = []
    for op in history:
        if op.f == "poll" and op.type == "ok":
            for r in op.value["records"]:
                key = (r["topic"], r["partition"], r["offset"])
                delivered.setdefault(key, op)
                if r["id"] not in attempted_ids:
                    anomalies.append(Anomaly("phantom", f"delivered record {r['id']!r} at {key} was never produced",
                                             (op.index,)))
    accepted = accepted_records(history)
    for key, prod in sorted(produced.items()):
        if key in accepted:
            continue
        if key in delivered:
            anomalies.append(Anomaly("not-accepted", f"record {prod.value['id']} at {key} was delivered but never accepted",
                                     (prod.index, delivered[key].index)))
        else:
            anomalies.append(Anomaly("lost", f"record {prod.value['id']} at {key} was acknowledged by the broker but never delivered",
                                     (prod.index,)))
    stats = {"produced_ok": len(produced), "delivered": len(delivered),
             "accepted": sum(1 for k in produced if k in accepted)}
    if not produced and not anomalies:
        return Result("no-loss", "unknown", stats=stats, reason="no produce was acknowledged: nothing to check")
    return Result("no-loss", not anomalies, tuple(anomalies), stats)
