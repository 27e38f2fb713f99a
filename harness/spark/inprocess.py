"""The in-process front: one history checked by the runner's checkers, reported as the Spark engine does.

`check_inprocess` loads a whole history (JSON lines or Parquet) into this process and runs every
checker of `harness.checkers.registry.CHECKERS` on it; it returns a `RunCheck` with the same facts
the Spark engine counts, so the two engines' checks compare field by field (and `--engine auto` may
pick either). Small histories take this path; the Spark layouts replay the same model, spread over slots.
"""

from __future__ import annotations

from pathlib import Path

from harness.spark.histories import missing_history, run_history
from harness.spark.results import RunCheck, missing_check


def check_inprocess(file: Path) -> RunCheck:
    """The in-process engine on one history (the runner's checkers), with the same facts. Bad input
    (the loaders' checks) is a one-line HarnessError; a checker that crashes is unknown (`check_safe`)."""
    from harness.checkers import check_safe
    from harness.history.events import load_history
    from harness.checkers.registry import CHECKERS
    file = Path(file)
    if file.is_dir():
        file = run_history(file, False) or file
    why = missing_history(file)
    if why is not None:
        return missing_check(file, why)
    events = load_history(file)
    results = tuple(check_safe(name, fn, events) for name, fn in CHECKERS.items())
    return RunCheck(file, results, len(events), _facts(events.columns))


def _facts(cols) -> dict:
    """Deliveries (polls with records), produced records, the time span and throughput of a history's
    columns, as the Spark engine counts them."""
    deliveries = sum(1 for f, t, topic in zip(cols["f"], cols["type"], cols["topic"])
                     if f == "poll" and t == "ok" and topic is not None)
    produced = sum(1 for f, t in zip(cols["f"], cols["type"]) if f == "produce" and t == "ok")
    span_s = max((max(cols["time"]) - min(cols["time"])) if cols["time"] else 0, 1) / 1e9
    return {"deliveries": deliveries, "produced": produced, "span_s": round(span_s, 3),
            "throughput_rps": round(deliveries / span_s, 1)}
