"""The run directory: `reports/runs/<timestamp>-<name>/` with a `latest` link beside it.

Contents: `spec.json`, `history.jsonl`, `verdict.json`, `logs/` (every node's
log, Toxiproxy's, each driver's). Modelled on Jepsen's store.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import stat
import threading
import time
from pathlib import Path
from typing import Any


BUSY = ".busy"  # the lock file of a directory in use


def reports_root() -> Path:
    """`KSH_REPORTS_DIR`, else `./reports`."""
    return Path(os.environ.get("KSH_REPORTS_DIR") or "reports").resolve()


def new_run_dir(name: str, root: Path | None = None) -> Path:
    """Create a fresh run directory and point `runs/latest` at it."""
    runs = (root or reports_root()) / "runs"
    path = new_stamped_dir(runs, name)
    (path / "logs").mkdir()
    latest = runs / "latest"
    tmp = runs / f".latest-{os.getpid()}-{threading.get_ident()}"
    if tmp.is_symlink() or tmp.exists():
        tmp.unlink()
    tmp.symlink_to(path.name)
    os.replace(tmp, latest)
    return path


def new_stamped_dir(parent: Path, name: str) -> Path:
    """A new directory `parent/<timestamp>-<name>[-N]`, claimed by mkdir: two runs, suites or
    certificates of one name started in the same second (threads, processes) get two directories."""
    parent.mkdir(parents=True, exist_ok=True)
    base = f"{time.strftime('%Y%m%d-%H%M%S')}-{re.sub(r'[^A-Za-z0-9_.-]+', '-', name)[:80]}"
    path, n = parent / base, 1
    while True:
        try:
            path.mkdir()
            break
        except FileExistsError:
            n += 1
            path = parent / f"{base}-{n}"
    _hold(path)
    return path


#: Lock fds of the directories this process created: held until it exits (the kernel drops them
#: then, however it ends), so `share-harness clean` never deletes a directory still being written.
_held: list[int] = []


def _hold(path: Path) -> None:
    fd = os.open(path / BUSY, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)
    _held.append(fd)


def in_use(path: Path) -> bool:
    """Whether a live process holds `path` (a directory made by `new_stamped_dir`)."""
    try:  # without blocking: a fifo in its place opens at once (and is no lock of ours)
        fd = os.open(path / BUSY, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False  # made before directories were held, or not one of ours
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def write_json(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, sort_keys=True, indent=2, default=str) + "\n")
