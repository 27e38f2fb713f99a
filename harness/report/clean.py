"""`share-harness clean`: a retention rule for reports/, so disk does not grow without bound.

Kinds: `runs/` (run directories), `suites/` (run --suite outputs), `certificates/`,
`conformance/`. Per kind the newest `keep` entries stay (by name: entries start with their
time stamp), and unless told otherwise every entry that did not pass stays too (a failure
is evidence someone will want). Never deleted: what `runs/latest` points at, an entry
a live process holds (its `.busy` lock: a session's cluster, a run still writing), entries
changed in the last `busy_s` seconds, anything that is not a directory (index pages, links), and
any directory the harness did not make (`made_by_harness`: a user's folder under runs/ stays whatever
its age). `check_root` refuses a root that is not a reports directory (none of the kinds' folders in it).
Every file read here is read by `harness.sys.files` (a fifo or a link to /dev/zero is unreadable, so kept).
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import time
import xml.etree.ElementTree as ET
from pathlib import Path

from harness.errors import HarnessError
from harness.report.rundir import BUSY, in_use
from harness.sys.files import BadFile, read_json_object, read_text

KINDS = ("runs", "suites", "certificates", "conformance")
#: The file each kind's entry is written around (a run's spec.json is its first file).
MAIN_FILE = {"runs": "spec.json", "suites": "junit.xml", "certificates": "certificate.json",
             "conformance": "conformance.json"}
#: The name `harness.report.rundir.new_stamped_dir` gives a directory (`<%Y%m%d-%H%M%S>[-<name>][-N]`; the
#: conformance reports are named by their time stamp only).
STAMPED = re.compile(r"\d{8}-\d{6}(-[A-Za-z0-9_.-]+)?")


def check_root(root: Path) -> None:
    """Refuse (one line) a root that is not a reports directory: one the harness writes reports in holds at
    least one of the kinds' folders (runs/, suites/, certificates/, conformance/), as a real directory."""
    if not root.is_dir():
        raise HarnessError(f"{root} is not a reports directory: give --root the folder holding runs/ (or set "
                           f"KSH_REPORTS_DIR)")
    if not any((root / kind).is_dir() and not (root / kind).is_symlink() for kind in KINDS):
        raise HarnessError(f"{root} is not a reports directory (it holds none of {', '.join(k + '/' for k in KINDS)}"
                           f"): give --root the folder the harness writes reports in (the one holding runs/)")


def _regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def made_by_harness(kind: str, entry: Path) -> bool:
    """Whether `entry` is a directory the harness made, so `clean` may delete it: it holds its kind's file
    (`MAIN_FILE`; a run's spec.json holding a "spec" object), or it has the harness's name (`STAMPED`) and
    the lock file every directory the harness makes holds (`.busy`: a session's cluster directory, a run
    or suite that wrote nothing else yet). Anything else (a user's folder) is never deleted."""
    main = entry / MAIN_FILE[kind]
    if _regular(main):
        if kind != "runs":
            return True
        try:
            return isinstance(read_json_object(main, "spec").get("spec"), dict)
        except BadFile:
            return False
    return STAMPED.fullmatch(entry.name) is not None and _regular(entry / BUSY)


def _passed(kind: str, entry: Path) -> bool:
    """Whether `entry` is evidence of a pass only (safe to drop past the newest `keep`)."""
    try:
        if kind == "runs":
            if not (entry / "spec.json").is_file():
                return True  # a session cluster's logs: no verdict of its own
            verdict = read_json_object(entry / "verdict.json", "verdict")
            return verdict.get("overall", verdict.get("valid")) is True
        if kind == "suites":
            root = ET.fromstring(read_text(entry / "junit.xml", "junit report"))
            suites = [root] if root.tag == "testsuite" else list(root)
            return all(int(s.get("failures", 0)) == 0 and int(s.get("errors", 0)) == 0 for s in suites) and \
                sum(int(s.get("tests", 0)) - int(s.get("skipped", 0)) for s in suites) > 0
        if kind == "certificates":
            return read_json_object(entry / "certificate.json", "certificate").get("verdict") == "CERTIFIED"
        if kind == "conformance":
            areas = read_json_object(entry / "conformance.json", "conformance report")["areas"].values()
            return "PASS" in areas and set(areas) <= {"PASS", "KNOWN DEVIATION", "SKIPPED"}
    except (OSError, ValueError, KeyError, ET.ParseError, AttributeError, TypeError, HarnessError):
        return False  # unreadable (a fifo, a huge file) or unfinished: kept, it may be the evidence of a crash
    return False


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def clean(root: Path, keep: int = 20, keep_failures: bool = True, dry_run: bool = False,
          busy_s: float = 300.0) -> tuple[list[Path], list[Path], int]:
    """(kept, deleted, bytes freed) under `root` by the rule of the module docstring (`root` as
    `check_root` accepts it)."""
    kept: list[Path] = []
    deleted: list[Path] = []
    freed = 0
    now = time.time()
    latest = (root / "runs" / "latest").resolve() if (root / "runs" / "latest").is_symlink() else None
    for kind in KINDS:
        folder = root / kind
        if not folder.is_dir():
            continue
        entries = []
        for p in sorted(folder.iterdir(), key=lambda p: p.name, reverse=True):
            if not p.is_dir() or p.is_symlink() or p.name.startswith("."):
                continue
            if made_by_harness(kind, p):  # only those are ranked, and may go
                entries.append(p)
            else:
                kept.append(p)
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
