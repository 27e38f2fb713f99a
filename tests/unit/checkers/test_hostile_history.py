"""Issue 20: runs without a history are unknown, never dropped; crafted histories are bad input (one
line naming the file, the line or op and the field) in bounded time and memory, never a traceback or
a hang; an unwritable results file is one line naming the path and the fix."""

from __future__ import annotations

import json
import time
import tracemalloc
from pathlib import Path

import pytest

from harness import exitcodes
from harness.check import check_histories
from harness.check.histories import history_files
from harness.check.inprocess import check_inprocess
from harness.checkers import compose, verdict_word
from harness.checkers.registry import property_result
from harness.errors import HarnessError
from harness.history.events import EventTable, load_history
from harness.history.schema import Op
from harness.spark.engine import check_files
from tests.support.builders import H, T, base
from tests.support.timeouts import deadline


def _jsonl(path: Path, ops) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(op.to_json() if isinstance(op, Op) else op) + "\n" for op in ops))
    return path


def _parquet(path: Path, ops) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    return EventTable.from_ops(ops).write_parquet(path)


def _one_line(exc: pytest.ExceptionInfo, *parts: str) -> str:
    text = str(exc.value)
    assert "\n" not in text and len(text) < 600, text
    for part in parts:
        assert part in text, (part, text)
    return text


# ------------------------------------------------------------------ runs without a history


def _runs(tmp_path: Path) -> Path:
    """reports/runs: one good run (and `latest` naming it), an empty run directory, a run that crashed
    before writing its history (spec.json, logs/) and a test session's cluster directory (not a run)."""
    runs = tmp_path / "runs"
    good = runs / "20260101-000000-good"
    _parquet(good / "history.parquet", base().ops)
    (good / "spec.json").write_text("{}")
    (runs / "20260101-000001-empty").mkdir()
    crashed = runs / "20260101-000002-crashed"
    (crashed / "logs").mkdir(parents=True)
    (crashed / "spec.json").write_text("{}")
    (runs / "20260101-000003-cluster" / "nodes" / "n0").mkdir(parents=True)
    (runs / "20260101-000003-cluster" / "logs").mkdir()
    (runs / ".hidden").mkdir()
    (runs / "latest").symlink_to(good.name)
    return runs


def test_a_folder_with_runs_without_history_is_unknown_not_pass(tmp_path):
    runs = _runs(tmp_path)
    checks, engine = check_histories([runs], "inprocess")
    assert engine == "inprocess"
    assert [c.path.name for c in checks] == ["history.parquet", "20260101-000001-empty", "20260101-000002-crashed"]
    assert [verdict_word(c.valid) for c in checks] == ["PASS", "UNKNOWN", "UNKNOWN"]
    assert compose([r for c in checks for r in c.results]) == "unknown"
    for check in checks[1:]:
        [result] = check.results
        assert result.valid == "unknown" and result.reason == f"no history in {check.path}: the run did not " \
                                                               f"finish writing it"
    assert not list((runs / "20260101-000001-empty").iterdir())  # nothing written where nothing was checked


def test_cli_check_of_a_folder_with_an_empty_run_is_unknown(tmp_path, capsys):
    from harness.cli import main
    runs = _runs(tmp_path)
    assert main(["check", str(runs)]) == exitcodes.UNKNOWN
    out = capsys.readouterr().out
    assert "no history in" in out and "20260101-000001-empty" in out


def test_an_explicit_run_directory_without_history_is_unknown(tmp_path):
    run = tmp_path / "run"
    (run / "logs").mkdir(parents=True)
    (run / "spec.json").write_text("{}")
    checks, _ = check_histories([run], "inprocess")
    assert [(c.path, c.valid) for c in checks] == [(run, "unknown")]
    assert "no history in" in checks[0].results[0].reason
    assert check_inprocess(run).valid == "unknown"


def test_a_folder_holding_no_run_at_all_is_still_bad_input(tmp_path):
    (tmp_path / "reports" / "runs" / "x" / "nodes").mkdir(parents=True)
    with pytest.raises(HarnessError, match="holds no run with a history"):
        history_files([tmp_path / "reports"])


