"""The Spark engine: the seven properties of Parquet histories, checked on Spark with the in-process
engine's code (`check_files`; which engine checks what is `harness.check`'s to say).

Every row that belongs to one share-partition (it names a topic and a partition: deliveries,
acknowledgements, commit results, produces, truncations, durable reads) is replayed in the slot (a
Python task) its share-partition is spread to; every other row (config, commit invokes and failures,
crashes, closes, faults...) is global: every slot of the run replays it, with a "commit returned"
marker for each commit that returned results elsewhere. A slot replays its share-partitions with the
run's global rows by `harness.checkers.replay.Replay`, exactly as the in-process engine replays a
whole history; the slots' partial findings are merged by `replay.observation`, the same code that
finishes an in-process replay. One idea per module:

- `slots`: slot planning, with the knobs below (`SLOT_ROWS`, `DIRECT_SLOTS`, `MIN_SLOT_ROWS`).
- `direct`: the direct layout (files of up to DIRECT_SLOTS * SLOT_ROWS rows: each slot reads its file).
- `shuffle`: the shuffle layout (bigger files: one hash shuffle, the global rows broadcast).
- `merge`: the slots' findings made into one check per history.
- `pruning`: the vectorised pruning of the "commit returned" rows that change nothing.
- `tables`: the Arrow helpers the layouts and the merge share.
"""

from __future__ import annotations

import os
from pathlib import Path

from harness.check.histories import check_schema, check_values, events_in, missing_history
from harness.check.results import RunCheck, missing_check
from harness.errors import HarnessError, raise_if_interrupted
from harness.spark.direct import run_direct
from harness.spark.merge import SlotOutput, merge
from harness.spark.session import DEFAULT_MEMORY, interruptible, spark_session
from harness.spark.shuffle import run_shuffle
from harness.spark.slots import SlotSizes, by_layout, direct_tasks, shuffle_slot_count

__all__ = ["DEFAULT_MEMORY", "SLOT_ROWS", "DIRECT_SLOTS", "MIN_SLOT_ROWS", "check_files"]

#: Rows one slot (a Python task) replays at most, before a check uses more slots than cores.
SLOT_ROWS = 8_000_000
#: A file needing at most this many slots is read whole by each of its slots' tasks (no shuffle).
DIRECT_SLOTS = 4
#: Below this many rows per slot, a file is not split further to use idle cores (each slot reads it all).
MIN_SLOT_ROWS = 500_000


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
    sizes = [events_in([f]) for f in files]
    direct, shuffled = by_layout(sizes, layout, knobs)
    found = SlotOutput()
    if direct:
        run_direct(spark, direct_tasks(files, direct, sizes, cores, knobs), found)
    if shuffled:
        run_shuffle(spark, files, shuffled, shuffle_slot_count(sum(sizes[i] for i in shuffled), cores, knobs), found)
    return merge(files, found)
