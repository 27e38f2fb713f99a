"""The seven properties of Parquet histories, checked on Spark with the in-process engine's code.

One job checks any number of runs. Per run, every row that belongs to one share-partition (it
names a topic and a partition: deliveries, acknowledgements, commit results, produces, truncations,
durable reads) goes to that share-partition's group; every other row (config, commit invokes and
failures, crashes, closes, faults...) is global and goes to every group of its run, together with a
"commit returned" marker for each commit that returned results (the replay marks a process's commit
as returned on any of its rows). A group is replayed by `harness.checkers.replay._Replay` exactly as
the in-process engine replays a whole history, and the partial findings are merged by
`replay.observation`, the same code that finishes an in-process replay. The merge is exact because
the replay keeps no state that links two share-partitions except through global rows.

Polls with records, events, produced and delivered records and each run's time span are
DataFrame aggregations (a poll spanning partitions is one batch, not one per group).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from harness.checkers import Result, compose, crash_reason, observed_result
from harness.errors import HarnessError
from harness.history.events import COLUMNS, INT_COLUMNS

GLOBAL_TOPIC = "\x00global"  # the group key of a run's global-only group
#: `--engine auto` checks on Spark above this many events (in all the histories of one call).
SPARK_THRESHOLD = 5_000_000


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


def history_files(paths: list[Path], parquet_only: bool = True) -> list[Path]:
    """The histories `paths` name: history files, run directories (their history.parquet, else
    history.jsonl) or folders of run directories. The spark engine reads Parquet only. A path that
    names none is a one-line error naming it."""
    found: list[Path] = []
    for path in paths:
        path = Path(path)
        if path.is_file():
            if path.suffix != ".parquet" and (parquet_only or path.suffix != ".jsonl"):
                raise HarnessError(f"{path} is not a {'Parquet' if parquet_only else '.parquet or .jsonl'} history"
                                   + (" (check a .jsonl with --engine inprocess)" if parquet_only else ""))
            found.append(path)
        elif _run_history(path, parquet_only) is not None:
            found.append(_run_history(path, parquet_only))
        elif path.is_dir():
            runs = [h for h in (_run_history(d, parquet_only) for d in sorted(path.iterdir()) if d.is_dir()) if h]
            if not runs:
                raise HarnessError(f"{path} holds no run with a history{'.parquet' if parquet_only else ''}: pass "
                                   f"run directories, history files or a folder of runs (e.g. reports/runs)")
            found.extend(runs)
        else:
            raise HarnessError(f"{path} does not exist: pass a run directory, a history file or a folder of runs")
    for file in found:
        if file.suffix == ".parquet":
            _check_schema(file)
    return found


def _run_history(run_dir: Path, parquet_only: bool) -> Path | None:
    for name in ("history.parquet",) if parquet_only else ("history.parquet", "history.jsonl"):
        if (run_dir / name).is_file():
            return run_dir / name
    return None


def check_histories(paths: list[Path], engine: str = "auto", master: str | None = None,
                    threshold: int = SPARK_THRESHOLD) -> tuple[list[RunCheck], str]:
    """Check the histories `paths` name with `engine` ("auto": spark above `threshold` events in all,
    if all are Parquet); write each one's results beside it. (checks, the engine used)."""
    files = history_files(paths, parquet_only=engine == "spark")
    if engine == "auto":
        engine = "spark" if all(f.suffix == ".parquet" for f in files) and _events(files) > threshold \
            else "inprocess"
    if engine == "spark":
        started = time.monotonic()
        checks = check_files(files, master)
        seconds = (time.monotonic() - started) / max(len(checks), 1)
    else:
        checks, seconds = [], None
        for file in files:
            started = time.monotonic()
            checks.append(check_inprocess(file))
            write_check(checks[-1], engine, time.monotonic() - started)
    if engine == "spark":
        for check in checks:
            write_check(check, engine, seconds)
    return checks, engine


def _events(files: list[Path]) -> int:
    import pyarrow.parquet as pq
    return sum(pq.ParquetFile(f).metadata.num_rows for f in files)


