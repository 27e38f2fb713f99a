"""The run directory: `reports/runs/<timestamp>-<name>/` with a `latest` link beside it.

Contents: `spec.json`, `history.jsonl`, `verdict.json`, `logs/` (every node's
log, Toxiproxy's, each driver's). Modelled on Jepsen's store.
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path
from typing import Any


def reports_root() -> Path:
    """`KSH_REPORTS_DIR`, else `./reports`."""
    return Path(os.environ.get("KSH_REPORTS_DIR") or "reports").resolve()


def new_run_dir(name: str, root: Path | None = None) -> Path:
    """Create a fresh run directory and point `runs/latest` at it."""
    runs = (root or reports_root()) / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "-", name)[:80]
    path = runs / f"{stamp}-{safe}"
    n = 1
    while path.exists():
        n += 1
        path = runs / f"{stamp}-{safe}-{n}"
    (path / "logs").mkdir(parents=True)
    latest = runs / "latest"
    tmp = runs / f".latest-{os.getpid()}"
    if tmp.is_symlink() or tmp.exists():
        tmp.unlink()
    tmp.symlink_to(path.name)
    os.replace(tmp, latest)
    return path


def write_json(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, sort_keys=True, indent=2, default=str) + "\n")
