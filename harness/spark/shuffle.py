"""The shuffle layout: the histories as one DataFrame, each keyed row sent to its slot by a hash shuffle.

For files too big for the direct layout (`harness.spark.slots`). The rows that name a
share-partition go to their slot through one hash shuffle (`mapInArrow`); the global rows (config,
commit invokes and failures, crashes, closes, faults...) are collected on the driver once, with a
"commit returned" marker for each commit that returned results (the replay marks a process's commit
as returned on any of its rows), pruned (`harness.spark.pruning`) and broadcast: every slot of a
run replays them with its own share-partitions. Only what the replay reads crosses to Python (no
member ids; values only where the replay reads them). The driver counts the facts of the global
rows and reads each run's config as the in-process replay reads it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.checkers import crash_reason
from harness.checkers.replay import Replay, config_of
from harness.history.events import COLUMNS, FLAT_VALUE, EventTable
from harness.spark.merge import SlotOutput
from harness.spark.pruning import without_idle_commit_returns
from harness.spark.slots import slot_values
from harness.spark.tables import in_order, ipc_bytes, replay_rows

#: the `kind` of a collected row: a global row, a "commit returned" marker, an empty poll (an event only)
GLOBAL, MARKER, EMPTY_POLL = 0, 1, 2
#: the slots' rows, as `mapInArrow` returns them
_SLOT_SCHEMA = "run int, events long, deliveries long, produced long, t0 long, t1 long, polls binary, partial string"


def run_shuffle(spark, files: list[Path], runs: list[int], slots: int, found: SlotOutput) -> None:
    """The shuffle layout for the files at `runs`, over `slots` slots (`slots.shuffle_slot_count`):
    adds to `found` the facts of the global rows, unreadable configs, each run's global rows and the
    slots' rows."""
    import pyarrow.compute as pc
    df = _history_frame(spark, files, runs)
    collected = _collect_global_rows(df)
    real = collected.filter(pc.not_equal(collected["kind"], MARKER))
    found.facts.update(_global_facts(real))
    shared_rows = collected.filter(pc.not_equal(collected["kind"], EMPTY_POLL)).drop_columns(["kind"])
    configs = _read_configs(real.filter(pc.equal(real["kind"], GLOBAL)), found.bad_config)
    by_run = _global_rows_by_run(shared_rows, configs)
    found.global_rows.update(by_run)
    found.rows.extend(_replay_keyed_rows(spark, df, slots, configs, by_run))


def _keyed():
    """The rows naming a share-partition."""
    from pyspark.sql import functions as F
    return F.col("topic").isNotNull() & F.col("partition").isNotNull() & (F.col("partition") >= 0)


def _history_frame(spark, files: list[Path], runs: list[int]):
    """The files at `runs` as one DataFrame: `run` (the file's position in `files`) and `seq` (keeps
    the file's row order within a run: an op's rows) added; no member ids, values only where read."""
    from functools import reduce

    from pyspark.sql import functions as F
    df = reduce(lambda a, b: a.unionByName(b), [
        spark.read.parquet(str(files[i].resolve())).select(*COLUMNS).withColumn("run", F.lit(i))
        .withColumn("seq", F.monotonically_increasing_id()) for i in runs])
    return (df.withColumn("member", F.lit(None).cast("string"))
            .withColumn("value", F.when(~_keyed() | F.col("f").isin(*FLAT_VALUE, "produce"),
                                        F.col("value"))))  # (a produce's value: its explicit CreateTime, rare)


def _collect_global_rows(df):
    """The rows the driver needs, collected once (one scan) as Arrow, each with its `kind`: the global
    rows (every slot of their run replays them), a marker of each commit that returned results (the
    row without its share-partition: duplicates of it only set the flag again) and the empty polls
    (which do nothing in the replay: counted as events only)."""
    from pyspark.sql import functions as F
    empty_poll = (F.col("f") == "poll") & F.col("topic").isNull()
    global_ = ~_keyed() & ~empty_poll  # a global row: no share-partition
    commit_ok = (F.col("f") == "commit") & (F.col("type") == "ok") & _keyed()
    kind = F.when(global_, GLOBAL).when(commit_ok, MARKER).otherwise(EMPTY_POLL)
    marker_drops = ("topic", "partition", "offset", "error")
    return (df.where(global_ | commit_ok | empty_poll)
            .withColumn("kind", kind)
            .select(*[F.when(F.col("kind") != MARKER, F.col(c)).alias(c) if c in marker_drops else c
                      for c in df.columns], "kind").toArrow())


def _global_facts(real) -> dict[int, dict[str, Any]]:
    """Per run, the facts of its global rows and empty polls `real`: events, time span, produced."""
    import pyarrow as pa
    import pyarrow.compute as pc
    facts = {}
    for run in pc.unique(real["run"]).to_pylist():
        mine = real.filter(pc.equal(real["run"], run))
        times = pc.min_max(mine["time"])
        facts[run] = {"events": mine.num_rows, "deliveries": 0, "t0": times["min"].as_py(), "t1": times["max"].as_py(),
                      "produced": int(pc.sum(pc.and_(pc.equal(mine["f"], "produce"), pc.equal(mine["type"], "ok"))
                                             .cast(pa.int64())).as_py() or 0)}
    return facts


