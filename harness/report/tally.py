"""Tally run directories: per scenario, how many runs passed, failed or stayed unknown, how many
faults were not applied, and how often each named allowance was used (the honesty budget).

A run's word comes from its `verdict.json`, which is not trusted to agree with itself (`verdict_word`):

- fail: any of its verdicts says False: `valid`, `overall` or a checker's `valid` (a violation recorded
  anywhere is a violation, whatever another field says: `overall: true` never outranks `valid: false`);
- pass: only if `valid` and `overall` (absent: `valid`) are both exactly `true`, there is at least one
  checker result and every one is exactly `true`, and every fault was applied and healed;
- unknown: everything else: no results (nothing was checked), a checker undecided, a verdict that is
  not a boolean (`1`, `"yes"`, `null`), `valid: true` beside an undecided checker or an `overall` that
  is not `true` (the run's line under "not a pass" names which), a fault not applied or not healed, or
  no `verdict.json` at all (a run that crashed or still runs).

Every `spec.json` and `verdict.json` is read with `harness.sys.files` (a regular file of bounded size): a
fifo, a device, a directory or an oversized file there, like a malformed one, makes the command refuse
with one line naming the run directory (exit 2), never hang or fill memory. An empty path is refused
too (it would be the current directory).
"""

from __future__ import annotations

import os
import re
from collections import Counter, defaultdict
from pathlib import Path
from typing import Sequence

from harness import exitcodes
from harness.errors import HarnessError
from harness.sys.files import BadFile, read_json_object

#: what a run's spec.json or verdict.json may weigh (a verdict lists anomalies: a few MB at most)
LIMIT = 64 * 1024 * 1024


def _scenario(name: str) -> str:
    """`test_x[s7-leader-kill-mix]` -> `test_x[leader-kill-mix]`: the scenario without its seed."""
    return re.sub(r"\[s-?\d+-?", "[", name).replace("[]", "")


def run_path(text: str | os.PathLike) -> Path:
    """A path the user gave `tally`; an empty one (which would mean the current directory) is refused."""
    if isinstance(text, str) and not text.strip():
        raise HarnessError(f"empty path {text!r}: give run directories or a reports/runs folder "
                           "(`.` for the current directory)")
    return Path(text)


def run_dirs(paths: Sequence[str | os.PathLike]) -> list[Path]:
    """The run directories under `paths`: every directory holding a `spec.json` (the runner writes it
    first, so a run that crashed or is still running is found too), each once (`latest` is a link)."""
    found: dict[Path, Path] = {}
    for path in [run_path(p) for p in paths]:
        if not path.exists():
            raise HarnessError(f"no such run directory {path}: give run directories or a reports/runs folder")
        if not path.is_dir():
            raise HarnessError(f"{path} is not a directory: give run directories or a reports/runs folder")
        for spec in sorted(path.rglob("spec.json")):
            found.setdefault(spec.parent.resolve(), spec.parent)
    return list(found.values())


def _read(run: Path, name: str) -> dict:
    """`run/name` as a JSON object, read bounded; one line naming the run directory otherwise."""
    try:
        return read_json_object(run / name, name, LIMIT)
    except BadFile as exc:
        raise HarnessError(f"malformed run directory {run} ({exc}): delete it or fix it") from None


def verdict_word(verdict: dict) -> tuple[str, str]:
    """A verdict.json's word, "pass", "fail" or "unknown" (the module docstring's rules), and why it is not a
    pass ("" for a pass or a plain fail). Raises KeyError or TypeError for a verdict without `valid` or
    `results`, or with results that are not a list of objects."""
    valid, overall = verdict["valid"], verdict.get("overall", verdict["valid"])
    results = verdict["results"]
    if not isinstance(results, list) or not all(isinstance(r, dict) for r in results):
        raise TypeError("results is not a list of checker results")
    failed = [str(r.get("checker", "?")) for r in results if r.get("valid") is False]
    if valid is False or overall is False or failed:
        if valid is False and overall is not True:
            return "fail", ""
        return "fail", (f"valid {valid!r}, overall {overall!r}, failed checkers: {', '.join(failed) or 'none'}: "
                        "a violation recorded anywhere is a violation")
    if not results:
        return "unknown", "no checker results: nothing was checked"
    if valid is not True or overall is not True:
        return "unknown", f"valid {valid!r}, overall {overall!r}: not both true"
    undecided = [r.get("checker", "?") for r in results if r.get("valid") is not True]
    if undecided:
        return "unknown", f"valid is true but checkers are undecided: {', '.join(map(str, undecided))}"
    return "pass", ""


