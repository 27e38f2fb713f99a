"""The history schema, version 1: operations (JSON lines) and events (Parquet rows).

The full table (field, type, meaning, values by `f`) is in `docs/history.md`;
this module is its executable form. Version 0 was the foundation's format (no
`config` operation); it is still read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

SCHEMA_VERSION = 1
#: Every operation name a version-1 history may hold (see docs/history.md).
KNOWN_F = frozenset({
    "config", "produce", "start", "poll", "acknowledge", "commit", "callback", "close", "crash", "error",
    "fault-start", "fault-heal", "truncated", "share-offsets", "reset-offsets", "drain", "produce-flush",
    "recover", "hold", "share-state", "records-deleted", "transaction",
    "records-compacted",
})
ACK_TYPES = ("ACCEPT", "RELEASE", "REJECT", "RENEW")
TYPES = ("invoke", "ok", "fail", "info")


@dataclass(frozen=True)
class Op:
    """One history operation."""

    index: int
    time: int
    process: str
    type: str
    f: str
    value: Any = field(default=None)

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "time": self.time, "process": self.process,
                "type": self.type, "f": self.f, "value": self.value}

    @staticmethod
    def from_json(data: dict[str, Any]) -> "Op":
        """Parse one line; a missing field or a bad `type` raises ValueError naming it."""
        for key in ("index", "time", "process", "type", "f"):
            if key not in data:
                raise ValueError(f"missing field {key!r}")
        if data["type"] not in TYPES:
            raise ValueError(f"bad type {data['type']!r} (expected one of {', '.join(TYPES)})")
        op = Op(_int(data["index"], "index"), _int(data["time"], "time"), str(data["process"]), data["type"],
                str(data["f"]), data.get("value"))
        validate_value(op)
        return op


def _int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"field {name} must be an integer, got {value!r}")
    return value


def _fields(obj: Any, where: str, ints: tuple[str, ...] = (), strs: tuple[str, ...] = (),
            present: tuple[str, ...] = ()) -> None:
    if not isinstance(obj, dict):
        raise ValueError(f"field {where} must be an object, got {obj!r}")
    for key in ints + strs + present:
        if key not in obj:
            raise ValueError(f"missing field {where}.{key}")
    for key in ints:
        _int(obj[key], f"{where}.{key}")
    for key in strs:
        if not isinstance(obj[key], str):
            raise ValueError(f"field {where}.{key} must be a string, got {obj[key]!r}")


def _list(obj: dict[str, Any], key: str, where: str) -> list[Any]:
    items = obj.get(key)
    if not isinstance(items, list):
        raise ValueError(f"field {where}.{key} must be a list, got {items!r}")
    return items


def validate_value(op: Op) -> None:
    """Check the fields the checkers read (docs/history.md); raise ValueError naming the first bad one."""
    v, f, t = op.value, op.f, op.type
    if f == "produce":
        _fields(v, "value", strs=("id", "topic"), ints=("partition", "offset") if t == "ok" else ())
    elif f == "poll" and t == "ok":
        _fields(v, "value")
        for i, r in enumerate(_list(v, "records", "value")):
            _fields(r, f"value.records[{i}]", ints=("partition", "offset", "delivery_count"), strs=("id", "topic"))
    elif f == "acknowledge" and t == "ok":
        _fields(v, "value")
        for i, r in enumerate(_list(v, "records", "value")):
            _fields(r, f"value.records[{i}]", ints=("partition", "offset"), strs=("topic", "type"))
            if r["type"] not in ACK_TYPES:
                raise ValueError(f"field value.records[{i}].type must be one of {', '.join(ACK_TYPES)}, got {r['type']!r}")
    elif f == "commit" and t == "ok":
        _fields(v, "value")
        for i, r in enumerate(_list(v, "results", "value")):
            _fields(r, f"value.results[{i}]", ints=("partition",), strs=("topic",), present=("error",))
    elif f == "callback":
        _fields(v, "value", present=("error",))
        for i, p in enumerate(_list(v, "partitions", "value")):
            _fields(p, f"value.partitions[{i}]", ints=("partition",), strs=("topic",))
            for j, o in enumerate(_list(p, "offsets", f"value.partitions[{i}]")):
                _int(o, f"value.partitions[{i}].offsets[{j}]")
    elif f == "share-offsets" and t == "ok":
        _fields(v, "value")
        for i, p in enumerate(_list(v, "partitions", "value")):
            _fields(p, f"value.partitions[{i}]", ints=("partition", "start_offset"), strs=("topic",))
    elif f == "reset-offsets" and t == "ok":
        _fields(v, "value", strs=("topic",))
        for i, p in enumerate(_list(v, "partitions", "value")):
            _fields(p, f"value.partitions[{i}]", ints=("partition", "offset"))
    elif f == "transaction" and t == "ok":
        _fields(v, "value", strs=("topic", "outcome"))
        if v["outcome"] not in ("commit", "abort"):
            raise ValueError(f"value.outcome must be commit or abort, got {v['outcome']!r}")
        for i, rid in enumerate(_list(v, "ids", "value")):
            if not isinstance(rid, str):
                raise ValueError(f"value.ids[{i}] must be a string")
    elif f == "records-deleted" and t == "ok":
        _fields(v, "value", ints=("partition", "offset"), strs=("topic",))
    elif f == "records-compacted" and t == "ok":
        _fields(v, "value", ints=("partition",), strs=("topic",))
        for i, o in enumerate(_list(v, "offsets", "value")):
            if not isinstance(o, int) or isinstance(o, bool):
                raise ValueError(f"value.offsets[{i}] must be an integer")
    elif f == "config":
        _fields(v, "value", ints=("schema_version",))
    elif f == "truncated" and t == "ok":
        _fields(v, "value", strs=("topic",), ints=("partition",))
        for i, r in enumerate(_list(v, "records", "value")):
            _fields(r, f"value.records[{i}]", ints=("offset",), strs=("id",))
    elif f == "crash":
        _fields(v, "value", strs=("process",))
