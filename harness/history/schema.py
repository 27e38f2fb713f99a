"""The history schema (version 0, the foundation's first version).

Every line of `history.jsonl` is one operation:

| field     | type            | meaning                                                          |
|-----------|-----------------|------------------------------------------------------------------|
| `index`   | int             | position in the history, 0-based, strictly increasing            |
| `time`    | int             | nanoseconds since the run started (monotonic clock)              |
| `process` | str             | who did it: `producer-0`, `consumer-2`, `nemesis`, `harness`     |
| `type`    | str             | `invoke`, `ok`, `fail`, or `info` (outcome unknown)              |
| `f`       | str             | the operation: `produce`, `poll`, `acknowledge`, `commit`, `close`, `start`, `error`, `callback` |
| `value`   | object or null  | the operation's data (below)                                     |

Values by `f`:
- `produce`: invoke `{"id", "topic", "partition"?}`; ok adds `partition`, `offset`; fail adds `error`.
- `poll` (ok): `{"records": [{"id","topic","partition","offset","delivery_count"}]}`; one poll = one batch.
- `acknowledge` (ok): `{"records": [{"topic","partition","offset","type"}]}` with type ACCEPT|RELEASE|REJECT|RENEW.
- `commit`: invoke `{}`; ok `{"results": [{"topic","partition","error": null | str}]}`; info when it timed out.
- `callback` (ok): `{"partitions": [{"topic","partition","offsets": [...]}], "error": null | str}`.
- `start` (ok): `{"member_id"?, "client", "client_version", "behaviour"}`; `close`: invoke then ok/fail/info.
- `error` (info): `{"code", "message"}` from the client library.
An `info` operation never counts as success or failure: checkers treat it as unknown.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

SCHEMA_VERSION = 0
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
        return Op(int(data["index"]), int(data["time"]), str(data["process"]), data["type"],
                  str(data["f"]), data.get("value"))
