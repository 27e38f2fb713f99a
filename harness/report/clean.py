"""`share-harness clean`: a retention rule for reports/, so disk does not grow without bound.

Kinds: `runs/` (run directories), `suites/` (run --suite outputs), `certificates/`,
`conformance/`. Per kind the newest `keep` entries stay (by name: entries start with their
time stamp), and unless told otherwise every entry that did not pass stays too (a failure
is evidence someone will want). Never deleted: what `runs/latest` points at, an entry
a live process holds (its `.busy` lock: a session's cluster, a run still writing), entries
changed in the last `busy_s` seconds, anything that is not a directory (index pages, links).
"""

from __future__ import annotations

import json
import shutil
import time
import xml.etree.ElementTree as ET
from pathlib import Path

from harness.report.rundir import in_use

KINDS = ("runs", "suites", "certificates", "conformance")


def _passed(kind: str, entry: Path) -> bool:
    """Whether `entry` is evidence of a pass only (safe to drop past the newest `keep`)."""
    try:
        if kind == "runs":
            if not (entry / "spec.json").is_file():
                return True  # a session cluster's logs: no verdict of its own
            verdict = json.loads((entry / "verdict.json").read_text())
            return verdict.get("overall", verdict.get("valid")) is True
        if kind == "suites":
            root = ET.parse(entry / "junit.xml").getroot()
            suites = [root] if root.tag == "testsuite" else list(root)
            return all(int(s.get("failures", 0)) == 0 and int(s.get("errors", 0)) == 0 for s in suites) and \
                sum(int(s.get("tests", 0)) - int(s.get("skipped", 0)) for s in suites) > 0
        if kind == "certificates":
            return json.loads((entry / "certificate.json").read_text()).get("verdict") == "CERTIFIED"
        if kind == "conformance":
            areas = json.loads((entry / "conformance.json").read_text())["areas"].values()
            return "PASS" in areas and set(areas) <= {"PASS", "KNOWN DEVIATION", "SKIPPED"}
    except (OSError, ValueError, KeyError, ET.ParseError, AttributeError, TypeError):
        return False  # unreadable or unfinished: kept, it may be the evidence of a crash
    return False


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def clean(root: Path, keep: int = 20, keep_failures: bool = True, dry_run: bool = False,
          busy_s: float = 300.0) -> tuple[list[Path], list[Path], int]:
    """(kept, deleted, bytes freed) under `root` by the rule of the module docstring."""
    kept: list[Path] = []
    deleted: list[Path] = []
    freed = 0
    now = time.time()
    latest = (root / "runs" / "latest").resolve() if (root / "runs" / "latest").is_symlink() else None
    for kind in KINDS:
        folder = root / kind
        if not folder.is_dir():
            continue
        entries = sorted((p for p in folder.iterdir() if p.is_dir() and not p.is_symlink()
                          and not p.name.startswith(".")), key=lambda p: p.name, reverse=True)
        for index, entry in enumerate(entries):
            busy = in_use(entry) or now - entry.stat().st_mtime < busy_s
            if index < keep or busy or entry.resolve() == latest or (keep_failures and not _passed(kind, entry)):
                kept.append(entry)
                continue
            freed += _size(entry)
            deleted.append(entry)
            if not dry_run:
                shutil.rmtree(entry, ignore_errors=True)
    return kept, deleted, freed
