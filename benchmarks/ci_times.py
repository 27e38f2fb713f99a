"""Where CI's time goes: per test file, from the JUnit XML `.ci/run` writes (reports/ci/junit.xml).

    python benchmarks/ci_times.py [reports/ci/junit.xml] [--baseline OTHER.xml] [--top 25] [--tests chaos,certify]

Prints each test file's total seconds and test count, slowest first, the whole run's total, the
session's wall time (pytest's own, the `testsuite` element's `time`: with pytest-xdist workers the
tests' total is more than the wall time) and its ratio to the goal (issue 23: CI <= 20 min on a clean
clone, installation included). With
`--baseline`, a second column per file and the ratio after/before, so a change that moves tests
between CI and nightly shows what it saved and what it cost. With `--tests WORDS`, a per-test table of the
files whose path holds one of the comma-separated words (issue 53: the chaos and certification files),
each test's seconds (JUnit's `time`: its setup, call and teardown together; the file's first test carries
its session cluster's start; pytest's `--durations` shows the phases apart).
"""

from __future__ import annotations

import argparse
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

GOAL_S = 15 * 60  # issue 53


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


def per_test(path: Path, words: list[str]) -> list[tuple[str, float]]:
    """(test id, seconds) of each test in a file whose module path holds one of `words`, slowest first."""
    rows = []
    for case in ET.parse(path).getroot().iter("testcase"):
        module = case.get("classname", "?")
        if any(w in module for w in words):
            rows.append((f"{module}::{case.get('name', '?')}", float(case.get("time", 0) or 0)))
    return sorted(rows, key=lambda r: -r[1])


def wall_time(path: Path) -> float | None:
    """The session's wall time in seconds (the longest `testsuite` element's `time`), if recorded."""
    times = [float(t) for suite in ET.parse(path).getroot().iter("testsuite") if (t := suite.get("time"))]
    return max(times) if times else None


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("junit", type=Path, nargs="?", default=Path("reports/ci/junit.xml"))
    parser.add_argument("--baseline", type=Path, default=None)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--tests", default="", help="comma-separated words: a per-test table of those files")
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
    wall = wall_time(args.junit) or total
    print(f"total: {total / 60:.1f} min of tests, {sum(n for _, n in now.values())} tests, in {wall / 60:.1f} min "
          f"of pytest; goal {GOAL_S / 60:.0f} min for the whole CI: ratio {wall / GOAL_S:.2f}")
    if args.tests:
        rows_t = per_test(args.junit, [w for w in args.tests.split(",") if w])
        print(f"\nper test ({args.tests}): {len(rows_t)} tests, {sum(t for _, t in rows_t) / 60:.1f} min")
        for name, seconds in rows_t:
            print(f"{seconds:8.1f} s  {name}")
    if before:
        was = sum(s for s, _ in before.values())
        was_wall = wall_time(args.baseline) or was
        print(f"before: {was / 60:.1f} min of tests in {was_wall / 60:.1f} min of pytest; after/before "
              f"{total / was:.2f} of tests, {wall / was_wall:.2f} of pytest")
    return 0


if __name__ == "__main__":
    sys.exit(main())
