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


def open_history(path: Path, what: str = "history file"):
    """`path` opened for reading in binary, if it is a regular file: a fifo, a device (a link to
    `/dev/zero`) or a directory is one line naming it, never a read that blocks or never ends. Type only:
    a history may be big (its lines are bounded by `MAX_LINE_BYTES` as they are read)."""
    import os
    import stat
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)  # a fifo without a writer opens at once
    except FileNotFoundError:
        raise HarnessError(f"{what} {path} does not exist or is not a file: pass a run directory or the history "
                           f"file of a run") from None
    except OSError as exc:
        raise HarnessError(f"{what} {path} cannot be read ({exc.strerror}): check its permissions") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise HarnessError(f"{what} {path} is not a regular file (a fifo, a device or a directory): pass "
                               f"a run directory or the history file of a run")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def require_regular(path: Path, what: str = "history file") -> None:
    """Raise the one line of `open_history` unless `path` is a regular file (for readers that open the path
    themselves: pyarrow)."""
    open_history(path, what).close()


def read_history(path: Path) -> list[Op]:
    """Read a JSONL history; a malformed line is a one-line error naming file and line. A last line cut
    short (a run that crashed while writing it) is malformed here too: `read_history_prefix` reads up to
    it instead."""
    ops, partial = read_history_prefix(path)
    if partial is not None:
        raise HarnessError(partial.malformed)
    return ops


class PartialTail:
    """The last line of a history, cut short: no newline after it and not JSON (the writer flushes whole
    lines, so only a crash in the middle of the last write leaves one)."""

    def __init__(self, path: Path, lineno: int, error: str) -> None:
        self.path, self.lineno = path, lineno
        self.malformed = f"malformed history {path} line {lineno}: {error}"

    @property
    def reason(self) -> str:
        """Why a check of the lines before it is unknown, not a pass."""
        return (f"the history {self.path} ends in a line cut short (line {self.lineno}: the run stopped while "
                f"writing it): only the {self.lineno - 1} lines before it were checked, the run is incomplete")


def read_history_prefix(path: Path, whole_run: bool = False) -> tuple[list[Op], PartialTail | None]:
    """A JSONL history up to its last complete line: (ops, None), or (the ops before it, PartialTail) when
    the file ends in a line cut short (no newline, not JSON). The writer promises a history survives a crash
    up to its last complete line; anything else malformed (a bad line anywhere else, a complete last line
    that is not an op) is a one-line HarnessError naming file and line. Each op must have an index of its
    own (no duplicate) and a non-negative index and time. `whole_run`:
    the history is checked as a run's (`check_clock`: a clock that never moved is no run's)."""
    ops: list[Op] = []
    seen: set[int] = set()  # the op indexes so far
    last = 0  # the line of the last op
    with open_history(path) as handle:
        for lineno, raw in enumerate(iter(lambda: handle.readline(MAX_LINE_BYTES + 1), b""), 1):
            if len(raw) > MAX_LINE_BYTES:  # bounded memory: a line is one operation, never this big
                raise HarnessError(f"malformed history {path} line {lineno}: longer than {MAX_LINE_BYTES >> 20} MiB "
                                   f"(not a share-harness history line): pass the history.jsonl of a run")
            try:
                line = raw.decode("utf-8")
                if not line.strip():
                    continue
                data = json.loads(line)
            except (ValueError, RecursionError) as exc:
                # UnicodeDecodeError is a ValueError; RecursionError: JSON nested too deep
                if not raw.endswith(b"\n") and not isinstance(exc, RecursionError):
                    if whole_run:
                        check_clock(ops, path, last)
                    return ops, PartialTail(path, lineno, first_line(exc))
                raise HarnessError(f"malformed history {path} line {lineno}: {first_line(exc)}") from None
            try:
                op = Op.from_json(data)
            except (ValueError, TypeError, AttributeError, KeyError, RecursionError) as exc:
                raise HarnessError(f"malformed history {path} line {lineno}: {first_line(exc)}") from None
            _check_op(op, seen, path, lineno)
            ops.append(op)
            last = lineno
    if whole_run:
        check_clock(ops, path, last)
    return ops, None


def _check_op(op: Op, seen: set[int], path: Path, lineno: int) -> None:
    """What `HistoryWriter` promises of each op: an index of its own (never one an op before it had) and a
    time (nanoseconds since the run began), both non-negative."""
    if op.index < 0 or op.time < 0:
        name, value = ("index", op.index) if op.index < 0 else ("time", op.time)
        raise HarnessError(f"malformed history {path} line {lineno}: field {name} is negative ({value}): not a "
                           f"history a share-harness run wrote")
    if op.index in seen:
        raise HarnessError(f"malformed history {path} line {lineno}: op index {op.index} repeats (an op before "
                           f"it has it): a history numbers each op once")
    seen.add(op.index)


def check_clock(ops: list[Op], path: Path, lineno: int) -> None:
    """A run's history of several ops whose clock never moved (every op at one time, e.g. all 0) is no run's:
    its lock durations, latencies and throughput would all be made up. One line naming the last op's line
    (`lineno`)."""
    if len(ops) > 1 and min(op.time for op in ops) == max(op.time for op in ops):
        raise HarnessError(f"malformed history {path} line {lineno}: time {ops[-1].time}, as every op before it: "
                           f"a run's clock moves (a history a share-harness run wrote has ops at different times)")


#: The longest line a history may hold (a share-state read of many partitions is the longest op).
MAX_LINE_BYTES = 256 << 20
