"""The history schema, version 1: operations (JSON lines) and events (Parquet rows).

The full table (field, type, meaning, values by `f`) is in `docs/history.md`;
this module is its executable form. Version 0 was the foundation's format (no
`config` operation); it is still read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable

from harness.errors import HarnessError
from harness.model.profiles import model_profile

SCHEMA_VERSION = 1
#: Every operation name a version-1 history may hold (see docs/history.md).
KNOWN_F = frozenset({
    "config", "produce", "start", "poll", "acknowledge", "commit", "callback", "close", "crash", "error",
    "fault-start", "fault-heal", "truncated", "share-offsets", "reset-offsets", "drain", "produce-flush",
    "recover", "hold", "share-state", "records-deleted", "transaction",
    "records-compacted", "dead-letters", "release", "features", "partitions-added", "cross-check",
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
            raise ValueError(f"bad type {_short(data['type'])} (expected one of {', '.join(TYPES)})")
        op = Op(_int(data["index"], "index"), _int(data["time"], "time"), str(data["process"]), data["type"],
                str(data["f"]), data.get("value"))
        validate_value(op)
        return op


INT64 = (-(1 << 63), (1 << 63) - 1)
INT32 = (-(1 << 31), (1 << 31) - 1)
#: Fields stored as 32-bit integers in Parquet (docs/history.md, "Events").
_INT32_FIELDS = ("partition", "delivery_count")


def _int(value: Any, name: str) -> int:
    """`value` as an integer that fits its Parquet column (64 bits; 32 for partitions and counts)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"field {name} must be an integer, got {_short(value)}")
    low, high = INT32 if name.rsplit(".", 1)[-1] in _INT32_FIELDS else INT64
    if not low <= value <= high:
        raise ValueError(f"field {name} is out of range: {_short(value)} does not fit "
                         f"{'32' if high == INT32[1] else '64'} signed bits")
    if value < 0 and _PARTITION.search(name):
        raise ValueError(f"field {name} is a negative partition ({value}): Kafka numbers partitions from 0")
    return value


#: A field naming a partition (`partition`, `value.partitions[2]`): never negative (in the events, -1 is a
#: missing partition: a negative one would read as none).
_PARTITION = re.compile(r"(^|\.)partitions?(\[\d+\])?$")


def _short(value: Any, limit: int = 60) -> str:
    """`repr(value)` cut to `limit` characters: an error line stays one short line."""
    text = repr(value) if not isinstance(value, int) or isinstance(value, bool) or abs(value) < 10 ** 30 \
        else f"an integer of {len(str(abs(value)))} digits"
    return text if len(text) <= limit else text[:limit] + "..."


def _fields(obj: Any, where: str, ints: tuple[str, ...] = (), strs: tuple[str, ...] = (),
            present: tuple[str, ...] = ()) -> None:
    if not isinstance(obj, dict):
        raise ValueError(f"field {where} must be an object, got {_short(obj)}")
    for key in ints + strs + present:
        if key not in obj:
            raise ValueError(f"missing field {where}.{key}")
    for key in ints:
        _int(obj[key], f"{where}.{key}")
    for key in strs:
        if not isinstance(obj[key], str):
            raise ValueError(f"field {where}.{key} must be a string, got {_short(obj[key])}")


def _list(obj: dict[str, Any], key: str, where: str) -> list[Any]:
    items = obj.get(key)
    if not isinstance(items, list):
        raise ValueError(f"field {where}.{key} must be a list, got {_short(items)}")
    return items


def validate_state_batches(batches: Any, where: str) -> None:
    """`__share_group_state` batches: a list of [first offset, last offset, state, delivery count]
    integers, 0 <= first <= last (a range, never expanded offset by offset)."""
    if not isinstance(batches, list):
        raise ValueError(f"field {where} must be a list, got {_short(batches)}")
    for j, batch in enumerate(batches):
        at = f"{where}[{j}]"
        if not isinstance(batch, list) or len(batch) != 4:
            raise ValueError(f"field {at} must be [first, last, state, delivery_count], got {_short(batch)}")
        first, last = (_int(x, f"{at}.{name}") for x, name in zip(batch[:2], ("first", "last")))
        _int(batch[2], f"{at}.state")
        _int(batch[3], f"{at}.delivery_count")
        if not 0 <= first <= last:
            raise ValueError(f"field {at} must have 0 <= first <= last, got [{first}, {last}]")


