"""Reading a history to mutate: a .jsonl or .jsonl.gz file, or a run directory."""

from __future__ import annotations

import gzip
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from harness.history.schema import Op
from harness.history.store import read_history


def read_ops(path: Any) -> list[Op]:
    """A history's operations: a .jsonl or .jsonl.gz file, or a run directory (its history.jsonl). A
    gzipped history is decompressed to a temporary file read by `read_history` (same parser, same
    one-line errors, naming the .gz), then removed."""
    path = Path(path)
    if path.is_dir():
        for name in ("history.jsonl", "history.jsonl.gz"):
            if (path / name).is_file():
                return read_ops(path / name)
        raise HarnessError(f"{path} holds no history.jsonl: pass a run directory or a .jsonl / .jsonl.gz history")
    if path.suffix != ".gz":
        return read_history(path)
    if not path.is_file():
        raise HarnessError(f"history file {path} does not exist or is not a file")
    return _read_gzipped(path)


def _read_gzipped(path: Path) -> list[Op]:
    fd, tmp = tempfile.mkstemp(suffix=".jsonl", prefix="ksh-history-")
    try:
        with os.fdopen(fd, "wb") as out, gzip.open(path, "rb") as src:
            shutil.copyfileobj(src, out)
        try:
            return read_history(Path(tmp))
        except HarnessError as exc:
            raise HarnessError(str(exc).replace(tmp, str(path))) from None
    except (OSError, EOFError) as exc:  # not gzip, truncated
        raise HarnessError(f"cannot read gzipped history {path}: {exc}") from None
    finally:
        os.unlink(tmp)