@pytest.mark.parametrize("kind", ["jsonl-0-bytes", "jsonl-blank", "parquet-0-rows", "parquet-0-bytes"])
def test_an_empty_history_file_named_on_its_own_is_one_line_of_bad_input(tmp_path, capsys, kind):
    from harness.cli import main
    name = "history.jsonl" if kind.startswith("jsonl") else "history.parquet"
    path = tmp_path / name
    if kind == "jsonl-blank":
        path.write_text("\n  \n")
    elif kind == "parquet-0-rows":
        EventTable().write_parquet(path)
    else:
        path.write_bytes(b"")
    assert main(["check", str(path)]) == exitcodes.BAD_INPUT
    out, err = capsys.readouterr()
    assert "verdict" not in out and err.count("\n") == 1 and "holds no operation" in err


@pytest.mark.parametrize("kind", ["jsonl-0-bytes", "jsonl-blank", "parquet-0-rows", "parquet-0-bytes"])
def test_an_empty_history_is_unknown_never_pass(tmp_path, kind):
    run = tmp_path / "run"
    run.mkdir()
    if kind == "jsonl-0-bytes":
        (run / "history.jsonl").write_bytes(b"")
    elif kind == "jsonl-blank":
        (run / "history.jsonl").write_text("\n\n")
    elif kind == "parquet-0-rows":
        EventTable().write_parquet(run / "history.parquet")
    else:
        (run / "history.parquet").write_bytes(b"")
    checks, _ = check_histories([run], "inprocess")
    assert len(checks) == 1 and checks[0].valid == "unknown", checks[0].results


def test_spark_check_files_keeps_runs_without_history_out_of_the_job(tmp_path):
    # every entry is a run without a history: no Spark session is needed, the unknowns come back in place
    runs = [tmp_path / "a", tmp_path / "b"]
    for run in runs:
        run.mkdir()
    (tmp_path / "b" / "history.parquet").write_bytes(b"")
    checks = check_files([runs[0], runs[1] / "history.parquet"])
    assert [c.valid for c in checks] == ["unknown", "unknown"]
    assert "0 bytes" in checks[1].results[0].reason


def test_spark_engine_on_a_folder_names_a_run_with_only_a_jsonl_history(tmp_path):
    run = tmp_path / "run"
    _jsonl(run / "history.jsonl", base().ops)
    with pytest.raises(HarnessError, match="--engine inprocess"):
        history_files([run], parquet_only=True)
    other = tmp_path / "runs"
    _jsonl(other / "r1" / "history.jsonl", base().ops)
    _parquet(other / "r2" / "history.parquet", base().ops)
    assert [p.name for p in history_files([other], parquet_only=True)] == ["r1", "history.parquet"]


# ------------------------------------------------------------------ share-state ranges


def _with_state(batches, start: int = 2, h: H | None = None) -> list[Op]:
    h = h or base()
    h.add("admin", "invoke", "share-state", {"group": "g"})
    h.add("admin", "ok", "share-state", {"group": "g", "partitions": [
        {"topic": T, "partition": 0, "start_offset": start, "batches": batches},
        {"topic": T, "partition": 1, "start_offset": 1, "batches": []}]})
    return h.ops


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_a_share_state_batch_of_three_billion_offsets_is_checked_in_bounded_time(tmp_path, fmt):
    ops = _with_state([[0, 3_000_000_000, 2, 1]], start=0)
    file = (_jsonl if fmt == "jsonl" else _parquet)(tmp_path / "run" / f"history.{fmt}", ops)
    check_inprocess(file)  # imports, warm-up
    started = time.monotonic()
    with deadline(2):
        check = check_inprocess(file)
    assert time.monotonic() - started < 1.0
    assert check.valid is True, [r.reason for r in check.results]


def test_a_share_state_batch_of_ten_million_offsets_allocates_no_gigabytes(tmp_path):
    ops = _with_state([[0, 10_000_000, 2, 1]], start=0)
    file = _jsonl(tmp_path / "history.jsonl", ops)
    check_inprocess(file)
    tracemalloc.start()
    try:
        with deadline(3):
            check = check_inprocess(file)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 50 << 20, peak
    assert check.valid is True


