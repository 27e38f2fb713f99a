"""A history's check, as both engines report it: `RunCheck`, and the files written beside the history.

A check holds the seven properties' results and the facts the nightly table keeps (deliveries,
produced records, the run's time span, throughput). A run without a history is an unknown check
(`missing_check`), never a pass and never dropped. `write_check` leaves `check-<engine>.json` and
`check-<engine>-anomalies.parquet` beside the history.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.checkers import Result, compose, verdict_word
from harness.errors import HarnessError, first_line


@dataclass
class RunCheck:
    """One history's results from the Spark engine, and the facts the nightly table keeps."""

    path: Path
    results: tuple[Result, ...]
    events: int = 0
    facts: dict[str, Any] = field(default_factory=dict)

    @property
    def valid(self):
        return compose(self.results)


def missing_check(path: Path, reason: str) -> RunCheck:
    """The check of a run without a history: unknown, naming why (never a pass, never dropped)."""
    return RunCheck(Path(path), (Result("history", "unknown", reason=reason),), 0,
                    {"deliveries": 0, "produced": 0, "span_s": 0.0, "throughput_rps": 0.0})


def write_check(check: RunCheck, engine: str, seconds: float | None = None) -> Path:
    """The results beside the history: `check-<engine>.json` (verdict, per property: verdict, stats,
    allowances, anomalies with evidence) and `check-<engine>-anomalies.parquet` (one row per anomaly)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    run_dir = check.path if check.path.is_dir() else check.path.parent
    out = run_dir / f"check-{engine}.json"
    data = {"engine": engine, "history": str(check.path), "verdict": verdict_word(check.valid),
            "events": check.events, "facts": check.facts, "results": [r.to_json() for r in check.results]}
    if seconds is not None:
        data["seconds"] = round(seconds, 3)
    anomalies = _anomaly_table(check)
    target = out
    try:  # each written beside and renamed over: a fifo in its place (a plain write would block) is replaced
        _replace(out, lambda tmp: tmp.write_text(json.dumps(data, indent=2, sort_keys=True)))
        target = run_dir / f"check-{engine}-anomalies.parquet"
        _replace(target, lambda tmp: pq.write_table(anomalies, tmp))
    except (OSError, pa.ArrowException) as exc:  # a read-only run directory, a full disk
        why = getattr(exc, "strerror", None) or first_line(exc)
        raise HarnessError(f"cannot write the check results {target}: {why} (make {run_dir} writable, or check "
                           f"a copy of the history in a writable directory)") from None
    return out


def _replace(path: Path, write) -> None:
    """`write(tmp)` to a file beside `path`, then renamed over `path`."""
    import os
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _anomaly_table(check: RunCheck):
    """One row per anomaly of `check`: property, kind, message, evidence, detail (as JSON)."""
    import pyarrow as pa
    rows = [(r.checker, a.kind, a.message, list(a.evidence), json.dumps(a.detail, sort_keys=True, default=str))
            for r in check.results for a in r.anomalies]
    return pa.table({"property": [r[0] for r in rows], "kind": [r[1] for r in rows],
                     "message": [r[2] for r in rows],
                     "evidence": pa.array([r[3] for r in rows], pa.list_(pa.int64())),
                     "detail": [r[4] for r in rows]})