def tally(paths: Sequence[str | os.PathLike]) -> dict[str, dict]:
    """Per scenario: runs, pass, fail, unknown (a run without verdict.json, a verdict without results or
    undecided or contradicting itself, or a fault not applied or not healed: the chaos asked for did not
    happen), and allowances used."""
    rows: dict[str, dict] = defaultdict(lambda: {"runs": 0, "pass": 0, "fail": 0, "unknown": 0, "seeds": [],
                                                 "not_applied": 0, "unfinished": 0, "allowances": Counter(),
                                                 "failed": []})
    for run in run_dirs(paths):
        spec = _read(run, "spec.json")
        try:
            spec = spec["spec"]
            row = rows[_scenario(spec["name"])]
            row["seeds"].append(spec["seed"])
        except (ValueError, KeyError, TypeError) as exc:
            raise HarnessError(f"malformed run directory {run} (spec.json: {exc!r}): delete it or fix it") from None
        row["runs"] += 1
        if not os.path.lexists(run / "verdict.json"):  # crashed, killed, or still running: not checked
            row["unknown"] += 1
            row["unfinished"] += 1
            row["failed"].append(f"{run} (no verdict.json: the run did not finish)")
            continue
        verdict = _read(run, "verdict.json")
        try:
            not_applied = [f for f in verdict.get("faults") or [] if not f["applied"] or not f.get("healed_ok", True)]
            word, why = verdict_word(verdict)
            allowances: Counter = Counter()
            for result in verdict["results"]:
                allowances.update(result.get("allowances") or {})  # name -> count (else refused here)
        except (ValueError, KeyError, TypeError) as exc:
            raise HarnessError(f"malformed run directory {run} (verdict.json: {exc!r}): delete it or fix it") from None
        if word == "pass" and not_applied:
            word = "unknown"  # chaos asked for and not done is unknown, never pass
        row[word] += 1
        if word != "pass":
            notes = [why] if why else []
            if not_applied and word == "unknown":
                notes.append(f"{len(not_applied)} faults not applied or healed")
            row["failed"].append(str(run) + (f" ({'; '.join(notes)})" if notes else ""))
        row["not_applied"] += len(not_applied)
        row["allowances"].update(allowances)
    return dict(rows)


def tally_exit(rows: dict[str, dict]) -> int:
    """0 every run passed; 1 a run failed; 3 a run unknown or unfinished, or no run at all."""
    if not rows:
        return exitcodes.UNKNOWN
    if any(r["fail"] for r in rows.values()):
        return exitcodes.VIOLATION
    if any(r["unknown"] or r["not_applied"] or r["pass"] != r["runs"] for r in rows.values()):
        return exitcodes.UNKNOWN
    return exitcodes.PASS


def render(rows: dict[str, dict]) -> str:
    lines = [f"{'scenario':64} runs pass fail unkn n/a  allowances used"]
    for name, row in sorted(rows.items()):
        allowances = ", ".join(f"{k}={v}" for k, v in sorted(row["allowances"].items())) or "-"
        lines.append(f"{name[:64]:64} {row['runs']:4} {row['pass']:4} {row['fail']:4} {row['unknown']:4} "
                     f"{row['not_applied']:4}  {allowances}")
        lines += [f"    not a pass: {run}" for run in row["failed"]]
    return "\n".join(lines)