def test_state_ranges_read_like_the_offsets_they_hold_later_batches_winning():
    import random

    from harness.checkers.replay import StateRanges
    rng = random.Random(7)
    for _ in range(300):
        batches = []
        for _ in range(rng.randint(0, 6)):
            first = rng.randint(0, 30)
            batches.append([first, first + rng.randint(0, 8), rng.choice([0, 1, 2, 4]), rng.randint(1, 5)])
        expanded = {}
        for first, last, state, count in batches:  # what the replay did before: offset by offset
            for o in range(first, last + 1):
                expanded[o] = (state, count)
        ranges = StateRanges(batches)
        for o in range(-2, 42):
            assert ranges.get(o) == expanded.get(o), (batches, o)
            assert (o in ranges) == (o in expanded)
        assert len(ranges.firsts) <= 2 * len(batches) + 1


def test_state_topic_anomalies_still_read_the_ranges():
    ops = _with_state([[0, 0, 2, 1], [1, 1, 0, 1]], start=0)
    from harness.checkers import durable_state
    [anomaly] = property_result(durable_state.NAME, ops).anomalies
    assert anomaly.kind == "state-topic-not-terminal" and "as AVAILABLE (delivery count 1)" in anomaly.message


# ------------------------------------------------------------------ hostile share-state and fields


def _state_op(index: int, partitions) -> dict:
    return {"index": index, "time": 10 ** 9, "process": "admin", "type": "ok", "f": "share-state",
            "value": {"group": "g", "partitions": partitions}}


def _good_partition(**changes) -> dict:
    p = {"topic": T, "partition": 0, "start_offset": 0, "batches": [[0, 1, 2, 1]]}
    p.update(changes)
    return {k: v for k, v in p.items() if v is not None}


HOSTILE_STATE = {
    "missing-batches": (_good_partition(batches=None), "value.partitions[0].batches"),
    "missing-start": (_good_partition(start_offset=None), "value.partitions[0].start_offset"),
    "batches-not-a-list": (_good_partition(batches={"0": 1}), "value.partitions[0].batches"),
    "short-batch": (_good_partition(batches=[[0, 1, 2]]), "value.partitions[0].batches[0]"),
    "non-numeric": (_good_partition(batches=[[0, "x", 2, 1]]), "value.partitions[0].batches[0].last"),
    "float-offset": (_good_partition(batches=[[0.5, 1, 2, 1]]), "value.partitions[0].batches[0].first"),
    "huge-offset": (_good_partition(batches=[[0, 10 ** 400, 2, 1]]), "value.partitions[0].batches[0].last"),
    "backwards": (_good_partition(batches=[[5, 1, 2, 1]]), "value.partitions[0].batches[0]"),
    "negative": (_good_partition(batches=[[-3_000_000_000, 1, 2, 1]]), "value.partitions[0].batches[0]"),
    "start-far-below": (_good_partition(start_offset=-3_000_000_000), "value.partitions[0].start_offset"),
    "writes-not-lists": (_good_partition(writes=[["update", 1, 0, [[0, "y", 2, 1]]]]),
                         "value.partitions[0].writes[0].batches[0].last"),
    "topic-not-a-string": (_good_partition(topic=7), "value.partitions[0].topic"),
    "partition-beyond-int32": (_good_partition(partition=1 << 40), "value.partitions[0].partition"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE_STATE))
def test_a_hostile_share_state_op_is_one_line_naming_file_line_and_field(tmp_path, case):
    partition, field = HOSTILE_STATE[case]
    lines = [op.to_json() for op in base().ops] + [_state_op(len(base().ops), [partition])]
    file = _jsonl(tmp_path / "history.jsonl", lines)
    with deadline(2), pytest.raises(HarnessError) as exc:
        check_histories([file], "inprocess")
    _one_line(exc, str(file), f"line {len(lines)}", field)


