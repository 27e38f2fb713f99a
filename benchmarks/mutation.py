"""Mutation testing of the oracle (the seven checkers) on real run histories.

    python benchmarks/mutation.py [--seeds 20] [--seed 1] [--class NAME ...] [HISTORY ...]

1. loads the histories (default: every `tests/histories/*.jsonl.gz`; a HISTORY may be a .jsonl or
   .jsonl.gz file or a run directory) and checks each unmutated one passes every checker: a history
   that does not is a false alarm (printed, counted), unless it is a known Kafka deviation the
   oracle rightly reports (`harness.mutants.KNOWN_DEVIATIONS`: printed as such);
2. for each history x mutant class (`harness.mutants.MUTANTS`) x seed (--seed .. --seed + --seeds - 1)
   applies the mutant (one seeded change, outside every allowance) and runs all seven checkers;
3. prints per mutant class and per property: applicable (and how many distinct mutants: seeds may
   pick the same spot), killed (the expected property failed with an expected anomaly kind, one the
   unmutated history did not have), killed-other (something else failed), survived (up to 5 listed
   with seed, history, spot and verdicts); the allowances each unmutated history used; the command
   that reproduces the run; time and events/s of the checking.
Exit 1 if any applicable mutant survived or any unmutated history raised a false alarm, else 0
(2: a history could not be read).
"""

from __future__ import annotations

import argparse
import random
import shlex
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.errors import HarnessError  # noqa: E402
from harness.history.events import EventTable  # noqa: E402
from harness.mutants import MUTANTS, check_table, judge, known_deviation, read_ops, verdict_line  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ROOT / "tests" / "histories"
SHOWN = 5  # survivors listed per mutant class


def history_paths(args: list[str]) -> list[Path]:
    if not args:
        return sorted(DEFAULT.glob("*.jsonl.gz"))
    paths, seen = [], set()
    for a in args:
        p = Path(a)
        if p.resolve() not in seen:  # e.g. reports/runs/latest and the run it points to
            seen.add(p.resolve())
            paths.append(p)
    return paths


