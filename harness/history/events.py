"""Events: the flat, one-row-per-record form of a history (docs/history.md, "Events").

`EventTable` holds the columns as Python lists (integers missing -> `NULL`),
which is what the in-process checkers iterate; the same columns are the
Parquet file at rest, which PySpark reads without any conversion.

Longer than most modules (about 340 lines): one table and every conversion it has (from operations,
to and from Arrow and Parquet, streamed batch by batch, checked on the way), so the column layout is
written down once.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

from harness.errors import HarnessError, first_line
from harness.history.schema import SCHEMA_VERSION, Op, validate_event_value
from harness.history.store import read_history_prefix, require_regular

NULL = -1  # a missing integer in memory; null in Parquet
INT_COLUMNS = ("index", "time", "partition", "offset", "delivery_count")
#: string columns of a few values repeated on every row: read through their dictionary (one object per
#: value); the others (ids, mostly-null columns) convert faster directly (measured in
#: benchmarks/checkers_throughput.py: 0.8 s of 8.5 s on 2.4M rows)
REPEATED_COLUMNS = ("process", "type", "f", "topic")
STR_COLUMNS = ("process", "type", "f", "topic", "record_id", "ack", "error", "member", "value")
#: Column order of a row tuple.
COLUMNS = ("index", "time", "process", "type", "f", "topic", "partition", "offset", "record_id",
           "delivery_count", "ack", "error", "member", "value")


def arrow_schema():
    import pyarrow as pa
    types = {"index": pa.int64(), "time": pa.int64(), "partition": pa.int32(), "offset": pa.int64(),
             "delivery_count": pa.int32()}
    return pa.schema([pa.field(c, types.get(c, pa.string())) for c in COLUMNS],
                     metadata={"ksh.schema_version": str(SCHEMA_VERSION)})


class EventTable:
    """Columns of equal length; `rows()` yields tuples in `COLUMNS` order."""

    def __init__(self, columns: dict[str, list[Any]] | None = None, schema_version: int = SCHEMA_VERSION) -> None:
        columns = columns or {c: [] for c in COLUMNS}
        self.columns = {c: columns[c] for c in COLUMNS}
        self.schema_version = schema_version
        self.replayed: tuple[int, Any] | None = None  # (its length then, the Observation): see checkers.replay
        #: why the table is not the whole run's history (a last line cut short: `load_history`), or None
        self.incomplete: str | None = None

    def __len__(self) -> int:
        return len(self.columns["index"])

    def rows(self) -> Iterator[tuple]:
        return zip(*(self.columns[c] for c in COLUMNS))

    def append(self, index: int, time: int, process: str, type_: str, f: str, topic: str | None = None,
               partition: int = NULL, offset: int = NULL, record_id: str | None = None,
               delivery_count: int = NULL, ack: str | None = None, error: str | None = None,
               member: str | None = None, value: str | None = None) -> None:
        for name, item in zip(COLUMNS, (index, time, process, type_, f, topic, partition, offset, record_id,
                                        delivery_count, ack, error, member, value)):
            self.columns[name].append(item)

    # -- from operations ---------------------------------------------------
    @staticmethod
    def from_ops(ops: Iterable[Op]) -> "EventTable":
        table = EventTable()
        for op in ops:
            _flatten(table, op)
        return table

    # -- Parquet -------------------------------------------------------------
    def to_arrow(self):
        import pyarrow as pa
        arrays = []
        for c, field in zip(COLUMNS, arrow_schema()):
            data = self.columns[c]
            if c in INT_COLUMNS and c not in ("index", "time"):
                data = [None if x == NULL else x for x in data]
            arrays.append(pa.array(data, type=field.type))
        return pa.Table.from_arrays(arrays, schema=arrow_schema())

    def write_parquet(self, path: Path) -> Path:
        import pyarrow.parquet as pq
        pq.write_table(self.to_arrow(), path, compression="zstd", row_group_size=131_072)  # streamable
        return path

    @staticmethod
    def stream_parquet(path, batch_rows: int = 262_144) -> Iterator[tuple]:
        """The rows of a Parquet history (tuples in `COLUMNS` order), batch by batch: memory follows one
        batch, not the file. The repeated string columns are read as the dictionaries Parquet stores them
        in (no re-encoding: about 40% of the read)."""
        import itertools

        import pyarrow.parquet as pq
        handle = pq.ParquetFile(path, read_dictionary=list(REPEATED_COLUMNS))
        batches = read_ahead(handle.iter_batches(batch_size=batch_rows, columns=list(COLUMNS)))
        # rows are yielded by C iterators: no Python frame per row
        return itertools.chain.from_iterable(EventTable.from_arrow(batch).rows() for batch in batches)

    @staticmethod
    def from_arrow(table) -> "EventTable":
        import pyarrow.compute as pc
        names = table.schema.names
        missing = [c for c in COLUMNS if c not in names]
        if missing:
            raise HarnessError(f"not a share-harness event table: column {missing[0]!r} is missing")
        columns: dict[str, list[Any]] = {}
        for c in COLUMNS:
            col = table.column(c)
            if c in INT_COLUMNS:
                columns[c] = (pc.fill_null(col, NULL) if col.null_count else col).to_numpy().tolist()
            elif c in REPEATED_COLUMNS:
                columns[c] = _strings(col)
            elif col.null_count == len(col):  # (a column no row of the batch fills, `member` often)
                columns[c] = [None] * len(col)
            else:
                columns[c] = col.to_pylist()
        version = int((table.schema.metadata or {}).get(b"ksh.schema_version", b"1"))
        return EventTable(columns, version)

    @staticmethod
    def read_parquet(path: Path) -> "EventTable":
        """A Parquet history, checked (`check_arrow_schema`, `check_event_values`): bad input is one line
        naming the file (and the row's op index and field)."""
        import pyarrow.parquet as pq

        require_regular(path)  # a fifo or a device: one line, never a read that blocks
        try:
            table = pq.read_table(path)
        except Exception as exc:  # ArrowInvalid, OSError: one line naming the file
            raise HarnessError(f"unreadable Parquet history {path}: {first_line(exc)}") from None
        check_arrow_schema(table.schema, path)
        check_event_values(table.to_batches(max_chunksize=65_536), path)
        try:
            return EventTable.from_arrow(table)
        except HarnessError:
            raise
        except Exception as exc:  # a value no writer of histories makes: one line naming the file
            raise HarnessError(f"malformed Parquet history {path}: {type(exc).__name__}: {first_line(exc)}") from None


def read_ahead(batches: Iterator[Any]) -> Iterator[Any]:
    """`batches` (Parquet record batches), the next one decoded in a thread while the caller works on the
    one it has: Arrow decodes without Python's lock, so the decoding (a quarter to a third of a bare read) runs on
    another core beside the replay (benchmarks/checkers_throughput.py). Memory: two batches. An error of
    the read comes out of `next` here, as it would from `batches`."""
    from concurrent.futures import ThreadPoolExecutor

    done = object()
    with ThreadPoolExecutor(1, thread_name_prefix="ksh-read-ahead") as pool:
        coming = pool.submit(next, batches, done)
        while True:
            batch = coming.result()
            if batch is done:
                return
            coming = pool.submit(next, batches, done)
            yield batch


def open_parquet_history(path: Path, read_dictionary: Sequence[str] = REPEATED_COLUMNS):
    """A Parquet history opened to be streamed (`pyarrow.parquet.ParquetFile`), its footer checked as
    `EventTable.read_parquet` checks a whole table, before a row is read: an unreadable file, a missing or
    mistyped column (`check_arrow_schema`), a schema version no writer makes are each one line naming the
    file. The repeated string columns are read as their dictionaries (see `stream_parquet`)."""
    import pyarrow.parquet as pq

    require_regular(path)  # a fifo or a device: one line, never a read that blocks
    try:
        handle = pq.ParquetFile(path, read_dictionary=list(read_dictionary))
        schema = handle.schema_arrow
    except Exception as exc:  # ArrowInvalid, OSError: one line naming the file
        raise HarnessError(f"unreadable Parquet history {path}: {first_line(exc)}") from None
    check_arrow_schema(schema, path)
    try:
        int((schema.metadata or {}).get(b"ksh.schema_version", b"1"))  # as `EventTable.from_arrow` reads it
    except Exception as exc:
        raise HarnessError(f"malformed Parquet history {path}: {type(exc).__name__}: {first_line(exc)}") from None
    return handle


def checked_batches(handle, path: Path, batch_rows: int = 262_144,
                    columns: Sequence[str] = COLUMNS) -> Iterator[Any]:
    """The record batches of a Parquet history opened by `open_parquet_history`, each checked
    (`check_event_values`) before it is yielded: a bad value is one line naming the file, op and field as
    soon as its batch is read; a page that cannot be read, one line naming the file. Memory follows two
    batches (the one yielded and the one read ahead)."""
    batches = read_ahead(handle.iter_batches(batch_size=batch_rows, columns=list(columns)))
    ops = OpRows(path)
    try:
        while True:
            try:
                batch = next(batches)
            except StopIteration:
                ops.finish()
                return
            except Exception as exc:  # a corrupt page, a truncated file
                raise HarnessError(f"unreadable Parquet history {path}: {first_line(exc)}") from None
            check_event_values((batch,), path, ops)
            yield batch
    finally:  # (a bad batch raises with the read ahead suspended: its thread ends here, not when collected)
        batches.close()


def batch_events(batch, path: Path) -> EventTable:
    """One checked record batch as an `EventTable` (`EventTable.from_arrow`); a value no writer of histories
    makes is one line naming the file, as `EventTable.read_parquet` says it."""
    try:
        return EventTable.from_arrow(batch)
    except HarnessError:
        raise
    except Exception as exc:
        raise HarnessError(f"malformed Parquet history {path}: {type(exc).__name__}: {first_line(exc)}") from None


def check_arrow_schema(schema, path: Path) -> None:
    """Every column of a history, of its type: integers (`INT_COLUMNS`, at most 64 bits signed) and
    strings. A missing or mistyped column is a one-line HarnessError naming the file and column."""
    import pyarrow as pa
    for c in COLUMNS:
        if c not in schema.names:
            raise HarnessError(f"{path} is not a share-harness history: column {c!r} is missing")
        kind = schema.field(c).type
        if pa.types.is_dictionary(kind):
            kind = kind.value_type
        if c in INT_COLUMNS:
            ok = pa.types.is_signed_integer(kind) or (pa.types.is_unsigned_integer(kind) and kind.bit_width < 64)
        else:
            ok = pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_null(kind)
        if not ok:
            raise HarnessError(f"{path} is not a share-harness history: column {c!r} is {kind}, not "
                               f"{'an integer' if c in INT_COLUMNS else 'a string'} column (rewrite it with "
                               f"`EventTable.write_parquet`)")


#: Operations whose value (JSON in an event row) the replay reads: checked when a Parquet history loads.
VALUE_FS = ("config", "crash", "fault-start", "fault-heal", "transaction", "share-state", "truncated",
            "reset-offsets", "dead-letters", "release")
#: Of those, the ones whose `ok` rows carry one share-partition's part of the op (the op is flattened).
FLAT_VALUE = ("share-state", "truncated", "reset-offsets", "dead-letters")


def check_event_values(batches, path: Path, ops: "OpRows | None" = None) -> None:
    """The values of the event rows of `VALUE_FS` operations (record batches of a history), checked by the
    schema as a .jsonl history's operations are: a one-line HarnessError names the file, op index and field.
    Only those rows are decoded (a few per run), so this costs a scan of the `f` column. Each batch's rows
    are checked as a history's ops too (`OpRows`: indexes, times, partitions): given `ops`, the caller carries
    it over its batches and calls its `finish`; else the batches are the whole history, finished here."""
    import pyarrow as pa
    import pyarrow.compute as pc

    wanted = pa.array(VALUE_FS, pa.string())
    whole = ops is None
    ops = ops or OpRows(path)
    for batch in batches:
        ops.check(batch)
        f = batch.column("f")
        if pa.types.is_dictionary(f.type):
            f = f.dictionary_decode()
        if pa.types.is_null(f.type):
            continue
        mask = pc.fill_null(pc.is_in(f.cast(pa.string()), value_set=wanted), False)
        if not pc.any(mask).as_py():
            continue
        rows = pa.Table.from_batches([batch]).filter(mask).select(
            ["index", "time", "process", "type", "f", "topic", "offset", "value"]).to_pylist()
        for row in rows:
            try:
                validate_event_value(row, flat=row["f"] in FLAT_VALUE and row["type"] == "ok"
                                     and row["topic"] is not None)
            except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as exc:
                raise HarnessError(f"malformed Parquet history {path} op {row['index']} ({row['f']}): "
                                   f"{first_line(exc)}") from None
    if whole:
        ops.finish()


class OpRows:
    """The rows of a Parquet history, batch after batch, checked as `harness.history.store` checks the ops of
    a .jsonl history: op indexes and times present and non-negative, each op index once (the rows of one op
    are one block sharing its index, time, process, type and f: the same index on another op, next to it or
    anywhere else in the file, is a duplicate), no negative partition (in memory -1 is a missing one) and no
    row of a topic without its partition (but a produce's invoke), and a
    clock that moved (`finish`: several ops all at one time are no run's). Rows need not be in index order.
    Vectorised (Arrow kernels per batch, the last row carried over to the next); the op indexes seen are kept
    as ranges (a writer's are consecutive: one range per batch), other indexes one by one. A break is one
    line naming the file and the op."""

    HEAD = ("index", "time", "process", "type", "f")

    def __init__(self, path: Path) -> None:
        self.path = path
        self.last: dict[str, Any] | None = None  # the last row seen (its HEAD columns)
        self.first_index: int | None = None
        self.times: tuple[int, int] | None = None  # (min, max) of the times seen
        self.ranges: list[tuple[int, int]] = []  # the op indexes seen: [first, last] of consecutive ones
        self.loose: list[Any] = []  # numpy arrays of the other op indexes seen

    def _fail(self, index: Any, why: str) -> None:
        raise HarnessError(f"malformed Parquet history {self.path} op {index}: {why}: not a history a "
                           f"share-harness run wrote")

    def check(self, batch) -> None:
        import pyarrow as pa
        import pyarrow.compute as pc
        names = batch.schema.names
        if batch.num_rows == 0 or not all(c in names for c in ("index", "time")):
            return
        cols = {c: batch.column(c) for c in self.HEAD if c in names}  # strings still as their dictionaries
        index, time = cols["index"], cols["time"]
        for name, col in (("index", index), ("time", time)):
            if col.null_count:
                at = pc.index(pc.is_null(col), True).as_py()
                self._fail(index[at].as_py() if name == "time" else f"at row {at} of its batch",
                           f"field {name} is missing")
            if pc.min(col).as_py() < 0:
                at = pc.index(pc.less(col, 0), True).as_py()
                self._fail(index[at].as_py(), f"field {name} is negative ({col[at].as_py()})")
        if "partition" in names:
            self._partitions(batch, cols)
        span = pc.min_max(time).as_py()
        self.times = (span["min"], span["max"]) if self.times is None else \
            (min(self.times[0], span["min"]), max(self.times[1], span["max"]))
        if self.first_index is None:
            self.first_index = index[0].as_py()
        first = {c: col[0].as_py() for c, col in cols.items()}
        continued = self.last is not None and first["index"] == self.last["index"]  # an op split by the batches
        if continued and any(first[c] != self.last[c] for c in first):
            self._fail(first["index"], "its index repeats on the op before it (a history numbers each op once)")
        self.last = {c: col[len(col) - 1].as_py() for c, col in cols.items()}
        n = batch.num_rows
        same = pc.equal(index.slice(1), index.slice(0, n - 1))  # rows of one op, unless the rest of its head differs
        if pc.any(same).as_py():
            at = pc.indices_nonzero(same)  # compared there only (the strings decoded for those rows alone)
            for c in ("time", "process", "type", "f"):
                if c in cols:
                    after, before = (_plain(pc.take(cols[c], pc.add(at, k))) for k in (1, 0))
                    differs = _differs(after, before)
                    if pc.any(differs).as_py():
                        row = pc.take(at, pa.array([pc.index(differs, True).as_py()])).to_pylist()[0] + 1
                        self._fail(index[row].as_py(), "its index repeats on the op before it (a history numbers "
                                                       "each op once)")
        starts = pc.filter(index.slice(1), pc.invert(same))  # the ops that begin in this batch
        if not continued:
            starts = pa.concat_arrays([index.slice(0, 1), starts])
        self._seen(starts.to_numpy(zero_copy_only=False))

    def _partitions(self, batch, cols) -> None:
        """No negative partition; no row of a topic without its partition but a produce's invoke."""
        import pyarrow.compute as pc
        index, partition = cols["index"], batch.column("partition")
        low = pc.min(partition).as_py()
        if low is not None and low < 0:
            at = pc.index(pc.fill_null(pc.less(partition, 0), False), True).as_py()
            self._fail(index[at].as_py(), f"field partition is a negative partition ({partition[at].as_py()}): "
                                          f"Kafka numbers partitions from 0")
        if not all(c in cols for c in ("f", "type")) or "topic" not in batch.schema.names:
            return
        # a row of a share-partition names its partition: only a produce's invoke may not know it yet (in a
        # .jsonl, a partition of -1 would be this: -1 is a missing partition in memory)
        topic = batch.column("topic")
        unnamed = pc.and_(pc.is_valid(topic), pc.is_null(partition))
        if not pc.any(unnamed).as_py():
            return
        at = pc.indices_nonzero(unnamed)
        f, type_ = (_plain(pc.take(cols[c], at)) for c in ("f", "type"))
        invoke = pc.fill_null(pc.and_(pc.equal(f, "produce"), pc.not_equal(type_, "ok")), False)
        if not pc.all(invoke).as_py():
            k = pc.index(invoke, False).as_py()
            row = at[k].as_py()
            self._fail(index[row].as_py(), f"its row of topic {topic[row].as_py()!r} has no partition (a "
                                           f"{f[k].as_py()} names the partition of each record; -1 is none)")

    def _seen(self, starts) -> None:
        """Keep the op indexes `starts` (a numpy array): a range if they are consecutive, else as they are."""
        if len(starts) == 0:
            return
        first, last = int(starts[0]), int(starts[-1])
        if last - first + 1 == len(starts) and (len(starts) == 1 or bool((starts[1:] - starts[:-1] == 1).all())):
            if self.ranges and self.ranges[-1][1] + 1 == first:
                self.ranges[-1] = (self.ranges[-1][0], last)
            else:
                self.ranges.append((first, last))
        else:
            self.loose.append(starts.copy())

    def finish(self) -> None:
        """After the last batch: no op index twice, and several ops not all at one time."""
        import numpy as np
        lows = [np.array([r[0] for r in self.ranges], dtype=np.int64)] + self.loose
        highs = [np.array([r[1] for r in self.ranges], dtype=np.int64)] + self.loose
        low, high = np.concatenate(lows), np.concatenate(highs)
        if len(low) > 1:
            order = np.argsort(low, kind="stable")
            low, high = low[order], high[order]
            ends = np.maximum.accumulate(high)
            overlap = np.nonzero(low[1:] <= ends[:-1])[0]
            if len(overlap):
                self._fail(int(low[overlap[0] + 1]), "its index repeats (another op in the file has it: a history "
                                                     "numbers each op once)")
        ops = int((high - low + 1).sum()) if len(low) else 0
        if ops > 1 and self.times is not None and self.times[0] == self.times[1]:
            self._fail(self.last["index"], f"time {self.times[0]}, as every op of the history (a run's clock moves)")


def _plain(col):
    """A string column decoded from its dictionary (if it is one)."""
    import pyarrow as pa
    return col.dictionary_decode() if pa.types.is_dictionary(col.type) else col


def _differs(a, b):
    """Row by row: whether `a` and `b` differ (a null differs from a value, not from a null)."""
    import pyarrow.compute as pc
    return pc.or_(pc.fill_null(pc.not_equal(a, b), False), pc.xor(pc.is_null(a), pc.is_null(b)))


def _strings(col) -> list[Any]:
    """A string column as a list; via its dictionary, so repeated strings are one object (fast, small): the
    dictionary's words taken by code in numpy (an object array: about half the time of a Python map)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    if not pa.types.is_dictionary(col.type):
        col = pc.dictionary_encode(col)
    # (interned: the replay's tests of an event's type against literals then match by identity)
    words = np.array([sys.intern(w) if type(w) is str else w for w in col.dictionary.to_pylist()] + [None], dtype=object)
    codes = col.indices
    return words[(pc.fill_null(codes, len(words) - 1) if codes.null_count else codes).to_numpy()].tolist()


def _flatten_dead_letters(add, base: tuple, v: dict) -> None:
    """A read of the dead-letter queue: one row for the read itself (every replay slot learns that it
    happened, and how many DLQ records had no source headers), then one row per source share-partition
    with its entries [offset, delivery count, message, group] and the [first, last] ranges still
    ARCHIVING (each slot judges its own)."""
    by_tp: dict[tuple, list] = {}
    malformed = 0
    for r in v["records"]:
        topic, partition, offset = r.get("topic"), r.get("partition"), r.get("offset")
        if isinstance(topic, str) and isinstance(partition, int) and isinstance(offset, int):
            by_tp.setdefault((topic, partition), []).append(
                [offset, r.get("delivery_count"), r.get("message"), r.get("group")])
        else:
            malformed += 1
    archiving: dict[tuple, list] = {}
    for topic, partition, first, last in v.get("archiving") or ():
        archiving.setdefault((topic, partition), []).append([first, last])
    add(*base, value=json.dumps({"dlq_topic": v.get("dlq_topic"), "read": len(v["records"]),
                                 "malformed": malformed}, separators=(",", ":")))
    for tp in sorted(set(by_tp) | set(archiving), key=str):
        extra = {"archiving": archiving[tp]} if tp in archiving else {}
        add(*base, tp[0], tp[1], value=json.dumps({"entries": by_tp.get(tp, []), **extra}, separators=(",", ":")))


def _flatten(table: EventTable, op: Op) -> None:
    """Append `op`'s rows: one per record it carries, else one row with its value as JSON."""
    v = op.value if isinstance(op.value, dict) else {}
    base = (op.index, op.time, op.process, op.type, op.f)
    add = table.append
    f = op.f
    if f == "produce":
        stamp = v.get("timestamp_ms")  # an explicit CreateTime (rare): kept for by_duration's judgement
        add(*base, v.get("topic"), v.get("partition", NULL), v.get("offset", NULL), v.get("id"), error=v.get("error"),
            value=None if not isinstance(stamp, int) else json.dumps({"timestamp_ms": stamp}, separators=(",", ":")))
        return
    if op.type == "ok":
        if f == "poll" and v.get("records"):
            member = v.get("member_id")
            for r in v["records"]:
                add(*base, r["topic"], r["partition"], r["offset"], r["id"], r["delivery_count"], member=member)
            return
        if f == "acknowledge" and v.get("records"):
            for r in v["records"]:
                add(*base, r["topic"], r["partition"], r["offset"], ack=r["type"])
            return
        if f == "commit" and v.get("results"):
            for r in v["results"]:
                add(*base, r["topic"], r["partition"], error=r.get("error"))
            return
        if f == "callback" and v.get("partitions"):
            for p in v["partitions"]:
                for o in p["offsets"]:
                    add(*base, p["topic"], p["partition"], o, error=v.get("error"))
            return
        if f == "share-offsets" and v.get("partitions"):
            for p in v["partitions"]:
                add(*base, p["topic"], p["partition"], p["start_offset"])
            return
        if f == "share-state" and v.get("partitions"):
            for p in v["partitions"]:
                add(*base, p["topic"], p["partition"], p["start_offset"],
                    value=json.dumps({"batches": p["batches"], "writes": p.get("writes", []),
                                      "max_start_offset": p.get("max_start_offset", p["start_offset"]),
                                      **{k: p[k] for k in ("writes_from", "ever_written", "ever_archived",
                                                           "start_regressions") if k in p}},
                                     separators=(",", ":")))
            return
        if f == "dead-letters" and isinstance(v.get("records"), list):
            _flatten_dead_letters(add, base, v)
            return
        if f == "truncated" and v.get("records"):
            extra = json.dumps({"id": v.get("id"), "unclean": bool(v.get("unclean"))}, separators=(",", ":"))
            for r in v["records"]:
                add(*base, v["topic"], v["partition"], r["offset"], r["id"], value=extra)
            return
        if f == "records-deleted" and "topic" in v:
            add(*base, v["topic"], v["partition"], v["offset"])
            return
        if f == "records-compacted" and "topic" in v:  # a row per offset the log cleaner removed
            for o in v["offsets"]:
                add(*base, v["topic"], v["partition"], o)
            return
        if f == "reset-offsets" and v.get("partitions"):
            for p in v["partitions"]:
                records = p.get("records")
                add(*base, v["topic"], p["partition"], p["offset"], value=None if records is None else
                    json.dumps({"records": records}, separators=(",", ":"), sort_keys=True))
            return
    add(*base, error=v.get("error") if isinstance(v.get("error"), str) else None,
        value=None if op.value is None else json.dumps(op.value, separators=(",", ":"), sort_keys=True))


def as_events(history: "EventTable | Sequence[Op]") -> EventTable:
    """Checkers accept either form; operations are flattened once."""
    return history if isinstance(history, EventTable) else EventTable.from_ops(history)


def load_history(path: Path) -> EventTable:
    """A run directory (its history.parquet, else history.jsonl), a .parquet or a .jsonl file. A .jsonl
    history whose last line was cut short (the run crashed while writing it) is its lines before it, with
    `incomplete` saying so: its check is unknown, never a pass (`harness.check.inprocess`)."""
    path = Path(path)
    if path.is_dir():
        for name in ("history.parquet", "history.jsonl"):
            if (path / name).is_file():
                return load_history(path / name)
        raise HarnessError(f"{path} holds no history.parquet or history.jsonl: pass a run directory or a history file")
    if path.suffix == ".parquet":
        return EventTable.read_parquet(path)  # a missing file, a fifo: one line (`require_regular`)
    ops, partial = read_history_prefix(path, whole_run=True)
    try:
        config = next((op for op in ops if op.f == "config"), None)
        table = EventTable(EventTable.from_ops(ops).columns,
                           config.value["schema_version"] if config is not None else 0)
        table.incomplete = None if partial is None else partial.reason
        return table
    except Exception as exc:  # the schema let through what the events cannot hold: bad input, one line
        raise HarnessError(f"malformed history {path}: {type(exc).__name__}: {first_line(exc)} (not a history a "
                           f"share-harness run wrote)") from None
