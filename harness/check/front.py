"""Checking histories: the front every caller uses (the CLI's `check`, a run's own verdict), whose names the
package `harness.check` hands out.

`engine_for` says which engine checks a history (`auto`: Spark above the threshold of events, else
in-process); `check_events` checks one run's history with it; `check_histories` checks the histories
paths name and writes each one's results beside it. The parts: `histories` (which histories the
paths name, and whether they can be read), `results` (a history's check, `RunCheck`, and the files
written beside it), `inprocess` (the in-process engine: one replay per history). The Spark engine is
one engine behind this front (`harness.spark.engine.check_files`), loaded only when it checks.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from harness.check.histories import events_in, history_files, missing_history
from harness.check.inprocess import check_inprocess
from harness.check.results import RunCheck, missing_check, write_check
from harness.checkers import Result, check_safe
from harness.checkers.registry import CHECKERS
from harness.check.plan import SPARK_THRESHOLD  # `auto` checks on Spark above it (one definition)

def engine_for(engine: str, events: int, threshold: int = SPARK_THRESHOLD) -> str:
    """The engine that checks `events` rows: `engine`, or for "auto" spark above `threshold`, else in-process."""
    if engine != "auto":
        return engine
    return "spark" if events > threshold else "inprocess"


def check_events(events: Any, parquet: Path, engine: str) -> tuple[Result, ...]:
    """Every property of one run's history: `events` (an EventTable) in-process, or its Parquet copy
    `parquet` on Spark."""
    if engine == "spark":
        from harness.spark.engine import check_files  # (deferred: the Spark engine loads pyspark)
        return check_files([parquet])[0].results
    return tuple(check_safe(name, fn, events) for name, fn in CHECKERS.items())


def check_histories(paths: list[Path], engine: str = "auto", master: str | None = None,
                    threshold: int = SPARK_THRESHOLD, vet=None) -> tuple[list[RunCheck], str]:
    """Check the histories `paths` name with `engine` ("auto": spark above `threshold` events in all,
    if all are Parquet); write each one's results beside it. (checks, the engine used). A run
    without a history is an unknown check (`missing_check`), in its place in the list. `vet`, if given,
    is called with the histories (and runs without one) before any is checked or written beside: bad
    input it raises leaves nothing behind."""
    targets = history_files(paths, parquet_only=engine == "spark")
    if vet is not None:
        vet(targets)
    files = [t for t in targets if missing_history(t) is None]
    if engine == "auto":
        parquet = bool(files) and all(f.suffix == ".parquet" for f in files)
        engine = engine_for(engine, events_in(files) if parquet else 0, threshold)
    if engine == "spark":
        started = time.monotonic()
        from harness.spark.engine import check_files  # (deferred: the Spark engine loads pyspark)
        checks = check_files(targets, master)
        seconds = (time.monotonic() - started) / max(len(files), 1)
        for check in checks:
            if missing_history(check.path) is None:
                write_check(check, engine, seconds)
        return checks, engine
    checks = []
    for target in targets:
        why = missing_history(target)
        if why is not None:
            checks.append(missing_check(target, why))
            continue
        started = time.monotonic()
        checks.append(check_inprocess(target))
        write_check(checks[-1], engine, time.monotonic() - started)
    return checks, engine
