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
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.checkers import Result, compose, crash_reason, observed_result
from harness.errors import HarnessError
from harness.history.events import COLUMNS, INT_COLUMNS

GLOBAL_TOPIC = "\x00global"  # the group key of a run's global-only group
#: `--engine auto` checks on Spark above this many events (in all the histories of one call).
SPARK_THRESHOLD = 5_000_000
DEFAULT_MEMORY = "2g"  # the embedded Spark's heap (KSH_SPARK_MEMORY)


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


def _replay_group(configs: dict[int, Any], groups: dict[int, tuple[int, str, int]], shared=None):
    """The function each group runs (on a Spark worker): the same replay; its findings as JSON and
    the indexes of its polls with records (as int64 bytes: a poll spanning partitions is one batch).

    `groups`: group id -> (run, topic, partition); a group's rows arrive without the topic, partition
    and run columns (constants of the group, re-added here) unless they carry their own (global rows
    joined in). `shared`: a broadcast of {run: the run's global rows as Arrow IPC}, merged into every
    group of the run here instead of travelling through the shuffle once per group."""
    def replay_group(table):
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        from harness.checkers.replay import _Replay
        from harness.history.events import EventTable
        gid = table.column("gid")[0].as_py()
        run, topic, partition = groups[gid]
        if "topic" not in table.column_names:
            n = table.num_rows
            table = table.append_column("topic", pa.array([topic] * n, pa.string())).append_column(
                "partition", pa.array(np.full(n, partition, dtype=np.int32)))
        polls = table.filter(pc.and_(pc.equal(table["f"], "poll"), pc.equal(table["type"], "ok"))).column("index")
        polls = np.unique(polls.to_numpy()).astype(np.int64).tobytes()
        if shared is not None and run in shared.value:
            common = pa.ipc.open_stream(shared.value[run]).read_all()
            table = pa.concat_tables([table.select(common.schema.names), common.cast(
                table.select(common.schema.names).schema)])
        table = table.sort_by([("index", "ascending"), ("seq", "ascending")])
        partial = _Replay(configs.get(run, {})).run_partial(EventTable.from_arrow(table).rows())
        return pa.table({"gid": pa.array([gid], pa.int32()), "polls": pa.array([polls], pa.binary()),
                         "partial": [json.dumps(partial.to_json(), separators=(",", ":"))]})
    return replay_group


#: Global rows of all runs up to which they are broadcast to the groups (else joined to each group).
BROADCAST_ROWS = 4_000_000


def check_files(files: list[Path], master: str | None = None) -> list[RunCheck]:
    """Check every history in `files` in one Spark job; results in the order of `files`."""
    from harness.spark.session import spark_session
    spark = spark_session(master)
    try:
        return _check_files(spark, files)
    except HarnessError:
        raise
    except Exception as exc:  # a failed Spark job: one line naming the likely fix, not a JVM trace
        cause = [line for line in str(exc).splitlines() if "Error" in line or "Exception" in line]
        memory = os.environ.get("KSH_SPARK_MEMORY", DEFAULT_MEMORY)
        raise HarnessError(f"the Spark check of {len(files)} histories failed: "
                           f"{(cause[-1] if cause else str(exc).splitlines()[0]).strip()[:300]} (driver memory "
                           f"{memory}: raise KSH_SPARK_MEMORY, or send it to a cluster with --spark-master)") from None


