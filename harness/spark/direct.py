"""The direct layout: each slot's task reads its history file itself, with Arrow; no shuffle.

For files of up to `direct_slots * slot_rows` rows (`harness.spark.slots`). One Spark task per
(file, slot) keeps, in the file's order, the rows of its slot's share-partitions, the global rows
(config, commit invokes and failures, crashes, closes, faults...) and a "commit returned" marker
for each commit result of the other share-partitions, then replays them. It reads the file a row
group at a time, in two passes: the first reads the few columns that choose the rows and counts
the facts of the slot's rows (slot 0 those of the global rows too); the second reads the chosen
rows whole, leaving out the markers that change nothing (`harness.spark.pruning`). No JVM-to-Python
transfer, at the price of each slot reading the whole file. On a cluster the tasks read the path
the driver was given: it must be on storage the workers share (as for any Spark read).

Each task yields one dict in the shape of a shuffle slot's row (`merge.SlotOutput.rows`), with
`error` the crash reason of an unreadable config (every property unknown, as in-process).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from harness.checkers import crash_reason
from harness.checkers.replay import Replay, config_of
from harness.history.events import COLUMNS, EventTable
from harness.spark.merge import SlotOutput
from harness.spark.pruning import idle_returns, string_codes
from harness.spark.slots import row_slots
from harness.spark.tables import distinct, is_sorted, replay_rows

_BATCH_ROWS = 262_144  # rows of a file read at a time


def run_direct(spark, tasks: list[tuple[int, str, int, int]], found: SlotOutput) -> None:
    """Run the direct `tasks` (`slots.direct_tasks`) as one Spark job; add their rows to `found`."""
    for row in spark.sparkContext.parallelize(tasks, len(tasks)).mapPartitions(_replay_file_slots).collect():
        if row["error"] is not None:
            found.bad_config[row["run"]] = row["error"]
        if row["partial"] is not None or row["events"]:
            found.rows.append(row)


def _replay_file_slots(tasks):
    """A direct task (on a Spark worker): each (run, path, slot, slots) replayed (`replay_file_slot`)."""
    import pyarrow as pa
    for run, path, slot, slots in tasks:
        try:
            yield replay_file_slot(run, path, slot, slots)
        except (OSError, pa.ArrowException) as exc:  # damaged data pages (the footer read at planning)
            raise ValueError(f"unreadable Parquet history {path}: {str(exc).splitlines()[0]}") from None


class _Codes:
    """The int codes of the words a slot compares (strings read as dictionaries, compared as
    integers); a file's other words get the next codes, in `fs`, `types` and `processes`."""

    POLL, COMMIT, PRODUCE, CRASH, CLOSE, CONFIG = range(6)
    OK, INVOKE, INFO = range(3)

    def __init__(self):
        self.fs = {w: i for i, w in enumerate(("poll", "commit", "produce", "crash", "close", "config"))}
        self.types = {w: i for i, w in enumerate(("ok", "invoke", "info"))}
        self.processes: dict = {}


@dataclass
class _SlotFacts:
    """The facts of the rows a slot counts: its share-partitions' rows (slot 0: the global rows too)."""

    events: int = 0
    deliveries: int = 0
    produced: int = 0
    t0: int | None = None
    t1: int | None = None
    polls: list = field(default_factory=list)  # per row group, the indexes of its polls with records

    def add(self, batch, own, delivered, produced) -> None:
        """Count the rows `own` marks in `batch`, of which `delivered` (polls with records) and `produced`."""
        self.events += int(own.sum())
        self.deliveries += int(delivered.sum())
        self.produced += int(produced.sum())
        self.polls.append(distinct(batch.column("index").to_numpy()[delivered]))
        times = batch.column("time").to_numpy()[own]
        self.t0 = int(times.min()) if self.t0 is None else min(self.t0, int(times.min()))
        self.t1 = int(times.max()) if self.t1 is None else max(self.t1, int(times.max()))


@dataclass
class _Choice:
    """The first pass's findings: which rows of each row group the slot reads, and the facts."""

    chosen: list = field(default_factory=list)  # per row group: (rows to read, which of them are markers)
    kept: list = field(default_factory=list)  # per row group: the f, type and process codes of its kept rows
    keyed_rows: int = 0  # rows naming a share-partition, in the file
    mine_rows: int = 0  # rows of this slot's share-partitions
    facts: _SlotFacts = field(default_factory=_SlotFacts)


def replay_file_slot(run: int, path: str, slot: int, slots: int) -> dict[str, Any]:
    """Replay slot `slot` (of `slots`) of the history at `path` (run `run`): the slot's rows chosen,
    read and replayed with the run's config; its facts, polls with records and partial findings."""
    import numpy as np

    choice = _choose_rows(path, slot, slots)
    f = _drop_idle_markers(choice) if choice.kept else None
    table = _read_chosen(path, choice.chosen)
    config, error = _read_config(table, f)
    partial = None
    # a slot with none of the file's share-partitions replays nothing (its global rows are in
    # every other slot's replay), unless the file has no share-partition at all (slot 0 replays it)
    if error is None and (choice.mine_rows or (slot == 0 and not choice.keyed_rows and table.num_rows)):
        partial = _replay(table, config)
    facts = choice.facts
    return {"run": run, "events": facts.events, "deliveries": facts.deliveries, "produced": facts.produced,
            "t0": facts.t0, "t1": facts.t1,
            "polls": distinct(np.concatenate(facts.polls)).astype(np.int64).tobytes() if facts.polls else b"",
            "partial": partial, "error": error}


