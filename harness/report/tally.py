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
    found = []
    for path in paths:
        if not path.exists():
            raise HarnessError(f"no such run directory {path}: give run directories or a reports/runs folder")
        found += [p.parent for p in sorted(path.rglob("verdict.json"))]
    return found


def tally(paths: list[Path]) -> dict[str, dict]:
    rows: dict[str, dict] = defaultdict(lambda: {"runs": 0, "pass": 0, "fail": 0, "unknown": 0, "seeds": [],
                                                 "not_applied": 0, "allowances": Counter(), "failed": []})
    for run in run_dirs(paths):
        try:
            verdict = json.loads((run / "verdict.json").read_text())
            spec = json.loads((run / "spec.json").read_text())["spec"]
        except (OSError, ValueError, KeyError) as exc:
            raise HarnessError(f"malformed run directory {run}: {exc}") from None
        row = rows[_scenario(spec["name"])]
        row["runs"] += 1
        row["seeds"].append(spec["seed"])
        word = {True: "pass", False: "fail"}.get(verdict["valid"], "unknown")
        row[word] += 1
        if word != "pass":
            row["failed"].append(str(run))
        row["not_applied"] += sum(1 for f in verdict.get("faults", []) if not f["applied"])
        for result in verdict["results"]:
            row["allowances"].update(result.get("allowances", {}))
    return dict(rows)


def render(rows: dict[str, dict]) -> str:
    lines = [f"{'scenario':64} runs pass fail unkn n/a  allowances used"]
    for name, row in sorted(rows.items()):
        allowances = ", ".join(f"{k}={v}" for k, v in sorted(row["allowances"].items())) or "-"
        lines.append(f"{name[:64]:64} {row['runs']:4} {row['pass']:4} {row['fail']:4} {row['unknown']:4} "
                     f"{row['not_applied']:4}  {allowances}")
        lines += [f"    not a pass: {run}" for run in row["failed"]]
    return "\n".join(lines)
