"""The in-process front: one history checked by the runner's checkers, reported as the Spark engine does.

`check_inprocess` checks one history in this process with every checker of
`harness.checkers.registry.CHECKERS`; it returns a `RunCheck` with the same facts the Spark engine
counts, so the two engines' checks compare field by field (and `--engine auto` may pick either). Small
histories take this path; the Spark layouts replay the same model, spread over slots.

A Parquet history is streamed (issue 23): read batch by batch, each batch checked as
`EventTable.read_parquet` checks the whole table, counted for the facts, and replayed once, the seven
property checkers sharing that replay as they share `harness.checkers.replay.replay` on a loaded table.
Memory follows one batch and the records in flight, not the file; the results are those of the whole
load (tests/unit/checkers/test_inprocess_stream.py). A JSON-lines history is loaded whole, as before.
"""

from __future__ import annotations

import itertools
from pathlib import Path

from harness.check.histories import missing_history, run_history
from harness.check.results import RunCheck, missing_check
from harness.checkers import Result, check_safe, crash_reason, observed_result
from harness.checkers.registry import CHECKERS
from harness.checkers.registry import OWN as own
from harness.checkers.registry import PROPERTIES
from harness.checkers.replay import Observation, Replay, config_of
from harness.errors import HarnessError, first_line
from harness.history.events import (COLUMNS, NULL, EventTable, batch_events, checked_batches, load_history,
                                    open_parquet_history)

BATCH_ROWS = 262_144


def check_inprocess(file: Path, stream: bool = True) -> RunCheck:
    """The in-process engine on one history (the runner's checkers), with the same facts. A Parquet
    history is streamed unless `stream` is False (then loaded whole, as a .jsonl always is). A .jsonl whose
    last line was cut short (a crashed run) is checked to the line before it and unknown. Bad input
    (the loaders' checks) is a one-line HarnessError, raised as soon as it is read; a checker that
    crashes (or the replay they share) is unknown (`check_safe`)."""
    file = Path(file)
    if file.is_dir():
        file = run_history(file, False) or file
    why = missing_history(file)
    if why is not None:
        return missing_check(file, why)
    if stream and file.suffix == ".parquet":
        return _check_streamed(file)
    events = load_history(file)
    results = tuple(check_safe(name, fn, events) for name, fn in CHECKERS.items())
    if events.incomplete is not None:  # a crashed run's history, to its last complete line: unknown at best
        results = (Result("history", "unknown", reason=events.incomplete),) + results
    return RunCheck(file, results, len(events), _facts(events.columns))


def _facts(cols) -> dict:
    """Deliveries (polls with records), produced records, the time span and throughput of a history's
    columns, as the Spark engine counts them."""
    deliveries = sum(1 for f, t, topic in zip(cols["f"], cols["type"], cols["topic"])
                     if f == "poll" and t == "ok" and topic is not None)
    produced = sum(1 for f, t in zip(cols["f"], cols["type"]) if f == "produce" and t == "ok")
    return _facts_of(deliveries, produced, min(cols["time"], default=None), max(cols["time"], default=None))


def _facts_of(deliveries: int, produced: int, t_min: int | None, t_max: int | None) -> dict:
    span_s = max((t_max - t_min) if t_min is not None else 0, 1) / 1e9
    return {"deliveries": deliveries, "produced": produced, "span_s": round(span_s, 3),
            "throughput_rps": round(deliveries / span_s, 1)}


# -- streaming a Parquet history ---------------------------------------------------


class _BadInput(Exception):
    """Bad input met while the replay pulls rows: carries the loaders' one-line HarnessError through the
    replay, so it is told apart from a crash of the replay (which is unknown, not bad input)."""

    def __init__(self, error: HarnessError) -> None:
        super().__init__(str(error))
        self.error = error


