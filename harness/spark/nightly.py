"""The nightly table: one row per checked run, kept across nights, and its report.

The table is a directory of Parquet files (`part-<utc time>-<random>.parquet`), one per append, so
concurrent appends never collide and Spark, pyarrow or pandas read it as one dataset. Columns:
run, night (UTC date of the run), checked_at, engine, version, scenario, seed, verdict,
allowances (JSON: name -> count), anomalies (count), anomaly_kinds (JSON: kind -> count),
events, deliveries, throughput_rps (records delivered per second of the run's history).

`report` queries it with Spark: per scenario and night, runs, pass rate and anomalies, as a
small self-contained HTML page (a table and one pass-rate bar per night).
"""

from __future__ import annotations

import html
import json
import re
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from harness.checkers import verdict_word
from harness.errors import HarnessError, first_line, raise_if_interrupted
from harness.history.store import require_regular
from harness.report.html import page
from harness.spark.session import interruptible, spark_session
from harness.sys.files import read_text

SEED_PART = re.compile(r"\bs\d+-")  # "test_x[s3-leader-kill-mix]" -> "test_x[leader-kill-mix]"
COLUMNS = ("run", "night", "checked_at", "engine", "version", "scenario", "seed", "verdict", "allowances",
           "anomalies", "anomaly_kinds", "events", "deliveries", "throughput_rps")


#: The Arrow type of each column, as `append` writes it: a part of another schema is refused by `summary`.
TYPES = {**{c: "string" for c in COLUMNS}, "seed": "int64", "anomalies": "int64", "events": "int64",
         "deliveries": "int64", "throughput_rps": "double"}


def run_dir_of(path: Path) -> Path:
    """The run directory of a checked path (a history file, or a directory: a run without history)."""
    path = Path(path)
    return path if path.is_dir() else path.parent


def run_facts(path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the spec, the verdict) of the run of `path` (a history or a run directory), from the spec.json and
    verdict.json beside it: {} for a file that is missing or not a JSON object (a run that crashed while
    writing it). A fifo, a device or an oversized file is one line of bad input (never a read that blocks
    or fills the memory)."""
    run_dir = run_dir_of(path)
    spec = _json(run_dir / "spec.json", "spec").get("spec")
    return (spec if isinstance(spec, dict) else {}), _json(run_dir / "verdict.json", "verdict")


def row_for(check, engine: str, facts: tuple[dict[str, Any], dict[str, Any]] | None = None) -> dict[str, Any]:
    """The table row of a `RunCheck` (spec.json and verdict.json beside the history fill the run's facts:
    `facts`, as `run_facts` read them before the check, else read now)."""
    run_dir = run_dir_of(check.path)
    spec, verdict = facts if facts is not None else run_facts(check.path)
    name = str(spec.get("name") or run_dir.name)
    allowances: dict[str, int] = {}
    kinds: dict[str, int] = {}
    for r in check.results:
        for k, v in r.allowances.items():
            allowances[k] = allowances.get(k, 0) + v
        for a in r.anomalies:
            kinds[a.kind] = kinds.get(a.kind, 0) + 1
    stamp = re.match(r"(\d{8})-\d{6}", run_dir.name)
    night = (datetime.strptime(stamp.group(1), "%Y%m%d").date() if stamp
             else datetime.fromtimestamp(_mtime(check.path), timezone.utc).date())
    return {"run": run_dir.name, "night": night.isoformat(), "checked_at": datetime.now(timezone.utc).isoformat(),
            "engine": engine, "version": str(verdict.get("kafka_version") or spec.get("kafka_version") or ""),
            "scenario": SEED_PART.sub("", name), "seed": _seed(spec.get("seed", verdict.get("seed", -1))),
            "verdict": verdict_word(check.valid), "allowances": json.dumps(allowances, sort_keys=True),
            "anomalies": sum(kinds.values()), "anomaly_kinds": json.dumps(kinds, sort_keys=True),
            "events": check.events, "deliveries": int(check.facts.get("deliveries", 0)),
            "throughput_rps": float(check.facts.get("throughput_rps", 0.0))}


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:  # gone since it was checked
        return datetime.now(timezone.utc).timestamp()


def _seed(value: Any) -> int:
    """A run's seed as the table keeps it (int64): -1 when the run's files hold none that fits."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        return -1
    try:
        seed = int(value)
    except ValueError:
        return -1
    return seed if -(1 << 63) <= seed < (1 << 63) else -1


def _json(path: Path, what: str) -> dict[str, Any]:
    """The JSON object in `path`; {} if it is missing or not one. BadFile (bad input) if it is not a regular
    file or is too big (`harness.sys.files`)."""
    if not path.exists():
        return {}
    text = read_text(path, f"the {what} file", limit=SMALL_FACTS)
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


#: What a run's spec.json or verdict.json may weigh (a verdict lists anomalies: megabytes, not gigabytes).
SMALL_FACTS = 64 * 1024 * 1024