def _check_files(spark, files: list[Path]) -> list[RunCheck]:
    from functools import reduce

    from pyspark.sql import functions as F

    from harness.checkers.replay import PROPERTIES, Observation, Partial, _config, _Replay, observation
    from harness.history.events import EventTable
    # A run is its position in `files`; `seq` keeps the file's row order within a run (an op's rows).
    df = reduce(lambda a, b: a.unionByName(b), [
        spark.read.parquet(str(f.resolve())).select(*COLUMNS).withColumn("run", F.lit(i))
        .withColumn("seq", F.monotonically_increasing_id()) for i, f in enumerate(files)])
    keyed_cond = F.col("topic").isNotNull() & F.col("partition").isNotNull() & (F.col("partition") >= 0)
    # -- set-based facts: DataFrame aggregations (one pass) -----------------------------------
    polls = F.when((F.col("f") == "poll") & (F.col("type") == "ok") & keyed_cond, F.col("index"))
    # a global row: no share-partition; empty polls do nothing in the replay, so they are left out
    global_cond = ~keyed_cond & ~((F.col("f") == "poll") & F.col("topic").isNull())
    facts_rows = df.groupBy("run").agg(
        F.count(F.lit(1)).alias("events"),
        F.sum(F.when(polls.isNotNull(), 1).otherwise(0)).alias("deliveries"),
        F.sum(F.when((F.col("f") == "produce") & (F.col("type") == "ok"), 1).otherwise(0)).alias("produced"),
        F.sum(F.when(global_cond, 1).otherwise(0)).alias("global_rows"),
        F.min("time").alias("t0"), F.max("time").alias("t1"),
        F.collect_set(F.when(keyed_cond, F.struct("topic", "partition"))).alias("keys")).collect()
    facts = {r["run"]: r.asDict() for r in facts_rows}
    # the groups: each run's share-partitions; a run with none gets one for its global rows alone
    groups: dict[int, tuple[int, str, int]] = {}
    for r in facts_rows:
        for k in sorted(r["keys"], key=lambda k: (k["topic"], k["partition"])) or [None]:
            groups[len(groups)] = (r["run"], GLOBAL_TOPIC, -1) if k is None else (r["run"], k["topic"], k["partition"])
    keys = spark.createDataFrame([(gid, run, topic, partition) for gid, (run, topic, partition) in groups.items()],
                                 schema="gid int, k_run int, k_topic string, k_partition int")
    # -- each run's config, read as the in-process replay reads it ----------------------------
    config_rows = df.where(F.col("f") == "config").select("run", "index", "seq", *COLUMNS[1:]).collect()
    configs: dict[int, Any] = {}
    bad_config: dict[int, Exception] = {}
    for run in {r["run"] for r in config_rows}:
        mine = sorted((r for r in config_rows if r["run"] == run), key=lambda r: (r["index"], r["seq"]))
        table = EventTable({c: [r[c] if r[c] is not None else (-1 if c in INT_COLUMNS else None) for r in mine]
                            for c in COLUMNS})
        try:
            configs[run] = _config(table)
        except Exception as exc:  # the in-process replay raises it too: every property unknown
            bad_config[run] = exc
    # -- the replay per share-partition --------------------------------------------------------
    # Only what the replay reads crosses the shuffle: no member ids, values only where it reads them,
    # and a group id instead of run, topic and partition (constants of a group).
    df = (df.withColumn("member", F.lit(None).cast("string"))
          .withColumn("value", F.when(~keyed_cond | F.col("f").isin("truncated", "share-state"), F.col("value"))))
    keyed = df.where(keyed_cond).join(
        F.broadcast(keys), on=[F.col("run") == F.col("k_run"), F.col("topic") == F.col("k_topic"),
                               F.col("partition") == F.col("k_partition")])
    # A commit that returned results marks its process's commit as returned in every group (the replay
    # does so on any row of it); duplicates of the marker are harmless (it only sets a flag).
    returned = (df.where((F.col("f") == "commit") & (F.col("type") == "ok") & keyed_cond)
                .withColumn("topic", F.lit(None).cast("string")).withColumn("partition", F.lit(None).cast("int"))
                .withColumn("offset", F.lit(None).cast("long")).withColumn("error", F.lit(None).cast("string")))
    global_rows = df.where(global_cond).unionByName(returned)
    schema = "gid int, polls binary, partial string"
    row_cols = [c for c in COLUMNS if c not in ("topic", "partition")] + ["seq"]
    if sum(r["global_rows"] for r in facts_rows) <= BROADCAST_ROWS:
        import pyarrow as pa
        import pyarrow.compute as pc
        shared_rows = global_rows.toArrow()
        by_run: dict[int, pa.Table] = {
            run: _without_idle_commit_returns(shared_rows.filter(pc.equal(shared_rows["run"], run))
                                              .sort_by([("index", "ascending"), ("seq", "ascending")]))
            for run in set(shared_rows.column("run").to_pylist())}
        shared = spark.sparkContext.broadcast({run: _ipc(rows.drop_columns(["run"])) for run, rows in by_run.items()})
        out = keyed.select("gid", *row_cols).groupBy("gid").applyInArrow(
            _replay_group(configs, groups, shared), schema=schema).collect()
        shared.unpersist()
        out = [(groups[r["gid"]][0], r["polls"], r["partial"]) for r in out]
        for gid, (run, topic, _) in groups.items():
            if topic == GLOBAL_TOPIC:  # only global rows: replayed here
                rows = by_run.get(run)
                table = EventTable() if rows is None else EventTable.from_arrow(rows)
                out.append((run, b"", json.dumps(_Replay(configs.get(run, {})).run_partial(table.rows()).to_json())))
    else:  # too many to broadcast: each group gets its run's global rows through the shuffle
        cols = ["gid", *row_cols, "topic", "partition"]
        every = global_rows.join(F.broadcast(keys), on=F.col("run") == F.col("k_run")).select(*cols)
        out = [(groups[r["gid"]][0], r["polls"], r["partial"]) for r in keyed.select(*cols).unionByName(every)
               .groupBy("gid").applyInArrow(_replay_group(configs, groups), schema=schema).collect()]
    import numpy as np
    polls: dict[int, list] = {}
    partials: dict[int, list[Partial]] = {}
    for run, poll_bytes, partial in out:
        partials.setdefault(run, []).append(Partial.from_json(json.loads(partial)))
        polls.setdefault(run, []).append(np.frombuffer(poll_bytes, dtype=np.int64))
    batches = {run: len(np.unique(np.concatenate(found))) for run, found in polls.items()}
    checks = []
    for key, file in enumerate(files):
        fact = facts.get(key, {})
        if key in bad_config:
            exc = bad_config[key]
            results = tuple(Result(p, "unknown", reason=crash_reason(exc)) for p in PROPERTIES)
        elif not fact.get("events"):
            obs = Observation()
            obs.unknown["*"] = "the history is empty"
            results = tuple(observed_result(p, obs) for p in PROPERTIES)
        else:
            obs = observation(partials.get(key, []), batches=batches.get(key, 0))
            results = tuple(observed_result(p, obs) for p in PROPERTIES)
        span_s = max((fact.get("t1") or 0) - (fact.get("t0") or 0), 1) / 1e9
        checks.append(RunCheck(file, results, int(fact.get("events") or 0), {
            "deliveries": int(fact.get("deliveries") or 0), "produced": int(fact.get("produced") or 0),
            "span_s": round(span_s, 3), "throughput_rps": round((fact.get("deliveries") or 0) / span_s, 1)}))
    return checks