@pytest.mark.parametrize("time_", [10 ** 400, "1e400", 1e300, "soon", None, True])
def test_an_op_time_that_no_history_holds_is_one_line(tmp_path, time_):
    lines = [op.to_json() for op in base().ops]
    raw = "".join(json.dumps(line) + "\n" for line in lines)
    bad = dict(lines[3], time=0)
    text = json.dumps(bad).replace('"time": 0', f'"time": {time_}' if time_ != "soon" else '"time": "soon"')
    text = text.replace("None", "null").replace("True", "true")
    file = tmp_path / "history.jsonl"
    file.write_text(raw + text + "\n")
    with deadline(2), pytest.raises(HarnessError) as exc:
        load_history(file)
    _one_line(exc, str(file), f"line {len(lines) + 1}", "time")


def test_json_nested_too_deep_is_one_line_not_a_recursion_traceback(tmp_path):
    file = tmp_path / "history.jsonl"
    file.write_text(json.dumps(base().ops[0].to_json()) + "\n" + "[" * 200_000 + "]" * 200_000 + "\n")
    with deadline(2), pytest.raises(HarnessError) as exc:
        load_history(file)
    _one_line(exc, str(file), "line 2")


def _hostile_parquet(tmp_path: Path, value: str, f: str = "share-state", offset: int | None = 0) -> tuple[Path, int]:
    """A good history whose last row is a `f` event row (of partition 0) with `value`."""
    import pyarrow as pa
    table = EventTable.from_ops(base().ops).to_arrow()
    index = table.num_rows + 100
    row = {c: [None] for c in table.schema.names}
    row.update(index=[index], time=[10 ** 9], process=["admin"], type=["ok"], f=[f], topic=[T], partition=[0],
               offset=[offset], value=[value])
    table = pa.concat_tables([table, pa.table(row, schema=table.schema)])
    path = tmp_path / "run" / "history.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    import pyarrow.parquet as pq
    pq.write_table(table, path)
    return path, index


@pytest.mark.parametrize("value, field", [
    ('{"batches": [[0, 3000000000, 2]], "writes": []}', "value.batches[0]"),
    ('{"batches": [[0, "x", 2, 1]]}', "value.batches[0].last"),
    ('{"writes": []}', "value.batches"),
    ('{"batches": [[0, 1e400, 2, 1]]}', "value.batches[0].last"),
    ('{"batches": [], "writes": 5}', "value.writes"),
    ('{"batches": [], "max_start_offset": "high"}', "value.max_start_offset"),
    ('[1, 2]', "value"),
    ('{"batches": [[0, 1, 2, 1]', "value is not JSON"),
])
def test_a_hostile_share_state_row_of_a_parquet_history_is_one_line_naming_op_and_field(tmp_path, value, field):
    path, index = _hostile_parquet(tmp_path, value)
    with deadline(2), pytest.raises(HarnessError) as exc:
        check_histories([path], "inprocess")
    _one_line(exc, str(path), f"op {index}", field)
    with pytest.raises(HarnessError) as exc:  # the Spark engine checks it before any job starts
        check_files([path])
    _one_line(exc, str(path), f"op {index}", field)


def test_a_parquet_share_state_start_far_below_zero_is_bad_input(tmp_path):
    path, index = _hostile_parquet(tmp_path, '{"batches": []}', offset=-3_000_000_000)
    with deadline(2), pytest.raises(HarnessError) as exc:
        load_history(path)
    _one_line(exc, str(path), f"op {index}", "start_offset")


@pytest.mark.parametrize("f, value, field", [
    ("crash", '{"who": 1}', "value.process"),
    ("fault-start", '{"id": "x", "effects": 5}', "value.effects"),
    ("fault-start", '{"id": "x", "targets": "n1"}', "value.targets"),
    ("transaction", '{"topic": "t", "outcome": "maybe", "ids": []}', "value.outcome"),
    ("config", '"4.3"', "value"),
])
def test_a_hostile_global_row_of_a_parquet_history_is_one_line(tmp_path, f, value, field):
    import pyarrow as pa
    import pyarrow.parquet as pq
    path, index = _hostile_parquet(tmp_path, value, f=f, offset=None)
    table = pq.read_table(path)  # a global row: no share-partition
    topic = pa.array(table["topic"].to_pylist()[:-1] + [None], pa.string())
    pq.write_table(table.set_column(table.schema.get_field_index("topic"), "topic", topic), path)
    with deadline(2), pytest.raises(HarnessError) as exc:
        load_history(path)
    _one_line(exc, str(path), f"op {index}", field)


