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
its session cluster's start; pytest's `--durations` shows the phases apart) and where they went: `cluster`
(starting, stopping, restarting Kafka nodes), `client` (driver commands: Kafka serving the client), `workload` (a run's producer and consumers at work, its
faults on schedule), `wait` (our
waits on a condition), `check` (checkers, durable-state read-back), `rest` (pytest, process starts, our code,
idle), from the JUnit properties the plugin records (harness/timing.py; a certification's child counted in).
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


#: where a test's seconds went (harness/timing.py's kinds, recorded as JUnit properties `time_<kind>`)
KINDS = ("cluster", "client", "workload", "wait", "check")


def per_test(path: Path, words: list[str]) -> list[tuple[str, float, dict[str, float]]]:
    """(test id, seconds, seconds per kind) of each test in a file whose module path holds one of `words`,
    slowest first; the kinds are empty for a test that recorded none."""
    rows = []
    for case in ET.parse(path).getroot().iter("testcase"):
        module = case.get("classname", "?")
        if any(w in module for w in words):
            kinds = {p.get("name", "")[len("time_"):]: float(p.get("value") or 0) for p in case.iter("property")
                     if p.get("name", "").startswith("time_")}
            rows.append((f"{module}::{case.get('name', '?')}", float(case.get("time", 0) or 0), kinds))
    return sorted(rows, key=lambda r: -r[1])


def kinds_line(seconds: float, kinds: dict[str, float]) -> str:
    """The columns of the per-test table: each kind's seconds and the rest (pytest, process starts, our code,
    idle); '-' where the test recorded no kinds."""
    if not kinds:
        return "".join(f" {'-':>7}" for _ in KINDS) + f" {'-':>7}"
    rest = max(0.0, seconds - sum(kinds.get(k, 0.0) for k in KINDS))
    return "".join(f" {kinds.get(k, 0.0):7.1f}" for k in KINDS) + f" {rest:7.1f}"


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
        print(f"\nper test ({args.tests}): {len(rows_t)} tests, {sum(r[1] for r in rows_t) / 60:.1f} min")
        print(f"{'seconds':>10}" + "".join(f" {k:>7}" for k in (*KINDS, "rest")) + "  test")
        for name, seconds, kinds in rows_t:
            print(f"{seconds:8.1f} s" + kinds_line(seconds, kinds) + f"  {name}")
        recorded = [r for r in rows_t if r[2]]
        if recorded:  # the whole table's split: Kafka's work (cluster, client), our waits, our checking, the rest
            total = sum(r[1] for r in recorded)
            sums = {k: sum(r[2].get(k, 0.0) for r in recorded) for k in KINDS}
            print(f"{total:8.1f} s" + kinds_line(total, sums) + f"  all {len(recorded)} tests that recorded "
                  "kinds; " + ", ".join(f"{k} {100 * s / total:.0f}%" for k, s in sums.items() if total)
                  + f", rest {100 * max(0.0, total - sum(sums.values())) / total:.0f}%")
    if before:
        was = sum(s for s, _ in before.values())
        was_wall = wall_time(args.baseline) or was
        print(f"before: {was / 60:.1f} min of tests in {was_wall / 60:.1f} min of pytest; after/before "
              f"{total / was:.2f} of tests, {wall / was_wall:.2f} of pytest")
    return 0


if __name__ == "__main__":
    sys.exit(main())
