"""The commands that read runs already made: `check` (histories again), `tally` (runs per scenario)
and `nightly-report` (HTML of a nightly table); `results_table` is `check`'s table of one history.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from harness import exitcodes
from harness.errors import HarnessError


def given_path(value: Any, what: str, fix: str) -> Path:
    """A path the user typed, as a Path; an empty one is refused in one line (`Path("")` is the current
    directory: `check ""` would check whatever is there). `value` may be the parser's str or Path."""
    if value is None or (isinstance(value, str) and not value.strip()):
        raise HarnessError(f"{what} is an empty path: {fix}")
    return Path(value)


def cmd_check(args: argparse.Namespace) -> int:
    """Exit 0 (every property of every history holds), 1 (a violation), 3 (unknown: a property not
    decided, a run directory without a history), 2 (bad input)."""
    from harness.check import check_histories  # (deferred: loaded only when this command or fixture runs)
    from harness.checkers import compose, verdict_word  # (deferred: loaded only when this command or fixture runs)
    paths = [given_path(p, "a history to check", "give a run directory, a history file or a folder of runs "
                                                 "(e.g. reports/runs/latest)") for p in args.history]
    facts: dict[Path, Any] = {}
    vet = None
    if args.nightly is not None:
        # (deferred: loaded only when this command or fixture runs)
        from harness.spark.nightly import run_dir_of, run_facts
        table = given_path(args.nightly, "--nightly", "give the nightly table's directory")
        if table.exists() and not table.is_dir():
            raise HarnessError(f"--nightly {table} is not a directory: give the nightly table's directory (a "
                               f"directory of part-*.parquet, made if missing)")

        def vet(targets):  # before any check: a run's facts that cannot be read leave nothing behind
            facts.update({run_dir_of(t): run_facts(t) for t in targets})
    checks, engine = check_histories(paths, args.engine, args.spark_master, args.spark_threshold, vet=vet)
    if args.nightly is not None:
        from harness.spark.nightly import append, row_for  # (deferred: loaded only when this command or fixture runs)
        append(table, [row_for(c, engine, facts.get(run_dir_of(c.path))) for c in checks])
    valid = compose([r for c in checks for r in c.results])  # no history at all: unknown
    if args.json:
        print(json.dumps({"engine": engine, "verdict": verdict_word(valid), "histories": [
            {"history": str(c.path), "verdict": verdict_word(c.valid), "results": [r.to_json() for r in c.results]}
            for c in checks]}, indent=2))
    else:
        for c in checks:
            if len(checks) > 1:
                print(f"== {c.path}")
            print(results_table(c.results, c.valid, c.events) + f" [{engine}]")
        if len(checks) > 1:
            print(f"overall: {verdict_word(valid)} ({len(checks)} histories)")
    return exitcodes.for_verdict(valid)


def cmd_tally(args: argparse.Namespace) -> int:
    """Exit 0 when every run passed with every fault applied and healed, 1 when a run failed, 3 when
    a run is unknown (crashed, unfinished, a fault not applied) or there is no run at all."""
    # (deferred: loaded only when this command or fixture runs)
    from harness.report.tally import render, tally, tally_exit
    rows = tally(args.runs)
    if args.json:
        print(json.dumps(rows, indent=2, sort_keys=True))
    else:
        print(render(rows) if rows else "no runs found: nothing was checked")
    return tally_exit(rows)


def cmd_nightly_report(args: argparse.Namespace) -> int:
    """Exit 0 when the report was written (a report is not a gate: `check` and `tally` are), 2 bad input."""
    from harness.spark.nightly import report  # (deferred: loaded only when this command or fixture runs)
    table = given_path(args.table, "the nightly table", "give the directory `check --nightly` appended to")
    out = given_path(args.out, "--out", "give the report's file name") if args.out is not None else None
    out = report(table, out or table / "report.html", args.spark_master)
    print(f"nightly report: {out}")
    return exitcodes.PASS


def results_table(results, valid, events: int) -> str:
    """property | verdict | anomalies | allowances used, then the first anomalies and unknown reasons."""
    from harness.checkers import verdict_word  # (deferred: loaded only when this command or fixture runs)
    rows = [("property", "verdict", "anomalies", "allowances used")]
    for r in results:
        allowances = ", ".join(f"{k}={v}" for k, v in sorted(r.allowances.items())) or "-"
        rows.append((r.checker, verdict_word(r.valid), str(len(r.anomalies)), allowances))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row[:3], widths)) + "  " + row[3] for row in rows]
    lines.insert(1, "-" * max(len(line) for line in lines))
    for r in results:
        lines += _result_notes(r)
    lines.append(f"verdict: {verdict_word(valid)} ({events} events)")
    return "\n".join(lines)


def _result_notes(r) -> list[str]:
    """One property's unknown reason, first anomalies and the evidence of each allowance it used."""
    from harness.checkers import verdict_word  # (deferred: loaded only when this command or fixture runs)
    lines = []
    if r.reason:
        lines.append(f"{r.checker}: {verdict_word(r.valid)}: {r.reason}")
    for a in r.anomalies[:5]:
        lines.append(f"{r.checker}: {a.kind}: {a.message} (ops {', '.join(map(str, a.evidence))})")
    if len(r.anomalies) > 5:
        lines.append(f"{r.checker}: ... {len(r.anomalies) - 5} more (use --json)")
    for name, uses in sorted(getattr(r, "allowance_evidence", {}).items()):
        if uses:  # the first use's evidence, so a reader can audit it (all kept uses: --json)
            lines.append(f"{r.checker}: allowance {name} x{r.allowances.get(name, len(uses))}, first "
                         f"justified by ops {', '.join(map(str, uses[0]))}")
    return lines
