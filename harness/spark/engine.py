"""The seven properties of Parquet histories, checked on Spark with the in-process engine's code.

Every row that belongs to one share-partition (it names a topic and a partition: deliveries,
acknowledgements, commit results, produces, truncations, durable reads) is replayed in the slot (a
Python task) its share-partition is spread to; every other row (config, commit invokes and failures,
crashes, closes, faults...) is global: every slot of the run replays it, with a "commit returned"
marker for each commit that returned results elsewhere (the replay marks a process's commit as
returned on any of its rows). A slot replays its share-partitions with the run's global rows by
`harness.checkers.replay.Replay`, exactly as the in-process engine replays a whole history; the
partial findings of the slots are merged by `replay.observation`, the same code that finishes an
in-process replay. The merge is exact because the replay keeps no state that links two
share-partitions except through global rows.

Two layouts bring the rows to the slots. Direct (files of up to DIRECT_SLOTS * SLOT_ROWS rows):
one Spark task per (file, slot) reads the file itself with Arrow, a row group at a time, in two
passes (the few columns that choose its rows, then those rows whole): no shuffle, no JVM-to-Python
transfer, at the price of each slot reading the whole file (so a file is split over more slots
than SLOT_ROWS asks only to use idle cores, and at most DIRECT_SLOTS times). Shuffle (bigger
files): the files are one DataFrame, the keyed rows go to their slots through one hash shuffle
(`mapInArrow`), the global rows are collected once and broadcast. On a cluster, direct tasks read
the path the driver was given: it must be on storage the workers share (as for any Spark read).

Events, produced and delivered records and each run's time span are counted where the rows are;
polls with records are merged by index (a poll spanning share-partitions is one batch, not one per
slot).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.checkers import Result, compose, crash_reason, observed_result
from harness.errors import HarnessError, first_line
from harness.history.events import COLUMNS

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
    names none is a one-line error naming it.

    A run directory without a history (or with an empty history file) is in the list as itself (a
    directory; `missing_history` says why): its check is unknown, never dropped. In a folder of runs
    every subdirectory is a run (`_is_run`), but hidden ones, links to a run already listed (`latest`)
    and a test session's cluster directory."""
    found: list[Path] = []
    for path in paths:
        path = Path(path)
        if path.is_file():
            if path.suffix != ".parquet" and (parquet_only or path.suffix != ".jsonl"):
                raise HarnessError(f"{path} is not a {'Parquet' if parquet_only else '.parquet or .jsonl'} history"
                                   + (" (check a .jsonl with --engine inprocess)" if parquet_only else ""))
            if _holds_no_operation(path):  # named on its own: bad input (in a run directory: unknown)
                raise HarnessError(f"the history {path} holds no operation: pass the history of a run that "
                                   f"wrote one (an empty history.jsonl is a run that did not finish)")
            found.append(path)
        elif _run_history(path, parquet_only) is not None:
            found.append(_run_history(path, parquet_only))
        elif path.is_dir() and _is_run(path, explicit=True):
            if parquet_only and _run_history(path, False) is not None:
                raise HarnessError(f"{path} holds no history.parquet, only {_run_history(path, False).name}: "
                                   f"check it with --engine inprocess")
            found.append(path)  # a run without its history: unknown
        elif path.is_dir():
            runs: list[Path] = []
            seen: set[Path] = set()
            subdirs = sorted((d for d in path.iterdir() if d.is_dir() and not d.name.startswith(".")),
                             key=lambda d: (d.is_symlink(), d.name))  # `latest` after the run it names
            for d in subdirs:
                real = d.resolve()
                if real in seen:
                    continue
                seen.add(real)
                history = _run_history(d, parquet_only)
                if history is not None:
                    runs.append(history)
                elif _is_run(d):
                    runs.append(d)
            if not runs:
                raise HarnessError(f"{path} holds no run with a history{'.parquet' if parquet_only else ''}: pass "
                                   f"run directories, history files or a folder of runs (e.g. reports/runs)")
            found.extend(sorted(runs, key=lambda r: str(r)))
        else:
            raise HarnessError(f"{path} does not exist: pass a run directory, a history file or a folder of runs")
    for file in found:
        if file.suffix == ".parquet" and file.is_file() and missing_history(file) is None:
            _check_schema(file)
    return found