def check_inprocess(file: Path) -> RunCheck:
    """The in-process engine on one history (the runner's checkers), with the same facts."""
    from harness.checkers import check_safe
    from harness.history.events import load_history
    from harness.runner import CHECKERS
    events = load_history(file)
    results = tuple(check_safe(name, fn, events) for name, fn in CHECKERS.items())
    cols = events.columns
    deliveries = sum(1 for f, t, topic in zip(cols["f"], cols["type"], cols["topic"])
                     if f == "poll" and t == "ok" and topic is not None)
    produced = sum(1 for f, t in zip(cols["f"], cols["type"]) if f == "produce" and t == "ok")
    span_s = max((max(cols["time"]) - min(cols["time"])) if cols["time"] else 0, 1) / 1e9
    return RunCheck(file, results, len(events), {"deliveries": deliveries, "produced": produced,
                                                 "span_s": round(span_s, 3),
                                                 "throughput_rps": round(deliveries / span_s, 1)})


def _check_schema(file: Path) -> None:
    import pyarrow.parquet as pq
    try:
        names = pq.read_schema(file).names
    except Exception as exc:  # ArrowInvalid, OSError
        raise HarnessError(f"unreadable Parquet history {file}: {str(exc).splitlines()[0]}") from None
    missing = [c for c in COLUMNS if c not in names]
    if missing:
        raise HarnessError(f"{file} is not a share-harness history: column {missing[0]!r} is missing")


def _replay_group(configs: dict[str, Any]):
    """The function each group runs (on a Spark worker): the same replay, its findings as JSON."""
    def replay_group(table):
        import pyarrow as pa

        from harness.checkers.replay import _Replay
        from harness.history.events import EventTable
        table = table.sort_by([("index", "ascending"), ("seq", "ascending")])
        run = table.column("run")[0].as_py()
        topic = table.column("k_topic")[0].as_py()
        partition = table.column("k_partition")[0].as_py()
        partial = _Replay(configs.get(run, {})).run_partial(EventTable.from_arrow(table).rows())
        return pa.table({"run": [run], "k_topic": [topic], "k_partition": [partition],
                         "partial": [json.dumps(partial.to_json(), separators=(",", ":"))]})
    return replay_group