class _Stream:
    """The checked record batches of one Parquet history, counted for the facts as they pass."""

    def __init__(self, path: Path, handle, batch_rows: int) -> None:
        self.path, self.handle, self.batch_rows = path, handle, batch_rows
        self.events = self.deliveries = self.produced = 0
        self.t_min: int | None = None
        self.t_max: int | None = None
        self.batches = self._batches()

    def _batches(self):
        try:
            for batch in checked_batches(self.handle, self.path, self.batch_rows):
                self._count(batch)
                yield batch
        except HarnessError as exc:
            raise _BadInput(exc) from None

    def _count(self, batch) -> None:
        """`_facts`, one batch at a time (Arrow kernels: no Python per row)."""
        import pyarrow.compute as pc

        self.events += batch.num_rows
        f, type_ = _strings(batch.column("f")), _strings(batch.column("type"))
        if f is not None and type_ is not None:
            ok = pc.equal(type_, "ok")
            self.deliveries += _trues(pc.and_(pc.and_(pc.equal(f, "poll"), ok), pc.is_valid(batch.column("topic"))))
            self.produced += _trues(pc.and_(pc.equal(f, "produce"), ok))
        if batch.num_rows:
            try:
                span = pc.min_max(pc.fill_null(batch.column("time"), NULL)).as_py()
            except Exception as exc:  # as `EventTable.from_arrow` fails on it
                raise HarnessError(f"malformed Parquet history {self.path}: {type(exc).__name__}: "
                                   f"{_first_line(exc)}") from None
            self.t_min = span["min"] if self.t_min is None else min(self.t_min, span["min"])
            self.t_max = span["max"] if self.t_max is None else max(self.t_max, span["max"])

    def rows(self, first) -> "itertools.chain":
        """The rows (tuples in `COLUMNS` order) of `first` and the batches after it, yielded by C
        iterators (no Python frame per row)."""
        return itertools.chain.from_iterable(map(self._rows, itertools.chain((first,), self.batches)))

    def _rows(self, batch):
        try:
            return batch_events(batch, self.path).rows()
        except HarnessError as exc:
            raise _BadInput(exc) from None

    def drain(self) -> None:
        """Read (check, count) the batches the replay did not: bad input anywhere still wins over a crash."""
        for _ in self.batches:
            pass

    def config_row(self, first) -> tuple[bool, str | None]:
        """Whether the history has a config row, and the value of its first one (what `config_of` reads);
        past `first`, found by a scan of the columns the value checks read (each batch checked)."""
        found, value = _config_in(first)
        if found:
            return found, value
        columns = ("index", "time", "process", "type", "f", "topic", "offset", "value")
        try:
            for batch in checked_batches(self.handle, self.path, self.batch_rows, columns):
                found, value = _config_in(batch)
                if found:
                    return found, value
        except HarnessError as exc:
            raise _BadInput(exc) from None
        return False, None

    def facts(self) -> dict:
        return _facts_of(self.deliveries, self.produced, self.t_min, self.t_max)


def _check_streamed(file: Path) -> RunCheck:
    stream = _Stream(file, open_parquet_history(file), BATCH_ROWS)
    try:
        obs, crash = _replay(stream)
        if crash is not None:
            stream.drain()
    except _BadInput as bad:
        raise bad.error from None
    return RunCheck(file, _results(file, obs, crash), stream.events, stream.facts())


def _replay(stream: _Stream):
    """(Observation, None), or (None, why) if the replay crashed (`crash_reason`, as `check_safe` says it):
    `harness.checkers.replay.replay` on the streamed rows."""
    first = next(stream.batches, None)
    if stream.handle.metadata.num_rows == 0:
        obs = Observation.of(PROPERTIES)
        obs.unknown["*"] = "the history is empty"
        return obs, None
    try:
        found, value = stream.config_row(first)
        row = {c: [None] for c in COLUMNS}
        row.update(f=["config" if found else None], value=[value])
        config = config_of(EventTable(row))
        rows = stream.rows(first)
        del first  # the batch is the rows' now: not kept for the whole replay
        return Replay(config).run(rows), None
    except _BadInput:
        raise
    except Exception as exc:  # fail closed, as `check_safe` does for each checker
        return None, crash_reason(exc)  # (the replay's frames are let go before the rest is drained)


def _results(file: Path, obs, crash) -> tuple:
    """A `Result` per checker, as `check_safe(name, fn, events)` gives it on the loaded table: the registry's
    property checkers read the one Observation (`observed_result`, as `property_result` does); a replay
    crash is each one's crash. A checker that is not the registry's own (a test's stand-in) gets the
    history loaded whole, with the replay already kept on it."""
    events = None
    results = []
    for name, fn in CHECKERS.items():
        if own.get(name) is not fn:
            if events is None:
                events = load_history(file)
                if crash is None:
                    events.replayed = (len(events), obs)
            results.append(check_safe(name, fn, events))
        elif crash is not None:
            results.append(Result(name, "unknown", reason=crash))
        else:
            results.append(check_safe(name, lambda _events, prop=name: observed_result(prop, obs), None))
    return tuple(results)


def _config_in(batch) -> tuple[bool, str | None]:
    """Whether `batch` has a config row, and the value of its first one."""
    import pyarrow.compute as pc
    f = _strings(batch.column("f"))
    if f is None or batch.num_rows == 0:
        return False, None
    at = pc.index(pc.fill_null(pc.equal(f, "config"), False), True).as_py()
    if at < 0:
        return False, None
    return True, batch.column("value")[at].as_py()


def _strings(col):
    """A string column as plain strings (dictionary decoded), None if it is all nulls by type."""
    import pyarrow as pa
    if pa.types.is_dictionary(col.type):
        col = col.dictionary_decode()
    return None if pa.types.is_null(col.type) else col


def _trues(mask) -> int:
    import pyarrow.compute as pc
    return pc.sum(pc.fill_null(mask, False)).as_py() or 0


def _first_line(exc: BaseException) -> str:
    return first_line(exc)