#: What a run directory holds from its start on (`harness.report.rundir`): a directory with any of them
#: is a run, and must hold a history.
RUN_MARKS = ("spec.json", "verdict.json", "logs", "timeline.html", "schedule.json")


def _is_run(d: Path, explicit: bool = False) -> bool:
    """Whether directory `d` is a run that must hold a history: it holds a run's files (`RUN_MARKS`, a
    history.* or check-*.json), or, in a folder of runs (not `explicit`), it is empty (a run that wrote
    nothing). Not a run: a test session's cluster directory (`nodes/`, no spec.json)."""
    try:
        names = {p.name for p in d.iterdir()}
    except OSError:
        return not explicit  # unreadable: in a folder of runs, a run we cannot check
    if "nodes" in names and "spec.json" not in names:
        return False
    if any(n in names for n in RUN_MARKS) or any(n.startswith("history.") or
                                                 (n.startswith("check-") and n.endswith(".json")) for n in names):
        return True
    return not explicit and not names


def _holds_no_operation(path: Path) -> bool:
    """A history file without one operation: 0 bytes, only blank lines, or a Parquet file of no rows."""
    try:
        if path.stat().st_size == 0:
            return True
        if path.suffix == ".parquet":
            import pyarrow.parquet as pq
            return pq.ParquetFile(path).metadata.num_rows == 0
        with path.open("rb") as handle:
            return all(not line.strip() for line in handle)
    except OSError:
        return False  # unreadable: the loader names it
    except Exception:  # not Parquet at all: the schema check names it
        return False


def missing_history(path: Path) -> str | None:
    """Why `path` (from `history_files`) holds no history to check, or None if it holds one: a run
    directory without a history, an empty history file."""
    path = Path(path)
    if path.is_dir():
        if (path / "history.jsonl").is_file():  # the Spark engine reads Parquet only
            return f"no history.parquet in {path}, only history.jsonl: check it with --engine inprocess"
        return f"no history in {path}: the run did not finish writing it"
    try:
        if path.stat().st_size == 0:
            return f"the history {path} is empty (0 bytes): the run did not finish writing it"
    except OSError:
        return f"no history at {path}: the run did not finish writing it"
    return None


def missing_check(path: Path, reason: str) -> "RunCheck":
    """The check of a run without a history: unknown, naming why (never a pass, never dropped)."""
    return RunCheck(Path(path), (Result("history", "unknown", reason=reason),), 0,
                    {"deliveries": 0, "produced": 0, "span_s": 0.0, "throughput_rps": 0.0})


def _run_history(run_dir: Path, parquet_only: bool) -> Path | None:
    for name in ("history.parquet",) if parquet_only else ("history.parquet", "history.jsonl"):
        if (run_dir / name).is_file():
            return run_dir / name
    return None


def check_histories(paths: list[Path], engine: str = "auto", master: str | None = None,
                    threshold: int = SPARK_THRESHOLD) -> tuple[list[RunCheck], str]:
    """Check the histories `paths` name with `engine` ("auto": spark above `threshold` events in all,
    if all are Parquet); write each one's results beside it. (checks, the engine used). A run
    without a history is an unknown check (`missing_check`), in its place in the list."""
    targets = history_files(paths, parquet_only=engine == "spark")
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
    import pyarrow.parquet as pq
    return sum(pq.ParquetFile(f).metadata.num_rows for f in files)


def check_inprocess(file: Path) -> RunCheck:
    """The in-process engine on one history (the runner's checkers), with the same facts. Bad input
    (the loaders' checks) is a one-line HarnessError; a checker that crashes is unknown (`check_safe`)."""
    from harness.checkers import check_safe
    from harness.history.events import load_history
    from harness.runner import CHECKERS
    file = Path(file)
    if file.is_dir():
        file = _run_history(file, False) or file
    why = missing_history(file)
    if why is not None:
        return missing_check(file, why)
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
    """The footer's schema: every column, of its type (`check_arrow_schema`)."""
    import pyarrow.parquet as pq

    from harness.history.events import check_arrow_schema
    try:
        schema = pq.read_schema(file)
    except Exception as exc:  # ArrowInvalid, OSError
        raise HarnessError(f"unreadable Parquet history {file}: {str(exc).splitlines()[0]}") from None
    check_arrow_schema(schema, file)