def check_files(files: list[Path], master: str | None = None) -> list[RunCheck]:
    """Check every history in `files` in one Spark job; results in the order of `files`."""
    from pyspark.sql import functions as F

    from harness.checkers.replay import PROPERTIES, Observation, Partial, _config, observation
    from harness.history.events import EventTable
    from harness.spark.session import spark_session
    spark = spark_session(master)
    runs = {str(f.resolve()): f for f in files}
    df = (spark.read.parquet(*[str(f.resolve()) for f in files])
          .select(*COLUMNS)
          .withColumn("run", F.input_file_name())
          .withColumn("seq", F.monotonically_increasing_id()))  # file order within a run (an op's rows)
    keyed_cond = F.col("topic").isNotNull() & F.col("partition").isNotNull() & (F.col("partition") >= 0)
    # -- set-based facts: DataFrame aggregations ---------------------------------------------
    polls = F.when((F.col("f") == "poll") & (F.col("type") == "ok") & keyed_cond, F.col("index"))
    facts_rows = df.groupBy("run").agg(
        F.count(F.lit(1)).alias("events"),
        F.countDistinct(polls).alias("batches"),
        F.sum(F.when(polls.isNotNull(), 1).otherwise(0)).alias("deliveries"),
        F.sum(F.when((F.col("f") == "produce") & (F.col("type") == "ok"), 1).otherwise(0)).alias("produced"),
        F.min("time").alias("t0"), F.max("time").alias("t1")).collect()
    facts = {_local_path(r["run"]): r.asDict() for r in facts_rows}
    # -- each run's config, read as the in-process replay reads it ----------------------------
    config_rows = df.where(F.col("f") == "config").select("run", "index", "seq", *COLUMNS[1:]).collect()
    configs: dict[str, Any] = {}
    bad_config: dict[str, Exception] = {}
    for run in {r["run"] for r in config_rows}:
        mine = sorted((r for r in config_rows if r["run"] == run), key=lambda r: (r["index"], r["seq"]))
        table = EventTable({c: [r[c] if r[c] is not None else (-1 if c in INT_COLUMNS else None) for r in mine]
                            for c in COLUMNS})
        try:
            configs[run] = _config(table)
        except Exception as exc:  # the in-process replay raises it too: every property unknown
            bad_config[_local_path(run)] = exc
    # -- the replay per share-partition --------------------------------------------------------
    keyed = (df.where(keyed_cond)
             .withColumn("k_topic", F.col("topic")).withColumn("k_partition", F.col("partition").cast("long")))
    keys = keyed.select("run", "k_topic", "k_partition").distinct().unionByName(
        df.select("run").distinct().withColumn("k_topic", F.lit(GLOBAL_TOPIC))
        .withColumn("k_partition", F.lit(-1).cast("long")))
    returned = (df.where((F.col("f") == "commit") & (F.col("type") == "ok") & keyed_cond)
                .dropDuplicates(["run", "index"])
                .withColumn("topic", F.lit(None).cast("string")).withColumn("partition", F.lit(None).cast("int"))
                .withColumn("offset", F.lit(None).cast("long")).withColumn("error", F.lit(None).cast("string")))
    global_rows = (df.where(~keyed_cond & ~((F.col("f") == "poll") & F.col("topic").isNull()))
                   .unionByName(returned))
    groups = keyed.unionByName(global_rows.join(keys, on="run"))
    out = (groups.groupBy("run", "k_topic", "k_partition")
           .applyInArrow(_replay_group(configs),
                         schema="run string, k_topic string, k_partition long, partial string")
           .collect())
    partials: dict[str, list[Partial]] = {}
    for r in out:
        partials.setdefault(_local_path(r["run"]), []).append(Partial.from_json(json.loads(r["partial"])))
    checks = []
    for file in files:
        key = str(file.resolve())
        fact = facts.get(key, {})
        if key in bad_config:
            exc = bad_config[key]
            results = tuple(Result(p, "unknown", reason=crash_reason(exc)) for p in PROPERTIES)
        elif not fact.get("events"):
            obs = Observation()
            obs.unknown["*"] = "the history is empty"
            results = tuple(observed_result(p, obs) for p in PROPERTIES)
        else:
            obs = observation(partials.get(key, []), batches=int(fact["batches"]))
            results = tuple(observed_result(p, obs) for p in PROPERTIES)
        span_s = max((fact.get("t1") or 0) - (fact.get("t0") or 0), 1) / 1e9
        checks.append(RunCheck(runs[key], results, int(fact.get("events") or 0), {
            "deliveries": int(fact.get("deliveries") or 0), "produced": int(fact.get("produced") or 0),
            "span_s": round(span_s, 3), "throughput_rps": round((fact.get("deliveries") or 0) / span_s, 1)}))
    return checks


def _local_path(uri: str) -> str:
    """input_file_name()'s URI as the resolved local path the caller passed."""
    parsed = urlparse(uri)
    return unquote(parsed.path) if parsed.scheme in ("file", "") else uri


def write_check(check: RunCheck, engine: str, seconds: float | None = None) -> Path:
    """The results beside the history: `check-<engine>.json` (verdict, per property: verdict, stats,
    allowances, anomalies with evidence) and `check-<engine>-anomalies.parquet` (one row per anomaly)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from harness.checkers import verdict_word
    run_dir = check.path.parent
    out = run_dir / f"check-{engine}.json"
    data = {"engine": engine, "history": str(check.path), "verdict": verdict_word(check.valid),
            "events": check.events, "facts": check.facts, "results": [r.to_json() for r in check.results]}
    if seconds is not None:
        data["seconds"] = round(seconds, 3)
    out.write_text(json.dumps(data, indent=2, sort_keys=True))
    rows = [(r.checker, a.kind, a.message, list(a.evidence), json.dumps(a.detail, sort_keys=True, default=str))
            for r in check.results for a in r.anomalies]
    pq.write_table(pa.table({"property": [r[0] for r in rows], "kind": [r[1] for r in rows],
                             "message": [r[2] for r in rows],
                             "evidence": pa.array([r[3] for r in rows], pa.list_(pa.int64())),
                             "detail": [r[4] for r in rows]}), run_dir / f"check-{engine}-anomalies.parquet")
    return out