def name_of(path: Path) -> str:
    if path.is_dir():
        return path.name
    name = path.name
    for suffix in (".jsonl.gz", ".jsonl"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    return path.parent.name if name == "history" else name


class Tally:
    def __init__(self) -> None:
        self.counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        self.survivors: dict[str, list[str]] = defaultdict(list)
        self.spots: dict[str, set] = defaultdict(set)

    def add(self, group: str, outcome: str, detail: str = "", spot: tuple = ()) -> None:
        row = self.counts[group]
        row["applicable"] += 1
        self.spots[group].add(spot)
        row[outcome] += 1
        if outcome == "survived":
            self.survivors[group].append(detail)

    def table(self, title: str, order: list[str]) -> list[str]:
        width = max([len(title)] + [len(g) for g in order])
        lines = [f"{title:<{width}}  applicable  distinct  killed  killed-other  survived  killed%",
                 f"{'-' * width}  ----------  --------  ------  ------------  --------  -------"]
        total: dict[str, int] = defaultdict(int)
        for g in order:
            row = self.counts.get(g, {})
            for k in ("applicable", "killed", "killed-other", "survived"):
                total[k] += row.get(k, 0)
            lines.append(self.line(g, row, width, len(self.spots.get(g, ()))))
        lines.append(self.line("all", total, width, sum(len(v) for v in self.spots.values())))
        return lines

    @staticmethod
    def line(name: str, row: dict[str, int], width: int, distinct: int) -> str:
        n = row.get("applicable", 0)
        pct = f"{100 * row.get('killed', 0) / n:6.1f}%" if n else "     -"
        return (f"{name:<{width}}  {n:>10}  {distinct:>8}  {row.get('killed', 0):>6}  "
                f"{row.get('killed-other', 0):>12}  {row.get('survived', 0):>8}  {pct}")


def allowance_text(results: dict) -> str:
    used = [f"{prop}: {name} x{n}" for prop, r in results.items() for name, n in sorted(r.allowances.items())]
    return "; ".join(used) or "none"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("histories", nargs="*", help="history files (.jsonl, .jsonl.gz) or run directories "
                                                     "(default: tests/histories/*.jsonl.gz)")
    parser.add_argument("--seeds", type=int, default=20, help="seeds per history and mutant class (default 20)")
    parser.add_argument("--seed", type=int, default=1, help="the first seed (default 1)")
    parser.add_argument("--class", dest="classes", action="append", choices=list(MUTANTS), metavar="NAME",
                        help="only this mutant class (repeatable; default: all)")
    args = parser.parse_args()
    if args.seeds < 1:
        parser.error("--seeds must be at least 1")
    classes = args.classes or list(MUTANTS)
    paths = history_paths(args.histories)
    if not paths:
        print(f"no histories found (looked for {DEFAULT}/*.jsonl.gz)", file=sys.stderr)
        return 2
    seeds = range(args.seed, args.seed + args.seeds)
    started = time.perf_counter()
    check_s, check_events, checked = 0.0, 0, 0
    false_alarms = 0
    by_class, by_prop = Tally(), Tally()
    print(f"mutation testing of the oracle: {len(paths)} histories, {len(classes)} mutant classes, "
          f"seeds {seeds.start}..{seeds.stop - 1}")
    print("\nunmutated histories:")
    loaded = []
    for path in paths:
        try:
            ops = read_ops(path)
        except HarnessError as exc:
            print(f"mutation.py: {exc}", file=sys.stderr)
            return 2
        t0 = time.perf_counter()
        table = EventTable.from_ops(ops)
        base = check_table(table)
        check_s += time.perf_counter() - t0
        check_events += len(table)
        checked += 1
        name = name_of(path)
        failing = {p: r for p, r in base.items() if r.valid is not True}
        if not failing:
            verdict = "PASS"
        elif (why := known_deviation(ops, base)) is not None:
            verdict = f"FAIL as expected, a known deviation ({verdict_line(failing)}): {why}"
        else:
            false_alarms += 1
            reasons = "; ".join(f"{p}: {r.reason}" for p, r in failing.items() if r.reason)
            verdict = f"FALSE ALARM: {verdict_line(failing)}" + (f" ({reasons})" if reasons else "")
        print(f"  {name}: {len(ops)} ops, {len(table)} events: {verdict}")
        print(f"    allowances used: {allowance_text(base)}")
        loaded.append((name, ops, base))
    for name, ops, base in loaded:
        for cls in classes:
            for seed in seeds:
                m = MUTANTS[cls](ops, random.Random(seed))
                if m is None:
                    continue
                t0 = time.perf_counter()
                table = EventTable.from_ops(m.ops)
                results = check_table(table)
                check_s += time.perf_counter() - t0
                check_events += len(table)
                checked += 1
                outcome = judge(m, results, base)
                detail = f"seed {seed}, {name}, {m.where}: expected {m.prop} ({'/'.join(m.kinds)}); got " \
                         f"{verdict_line(results)}"
                spot = (name, cls, m.where)  # seeds that pick the same spot make the same mutant
                by_class.add(cls, outcome, detail, spot)
                by_prop.add(m.prop, outcome, f"[{cls}] {detail}", spot)
    print()
    print("\n".join(by_class.table("mutant class", classes)))
    not_applicable = [c for c in classes if not by_class.counts.get(c)]
    if not_applicable:
        print(f"(not applicable to any of these histories: {', '.join(not_applicable)})")
    print()
    props = sorted(by_prop.counts)
    print("\n".join(by_prop.table("property", props)))
    survived = sum(row.get("survived", 0) for row in by_class.counts.values())
    if survived:
        print(f"\nsurvivors ({survived}; at most {SHOWN} per mutant class):")
        for cls in classes:
            for detail in by_class.survivors.get(cls, [])[:SHOWN]:
                print(f"  {cls}: {detail}")
    command = ["python", "benchmarks/mutation.py", "--seed", str(args.seed), "--seeds", str(args.seeds)]
    command += [x for c in (args.classes or []) for x in ("--class", c)]
    command += [str(p) for p in args.histories]
    print(f"\nreproduce: {shlex.join(command)}")
    elapsed = time.perf_counter() - started
    print(f"checked {checked} histories ({check_events:,} events) in {check_s:.1f} s of checking: "
          f"{int(check_events / check_s) if check_s else 0:,} events/s; {elapsed:.1f} s in all")
    if false_alarms:
        print(f"FAIL: {false_alarms} unmutated histories raised a false alarm")
    if survived:
        print(f"FAIL: {survived} applicable mutants survived")
    return 1 if survived or false_alarms else 0


if __name__ == "__main__":
    sys.exit(main())
