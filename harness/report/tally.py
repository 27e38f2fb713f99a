"""Tally run directories: per scenario, how many runs passed, failed or stayed unknown, how many
faults were not applied, and how often each named allowance was used (the honesty budget)."""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from pathlib import Path

from harness.errors import HarnessError


def _scenario(name: str) -> str:
    """`test_x[s7-leader-kill-mix]` -> `test_x[leader-kill-mix]`: the scenario without its seed."""
    return re.sub(r"\[s-?\d+-?", "[", name).replace("[]", "")


def run_dirs(paths: list[Path]) -> list[Path]:
    """The run directories under `paths`: every directory holding a `spec.json` (the runner writes it
    first, so a run that crashed or is still running is found too), each once (`latest` is a link)."""
    found: dict[Path, Path] = {}
    for path in paths:
        if not path.exists():
            raise HarnessError(f"no such run directory {path}: give run directories or a reports/runs folder")
        if not path.is_dir():
            raise HarnessError(f"{path} is not a directory: give run directories or a reports/runs folder")
        for spec in sorted(path.rglob("spec.json")):
            found.setdefault(spec.parent.resolve(), spec.parent)
    return list(found.values())


def tally(paths: list[Path]) -> dict[str, dict]:
    """Per scenario: runs, pass, fail, unknown (a run without verdict.json, a checker undecided, or a
    fault not applied or not healed: the chaos asked for did not happen), and allowances used."""
    rows: dict[str, dict] = defaultdict(lambda: {"runs": 0, "pass": 0, "fail": 0, "unknown": 0, "seeds": [],
                                                 "not_applied": 0, "unfinished": 0, "allowances": Counter(),
                                                 "failed": []})
    for run in run_dirs(paths):
        try:
            spec = json.loads((run / "spec.json").read_text())["spec"]
            row = rows[_scenario(spec["name"])]
            row["seeds"].append(spec["seed"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise HarnessError(f"malformed run directory {run} (spec.json: {exc}): delete it or fix it") from None
        row["runs"] += 1
        if not (run / "verdict.json").is_file():  # crashed, killed, or still running: not checked
            row["unknown"] += 1
            row["unfinished"] += 1
            row["failed"].append(f"{run} (no verdict.json: the run did not finish)")
            continue
        try:
            verdict = json.loads((run / "verdict.json").read_text())
            not_applied = [f for f in verdict.get("faults", []) if not f["applied"] or not f.get("healed_ok", True)]
            allowances = [result.get("allowances", {}) for result in verdict["results"]]
            valid = verdict["valid"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise HarnessError(f"malformed run directory {run} (verdict.json: {exc}): delete it or fix it") from None
        overall = verdict.get("overall", valid)
        if valid is not False and not_applied:
            overall = None  # chaos asked for and not done is unknown, never pass
        word = {True: "pass", False: "fail"}.get(overall, "unknown")
        row[word] += 1
        if word != "pass":
            row["failed"].append(str(run) + (f" ({len(not_applied)} faults not applied or healed)"
                                             if not_applied and word == "unknown" else ""))
        row["not_applied"] += len(not_applied)
        for used in allowances:
            row["allowances"].update(used)
    return dict(rows)


def tally_exit(rows: dict[str, dict]) -> int:
    """0 every run passed; 1 a run failed; 3 a run unknown or unfinished, or no run at all."""
    from harness import exitcodes
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
