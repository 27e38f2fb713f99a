"""Ordering within a batch: in one poll, the offsets of each share-partition strictly increase.

KIP-932: records of one share-partition in a batch are returned in increasing
offset order (redeliveries may come out of order across batches; that is allowed).
"""

from __future__ import annotations

from typing import Sequence

from harness.checkers import Anomaly, Result
from harness.history.schema import Op


def check(history: Sequence[Op]) -> Result:
    anomalies: list[Anomaly] = []
    batches = 0
    for op in history:
        if op.f != "poll" or op.type != "ok" or not op.value["records"]:
            continue
        batches += 1
        last: dict[tuple[str, int], int] = {}
        for r in op.value["records"]:
            tp = (r["topic"], r["partition"])
            if tp in last and r["offset"] <= last[tp]:
                anomalies.append(Anomaly(
                    "batch-order", f"poll by {op.process}: {tp[0]}-{tp[1]} offset {r['offset']} after {last[tp]}",
                    (op.index,), {"topic": tp[0], "partition": tp[1], "previous": last[tp], "offset": r["offset"]}))
            last[tp] = r["offset"]
    if batches == 0:
        return Result("batch-order", "unknown", stats={"batches": 0}, reason="no poll delivered records: nothing to check")
    return Result("batch-order", not anomalies, tuple(anomalies), {"batches": batches})