@pytest.mark.parametrize("column, kind", [("time", "float64"), ("offset", "string"), ("topic", "int64"),
                                          ("index", "uint64")])
def test_a_parquet_column_of_the_wrong_type_is_one_line_naming_it(tmp_path, column, kind):
    import pyarrow as pa
    import pyarrow.parquet as pq
    table = EventTable.from_ops(base().ops).to_arrow()
    values = table[column].to_pylist()
    if kind == "string":
        values = [None if v is None else str(v) for v in values]
    elif kind == "float64":
        values = [float("inf")] * len(values)
    elif kind == "int64":
        values = [None if v is None else 7 for v in values]
    array = pa.array(values, getattr(pa, kind)())
    path = tmp_path / "history.parquet"
    pq.write_table(table.set_column(table.schema.get_field_index(column), column, array), path)
    for call in (lambda: load_history(path), lambda: history_files([path])):
        with deadline(2), pytest.raises(HarnessError) as exc:
            call()
        _one_line(exc, str(path), repr(column))


def test_parquet_schema_metadata_no_writer_makes_is_one_line(tmp_path):
    import pyarrow.parquet as pq
    table = EventTable.from_ops(base().ops).to_arrow()
    path = tmp_path / "history.parquet"
    pq.write_table(table.replace_schema_metadata({"ksh.schema_version": "one"}), path)
    with pytest.raises(HarnessError) as exc:
        load_history(path)
    _one_line(exc, str(path))


def test_a_crashing_checker_is_still_unknown_not_bad_input(tmp_path, monkeypatch):
    """Only the loaders turn malformed input into bad input: a checker bug stays unknown (check_safe)."""
    from harness.checkers import registry

    def broken(history):
        raise ZeroDivisionError("a checker bug")
    monkeypatch.setitem(registry.CHECKERS, "no-loss", broken)
    check = check_inprocess(_jsonl(tmp_path / "history.jsonl", base().ops))
    [result] = [r for r in check.results if r.checker == "no-loss"]
    assert result.valid == "unknown" and "ZeroDivisionError" in result.reason
    assert check.valid == "unknown"


# ------------------------------------------------------------------ unwritable results


def test_an_unwritable_results_file_is_one_line_naming_the_path_and_the_fix(tmp_path):
    file = _jsonl(tmp_path / "run" / "history.jsonl", base().ops)
    (tmp_path / "run" / "check-inprocess.json").mkdir()  # cannot be written (as root, unlike chmod)
    with pytest.raises(HarnessError) as exc:
        check_histories([file], "inprocess")
    _one_line(exc, str(tmp_path / "run" / "check-inprocess.json"), "writable")


def test_an_unwritable_anomalies_file_is_one_line_too(tmp_path):
    file = _jsonl(tmp_path / "run" / "history.jsonl", base().ops)
    (tmp_path / "run" / "check-inprocess-anomalies.parquet").mkdir()
    with pytest.raises(HarnessError) as exc:
        check_histories([file], "inprocess")
    _one_line(exc, "check-inprocess-anomalies.parquet", "writable")


def test_a_huge_line_is_refused_without_reading_it_whole(tmp_path, monkeypatch):
    from harness.history import store
    monkeypatch.setattr(store, "MAX_LINE_BYTES", 1 << 20)
    file = tmp_path / "history.jsonl"
    file.write_text(json.dumps(base().ops[0].to_json()) + "\n" + '{"index": ' + "1" * (2 << 20) + "}\n")
    with pytest.raises(HarnessError) as exc:
        load_history(file)
    _one_line(exc, str(file), "line 2", "MiB")