def append(table: Path, rows: list[dict[str, Any]]) -> Path | None:
    """Append `rows` to the table as one new Parquet file; None when there is nothing to append."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    if not rows:
        return None
    table.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")
    path = table / f"part-{stamp}-{uuid.uuid4().hex[:8]}.parquet"
    tmp = path.with_suffix(".tmp")
    pq.write_table(pa.Table.from_pylist([{c: r[c] for c in COLUMNS} for r in rows]), tmp)
    tmp.rename(path)  # readers never see half a file
    return path


def summary(table: Path, master: str | None = None) -> list[dict[str, Any]]:
    """Per scenario and night: runs, passes, pass rate, anomalies (a Spark query over the table)."""
    from pyspark.sql import functions as F

    check_table(table)  # a table Spark would choke on is refused first, in one line
    spark = spark_session(master)

    def query():
        df = spark.read.parquet(str(table.resolve() / "part-*.parquet"))
        return (df.groupBy("scenario", "night")
                .agg(F.count(F.lit(1)).alias("runs"),
                     F.sum(F.when(F.col("verdict") == "PASS", 1).otherwise(0)).alias("passed"),
                     F.sum("anomalies").alias("anomalies"),
                     F.avg("throughput_rps").alias("throughput_rps"))
                .orderBy("scenario", "night").collect())
    with interruptible(spark):
        try:
            rows = query()
        except Exception as exc:  # a part damaged past its footer: one line, not a JVM trace
            raise_if_interrupted(exc)
            cause = [line for line in str(exc).splitlines() if "Error" in line or "Exception" in line]
            raise HarnessError(f"the nightly table {table} could not be read: "
                               f"{(cause[-1] if cause else first_line(exc)).strip()[:300]} (remove or rewrite the "
                               f"part it names)") from None
    return [{**r.asDict(), "pass_rate": (r["passed"] / r["runs"]) if r["runs"] else 0.0} for r in rows]


def check_table(table: Path) -> list[Path]:
    """The parts of the nightly table `table`, each a regular Parquet file whose footer has every column of
    its type (`TYPES`, as `append` writes them); else one line naming the part and what to do (a part of
    another schema is bad input, not a Spark failure)."""
    import pyarrow.parquet as pq

    if not table.is_dir():
        raise HarnessError(f"{table} is not a nightly table (a directory of part-*.parquet): check runs with "
                           f"--nightly {table} first")
    parts = sorted(table.glob("part-*.parquet"))
    if not parts:
        raise HarnessError(f"{table} holds no nightly table: check runs with --nightly {table} first")
    for part in parts:
        require_regular(part, "nightly table part")
        try:
            schema = pq.read_schema(part)
        except Exception as exc:  # ArrowInvalid, OSError
            raise HarnessError(f"the nightly table part {part} is not Parquet ({first_line(exc)}): remove it") from None
        for column, kind in TYPES.items():
            if column not in schema.names:
                raise HarnessError(f"the nightly table part {part} has no column {column!r} (not a part "
                                   f"`check --nightly` wrote): remove it")
            found = schema.field(column).type
            if str(found) != kind and not (kind == "string" and str(found) == "large_string"):
                raise HarnessError(f"the nightly table part {part} has column {column!r} of type {found}, not "
                                   f"{kind} (not a part `check --nightly` wrote): remove it")
    return parts


def report(table: Path, out: Path, master: str | None = None) -> Path:
    """Write the HTML report of `summary(table)` to `out`."""
    text = report_html(summary(table, master))  # a table that is not one fails before anything is written
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    return out


def report_html(rows: list[dict[str, Any]]) -> str:
    """The nightly page from `summary`'s rows: a scenario per row, a night per column, each cell its pass
    rate as a bar and its counts."""
    nights = sorted({r["night"] for r in rows})
    by_scenario: dict[str, dict[str, dict[str, Any]]] = {}
    for r in rows:
        by_scenario.setdefault(r["scenario"], {})[r["night"]] = r
    head = "".join(f"<th>{html.escape(n)}</th>" for n in nights)
    body = []
    for scenario, cells in sorted(by_scenario.items()):
        tds = []
        for night in nights:
            r = cells.get(night)
            if r is None:
                tds.append("<td></td>")
                continue
            pct = round(100 * r["pass_rate"])
            colour = "#2e7d32" if pct == 100 else "#c62828"
            tds.append(f"<td title='{r['passed']}/{r['runs']} passed, {r['anomalies']} anomalies'>"
                       f"<div style='background:{colour};width:{max(pct, 4)}%;height:8px'></div>"
                       f"{r['passed']}/{r['runs']} ({r['anomalies']} anomalies)</td>")
        body.append(f"<tr><td>{html.escape(scenario)}</td>{''.join(tds)}</tr>")
    return page("share-harness nightly", "<h1>Nightly: pass rate and anomalies per scenario</h1><table>"
                f"<tr><th>scenario</th>{head}</tr>{''.join(body)}</table>")
