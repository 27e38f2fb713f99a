"""The seven properties of Parquet histories, checked on Spark with the in-process engine's code: the front.

Every row that belongs to one share-partition (it names a topic and a partition: deliveries,
acknowledgements, commit results, produces, truncations, durable reads) is replayed in the slot (a
Python task) its share-partition is spread to; every other row (config, commit invokes and failures,
crashes, closes, faults...) is global: every slot of the run replays it, with a "commit returned"
marker for each commit that returned results elsewhere. A slot replays its share-partitions with the
run's global rows by `harness.checkers.replay.Replay`, exactly as the in-process engine replays a
whole history; the slots' partial findings are merged by `replay.observation`, the same code that
finishes an in-process replay.

This module is what callers use: `check_histories` (which engine: `--engine auto` checks on Spark
above `SPARK_THRESHOLD` events), `check_files` (the Spark engine: plans the slots, runs each layout's
job, merges) and, re-exported, what the other modules offer callers. One idea per module:

- `histories`: which histories the paths name, and whether they can be read (`history_files`).
- `results`: a history's check (`RunCheck`), and the files written beside it (`write_check`).
- `inprocess`: the in-process front (`check_inprocess`), with the same facts as the Spark engine.
- `slots`: slot planning, with the knobs below (`SLOT_ROWS`, `DIRECT_SLOTS`, `MIN_SLOT_ROWS`).
- `direct`: the direct layout (files of up to DIRECT_SLOTS * SLOT_ROWS rows: each slot reads its file).
- `shuffle`: the shuffle layout (bigger files: one hash shuffle, the global rows broadcast).
- `merge`: the slots' findings made into one check per history.
- `pruning`: the vectorised pruning of the "commit returned" rows that change nothing.
- `tables`: the Arrow helpers the layouts and the merge share.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from harness.errors import HarnessError
from harness.spark.direct import run_direct
from harness.spark.histories import RUN_MARKS, check_schema, check_values, history_files, missing_history
from harness.spark.inprocess import check_inprocess
from harness.spark.merge import SlotOutput, merge
from harness.spark.results import RunCheck, missing_check, write_check
from harness.spark.session import DEFAULT_MEMORY, interruptible, spark_session
from harness.spark.shuffle import run_shuffle
from harness.spark.slots import SlotSizes, by_layout, direct_tasks, shuffle_slot_count
from harness.spec import SPARK_THRESHOLD  # `--engine auto` checks on Spark above it (one definition)

__all__ = ["SPARK_THRESHOLD", "DEFAULT_MEMORY", "SLOT_ROWS", "DIRECT_SLOTS", "MIN_SLOT_ROWS", "RUN_MARKS",
           "RunCheck", "check_histories", "check_files", "check_inprocess", "history_files", "missing_history",
           "missing_check", "write_check"]

#: Rows one slot (a Python task) replays at most, before a check uses more slots than cores.
SLOT_ROWS = 8_000_000
#: A file needing at most this many slots is read whole by each of its slots' tasks (no shuffle).
DIRECT_SLOTS = 4
#: Below this many rows per slot, a file is not split further to use idle cores (each slot reads it all).
MIN_SLOT_ROWS = 500_000


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
        engine = "spark" if files and all(f.suffix == ".parquet" for f in files) and _events(files) > threshold \
            else "inprocess"
    if engine == "spark":
        started = time.monotonic()
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


def _events(files: list[Path]) -> int:
    """The rows of the Parquet histories `files`, from their footers."""
    import pyarrow.parquet as pq
    return sum(pq.ParquetFile(f).metadata.num_rows for f in files)


def check_files(files: list[Path], master: str | None = None, layout: str = "auto") -> list[RunCheck]:
    """Check every history in `files` with one Spark job per layout; results in the order of `files`.

    layout "direct": each slot's task reads its file itself (Parquet, with Arrow) and keeps its
    share-partitions' rows and the global rows: no shuffle, the file read once per slot. "shuffle":
    the files read as one DataFrame and each row sent to its slot through a hash shuffle. "auto":
    direct for files of at most DIRECT_SLOTS * SLOT_ROWS rows, shuffle for bigger ones.

    A run directory or empty file among `files` (`missing_history`) is not sent to Spark: its check is
    unknown (`missing_check`), in its place in the list."""
    if layout not in ("auto", "direct", "shuffle"):
        raise HarnessError(f"unknown Spark layout {layout!r}: use auto, direct or shuffle")
    files = [Path(f) for f in files]
    missing = {i: why for i, f in enumerate(files) for why in [missing_history(f)] if why is not None}
    real = [f for i, f in enumerate(files) if i not in missing]
    for file in real:
        check_schema(file)
        check_values(file)
    checked = iter(_spark_check(real, master, layout) if real else [])
    return [missing_check(f, missing[i]) if i in missing else next(checked) for i, f in enumerate(files)]


def _spark_check(files: list[Path], master: str | None, layout: str) -> list[RunCheck]:
    """`_check_files` on the session for `master`; a failed Spark job is one line naming the likely fix.
    Ctrl-C (SIGTERM) cancels the jobs and is KeyboardInterrupt, the JVM stopped (`interruptible`)."""
    spark = spark_session(master)
    with interruptible(spark):
        return _failed_job_is_one_line(lambda: _check_files(spark, files, layout), len(files))


def _failed_job_is_one_line(job, n_files: int):
    """`job()`; an exception it raises is one line naming the likely fix (a HarnessError), unless Ctrl-C is
    behind it (a Py4J error raised from a KeyboardInterrupt): then it is that KeyboardInterrupt."""
    from harness.errors import raise_if_interrupted
    try:
        return job()
    except HarnessError:
        raise
    except Exception as exc:  # a failed Spark job: one line naming the likely fix, not a JVM trace
        raise_if_interrupted(exc)
        cause = [line for line in str(exc).splitlines() if "Error" in line or "Exception" in line]
        memory = os.environ.get("KSH_SPARK_MEMORY", DEFAULT_MEMORY)
        raise HarnessError(f"the Spark check of {n_files} histories failed: "
                           f"{(cause[-1] if cause else str(exc).splitlines()[0]).strip()[:300]} (driver memory "
                           f"{memory}: raise KSH_SPARK_MEMORY, or send it to a cluster with --spark-master)") from None


def _check_files(spark, files: list[Path], layout: str = "auto") -> list[RunCheck]:
    """Plan the slots of each file, run the direct and the shuffle jobs, merge their partials. The
    knobs are read here, at each call (tests lower them to spread small histories over many slots)."""
    knobs = SlotSizes(SLOT_ROWS, DIRECT_SLOTS, MIN_SLOT_ROWS)
    cores = spark.sparkContext.defaultParallelism
    sizes = [_events([f]) for f in files]
    direct, shuffled = by_layout(sizes, layout, knobs)
    found = SlotOutput()
    if direct:
        run_direct(spark, direct_tasks(files, direct, sizes, cores, knobs), found)
    if shuffled:
        run_shuffle(spark, files, shuffled, shuffle_slot_count(sum(sizes[i] for i in shuffled), cores, knobs), found)
    return merge(files, found)