def _without_idle_commit_returns(rows):
    """`rows` (a run's global rows, in order) without the "commit returned" rows that change nothing.

    Such a row (a commit `ok` naming no share-partition, or the marker of one that did) only marks
    its process's last commit as returned, and the replay reads that mark only when the process
    crashes or fails to close, until its next commit starts. So only the last one before each
    crash or close `info` of its process (with no commit invoke between) is kept: the replay of
    every group is the same, with a fraction of the rows (a commit per poll is common)."""
    import pyarrow as pa
    f, type_, process, value = (rows.column(c).to_pylist() for c in ("f", "type", "process", "value"))
    pending: dict[str, int] = {}  # process -> its latest commit-returned row since its last commit invoke
    keep = [True] * rows.num_rows
    for i in range(rows.num_rows):
        if f[i] != "commit" and f[i] != "crash" and f[i] != "close":
            continue
        if f[i] == "commit":
            if type_[i] == "invoke":
                pending.pop(process[i], None)
            elif type_[i] == "ok":
                keep[i] = False
                pending[process[i]] = i
        elif f[i] == "crash" or type_[i] == "info":
            who = process[i] if f[i] == "close" else (json.loads(value[i]) if value[i] else {}).get("process", "")
            if who in pending:
                keep[pending.pop(who)] = True
    return rows.filter(pa.array(keep))


def _ipc(table) -> bytes:
    import pyarrow as pa
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


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


