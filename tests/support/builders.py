"""Hand-written histories for the oracle's unit tests: `H` builds them the way the drivers and
`HistoryWriter` write them (indexes in order, times in ms steps); every history starts with the run's
`config` operation (limit 3, lock 1000 ms, tolerance 0). `base()` is a small valid history; `kinds` the
anomaly kinds of a result; `ALL` every property's checker."""

from __future__ import annotations

from typing import Any

from harness.checkers import (Result, ack_results, batch_order, delivery_count, durable_state, exclusive, no_loss,
                              no_redelivery)
from harness.checkers.registry import OWN
from harness.history.schema import Op

T = "t"
MS = 1_000_000
ALL = [(m.NAME, OWN[m.NAME]) for m in (no_loss, delivery_count, batch_order, exclusive, no_redelivery, ack_results,
                                   durable_state)]


class H:
    def __init__(self, limit: int = 3, lock_ms: int = 1000, version: str = "4.3", config: bool = True,
                 reset: str = "earliest") -> None:
        self.ops: list[Op] = []
        self.t = 0
        if config:
            self.add("harness", "ok", "config", {"schema_version": 1, "group": "g", "topics": [T],
                                                 "model_profile": version, "delivery_count_limit": limit,
                                                 "lock_duration_ms": lock_ms, "lock_tolerance_ms": 0,
                                                 "settle_ms": 0, "auto_offset_reset": reset})

    def add(self, process: str, type_: str, f: str, value: Any = None, dt_ms: int = 1) -> Op:
        self.t += dt_ms * MS
        op = Op(len(self.ops), self.t, process, type_, f, value)
        self.ops.append(op)
        return op

    def produce(self, rid: str, p: int, o: int) -> Op:
        self.add("producer-0", "invoke", "produce", {"id": rid, "topic": T, "partition": p})
        return self.add("producer-0", "ok", "produce", {"id": rid, "topic": T, "partition": p, "offset": o})

    def poll(self, c: str, recs: list[tuple], dt_ms: int = 1) -> Op:
        """recs: (id, partition, offset[, delivery count])."""
        return self.add(c, "ok", "poll", {"records": [
            {"id": r[0], "topic": T, "partition": r[1], "offset": r[2], "delivery_count": r[3] if len(r) > 3 else 1}
            for r in recs]}, dt_ms)

    def ack(self, c: str, keys: list[tuple[int, int]], type_: str = "ACCEPT") -> Op:
        return self.add(c, "ok", "acknowledge", {"records": [
            {"topic": T, "partition": p, "offset": o, "type": type_} for p, o in keys]})

    def commit(self, c: str, parts: dict[int, str | None], callback: bool = True,
               offsets: dict[int, list[int]] | None = None) -> Op:
        self.add(c, "invoke", "commit", {})
        if callback:
            for p, err in parts.items():
                self.add(c, "ok", "callback", {"partitions": [{"topic": T, "partition": p,
                                                               "offsets": (offsets or {}).get(p, [])}], "error": err})
        return self.add(c, "ok", "commit", {"results": [{"topic": T, "partition": p, "error": e}
                                                         for p, e in sorted(parts.items())]})

    def consume(self, c: str, recs: list[tuple], ack: str = "ACCEPT", error: str | None = None) -> Op:
        """poll, acknowledge all with `ack`, commit with a callback; returns the commit."""
        self.poll(c, recs)
        keys = [(r[1], r[2]) for r in recs]
        self.ack(c, keys, ack)
        offsets: dict[int, list[int]] = {}
        for p, o in keys:
            offsets.setdefault(p, []).append(o)
        return self.commit(c, {p: error for p in offsets}, offsets=offsets)

    def read_start(self, starts: dict[int, int]) -> Op:
        self.add("admin", "invoke", "share-offsets", {"group": "g"})
        return self.add("admin", "ok", "share-offsets", {"group": "g", "partitions": [
            {"topic": T, "partition": p, "start_offset": s} for p, s in sorted(starts.items())]})

    def read_state(self, parts: dict[int, tuple[int, list[list[int]]]]) -> Op:
        """The decoded `__share_group_state` of each partition: (start offset, [[first, last, state, count]])."""
        self.add("admin", "invoke", "share-state", {"group": "g"})
        return self.add("admin", "ok", "share-state", {"group": "g", "partitions": [
            {"topic": T, "partition": p, "start_offset": s, "batches": b} for p, (s, b) in sorted(parts.items())]})


def kinds(result: Result) -> list[str]:
    return [a.kind for a in result.anomalies]


def base() -> H:
    """Two records on partition 0, one on partition 1, all consumed and accepted, start offsets read."""
    h = H()
    h.produce("a", 0, 0)
    h.produce("b", 0, 1)
    h.produce("c", 1, 0)
    h.consume("consumer-0", [("a", 0, 0), ("c", 1, 0), ("b", 0, 1)])
    h.read_start({0: 2, 1: 1})
    return h
