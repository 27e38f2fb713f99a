"""Issue 47, hostile histories (duplicate op indexes, negative partitions, a clock that never moved) are
malformed for both engines; Ctrl-C during a Spark check is the interrupt, its jobs cancelled."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from harness import exitcodes
from harness.check import check_histories
from harness.errors import HarnessError
from harness.history.events import EventTable, load_history
from harness.history.schema import Op
from harness.spark.engine import check_files
from tests.support.builders import base
from tests.support.commands import left_in, one_line, run_main, write_jsonl
from tests.support.timeouts import deadline

# ------------------------------------------------------------------ hostile histories, both engines


def _ops_json() -> list[dict]:
    return [op.to_json() for op in base().ops]


HOSTILE_JSONL = {
    "duplicate-index-next": lambda ops: ops[:5] + [dict(ops[5], index=4)] + ops[6:],
    "duplicate-index-far": lambda ops: ops[:9] + [dict(ops[9], index=1)] + ops[10:],
    "negative-index": lambda ops: ops[:2] + [dict(ops[2], index=-1)] + ops[3:],
    "negative-time": lambda ops: ops[:2] + [dict(ops[2], time=-5)] + ops[3:],
    "negative-partition-poll": lambda ops: ops[:7] + [dict(ops[7], value={"records": [
        dict(ops[7]["value"]["records"][0], partition=-1)]})] + ops[8:],
    "negative-partition-produce-invoke": lambda ops: ops[:1] + [dict(ops[1], value=dict(ops[1]["value"],
                                                                                        partition=-2))] + ops[2:],
    "negative-partition-fault": lambda ops: ops + [{"index": len(ops), "time": 10 ** 12, "process": "nemesis",
                                                    "type": "info", "f": "fault-start",
                                                    "value": {"id": "f", "partitions": [-1]}}],
    "times-all-0": lambda ops: [dict(op, time=0) for op in ops],
    "times-all-equal": lambda ops: [dict(op, time=7_000) for op in ops],
}
#: (the line, and words of the one line each case is refused with)
HOSTILE_WHY = {"duplicate-index-next": (6, "repeats"), "duplicate-index-far": (10, "repeats"),
               "negative-index": (3, "index"), "negative-time": (3, "time"),
               "negative-partition-poll": (8, "partition"), "negative-partition-produce-invoke": (2, "partition"),
               "negative-partition-fault": (16, "partition"), "times-all-0": (15, "clock"),
               "times-all-equal": (15, "clock")}


@pytest.mark.parametrize("case", sorted(HOSTILE_JSONL))
def test_a_hostile_jsonl_history_is_malformed_naming_the_line(tmp_path, capsys, case):
    run = tmp_path / "run"
    write_jsonl(run / "history.jsonl", HOSTILE_JSONL[case](_ops_json()))
    rc, out, err = run_main(["check", str(run)], capsys)
    assert rc == exitcodes.BAD_INPUT, (out, err)
    line, word = HOSTILE_WHY[case]
    text = one_line(err, f"malformed history {run / 'history.jsonl'} line {line}")
    assert word in text or (word == "clock" and "moves" in text), text
    assert left_in(run) == {"history.jsonl"}  # nothing written beside it


def _parquet_rows(path: Path, rows, row_group: int | None = None) -> Path:
    """A Parquet history from event rows (dicts of the columns), as no writer makes it."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from harness.history.events import arrow_schema
    schema = arrow_schema()
    table = pa.table({c: [r.get(c) for r in rows] for c in schema.names}, schema=schema)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path, **({} if row_group is None else {"row_group_size": row_group}))
    return path


@pytest.fixture
def rows(tmp_path):
    import pyarrow.parquet as pq
    return pq.read_table(EventTable.from_ops(base().ops).write_parquet(tmp_path / "good.parquet")).to_pylist()


def _hostile_rows(rows: list[dict], case: str) -> tuple[list[dict], str]:
    """(rows, words of the refusal)."""
    rows = [dict(r) for r in rows]
    last = max(r["index"] for r in rows)
    if case == "duplicate-index-next":  # the op after op 4 numbered 4 too (another op: other type or f)
        first = next(i for i, r in enumerate(rows) if r["index"] == 5)
        for r in rows[first:]:
            if r["index"] == 5:
                r["index"] = 4
        return rows, "op 4: its index repeats"
    if case == "duplicate-index-far":  # the last op numbered 1, at the end of the file
        for r in rows:
            if r["index"] == last:
                r["index"] = 1
        return rows, "op 1: its index repeats"
    if case == "negative-partition":
        at = next(i for i, r in enumerate(rows) if r["f"] == "poll" and r["type"] == "ok")
        rows[at]["partition"] = -3
        return rows, "partition"
    if case == "negative-index":
        rows[2]["index"] = -7
        return rows, "index is negative"
    if case == "null-time":
        rows[3]["time"] = None
        return rows, "time is missing"
    if case == "times-all-0":
        for r in rows:
            r["time"] = 0
        return rows, "clock"
    raise AssertionError(case)


HOSTILE_PARQUET = ["duplicate-index-next", "duplicate-index-far", "negative-partition", "negative-index",
                   "null-time", "times-all-0"]