def validate_state_partition(p: Any, where: str, start: Any = None) -> None:
    """One share-partition of a `share-state` read (as in the op, or the value of its event row, which
    keeps `start_offset` in the offset column: pass it as `start`)."""
    if start is None:
        _fields(p, where, ints=("partition", "start_offset"), strs=("topic",))
        start = p["start_offset"]
    elif not isinstance(p, dict):
        raise ValueError(f"field {where} must be an object, got {_short(p)}")
    if start < -1:
        raise ValueError(f"field {where}.start_offset must be -1 (none) or an offset, got {start}")
    validate_state_batches(p.get("batches"), f"{where}.batches")
    if "max_start_offset" in p:
        _int(p["max_start_offset"], f"{where}.max_start_offset")
    if "writes_from" in p:
        _int(p["writes_from"], f"{where}.writes_from")
    for key in ("ever_written", "ever_archived"):
        ranges = p.get(key, [])
        if not isinstance(ranges, list):
            raise ValueError(f"field {where}.{key} must be a list of [first, last], got {_short(ranges)}")
        for j, pair in enumerate(ranges):
            if not isinstance(pair, list) or len(pair) != 2:
                raise ValueError(f"field {where}.{key}[{j}] must be [first, last], got {_short(pair)}")
            if not 0 <= _int(pair[0], f"{where}.{key}[{j}][0]") <= _int(pair[1], f"{where}.{key}[{j}][1]"):
                raise ValueError(f"field {where}.{key}[{j}] must have 0 <= first <= last, got {_short(pair)}")
    regressions = p.get("start_regressions", [])
    if not isinstance(regressions, list) or not all(
            isinstance(r, list) and len(r) == 3 and all(isinstance(x, int) and not isinstance(x, bool) for x in r)
            for r in regressions):
        raise ValueError(f"field {where}.start_regressions must be a list of [timestamp_ms, highest, start], "
                         f"got {_short(regressions)}")
    writes = p.get("writes", [])
    if not isinstance(writes, list):
        raise ValueError(f"field {where}.writes must be a list, got {_short(writes)}")
    for j, write in enumerate(writes):
        at = f"{where}.writes[{j}]"
        if not isinstance(write, list) or len(write) != 4 or not isinstance(write[0], str):
            raise ValueError(f"field {at} must be [kind, leader_epoch, start_offset, batches], got {_short(write)}")
        _int(write[1], f"{at}.leader_epoch")
        _int(write[2], f"{at}.start_offset")
        validate_state_batches(write[3], f"{at}.batches")


def validate_value(op: Op) -> None:
    """Check the fields the checkers read (docs/history.md); raise ValueError naming the first bad one."""
    if not isinstance(op.f, str) or op.f not in _VALUE_CHECKS:
        return  # no checker reads this op's value
    check, only_ok = _VALUE_CHECKS[op.f]
    if op.type == "ok" or not only_ok:
        check(op.value, op.type)


def _check_produce(v: Any, t: str) -> None:
    _fields(v, "value", strs=("id", "topic"), ints=("partition", "offset") if t == "ok" else ())
    if t != "ok" and v.get("partition") is not None:  # an invoke naming its partition: a row of that partition
        _int(v["partition"], "value.partition")


def _check_poll(v: Any, t: str) -> None:
    _fields(v, "value")
    for i, r in enumerate(_list(v, "records", "value")):
        _fields(r, f"value.records[{i}]", ints=("partition", "offset", "delivery_count"), strs=("id", "topic"))


def _check_acknowledge(v: Any, t: str) -> None:
    _fields(v, "value")
    for i, r in enumerate(_list(v, "records", "value")):
        _fields(r, f"value.records[{i}]", ints=("partition", "offset"), strs=("topic", "type"))
        if r["type"] not in ACK_TYPES:
            raise ValueError(f"field value.records[{i}].type must be one of {', '.join(ACK_TYPES)}, got {_short(r['type'])}")


def _check_commit(v: Any, t: str) -> None:
    _fields(v, "value")
    for i, r in enumerate(_list(v, "results", "value")):
        _fields(r, f"value.results[{i}]", ints=("partition",), strs=("topic",), present=("error",))


def _check_callback(v: Any, t: str) -> None:
    _fields(v, "value", present=("error",))
    for i, p in enumerate(_list(v, "partitions", "value")):
        _fields(p, f"value.partitions[{i}]", ints=("partition",), strs=("topic",))
        for j, o in enumerate(_list(p, "offsets", f"value.partitions[{i}]")):
            _int(o, f"value.partitions[{i}].offsets[{j}]")


