"""Writing a history while a run goes on (thread-safe, line-buffered), and reading it back."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

from harness.errors import HarnessError, first_line
from harness.history.schema import Op


class HistoryWriter:
    """Append-only JSONL history; assigns `index` and monotonic `time` to each operation.

    Every op is flushed as it is written, so a history survives a crash of the
    harness up to the last complete line. Must not reorder operations.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file = open(path, "a", buffering=1, encoding="utf-8")
        self._lock = threading.Lock()
        self._t0 = time.monotonic_ns()
        self._next = 0
        self._ops: list[Op] = []

    def append(self, process: str, type_: str, f: str, value: Any = None) -> Op:
        with self._lock:
            op = Op(self._next, time.monotonic_ns() - self._t0, process, type_, f, value)
            self._next += 1
            self._ops.append(op)
            self._file.write(json.dumps(op.to_json(), separators=(",", ":")) + "\n")
        return op

    def now_ns(self) -> int:
        """The history's clock now (the `time` the next operation would get)."""
        return time.monotonic_ns() - self._t0

    def ops(self) -> list[Op]:
        """A snapshot of the operations written so far."""
        with self._lock:
            return list(self._ops)

    def ops_since(self, index: int) -> list[Op]:
        """The operations written from `index` on (a reader following the history as it grows)."""
        with self._lock:
            return self._ops[index:]

    def close(self) -> None:
        with self._lock:
            if not self._file.closed:
                self._file.close()


def read_history(path: Path) -> list[Op]:
    """Read a JSONL history; a malformed line is a one-line error naming file and line."""
    if not path.is_file():
        raise HarnessError(f"history file {path} does not exist or is not a file: pass the history.jsonl of a run")
    ops: list[Op] = []
    with open(path, "rb") as handle:
        for lineno, raw in enumerate(iter(lambda: handle.readline(MAX_LINE_BYTES + 1), b""), 1):
            if len(raw) > MAX_LINE_BYTES:  # bounded memory: a line is one operation, never this big
                raise HarnessError(f"malformed history {path} line {lineno}: longer than {MAX_LINE_BYTES >> 20} MiB "
                                   f"(not a share-harness history line): pass the history.jsonl of a run")
            try:
                line = raw.decode("utf-8")
                if not line.strip():
                    continue
                ops.append(Op.from_json(json.loads(line)))
            except (ValueError, TypeError, AttributeError, KeyError, RecursionError) as exc:
                # UnicodeDecodeError is a ValueError; RecursionError: JSON nested too deep
                raise HarnessError(f"malformed history {path} line {lineno}: {first_line(exc)}") from None
    return ops


#: The longest line a history may hold (a share-state read of many partitions is the longest op).
MAX_LINE_BYTES = 256 << 20