@pytest.mark.parametrize("case", HOSTILE_PARQUET)
def test_a_hostile_parquet_history_is_malformed_for_both_engines(tmp_path, capsys, monkeypatch, rows, case):
    from harness.check import inprocess
    hostile, words = _hostile_rows(rows, case)
    path = _parquet_rows(tmp_path / "run" / "history.parquet", hostile, row_group=4)
    monkeypatch.setattr(inprocess, "BATCH_ROWS", 3)  # the streamed engine meets it across batches
    checks = {"streamed": lambda: check_histories([path], "inprocess"),
              "loaded": lambda: load_history(path),
              "spark (vetted before any job)": lambda: check_files([path])}
    for name, call in checks.items():
        with deadline(10), pytest.raises(HarnessError) as exc:
            call()
        text = str(exc.value)
        assert "\n" not in text and f"malformed Parquet history {path} op " in text, (name, text)
        assert words in text or (words == "clock" and "moves" in text), (name, text)
    rc, _, err = run_main(["check", str(path.parent)], capsys)
    assert rc == exitcodes.BAD_INPUT
    one_line(err, str(path))
    assert left_in(path.parent) == {"history.parquet"}


def test_parquet_rows_out_of_index_order_but_each_op_once_are_still_a_history(tmp_path, monkeypatch, rows):
    """A history's rows need not be in index order (`test_inprocess_stream`'s late config): only an
    index on two ops is refused, and an op's rows split over batches are one op."""
    from harness.check import inprocess
    monkeypatch.setattr(inprocess, "BATCH_ROWS", 2)
    config = [r for r in rows if r["f"] == "config"]
    moved = [r for r in rows if r["f"] != "config"]
    at = next(i for i in range(len(moved) // 2, len(moved)) if moved[i]["index"] != moved[i - 1]["index"])
    moved[at:at] = config  # between two ops (inside one, it would split that op in two: a duplicate)
    path = _parquet_rows(tmp_path / "history.parquet", moved, row_group=3)
    [check] = check_histories([path], "inprocess")[0]
    assert check.valid is True, [r.reason for r in check.results]
    load_history(path)
    from harness.check.histories import check_values
    check_values(path)


def test_jsonl_and_parquet_of_one_hostile_history_are_refused_alike(tmp_path):
    """The .jsonl's rules and the Parquet rows' agree: the Parquet made from a refused .jsonl (bypassing
    the .jsonl's check) is refused too."""
    for case in ("duplicate-index-far", "negative-partition-poll", "times-all-0"):
        ops = [Op(d["index"], d["time"], d["process"], d["type"], d["f"], d["value"])
               for d in HOSTILE_JSONL[case](_ops_json())]
        path = EventTable.from_ops(ops).write_parquet(tmp_path / f"{case}.parquet")
        with pytest.raises(HarnessError, match="malformed Parquet history"):
            load_history(path)
        with pytest.raises(HarnessError, match="malformed history"):
            load_history(write_jsonl(tmp_path / f"{case}.jsonl", [op.to_json() for op in ops]))


# ------------------------------------------------------------------ Ctrl-C during a Spark check


class _Py4JError(Exception):
    """What Py4J raises when a call is interrupted (its own error, raised from the KeyboardInterrupt)."""


def test_a_spark_job_failure_caused_by_ctrl_c_is_the_interrupt_not_bad_input(monkeypatch):
    from harness.spark import engine

    def interrupted_job(*_):
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as exc:
            raise _Py4JError("An error occurred while calling o57.collectToPython") from exc
    stopped = []
    monkeypatch.setattr(engine, "spark_session", lambda master=None: object())
    monkeypatch.setattr(engine, "_check_files", interrupted_job)
    monkeypatch.setattr("harness.spark.session.stop", lambda jvm=False: stopped.append(jvm))
    with pytest.raises(KeyboardInterrupt):
        engine._spark_check([Path("h.parquet")], None, "auto")
    # a failure without Ctrl-C behind it stays one line of HarnessError
    monkeypatch.setattr(engine, "_check_files", lambda *_: (_ for _ in ()).throw(RuntimeError("boom\nat x")))
    with pytest.raises(HarnessError, match="the Spark check of 1 histories failed: boom"):
        engine._spark_check([Path("h.parquet")], None, "auto")


def test_ctrl_c_while_spark_works_cancels_its_jobs_from_a_thread_and_is_keyboard_interrupt(monkeypatch):
    """The handler raises nothing inside the (Py4J) call it interrupts: it cancels the jobs from a thread
    of its own; the job's failure is then raised as KeyboardInterrupt, the session and JVM stopped, the
    previous handlers back."""
    import threading

    from harness.spark import session
    cancelled = threading.Event()
    stopped = []

    class Context:
        def setLogLevel(self, level):
            pass

        def cancelAllJobs(self):
            cancelled.set()

    class Spark:
        sparkContext = Context()
    monkeypatch.setattr(session, "stop", lambda jvm=False: stopped.append(jvm))
    before = signal.getsignal(signal.SIGINT)
    with pytest.raises(KeyboardInterrupt):
        with session.interruptible(Spark()):
            os.kill(os.getpid(), signal.SIGINT)
            assert cancelled.wait(5)  # the "job", still running, is cancelled: it fails
            raise RuntimeError("Job 3 cancelled as part of cancellation of all jobs")
    assert stopped == [True] and signal.getsignal(signal.SIGINT) is before
    # Ctrl-C after the job's last call: raised when the body ends
    stopped.clear()
    with pytest.raises(KeyboardInterrupt):
        with session.interruptible(Spark()):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.2)
    assert stopped == [True]
    # no Ctrl-C: nothing stopped, the body's own error as it was
    with pytest.raises(ValueError), session.interruptible(Spark()):
        raise ValueError("x")
    assert stopped == [True]