def _check_share_offsets(v: Any, t: str) -> None:
    _fields(v, "value")
    for i, p in enumerate(_list(v, "partitions", "value")):
        _fields(p, f"value.partitions[{i}]", ints=("partition", "start_offset"), strs=("topic",))


def _check_reset_offsets(v: Any, t: str) -> None:
    _fields(v, "value", strs=("topic",))
    for i, p in enumerate(_list(v, "partitions", "value")):
        _fields(p, f"value.partitions[{i}]", ints=("partition", "offset"))


def _check_transaction(v: Any, t: str) -> None:
    _fields(v, "value", strs=("topic", "outcome"))
    if v["outcome"] not in ("commit", "abort"):
        raise ValueError(f"value.outcome must be commit or abort, got {_short(v['outcome'])}")
    for i, rid in enumerate(_list(v, "ids", "value")):
        if not isinstance(rid, str):
            raise ValueError(f"value.ids[{i}] must be a string")


def _check_records_deleted(v: Any, t: str) -> None:
    _fields(v, "value", ints=("partition", "offset"), strs=("topic",))


def _check_partitions_added(v: Any, t: str) -> None:
    _fields(v, "value", ints=("partitions", "from"), strs=("topic",))


def _check_records_compacted(v: Any, t: str) -> None:
    _fields(v, "value", ints=("partition",), strs=("topic",))
    for i, o in enumerate(_list(v, "offsets", "value")):
        if not isinstance(o, int) or isinstance(o, bool):
            raise ValueError(f"value.offsets[{i}] must be an integer")


def _check_config(v: Any, t: str) -> None:
    _fields(v, "value", ints=("schema_version",))


def _check_release(v: Any, t: str) -> None:
    _fields(v, "value")
    nodes = v.get("nodes")
    if not isinstance(nodes, dict) or not nodes or not all(
            isinstance(k, str) and isinstance(x, str) for k, x in nodes.items()):
        raise ValueError(f"field value.nodes must map each node id to the release it runs, got {_short(nodes)}")
    for version in nodes.values():
        parse_version_or_fail(version, "value.nodes")


def parse_version_or_fail(version: str, where: str) -> None:
    try:
        model_profile(version)
    except HarnessError as exc:
        raise ValueError(f"field {where}: {exc}") from None


def _check_truncated(v: Any, t: str) -> None:
    _fields(v, "value", strs=("topic",), ints=("partition",))
    for i, r in enumerate(_list(v, "records", "value")):
        _fields(r, f"value.records[{i}]", ints=("offset",), strs=("id",))


def _check_crash(v: Any, t: str) -> None:
    _fields(v, "value", strs=("process",))


def _check_share_state(v: Any, t: str) -> None:
    _fields(v, "value")
    for i, p in enumerate(_list(v, "partitions", "value") if "partitions" in v else ()):
        validate_state_partition(p, f"value.partitions[{i}]")


def _check_fault(v: Any, t: str) -> None:
    _fields(v, "value")
    for key in ("effects", "processes", "targets"):  # the replay reads them (session loss, disruption windows)
        if v.get(key) is not None:
            for i, item in enumerate(_list(v, key, "value")):
                if not isinstance(item, str):
                    raise ValueError(f"field value.{key}[{i}] must be a string, got {_short(item)}")
    if v.get("partitions") is not None:
        for i, item in enumerate(_list(v, "partitions", "value")):
            _int(item, f"value.partitions[{i}]")
    if v.get("id") is not None and not isinstance(v["id"], (str, int)):
        raise ValueError(f"field value.id must be a string, got {_short(v['id'])}")


def _check_dead_letters(v: Any, t: str) -> None:
    """A read of the group's dead-letter queue (KIP-1191): each DLQ record's source, from its headers
    (None where a header was missing: the checker reports it), and its delivery count and message."""
    _fields(v, "value", strs=("dlq_topic",))
    for i, r in enumerate(_list(v, "records", "value")):
        _fields(r, f"value.records[{i}]", present=("topic", "partition", "offset", "delivery_count", "message"))
        for key in ("partition", "offset", "delivery_count"):
            if r[key] is not None:
                _int(r[key], f"value.records[{i}].{key}")
        for key in ("topic", "message", "group"):
            if r.get(key) is not None and not isinstance(r[key], str):
                raise ValueError(f"field value.records[{i}].{key} must be a string, got {_short(r[key])}")
    for i, a in enumerate(v.get("archiving", [])):
        if not isinstance(a, list) or len(a) != 4 or not isinstance(a[0], str):
            raise ValueError(f"field value.archiving[{i}] must be [topic, partition, first, last], got {_short(a)}")
        for j, name in ((1, "partition"), (2, "first"), (3, "last")):
            _int(a[j], f"value.archiving[{i}].{name}")


