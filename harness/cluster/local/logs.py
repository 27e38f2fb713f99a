"""The server logs of a local cluster's nodes: copied part by part, and their last errors.

`copy_new_log_bytes` appends to a run's copy what a node wrote to its `server.log` since the
previous copy, following log4j2's rolling (`server.log` -> `server.log.1` -> ...). `error_tails`
is the last ERROR lines of every node, for the message of a wait that timed out.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import BinaryIO, Iterable

LogMark = tuple[int, int, bytes, int]
"""How far a log has been copied: (inode of the file read last, bytes of it copied, its first bytes,
its modification time then, ns). The first bytes tell the file from a later one that reused its
inode (a log line starts with a timestamp); the time tells rolled files written since from older ones."""
_HEAD = 256


def copy_new_log_bytes(src: Path, mark: LogMark | None, target: Path) -> LogMark:
    """Append to `target` what was written to log `src` since `mark` (all of it if None); the new mark.

    The log may have rolled meanwhile (log4j2 renames `server.log` to `server.log.1`, `.1` to `.2`,
    ...: renames keep the inode). The rest of the file last read is found by its inode (and first
    bytes) among the rolled files and copied first, then every newer rolled file, then the current
    log. If that file is gone (rolled past the kept ones, or the log was truncated or rewritten in
    place), the rolled files written since the mark and the whole current log are copied.
    """
    rolled = _rolled(src)
    with open(src, "rb") as current, open(target, "ab") as out:
        start = 0
        if mark is not None and _is_file(current, mark):
            start = mark[1]
        else:
            _copy_pieces(_rolled_since(rolled, mark), out)
        current.seek(start)
        shutil.copyfileobj(current, out)
        end = current.tell()
        info = os.fstat(current.fileno())
        current.seek(0)
        return info.st_ino, end, current.read(min(end, _HEAD)), info.st_mtime_ns


def _rolled(src: Path) -> list[Path]:
    """The rolled files of log `src` (`server.log.1`, `.2`, ...), oldest first."""
    return sorted((p for p in src.parent.glob(src.name + ".*") if p.name[len(src.name) + 1:].isdigit()),
                  key=lambda p: -int(p.name[len(src.name) + 1:]))


def _rolled_since(rolled: list[Path], mark: LogMark | None) -> list[tuple[Path, int]]:
    """(rolled file, offset to copy from) for what was written since `mark` before the current log."""
    found = [i for i, p in enumerate(rolled) if mark is not None and _is_path(p, mark)]
    if mark is not None and found:
        i = found[-1]
        return [(rolled[i], mark[1])] + [(p, 0) for p in rolled[i + 1:]]
    since = -1 if mark is None else mark[3]
    return [(p, 0) for p in rolled if _mtime_ns(p) >= since]


def _copy_pieces(pieces: Iterable[tuple[Path, int]], out: BinaryIO) -> None:
    for path, offset in pieces:
        try:
            with open(path, "rb") as old:
                old.seek(offset)
                shutil.copyfileobj(old, out)
        except FileNotFoundError:  # rolled away while we read: best effort
            pass


def _is_file(f, mark: LogMark) -> bool:
    """Whether open file `f` is the one `mark` was taken of (same inode, at least as long, same start)."""
    info = os.fstat(f.fileno())
    if info.st_ino != mark[0] or info.st_size < mark[1]:
        return False
    f.seek(0)
    return f.read(len(mark[2])) == mark[2]


def _is_path(path: Path, mark: LogMark) -> bool:
    try:
        with open(path, "rb") as f:
            return _is_file(f, mark)
    except OSError:
        return False


def _mtime_ns(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return -1


def error_tails(logs: Iterable[tuple[int, Path]]) -> str:
    """The last three ERROR lines of each (node id, server.log) given, one indented line each."""
    parts = []
    for node_id, log in logs:
        if log.exists():
            lines = [l for l in log.read_text(errors="replace").splitlines() if " ERROR " in l][-3:]
            parts += [f"  n{node_id}| {l[:300]}" for l in lines]
    return "\n".join(parts)
