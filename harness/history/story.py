"""The story of one record: the operations of a history that touched it, as short lines.

A failed verdict prints it under its first anomalies, so a failure in CI (whose run directory
is gone with the clone) can be read from the log alone: the produce, every delivery, every
acknowledgement and its result, the crashes of the consumers that held the record, the faults
around it and the durable reads of its partition."""

from __future__ import annotations

import json
import re
from typing import Any, Iterable, Sequence

from harness.history.schema import Op

#: How an anomaly message names a record: `<topic>-<partition>@<offset>`.
RECORD_IN_MESSAGE = re.compile(r"([A-Za-z0-9._-]+)-(\d+)@(\d+)")
MAX_LINES = 40


def record_named(message: str) -> tuple[str, int, int] | None:
    """The (topic, partition, offset) an anomaly message names, if it names one."""
    m = RECORD_IN_MESSAGE.search(message)
    return (m.group(1), int(m.group(2)), int(m.group(3))) if m else None


def _names(records: Iterable[dict[str, Any]], key: tuple[str, int, int]) -> list[dict[str, Any]]:
    return [r for r in records if (r.get("topic"), r.get("partition"), r.get("offset")) == key]


def story(ops: Sequence[Op], key: tuple[str, int, int], max_lines: int = MAX_LINES) -> list[str]:
    """Lines `#index +seconds process type f: detail` of the operations that touched record `key`."""
    t0 = ops[0].time if ops else 0
    lines = []
    for op, detail in story_ops(ops, key):
        text = detail if isinstance(detail, str) else json.dumps(detail, separators=(",", ":"), default=str)
        lines.append(f"#{op.index} +{(op.time - t0) / 1e9:.3f}s {op.process} {op.type} {op.f}: {text[:240]}")
    if len(lines) > max_lines:
        cut = len(lines) - max_lines
        lines = lines[:max_lines // 2] + [f"... {cut} more ..."] + lines[-(max_lines // 2):]
    return lines


def story_ops(ops: Sequence[Op], key: tuple[str, int, int]) -> list[tuple[Op, Any]]:
    """(operation, what of it concerns the record) for every operation that touched record `key`: its
    produce (and every produce of an id delivered there), deliveries, acknowledgements and their
    results, the crashes and closes of its holders, the faults while it was held, drains and the
    durable reads of its partition."""
    topic, partition, offset = key
    holders: set[str] = set()  # processes the record was delivered to or acknowledged by
    acked_by: set[str] = set()  # processes with an acknowledgement of it awaiting a commit result
    found: list[tuple[Op, Any]] = []
    # the ids delivered at the record: their produces are part of its story wherever the producer said
    # they went (an id delivered at an offset its produce did not report is named a phantom)
    ids = {r.get("id") for op in ops if op.f == "poll" and op.type == "ok" and isinstance(op.value, dict)
           for r in _names(op.value.get("records", ()), key)} - {None}

    def line(op: Op, detail: Any) -> None:
        found.append((op, detail))

    for op in ops:
        v = op.value if isinstance(op.value, dict) else {}
        if op.f == "produce" and (v.get("id") in ids or op.type != "invoke" and (v.get("topic"), v.get("partition"),
                                                                                 v.get("offset")) == key):
            line(op, v)
        elif op.f == "poll" and op.type == "ok":
            mine = _names(v.get("records", ()), key)
            if mine:
                holders.add(op.process)
                line(op, {**mine[0], "batch": len(v.get("records", ()))})
        elif op.f == "acknowledge" and op.type == "ok":
            mine = _names(v.get("records", ()), key)
            if mine:
                holders.add(op.process)
                acked_by.add(op.process)
                line(op, mine[0])
        elif op.f == "callback" and op.process in holders:
            for part in v.get("partitions", ()):
                if (part.get("topic"), part.get("partition")) == (topic, partition) and offset in part.get("offsets", ()):
                    line(op, {"offset": offset, "error": v.get("error")})
        elif op.f == "commit" and op.process in acked_by and op.type != "invoke":
            acked_by.discard(op.process)
            results = [r for r in v.get("results", ()) if (r.get("topic"), r.get("partition")) == (topic, partition)]
            line(op, {"results": results} if op.type == "ok" else v)
        elif op.f == "crash" and v.get("process") in holders:
            line(op, v)
        elif op.f == "close" and op.process in holders and op.type != "invoke":
            line(op, v)
        elif op.f in ("fault-start", "fault-heal") and op.type == "ok" and holders:
            line(op, {k: v.get(k) for k in ("id", "targets") if k in v})
        elif op.f in ("drain",) and op.type != "invoke":
            line(op, v)
        elif op.f == "share-offsets" and op.type == "ok" and (v.get("topic"), v.get("partition")) == (topic, partition):
            line(op, v)
        elif op.f == "share-offsets" and op.type == "ok":
            for p in v.get("partitions", ()) or ():
                if (p.get("topic"), p.get("partition")) == (topic, partition):
                    line(op, p)
        elif op.f == "share-state" and op.type == "ok":
            for p in v.get("partitions", ()) or ([v] if "batches" in v else ()):
                if (p.get("topic"), p.get("partition")) == (topic, partition):
                    held = [b for b in p.get("batches", ()) if b[0] <= offset <= b[1]]
                    line(op, {"start_offset": p.get("start_offset"), "batch": held[0] if held else None})
    return found