def validate_dead_letter_entries(v: Any, where: str) -> None:
    """The value of one share-partition's row of a `dead-letters` read: {"entries": [[offset, delivery
    count or null, message or null, group or null], ...], "archiving": [[first, last], ...]}, or the read's
    own row (no entries)."""
    if not isinstance(v, dict):
        raise ValueError(f"field {where} must be an object, got {_short(v)}")
    for j, pair in enumerate(v.get("archiving", [])):
        if not isinstance(pair, list) or len(pair) != 2:
            raise ValueError(f"field {where}.archiving[{j}] must be [first, last], got {_short(pair)}")
        _int(pair[0], f"{where}.archiving[{j}][0]")
        _int(pair[1], f"{where}.archiving[{j}][1]")
    for j, entry in enumerate(v.get("entries", [])):
        at = f"{where}.entries[{j}]"
        if not isinstance(entry, list) or len(entry) != 4:
            raise ValueError(f"field {at} must be [offset, delivery_count, message, group], got {_short(entry)}")
        _int(entry[0], f"{at}.offset")
        if entry[1] is not None:
            _int(entry[1], f"{at}.delivery_count")
        if any(x is not None and not isinstance(x, str) for x in entry[2:]):
            raise ValueError(f"field {at} must carry its message and group as strings, got {_short(entry)}")


#: `f` -> (the check of an op's value, whether only `ok` ops are checked); other ops' values are not read.
_VALUE_CHECKS: dict[str, tuple[Callable[[Any, str], None], bool]] = {
    "produce": (_check_produce, False),
    "poll": (_check_poll, True),
    "acknowledge": (_check_acknowledge, True),
    "commit": (_check_commit, True),
    "callback": (_check_callback, False),
    "share-offsets": (_check_share_offsets, True),
    "reset-offsets": (_check_reset_offsets, True),
    "transaction": (_check_transaction, True),
    "records-deleted": (_check_records_deleted, True),
    "partitions-added": (_check_partitions_added, True),
    "records-compacted": (_check_records_compacted, True),
    "config": (_check_config, False),
    "truncated": (_check_truncated, True),
    "crash": (_check_crash, False),
    "share-state": (_check_share_state, True),
    "fault-start": (_check_fault, False),
    "fault-heal": (_check_fault, False),
    "dead-letters": (_check_dead_letters, True),
    "release": (_check_release, True),
}


def validate_event_value(row: dict[str, Any], flat: bool) -> None:
    """The value of one event row (a Parquet history's, as a dict of its columns) whose op the replay reads
    the value of. `flat`: the row is one share-partition's part of an `ok` op (`share-state`, `truncated`,
    `reset-offsets`); else the value is the op's own, checked as `validate_value` checks a .jsonl op.
    Raises ValueError naming the field."""
    import json
    value = row["value"]
    try:
        v = None if value is None else json.loads(value)
    except (ValueError, RecursionError):
        raise ValueError(f"field value is not JSON: {_short(value)}") from None
    f = row["f"]
    if f == "dead-letters" and row["type"] == "ok":  # the read's own row, or a share-partition's entries
        validate_dead_letter_entries(v, "value")
        return
    if not flat:
        validate_value(Op(_int(row["index"], "index"), _int(row["time"], "time"), str(row["process"]),
                          str(row["type"]), f, v))
    elif f == "share-state":
        validate_state_partition(v, "value", start=-1 if row["offset"] is None else _int(row["offset"], "offset"))
    elif f == "truncated":
        if v is not None and not isinstance(v, dict):
            raise ValueError(f"field value must be an object, got {_short(v)}")
    elif f == "reset-offsets" and v is not None:
        _fields(v, "value")
        for i, r in enumerate(_list(v, "records", "value")):
            _fields(r, f"value.records[{i}]", ints=("offset",), strs=("id",))
