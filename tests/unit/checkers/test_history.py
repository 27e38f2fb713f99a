"""Fast unit tests of the history store: HistoryWriter -> read_history round trip and malformed input."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from harness.errors import HarnessError
from harness.history.schema import Op
from harness.history.store import HistoryWriter, read_history


def _write(tmp_path: Path, name: str, lines: list[str] | bytes) -> Path:
    path = tmp_path / name
    if isinstance(lines, bytes):
        path.write_bytes(lines)
    else:
        path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def _good(index: int = 0, **changes) -> dict:
    data = {"index": index, "time": 10, "process": "consumer-0", "type": "ok", "f": "poll",
            "value": {"records": []}}
    data.update(changes)
    return data


def test_round_trip_preserves_ops_index_and_time(tmp_path):
    path = tmp_path / "history.jsonl"
    writer = HistoryWriter(path)
    written = [
        writer.append("producer-0", "invoke", "produce", {"id": "a", "topic": "t"}),
        writer.append("producer-0", "ok", "produce", {"id": "a", "topic": "t", "partition": 0, "offset": 0}),
        writer.append("consumer-0", "ok", "poll", {"records": [
            {"id": "a", "topic": "t", "partition": 0, "offset": 0, "delivery_count": 1}]}),
        writer.append("consumer-0", "invoke", "commit", {}),
        writer.append("consumer-0", "info", "commit"),
        writer.append("harness", "ok", "drain", {"unicode": "é😀"}),
    ]
    assert writer.ops() == written
    writer.close()
    writer.close()  # idempotent

    ops = read_history(path)
    assert ops == written
    assert [op.index for op in ops] == list(range(len(written)))
    assert all(b.time >= a.time for a, b in zip(ops, ops[1:]))
    assert all(op.time >= 0 for op in ops)
    assert ops[4].value is None
    assert ops[5].value == {"unicode": "é😀"}
    assert len(path.read_text(encoding="utf-8").splitlines()) == len(written)  # one op per line
    assert [op.index for op in ops if op.f == "commit"] == [3, 4]
    assert [op.index for op in ops if op.f == "commit" and op.type == "info"] == [4]


def test_ops_are_flushed_as_written(tmp_path):
    path = tmp_path / "history.jsonl"
    writer = HistoryWriter(path)
    try:
        writer.append("harness", "ok", "start", {})
        assert len(read_history(path)) == 1  # readable before close (survives a crash)
    finally:
        writer.close()


def test_concurrent_appends_keep_index_strictly_increasing_and_time_monotonic(tmp_path):
    path = tmp_path / "history.jsonl"
    writer = HistoryWriter(path)

    def work(n: int) -> None:
        for i in range(200):
            writer.append(f"consumer-{n}", "ok", "poll", {"records": [], "i": i})

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    writer.close()
    ops = read_history(path)
    assert len(ops) == 800
    assert [op.index for op in ops] == list(range(800))  # strictly increasing, in file order
    assert all(b.time >= a.time for a, b in zip(ops, ops[1:]))
    for n in range(4):  # each thread's own order is kept
        assert [op.value["i"] for op in ops if op.process == f"consumer-{n}"] == list(range(200))


def test_blank_lines_are_skipped(tmp_path):
    path = _write(tmp_path, "h.jsonl", [json.dumps(_good(0)), "", "   ", json.dumps(_good(1))])
    assert [op.index for op in read_history(path)] == [0, 1]


def test_op_json_round_trip():
    op = Op(3, 42, "nemesis", "info", "error", {"code": 1, "message": "x"})
    assert Op.from_json(json.loads(json.dumps(op.to_json()))) == op


def _assert_one_line_naming(exc: HarnessError, path: Path, lineno: int | None) -> str:
    message = str(exc)
    assert "\n" not in message and "\r" not in message, message
    assert str(path) in message, message
    if lineno is not None:
        assert f"line {lineno}" in message, message
    return message


def test_missing_file_is_one_line_error_naming_the_file(tmp_path):
    path = tmp_path / "nope" / "history.jsonl"
    with pytest.raises(HarnessError) as exc:
        read_history(path)
    _assert_one_line_naming(exc.value, path, None)


BAD_LINES = {
    "bad-json": "{not json",
    "truncated": '{"index": 0, "time": 0',
    "missing-index": json.dumps({k: v for k, v in _good().items() if k != "index"}),
    "missing-f": json.dumps({k: v for k, v in _good().items() if k != "f"}),
    "bad-type": json.dumps(_good(type="okay")),
    "bad-type-null": json.dumps(_good(type=None)),
    "index-not-int": json.dumps(_good(index="zero")),
    "index-null": json.dumps(_good(index=None)),
    "time-object": json.dumps(_good(time={"ns": 1})),
    "not-an-object-number": "5",
    "not-an-object-null": "null",
    "not-an-object-list": "[1, 2]",
    "type-with-newline": json.dumps(_good(type="o\nk")),
    "compacted-offset-not-int": json.dumps(_good(f="records-compacted", value={
        "topic": "t", "partition": 0, "offsets": [1, "2"]})),
    "compacted-without-offsets": json.dumps(_good(f="records-compacted", value={"topic": "t", "partition": 0})),
}


@pytest.mark.parametrize("kind", sorted(BAD_LINES))
def test_malformed_line_is_one_line_error_naming_file_and_line(tmp_path, kind):
    path = _write(tmp_path, "history.jsonl", [json.dumps(_good(0)), json.dumps(_good(1)), BAD_LINES[kind],
                                              json.dumps(_good(3))])
    with pytest.raises(HarnessError) as exc:
        read_history(path)
    message = _assert_one_line_naming(exc.value, path, 3)
    assert message.startswith("malformed history")


def test_missing_field_error_names_the_field(tmp_path):
    path = _write(tmp_path, "h.jsonl", [BAD_LINES["missing-f"]])
    with pytest.raises(HarnessError, match=r"line 1: missing field 'f'"):
        read_history(path)


def test_bad_type_error_lists_valid_types(tmp_path):
    path = _write(tmp_path, "h.jsonl", [BAD_LINES["bad-type"]])
    with pytest.raises(HarnessError, match=r"bad type 'okay'.*invoke, ok, fail, info"):
        read_history(path)


def test_non_utf8_line_is_one_line_error(tmp_path):
    path = _write(tmp_path, "history.jsonl", json.dumps(_good(0)).encode() + b"\n\xff\xfe garbage\n")
    with pytest.raises(HarnessError) as exc:
        read_history(path)
    _assert_one_line_naming(exc.value, path, 2)


def test_directory_instead_of_file_is_one_line_error(tmp_path):
    with pytest.raises(HarnessError) as exc:
        read_history(tmp_path)
    _assert_one_line_naming(exc.value, tmp_path, None)


def test_a_records_story_lists_what_touched_it_and_a_failed_verdict_prints_it(tmp_path):
    from harness.checkers import Anomaly, Result
    from harness.history.story import record_named, story
    from harness.run import RunOutcome
    from harness.spec import RunSpec
    writer = HistoryWriter(tmp_path / "history.jsonl")
    rec = {"topic": "ksh-a-b", "partition": 2, "offset": 8}
    writer.append("producer-0", "ok", "produce", {"id": "1-33", **rec})
    writer.append("producer-0", "ok", "produce", {"id": "1-34", "topic": "ksh-a-b", "partition": 2, "offset": 9})
    writer.append("consumer-1", "ok", "poll", {"records": [{"id": "1-33", **rec, "delivery_count": 1}]})
    writer.append("consumer-2", "ok", "poll", {"records": [{"id": "1-34", "topic": "ksh-a-b", "partition": 2,
                                                          "offset": 9, "delivery_count": 1}]})
    writer.append("consumer-1", "ok", "acknowledge", {"records": [{**rec, "type": "ACCEPT"}]})
    writer.append("consumer-1", "ok", "callback", {"partitions": [{"topic": "ksh-a-b", "partition": 2,
                                                                   "offsets": [8]}], "error": "INVALID_RECORD_STATE"})
    writer.append("consumer-1", "ok", "commit", {"results": [{"topic": "ksh-a-b", "partition": 2, "error": None},
                                                             {"topic": "ksh-a-b", "partition": 0, "error": None}]})
    writer.append("nemesis", "info", "crash", {"process": "consumer-2"})  # never held the record: left out
    writer.append("nemesis", "info", "crash", {"process": "consumer-1"})
    writer.append("admin", "ok", "share-offsets", {"group": "g", "partitions": [
        {"topic": "ksh-a-b", "partition": 2, "start_offset": 8, "lag": 0}]})
    writer.close()
    key = record_named("record 1-33 at ksh-a-b-2@8 was delivered 1 times but never accepted")
    assert key == ("ksh-a-b", 2, 8)
    lines = story(read_history(tmp_path / "history.jsonl"), key)
    assert [line.split()[2:5] for line in lines] == [
        ["producer-0", "ok", "produce:"], ["consumer-1", "ok", "poll:"], ["consumer-1", "ok", "acknowledge:"],
        ["consumer-1", "ok", "callback:"], ["consumer-1", "ok", "commit:"], ["nemesis", "info", "crash:"],
        ["admin", "ok", "share-offsets:"]]
    assert "INVALID_RECORD_STATE" in lines[3] and '"partition":0' not in lines[4] and '"start_offset":8' in lines[6]
    assert record_named("no record here") is None
    anomaly = Anomaly("not-accepted", "record 1-33 at ksh-a-b-2@8 was delivered 1 times but never accepted", (0,))
    outcome = RunOutcome(RunSpec(name="x"), False, (Result("no-loss", False, anomalies=(anomaly,)),), tmp_path)
    summary = outcome.summary()
    assert "history of ksh-a-b-2@8:" in summary and "INVALID_RECORD_STATE" in summary
    missing = RunOutcome(RunSpec(name="x"), False, (Result("no-loss", False, anomalies=(anomaly,)),),
                         tmp_path / "gone")
    assert "no record histories" in missing.summary()
