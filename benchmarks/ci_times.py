"""Where CI's time goes: per test file, from the JUnit XML `.ci/run` writes (reports/ci/junit.xml).

    python benchmarks/ci_times.py [reports/ci/junit.xml] [--baseline OTHER.xml] [--top 25]

Prints each test file's total seconds and test count, slowest first, the whole run's total, and
the ratio to the goal (issue 23: CI <= 20 min on a clean clone, installation included). With
`--baseline`, a second column per file and the ratio after/before, so a change that moves tests
between CI and nightly shows what it saved and what it cost.
"""

from __future__ import annotations

import argparse
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

GOAL_S = 20 * 60


def per_file(path: Path) -> dict[str, tuple[float, int]]:
    """test file -> (seconds, tests) from a JUnit XML (pytest's: classname is the dotted module path)."""
    totals: dict[str, list] = defaultdict(lambda: [0.0, 0])
    for case in ET.parse(path).getroot().iter("testcase"):
        parts = case.get("classname", "?").split(".")
        while len(parts) > 1 and parts[-1][:1].isupper():  # a test class, not a module
            parts.pop()
        name = case.get("file") or "/".join(parts) + ".py"
        totals[name][0] += float(case.get("time", 0) or 0)
        totals[name][1] += 1
    return {k: (v[0], v[1]) for k, v in totals.items()}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("junit", type=Path, nargs="?", default=Path("reports/ci/junit.xml"))
    parser.add_argument("--baseline", type=Path, default=None)
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    if not args.junit.is_file():
        print(f"ci_times: {args.junit} not found: run .ci/run first (it writes reports/ci/junit.xml)",
              file=sys.stderr)
        return 2
    now = per_file(args.junit)
    before = per_file(args.baseline) if args.baseline else {}
    rows = sorted(set(now) | set(before), key=lambda k: -now.get(k, (0, 0))[0])
    for name in rows[:args.top]:
        s, n = now.get(name, (0.0, 0))
        line = f"{s:8.1f} s {n:4d} tests  {name}"
        if before:
            b = before.get(name, (0.0, 0))[0]
            line += f"   (before {b:7.1f} s, ratio {s / b:.2f})" if b else "   (new)"
        print(line)
    total = sum(s for s, _ in now.values())
    print(f"total: {total / 60:.1f} min of tests, {sum(n for _, n in now.values())} tests; goal {GOAL_S / 60:.0f} min "
          f"for the whole CI: ratio {total / GOAL_S:.2f}")
    if before:
        was = sum(s for s, _ in before.values())
        print(f"before: {was / 60:.1f} min; after/before {total / was:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