def _read_configs(global_rows, bad_config: dict[int, str]) -> dict[int, Any]:
    """Each run's config, read from its config rows (they are global) as the in-process replay reads
    it; a run whose config cannot be read goes to `bad_config` (every property unknown)."""
    import pyarrow.compute as pc

    configs: dict[int, Any] = {}
    config_rows = global_rows.filter(pc.equal(global_rows["f"], "config")).sort_by([("index", "ascending"),
                                                                                    ("seq", "ascending")])
    for run in pc.unique(config_rows["run"]).to_pylist():
        try:
            configs[run] = config_of(EventTable.from_arrow(config_rows.filter(pc.equal(config_rows["run"], run))))
        except Exception as exc:  # the in-process replay raises it too: every property unknown
            bad_config[run] = crash_reason(exc)
    return configs


def _global_rows_by_run(shared_rows, configs: dict[int, Any]) -> dict[int, tuple[Any, Any]]:
    """Per run: its config, and its global rows and markers in order, without the idle ones."""
    import pyarrow.compute as pc
    by_run = {}
    shared_runs = pc.unique(shared_rows["run"]).to_pylist()
    for run in shared_runs:
        by_run[run] = (configs.get(run), without_idle_commit_returns(in_order(
            shared_rows if len(shared_runs) == 1 else shared_rows.filter(pc.equal(shared_rows["run"], run)))))
    return by_run


def _replay_keyed_rows(spark, df, slots: int, configs: dict[int, Any], by_run) -> list[Any]:
    """The replay: share-partitions spread over `slots` slots, each slot one task replaying its own
    with its runs' global rows (once for all its share-partitions). Hash partitioning on a value
    chosen per slot (`slot_values`): no two slots share a task, and no sort is needed."""
    from pyspark.sql import functions as F
    values = slot_values(spark, slots)
    slot = F.pmod(F.coalesce(F.col("partition"), F.lit(0)).cast("long") + F.col("run").cast("long") * 7919
                  + F.coalesce(F.hash("topic"), F.lit(0)).cast("long"), F.lit(slots)).cast("int")  # long: no overflow
    shared = spark.sparkContext.broadcast({run: ipc_bytes(rows.drop_columns(["run"]))
                                           for run, (_, rows) in by_run.items()})
    out = (df.where(_keyed())
           .withColumn("slot", F.element_at(F.array(*[F.lit(v).cast("long") for v in values]), slot + 1))
           .repartition(slots, "slot").drop("slot").mapInArrow(_replay_slot(configs, shared), schema=_SLOT_SCHEMA)
           .collect())
    shared.unpersist()
    return out


def _replay_slot(configs: dict[int, Any], shared):
    """The function each slot runs (on a Spark worker): each run among its rows replayed
    (`_replay_run`) with the run's global rows from the broadcast `shared` ({run: Arrow IPC})."""
    def replay_slot(batches):
        import pyarrow as pa
        import pyarrow.compute as pc
        batches = [b for b in batches if b.num_rows]
        if not batches:
            return
        table = pa.Table.from_batches(batches)
        runs = pc.unique(table["run"]).to_pylist()
        for run in runs:
            mine = table if len(runs) == 1 else table.filter(pc.equal(table["run"], run))
            yield _replay_run(run, mine, configs.get(run), shared.value.get(run))  # None: no config row
    return replay_slot


def _replay_run(run: int, mine, config, common):
    """One run's share-partitions of a slot (`mine`) replayed with its global rows (`common`, Arrow
    IPC, or None), by the same replay as the in-process engine. One row: its partial findings as
    JSON, the indexes of its polls with records (int64 bytes: a poll spanning share-partitions is
    one batch) and the facts of its rows (events, deliveries, produced, times)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    times = pc.min_max(mine["time"])
    is_ok = pc.equal(mine["type"], "ok")
    polls = mine.filter(pc.and_(pc.equal(mine["f"], "poll"), is_ok)).column("index")
    produced = pc.sum(pc.and_(pc.equal(mine["f"], "produce"), is_ok).cast(pa.int64())).as_py() or 0
    events = mine.num_rows
    mine = mine.drop_columns(["run"])
    if common is not None:
        common = pa.ipc.open_stream(common).read_all()
        mine = pa.concat_tables([mine.select(common.schema.names),
                                 common.cast(mine.select(common.schema.names).schema)])
    partial = Replay(config).run_partial(replay_rows(in_order(mine)))
    return pa.RecordBatch.from_pydict({
        "run": pa.array([run], pa.int32()), "events": pa.array([events], pa.int64()),
        "deliveries": pa.array([len(polls)], pa.int64()), "produced": pa.array([produced], pa.int64()),
        "t0": pa.array([times["min"].as_py()], pa.int64()), "t1": pa.array([times["max"].as_py()], pa.int64()),
        "polls": pa.array([np.unique(polls.to_numpy()).astype(np.int64).tobytes()], pa.binary()),
        "partial": pa.array([json.dumps(partial.to_json(), separators=(",", ":"))], pa.string())})