def _choose_rows(path: str, slot: int, slots: int) -> _Choice:
    """The first pass: the columns that choose the rows, a row group at a time."""
    import pyarrow.parquet as pq
    codes, choice = _Codes(), _Choice()
    first = pq.ParquetFile(path, read_dictionary=["f", "type", "process", "topic"])
    for batch in first.iter_batches(batch_size=_BATCH_ROWS,
                                    columns=["index", "time", "process", "type", "f", "topic", "partition"]):
        _choose_in(batch, slot, slots, codes, choice)
    return choice


def _choose_in(batch, slot: int, slots: int, codes: _Codes, choice: _Choice) -> None:
    """Add to `choice` the rows of `batch` slot `slot` keeps (its share-partitions' rows, the global
    rows but polls naming no share-partition, markers of the other commit results) and their facts."""
    where = row_slots(batch.column("topic"), batch.column("partition"), slots)
    keyed = where >= 0
    f, type_ = string_codes(batch.column("f"), codes.fs), string_codes(batch.column("type"), codes.types)
    is_ok, is_poll = type_ == _Codes.OK, f == _Codes.POLL
    mine = where == slot
    marker = keyed & ~mine & (f == _Codes.COMMIT) & is_ok
    keep = mine | (~keyed & ~is_poll) | marker  # polls naming no share-partition do nothing
    choice.chosen.append((keep, marker[keep]))
    choice.kept.append((f[keep], type_[keep], string_codes(batch.column("process"), codes.processes)[keep]))
    choice.keyed_rows += int(keyed.sum())
    choice.mine_rows += int(mine.sum())
    own = mine | (~keyed if slot == 0 else False)  # the rows whose facts this slot counts
    if own.any():
        choice.facts.add(batch, own, mine & is_poll & is_ok, own & is_ok & (f == _Codes.PRODUCE))


def _drop_idle_markers(choice: _Choice):
    """Leave the markers that change nothing (`idle_returns`) out of the second pass: `choice.chosen`
    becomes the positions of the rows to read, per row group. The `f` codes of the rows read."""
    import numpy as np
    f, type_, who = (np.concatenate(c) for c in zip(*choice.kept))
    marker = np.concatenate([m for _, m in choice.chosen])
    is_commit = f == _Codes.COMMIT
    idle = idle_returns(is_commit & (type_ == _Codes.INVOKE), is_commit & (type_ == _Codes.OK), f == _Codes.CRASH,
                        (f == _Codes.CLOSE) & (type_ == _Codes.INFO), who, marker, crashes_named=False)
    cut = np.cumsum([len(m) for _, m in choice.chosen])[:-1]
    choice.chosen = [(np.flatnonzero(keep)[~gone], m[~gone])
                     for (keep, m), gone in zip(choice.chosen, np.split(idle, cut))]
    return f[~idle]


def _read_chosen(path: str, chosen: list):
    """The second pass: the chosen rows whole (all columns; `member`, which the replay does not read,
    null), each marker without its share-partition (the commit result only marks a commit returned)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    columns = [c for c in COLUMNS if c != "member"]
    parts = []
    second = pq.ParquetFile(path, read_dictionary=["f", "type", "process"])
    for batch, (rows, marker) in zip(second.iter_batches(batch_size=_BATCH_ROWS, columns=columns), chosen):
        parts.append(_unkeyed_markers(pa.Table.from_batches([batch]).take(rows), marker))
    read = [second.schema_arrow.field(c) for c in columns]
    table = pa.concat_tables(parts) if parts else pa.schema(read).empty_table()
    return table.append_column("member", pa.nulls(table.num_rows, pa.string())).select(list(COLUMNS))


def _unkeyed_markers(table, marker):
    """`table` with the rows `marker` marks stripped of their share-partition, offset and error."""
    import pyarrow as pa
    import pyarrow.compute as pc
    if not marker.any():
        return table
    mark = pa.array(marker)
    for name in ("topic", "partition", "offset", "error"):
        column = table[name]
        table = table.set_column(table.schema.get_field_index(name), name,
                                 pc.if_else(mark, pa.scalar(None, column.type), column))
    return table


def _read_config(table, f) -> tuple[Any, str | None]:
    """The run's config from its first config row (`f`: the rows' codes, None if the file has no row),
    as the in-process replay reads it (None: the file has none, every property unknown); on failure ({}, the
    crash reason: every property unknown)."""
    import numpy as np

    try:
        at = np.flatnonzero(f == _Codes.CONFIG)[:1] if f is not None else []
        return config_of(EventTable.from_arrow(table.slice(int(at[0]) if len(at) else 0, len(at)))), None
    except Exception as exc:  # the in-process replay raises it too: every property unknown
        return {}, crash_reason(exc)


def _replay(table, config) -> str:
    """The partial findings (as JSON) of replaying `table` in the history's own order: by index,
    then the file's order."""
    import numpy as np

    index = table["index"].to_numpy()
    if not is_sorted(index):
        table = table.take(np.argsort(index, kind="stable"))
    return json.dumps(Replay(config).run_partial(replay_rows(table)).to_json(), separators=(",", ":"))
