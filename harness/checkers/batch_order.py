"""Ordering within a batch: in one poll, the offsets of each share-partition
strictly increase (KIP-932: records of a share-partition in a batch are in
increasing offset order; redeliveries may be out of order across batches).
Anomaly: `batch-order`.
"""

from __future__ import annotations

from harness.checkers.judge import POLLS, Judge
NAME = "batch-order"


class Ordering:
    """Reads each delivered record's row in history order (one poll's rows are consecutive)."""

    def __init__(self, findings) -> None:
        self.findings = findings
        self.last_batch = -1
        self.batch_last: dict[tuple, int] = {}

    def row(self, index: int, process: str, tp: tuple, offset: int) -> None:
        if index != self.last_batch:
            self.last_batch, self.batch_last = index, {}
            self.findings.n["batches"] += 1
        prev = self.batch_last.get(tp)
        if prev is not None and offset <= prev:
            self.findings.anomaly(NAME, "batch-order",
                                  f"poll by {process}: {tp[0]}-{tp[1]} offset {offset} after {prev} in one batch",
                                  (index,), topic=tp[0], partition=tp[1], previous=prev, offset=offset)
        self.batch_last[tp] = offset


class BatchOrder(Judge):
    """Judged by the replay's model (`Ordering.row` at each delivered record's row)."""

    NAME = NAME
    SENTENCE = ("KIP-932 \u00a7Ordering: records of a share-partition in a batch are in increasing offset order "
                "(redeliveries may be out of order across batches)")

    NEEDS = POLLS

    @staticmethod
    def stats(n, config, found):
        return {"batches": n["batches"]}