def _check_values(file: Path) -> None:
    """The values the replay reads, checked on the driver before a Spark job (`check_event_values`): a
    scan of the `f` column, a few rows decoded. Damaged data pages are left to the job (it names the file)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from harness.history.events import check_event_values
    try:
        handle = pq.ParquetFile(file, read_dictionary=["f"])
        batches = handle.iter_batches(batch_size=262_144, columns=["index", "time", "process", "type", "f",
                                                                   "topic", "offset", "value"])
        check_event_values(batches, file)
    except (OSError, pa.ArrowException):
        return


def _replay_slot(configs: dict[int, Any], shared):
    """The function each slot runs (on a Spark worker): for each run among its rows, that run's
    share-partitions of the slot replayed together with the run's global rows (from the broadcast
    `shared`: {run: Arrow IPC}), by the same replay as the in-process engine. Yields per run its
    partial findings as JSON, the indexes of its polls with records (int64 bytes: a poll spanning
    share-partitions is one batch) and the facts of its rows (events, deliveries, produced, times)."""
    def replay_slot(batches):
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        from harness.checkers.replay import Replay
        batches = [b for b in batches if b.num_rows]
        if not batches:
            return
        table = pa.Table.from_batches(batches)
        runs = pc.unique(table["run"]).to_pylist()
        for run in runs:
            mine = table if len(runs) == 1 else table.filter(pc.equal(table["run"], run))
            times = pc.min_max(mine["time"])
            is_ok = pc.equal(mine["type"], "ok")
            polls = mine.filter(pc.and_(pc.equal(mine["f"], "poll"), is_ok)).column("index")
            produced = pc.sum(pc.and_(pc.equal(mine["f"], "produce"), is_ok).cast(pa.int64())).as_py() or 0
            events = mine.num_rows
            mine = mine.drop_columns(["run"])
            common = shared.value.get(run)
            if common is not None:
                common = pa.ipc.open_stream(common).read_all()
                mine = pa.concat_tables([mine.select(common.schema.names),
                                         common.cast(mine.select(common.schema.names).schema)])
            partial = Replay(configs.get(run, {})).run_partial(_arrow_rows(_in_order(mine)))
            yield pa.RecordBatch.from_pydict({
                "run": pa.array([run], pa.int32()), "events": pa.array([events], pa.int64()),
                "deliveries": pa.array([len(polls)], pa.int64()), "produced": pa.array([produced], pa.int64()),
                "t0": pa.array([times["min"].as_py()], pa.int64()), "t1": pa.array([times["max"].as_py()], pa.int64()),
                "polls": pa.array([np.unique(polls.to_numpy()).astype(np.int64).tobytes()], pa.binary()),
                "partial": pa.array([json.dumps(partial.to_json(), separators=(",", ":"))], pa.string())})
    return replay_slot


def _in_order(table):
    """`table`'s rows by (index, seq): the history's own order. The rows come as runs already in
    `seq` order (each file split's, and the global rows), which a stable sort merges cheaply."""
    import numpy as np
    seq = table["seq"].to_numpy()
    if len(seq) < 2 or (np.all(seq[1:] > seq[:-1]) and _sorted(table["index"].to_numpy())):
        return table  # already in order (e.g. one file's global rows): no copy
    order = np.argsort(seq, kind="stable")
    index = table["index"].to_numpy()[order]
    if not _sorted(index):  # not in index order: sort by both
        order = order[np.argsort(index, kind="stable")]
    return table.take(order)


def _arrow_rows(table, chunk: int = 65_536):
    """The rows of an Arrow event table as replay tuples, converted a chunk at a time (bounded memory)."""
    import pyarrow as pa

    from harness.history.events import EventTable
    for batch in table.to_batches(max_chunksize=chunk):
        yield from EventTable.from_arrow(pa.Table.from_batches([batch])).rows()


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
        _check_schema(file)
        _check_values(file)
    checked = iter(_spark_check(real, master, layout) if real else [])
    return [missing_check(f, missing[i]) if i in missing else next(checked) for i, f in enumerate(files)]


def _spark_check(files: list[Path], master: str | None, layout: str) -> list[RunCheck]:
    from harness.spark.session import spark_session
    spark = spark_session(master)
    try:
        return _check_files(spark, files, layout)
    except HarnessError:
        raise
    except Exception as exc:  # a failed Spark job: one line naming the likely fix, not a JVM trace
        cause = [line for line in str(exc).splitlines() if "Error" in line or "Exception" in line]
        memory = os.environ.get("KSH_SPARK_MEMORY", DEFAULT_MEMORY)
        raise HarnessError(f"the Spark check of {len(files)} histories failed: "
                           f"{(cause[-1] if cause else str(exc).splitlines()[0]).strip()[:300]} (driver memory "
                           f"{memory}: raise KSH_SPARK_MEMORY, or send it to a cluster with --spark-master)") from None


def _slot_values(spark, n: int) -> list[int]:
    """For each slot 0..n-1, a value that Spark's hash partitioning into n partitions sends to that
    partition (so slots map one to one onto tasks instead of colliding)."""
    from pyspark.sql import functions as F
    found: dict[int, int] = {}
    for row in spark.range(64 * n).select("id", F.pmod(F.hash("id"), F.lit(n)).alias("p")).collect():
        found.setdefault(row["p"], row["id"])
    return [found[i] for i in range(n)]


def _check_files(spark, files: list[Path], layout: str = "auto") -> list[RunCheck]:
    """Plan the slots of each file, run the direct and the shuffle jobs, merge their partials."""
    cores = spark.sparkContext.defaultParallelism
    sizes = [_events([f]) for f in files]
    direct = [i for i, rows in enumerate(sizes)
              if layout == "direct" or (layout == "auto" and -(-rows // SLOT_ROWS) <= DIRECT_SLOTS)]
    shuffled = sorted(set(range(len(files))) - set(direct))
    out: list[Any] = []
    facts: dict[int, dict[str, Any]] = {}
    bad_config: dict[int, str] = {}
    by_run: dict[int, Any] = {}
    if direct:
        tasks = [(i, str(files[i].resolve()), slot, n) for i in direct
                 for n in [max(-(-sizes[i] // SLOT_ROWS), min(cores, -(-sizes[i] // MIN_SLOT_ROWS)), 1)]
                 for slot in range(n)]
        for row in spark.sparkContext.parallelize(tasks, len(tasks)).mapPartitions(_replay_file_slot).collect():
            if row["error"] is not None:
                bad_config[row["run"]] = row["error"]
            if row["partial"] is not None or row["events"]:
                out.append(row)
    if shuffled:
        out.extend(_shuffle_job(spark, files, shuffled, sum(sizes[i] for i in shuffled), facts, bad_config, by_run))
    return _merge(files, out, facts, bad_config, by_run)


def _slots(topic, partition, slots: int):
    """Each row's slot (0..slots-1) by its share-partition, -1 for a row naming none: the same
    in every process (a CRC of the topic name, not Python's salted hash)."""
    import zlib

    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    if isinstance(topic, pa.ChunkedArray):
        topic = topic.combine_chunks()
    encoded = topic if pa.types.is_dictionary(topic.type) else pc.dictionary_encode(topic)
    crcs = np.array([zlib.crc32(t.encode()) for t in encoded.dictionary.to_pylist()] or [0], dtype=np.int64)
    named = crcs[pc.fill_null(encoded.indices, 0).to_numpy(zero_copy_only=False)]
    part = pc.fill_null(partition, -1).to_numpy(zero_copy_only=False).astype(np.int64)
    keyed = pc.is_valid(topic).to_numpy(zero_copy_only=False) & (part >= 0)
    return np.where(keyed, (part + named * 7919) % slots, -1)


def _replay_file_slot(tasks):
    """A direct task (on a Spark worker): for (run, path, slot, slots), keep, in the file's order,
    the rows of the share-partitions of `slot`, the global rows and a "commit returned" marker of
    the other share-partitions' commit results, and replay them. Two passes over the file, a row
    group at a time: the first reads the few columns that choose the rows (and counts the facts of
    this slot's rows, slot 0 those of the global rows too), the second reads the chosen rows whole.
    Yields one dict in the shape of a shuffle slot's row, with `error` the crash reason of an
    unreadable config (every property unknown, as in-process)."""
    import pyarrow as pa
    for run, path, slot, slots in tasks:
        try:
            yield _replay_one_file_slot(run, path, slot, slots)
        except (OSError, pa.ArrowException) as exc:  # damaged data pages (the footer read at planning)
            raise ValueError(f"unreadable Parquet history {path}: {str(exc).splitlines()[0]}") from None


def _replay_one_file_slot(run: int, path: str, slot: int, slots: int) -> dict[str, Any]:
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from harness.checkers import crash_reason
    from harness.checkers.replay import Replay, config_of
    from harness.history.events import EventTable
    batch_rows = 262_144
    # strings as codes: read as dictionaries, compared as integers
    fs, types, processes = {}, {}, {}
    code = lambda names, word: names.setdefault(word, len(names))  # noqa: E731
    POLL, COMMIT, PRODUCE, CRASH, CLOSE, CONFIG = (code(fs, w) for w in
                                                   ("poll", "commit", "produce", "crash", "close", "config"))
    OK, INVOKE, INFO = (code(types, w) for w in ("ok", "invoke", "info"))
    chosen, kept = [], []
    events = deliveries = produced = keyed_rows = mine_rows = 0
    t0 = t1 = None
    polls = []
    # -- pass 1: which rows, and the facts ---------------------------------------------------
    first = pq.ParquetFile(path, read_dictionary=["f", "type", "process", "topic"])
    for batch in first.iter_batches(batch_size=batch_rows,
                                    columns=["index", "time", "process", "type", "f", "topic", "partition"]):
        where = _slots(batch.column("topic"), batch.column("partition"), slots)
        keyed = where >= 0
        f, type_ = _codes(batch.column("f"), fs), _codes(batch.column("type"), types)
        is_ok, is_poll = type_ == OK, f == POLL
        mine = where == slot
        marker = keyed & ~mine & (f == COMMIT) & is_ok
        keep = mine | (~keyed & ~is_poll) | marker  # polls naming no share-partition do nothing
        chosen.append((keep, marker[keep]))
        kept.append((f[keep], type_[keep], _codes(batch.column("process"), processes)[keep]))
        keyed_rows += int(keyed.sum())
        mine_rows += int(mine.sum())
        own = mine | (~keyed if slot == 0 else False)  # the rows whose facts this slot counts
        if own.any():
            events += int(own.sum())
            delivered = mine & is_poll & is_ok
            deliveries += int(delivered.sum())
            produced += int((own & is_ok & (f == PRODUCE)).sum())
            polls.append(_unique(batch.column("index").to_numpy()[delivered]))
            times = batch.column("time").to_numpy()[own]
            t0 = int(times.min()) if t0 is None else min(t0, int(times.min()))
            t1 = int(times.max()) if t1 is None else max(t1, int(times.max()))
    if kept:  # the markers that change nothing are not read at all
        f, type_, who = (np.concatenate(c) for c in zip(*kept))
        marker = np.concatenate([m for _, m in chosen])
        idle = _idle_returns((f == COMMIT) & (type_ == INVOKE), (f == COMMIT) & (type_ == OK), f == CRASH,
                             (f == CLOSE) & (type_ == INFO), who, marker, crashes_named=False)
        f = f[~idle]
        cut = np.cumsum([len(m) for _, m in chosen])[:-1]
        chosen = [(np.flatnonzero(keep)[~gone], m[~gone])
                  for (keep, m), gone in zip(chosen, np.split(idle, cut))]
    # -- pass 2: the chosen rows, whole --------------------------------------------------------
    parts = []
    second = pq.ParquetFile(path, read_dictionary=["f", "type", "process"])
    for batch, (rows, marker) in zip(second.iter_batches(batch_size=batch_rows,
                                                         columns=[c for c in COLUMNS if c != "member"]), chosen):
        table = pa.Table.from_batches([batch]).take(rows)
        if marker.any():  # a marker: the commit result without its share-partition
            mark = pa.array(marker)
            for name in ("topic", "partition", "offset", "error"):
                column = table[name]
                table = table.set_column(table.schema.get_field_index(name), name,
                                         pc.if_else(mark, pa.scalar(None, column.type), column))
        parts.append(table)
    read = [second.schema_arrow.field(c) for c in COLUMNS if c != "member"]
    table = pa.concat_tables(parts) if parts else pa.schema(read).empty_table()
    table = table.append_column("member", pa.nulls(table.num_rows, pa.string())).select(list(COLUMNS))
    error = partial = None
    try:
        at = np.flatnonzero(f == CONFIG)[:1] if kept else []
        config = config_of(EventTable.from_arrow(table.slice(int(at[0]) if len(at) else 0, len(at))))
    except Exception as exc:  # the in-process replay raises it too: every property unknown
        config, error = {}, crash_reason(exc)
    # a slot with none of the file's share-partitions replays nothing (its global rows are in
    # every other slot's replay), unless the file has no share-partition at all (slot 0 replays it)
    if error is None and (mine_rows or (slot == 0 and not keyed_rows and table.num_rows)):
        index = table["index"].to_numpy()
        if not _sorted(index):  # the history's own order: by index, then the file's order
            table = table.take(np.argsort(index, kind="stable"))
        partial = json.dumps(Replay(config).run_partial(_arrow_rows(table)).to_json(), separators=(",", ":"))
    return {"run": run, "events": events, "deliveries": deliveries, "produced": produced, "t0": t0, "t1": t1,
            "polls": _unique(np.concatenate(polls)).astype(np.int64).tobytes() if polls else b"",
            "partial": partial, "error": error}


def _sorted(values) -> bool:
    import numpy as np
    return len(values) < 2 or bool(np.all(values[1:] >= values[:-1]))


def _unique(values):
    """The distinct values of an int array (in one pass when sorted, as a history's indexes are)."""
    import numpy as np
    if len(values) < 2 or not _sorted(values):
        return np.unique(values)
    return values[np.concatenate(([True], values[1:] != values[:-1]))]


def _shuffle_job(spark, files: list[Path], runs: list[int], rows: int, facts, bad_config, by_run) -> list[Any]:
    """The shuffle layout for the files at `runs` (`rows` in all): their rows as one DataFrame, each keyed row sent
    to its slot by a hash shuffle, the global rows collected and broadcast. Fills `facts` (of the
    global rows), `bad_config` and `by_run` (each run's global rows); returns the slots' rows."""
    from functools import reduce

    import pyarrow as pa
    import pyarrow.compute as pc
    from pyspark.sql import functions as F

    from harness.checkers.replay import config_of
    from harness.history.events import EventTable
    # A run is its position in `files`; `seq` keeps the file's row order within a run (an op's rows).
    df = reduce(lambda a, b: a.unionByName(b), [
        spark.read.parquet(str(files[i].resolve())).select(*COLUMNS).withColumn("run", F.lit(i))
        .withColumn("seq", F.monotonically_increasing_id()) for i in runs])
    keyed_cond = F.col("topic").isNotNull() & F.col("partition").isNotNull() & (F.col("partition") >= 0)
    # a global row: no share-partition; empty polls do nothing in the replay, so they are left out
    global_cond = ~keyed_cond & ~((F.col("f") == "poll") & F.col("topic").isNull())
    # Only what the replay reads crosses to Python: no member ids, values only where it reads them.
    df = (df.withColumn("member", F.lit(None).cast("string"))
          .withColumn("value", F.when(~keyed_cond | F.col("f").isin("truncated", "share-state", "reset-offsets"), F.col("value"))))
    # -- the global rows, collected once (one scan): every slot of their run replays them -------------
    # A commit that returned results marks its process's commit as returned (the replay does so on any
    # row of it): a marker of it (the row without its share-partition) goes with the global rows;
    # duplicates of it only set the flag again. Empty polls count as events only.
    commit_ok = (F.col("f") == "commit") & (F.col("type") == "ok") & keyed_cond
    kind = F.when(global_cond, 0).when(commit_ok, 1).otherwise(2)  # global, marker, empty poll
    marker_drops = ("topic", "partition", "offset", "error")
    collected = (df.where(global_cond | commit_ok | ((F.col("f") == "poll") & F.col("topic").isNull()))
                 .withColumn("kind", kind)
                 .select(*[F.when(F.col("kind") != 1, F.col(c)).alias(c) if c in marker_drops else c
                           for c in df.columns], "kind").toArrow())
    real = collected.filter(pc.not_equal(collected["kind"], 1))
    for run in pc.unique(real["run"]).to_pylist():
        mine = real.filter(pc.equal(real["run"], run))
        times = pc.min_max(mine["time"])
        facts[run] = {"events": mine.num_rows, "deliveries": 0, "t0": times["min"].as_py(), "t1": times["max"].as_py(),
                      "produced": int(pc.sum(pc.and_(pc.equal(mine["f"], "produce"), pc.equal(mine["type"], "ok"))
                                             .cast(pa.int64())).as_py() or 0)}
    shared_rows = collected.filter(pc.not_equal(collected["kind"], 2)).drop_columns(["kind"])
    real = real.filter(pc.equal(real["kind"], 0))
    # -- each run's config, read as the in-process replay reads it (config rows are global) -----------
    configs: dict[int, Any] = {}
    config_rows = real.filter(pc.equal(real["f"], "config")).sort_by([("index", "ascending"), ("seq", "ascending")])
    for run in pc.unique(config_rows["run"]).to_pylist():
        try:
            configs[run] = config_of(EventTable.from_arrow(config_rows.filter(pc.equal(config_rows["run"], run))))
        except Exception as exc:  # the in-process replay raises it too: every property unknown
            bad_config[run] = crash_reason(exc)
    shared_runs = pc.unique(shared_rows["run"]).to_pylist()
    for run in shared_runs:
        by_run[run] = (configs.get(run, {}), _without_idle_commit_returns(_in_order(
            shared_rows if len(shared_runs) == 1 else shared_rows.filter(pc.equal(shared_rows["run"], run)))))
    # -- the replay: share-partitions spread over slots, each slot one task replaying its own --------
    # (a slot replays its run's global rows once for all its share-partitions; hash partitioning on a
    # slot value chosen per slot, so no two slots share a task and no sort is needed)
    cores = spark.sparkContext.defaultParallelism
    slots = cores * max(1, -(-rows // (cores * SLOT_ROWS)))  # whole waves of tasks
    values = _slot_values(spark, slots)
    slot = F.pmod(F.coalesce(F.col("partition"), F.lit(0)).cast("long") + F.col("run").cast("long") * 7919
                  + F.coalesce(F.hash("topic"), F.lit(0)).cast("long"), F.lit(slots)).cast("int")  # long: no overflow
    shared = spark.sparkContext.broadcast({run: _ipc(rows.drop_columns(["run"])) for run, (_, rows) in by_run.items()})
    schema = ("run int, events long, deliveries long, produced long, t0 long, t1 long, polls binary, "
              "partial string")
    out = (df.where(keyed_cond).withColumn("slot", F.element_at(F.array(*[F.lit(v).cast("long") for v in values]), slot + 1))
           .repartition(slots, "slot").drop("slot").mapInArrow(_replay_slot(configs, shared), schema=schema).collect())
    shared.unpersist()
    return out


def _merge(files: list[Path], out, facts, bad_config: dict[int, str], by_run) -> list[RunCheck]:
    """The checks of `files` from the slots' rows `out` (both layouts): facts added up, partials
    merged by `replay.observation`, polls with records counted once across slots."""
    import numpy as np

    from harness.checkers.replay import PROPERTIES, Observation, Partial, Replay, observation
    polls: dict[int, list] = {}
    partials: dict[int, list[Partial]] = {}
    for r in out:
        run = r["run"]
        fact = facts.setdefault(run, {"events": 0, "deliveries": 0, "produced": 0, "t0": None, "t1": None})
        fact["events"] += r["events"]
        fact["deliveries"] += r["deliveries"]
        fact["produced"] += r["produced"]
        for end, pick in (("t0", min), ("t1", max)):
            if r[end] is not None:
                fact[end] = r[end] if fact[end] is None else pick(fact[end], r[end])
        if r["partial"] is not None:
            partials.setdefault(run, []).append(Partial.from_json(json.loads(r["partial"])))
        polls.setdefault(run, []).append(np.frombuffer(r["polls"], dtype=np.int64))
    for run, (config, rows) in by_run.items():  # a shuffled run whose rows are all global: replayed here
        if run not in partials:
            partials[run] = [Replay(config).run_partial(_arrow_rows(rows))]
    batches = {run: len(np.unique(np.concatenate(found))) for run, found in polls.items()}
    checks = []
    for key, file in enumerate(files):
        fact = facts.get(key, {})
        if key in bad_config:
            results = tuple(Result(p, "unknown", reason=bad_config[key]) for p in PROPERTIES)
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
    """`rows` (a run's global rows, in order) without the "commit returned" rows that change nothing
    (`_idle_returns`)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    f, type_ = rows["f"], rows["type"]
    is_commit = pc.equal(f, "commit")
    invoke = pc.and_(is_commit, pc.equal(type_, "invoke")).to_numpy(zero_copy_only=False)
    ok = pc.and_(is_commit, pc.equal(type_, "ok")).to_numpy(zero_copy_only=False)
    crash = pc.equal(f, "crash").to_numpy(zero_copy_only=False)
    failed_close = pc.and_(pc.equal(f, "close"), pc.equal(type_, "info")).to_numpy(zero_copy_only=False)
    if not ok.any():
        return rows
    names: dict = {}
    who = _crashed(_codes(rows["process"], names), crash, rows["value"], names)
    idle = _idle_returns(invoke, ok, crash, failed_close, who, ok)
    return rows.filter(pa.array(~idle)) if idle.any() else rows


def _idle_returns(invoke, ok, crash, failed_close, who, droppable, crashes_named: bool = True):
    """Which rows (of those `droppable` marks) are "commit returned" rows that change nothing.

    Such a row (a commit `ok` naming no share-partition, or the marker of one that did) only marks
    its process's last commit as returned, and the replay reads that mark only when the process
    crashes or fails to close, until its next commit starts. So of a process's (`who`: a code per
    row) commit invokes, commit returns, crashes and failed closes, a return is kept only when the
    next of them is a crash or failed close: the replay is the same, with a fraction of the rows (a
    commit per poll is common). Vectorised: a history holds millions of them.

    `crashes_named=False`: `who` of the crash rows is not known (their values were not read); a return is
    then also kept when any crash comes between it and its process's next event, or after it if
    there is none (keeping a return is always safe: it only repeats the mark)."""
    import numpy as np
    idle = np.zeros(len(ok), dtype=bool)
    events = invoke | ok | failed_close | (crash if crashes_named else False)
    at = np.flatnonzero(events)
    if not (ok & droppable).any() or len(at) == 0:
        return idle
    who = who[at]
    order = np.lexsort((at, who))  # by process, then position
    ends = (crash | failed_close)[at[order]]
    same_next = np.zeros(len(order), dtype=bool)
    same_next[:-1] = who[order][1:] == who[order][:-1]
    drop = (ok & droppable)[at[order]] & ~(same_next & np.append(ends[1:], False))
    if not crashes_named and crash.any():
        crashes = np.cumsum(crash)  # crashes at or before each row
        here = at[order]
        following = np.append(here[1:], len(ok) - 1)
        following = np.where(same_next, following, len(ok) - 1)  # the process's next event, else the end
        drop &= crashes[following] == crashes[here]
    idle[at[order][drop]] = True
    return idle


def _codes(column, names: dict):
    """A string column as int64 codes, the same string the same code across calls sharing `names`
    (which they extend); null is -1. Via the column's dictionary: no string is compared twice."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if not pa.types.is_dictionary(column.type):
        column = pc.dictionary_encode(column)
    words = column.dictionary.to_pylist()
    remap = np.array([names.setdefault(w, len(names)) for w in words] + [-1], dtype=np.int64)
    return remap[pc.fill_null(column.indices, len(words)).to_numpy(zero_copy_only=False)]


def _crashed(who, crash, values, names: dict):
    """`who` (process codes from `_codes` with `names`) with each crash row's code replaced by the
    code of the process it names in its value (a crash row is the harness's, not the process's)."""
    for row in crash.nonzero()[0]:
        value = values[int(row)].as_py()
        name = (json.loads(value) if value else {}).get("process") or None
        who[row] = -1 if name is None else names.setdefault(name, len(names))  # -1: as a null process
    return who


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
    run_dir = check.path if check.path.is_dir() else check.path.parent
    out = run_dir / f"check-{engine}.json"
    data = {"engine": engine, "history": str(check.path), "verdict": verdict_word(check.valid),
            "events": check.events, "facts": check.facts, "results": [r.to_json() for r in check.results]}
    if seconds is not None:
        data["seconds"] = round(seconds, 3)
    rows = [(r.checker, a.kind, a.message, list(a.evidence), json.dumps(a.detail, sort_keys=True, default=str))
            for r in check.results for a in r.anomalies]
    anomalies = pa.table({"property": [r[0] for r in rows], "kind": [r[1] for r in rows],
                          "message": [r[2] for r in rows],
                          "evidence": pa.array([r[3] for r in rows], pa.list_(pa.int64())),
                          "detail": [r[4] for r in rows]})
    target = out
    try:
        out.write_text(json.dumps(data, indent=2, sort_keys=True))
        target = run_dir / f"check-{engine}-anomalies.parquet"
        pq.write_table(anomalies, target)
    except (OSError, pa.ArrowException) as exc:  # a read-only run directory, a full disk
        why = getattr(exc, "strerror", None) or first_line(exc)
        raise HarnessError(f"cannot write the check results {target}: {why} (make {run_dir} writable, or check "
                           f"a copy of the history in a writable directory)") from None
    return out


