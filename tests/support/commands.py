"""Running `share-harness` in-process for the fail-closed tests of issue 47, and the files they point it at."""

from __future__ import annotations

import json
from pathlib import Path

from harness.history.schema import Op
from tests.support.builders import base
from tests.support.timeouts import deadline

ROOT = Path(__file__).resolve().parents[2]
OLD = 1_000_000_000  # an mtime long past: `clean`'s busy window is over


def run_main(argv: list[str], capsys, seconds: float = 20) -> tuple[int, str, str]:
    from harness.cli import main
    with deadline(seconds):
        rc = main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


def one_line(err: str, *parts: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err and "internal error" not in err, err
    for part in parts:
        assert part in lines[0], (part, lines[0])
    return lines[0]


def write_jsonl(path: Path, lines) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join((line if isinstance(line, str) else json.dumps(
        line.to_json() if isinstance(line, Op) else line)) + "\n" for line in lines))
    return path


def run_dir_of(path: Path, spec: dict | None = None) -> Path:
    """A run directory with a good history (and spec.json)."""
    write_jsonl(path / "history.jsonl", base().ops)
    (path / "spec.json").write_text(json.dumps({"spec": spec or {"name": "a run", "seed": 3}}))
    return path


def sparse_file(path: Path, size: int = 100 << 20) -> Path:
    """A file of `size` bytes that takes no disk (and no time) to make: too big to be a spec or verdict."""
    with open(path, "wb") as handle:
        handle.truncate(size)
    return path


def left_in(run: Path) -> set[str]:
    return {p.name for p in run.iterdir()}
