"""Issue 47 (check, page, clean, nightly-report, history validation): every file a user points these
commands at is read as a regular file of bounded size (a fifo never blocks, a huge file is never read
whole); bad input is exit 2 and one line on stderr, with nothing left behind; a crashed run's history cut
short in its last line is unknown (3), its complete lines checked; hostile histories (duplicate op
indexes, negative partitions, a clock that never moved) are malformed for both engines; Ctrl-C during a
Spark check is one line and 130, the JVM stopped; `clean` deletes only what the harness made, under a
reports directory; a screenshot never creates directories."""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from harness import exitcodes
from harness.errors import HarnessError
from harness.history.events import EventTable, load_history
from harness.history.schema import Op
from harness.check import check_histories
from harness.spark.engine import check_files

sys.path.insert(0, str(Path(__file__).parent))
from test_unit_checkers import base  # noqa: E402
from test_unit_hostile_history import Expired, deadline  # noqa: E402,F401

ROOT = Path(__file__).resolve().parents[1]
OLD = 1_000_000_000  # an mtime long past: `clean`'s busy window is over


def _main(argv: list[str], capsys, seconds: float = 20) -> tuple[int, str, str]:
    from harness.cli import main
    with deadline(seconds):
        rc = main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


def _one_line(err: str, *parts: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err and "internal error" not in err, err
    for part in parts:
        assert part in lines[0], (part, lines[0])
    return lines[0]


def _jsonl(path: Path, lines) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join((line if isinstance(line, str) else json.dumps(
        line.to_json() if isinstance(line, Op) else line)) + "\n" for line in lines))
    return path


def _run(path: Path, spec: dict | None = None) -> Path:
    """A run directory with a good history (and spec.json)."""
    _jsonl(path / "history.jsonl", base().ops)
    (path / "spec.json").write_text(json.dumps({"spec": spec or {"name": "a run", "seed": 3}}))
    return path


def _sparse(path: Path, size: int = 100 << 20) -> Path:
    """A file of `size` bytes that takes no disk (and no time) to make: too big to be a spec or verdict."""
    with open(path, "wb") as handle:
        handle.truncate(size)
    return path


def _left(run: Path) -> set[str]:
    return {p.name for p in run.iterdir()}


# ------------------------------------------------------------------ files a user points at: fifos, huge files


@pytest.mark.parametrize("kind, name", [("runs", "verdict.json"), ("suites", "junit.xml"),
                                        ("certificates", "certificate.json"), ("conformance", "conformance.json")])
def test_clean_does_not_block_on_a_fifo_in_an_entry_and_keeps_it(tmp_path, capsys, kind, name):
    entry = tmp_path / kind / "20200101-000000-x"
    entry.mkdir(parents=True)
    if kind == "runs":
        (entry / "spec.json").write_text(json.dumps({"spec": {"name": "x"}}))
    (entry / ".busy").write_text("")
    os.mkfifo(entry / name)
    os.utime(entry, (OLD, OLD))
    rc, out, err = _main(["clean", "--root", str(tmp_path), "--keep", "0"], capsys, seconds=10)
    assert rc == exitcodes.PASS and entry.is_dir(), (out, err)  # unreadable: kept, it may be a crash's evidence
    assert "deleted" not in out


@contextmanager
def _peak(limit: int):
    """Fail if the body allocates more than `limit` bytes at once (a file read whole)."""
    import tracemalloc
    tracemalloc.start()
    try:
        yield
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < limit, f"{peak:,} bytes allocated: a file was read whole"


@pytest.mark.parametrize("kind, name", [("runs", "verdict.json"), ("suites", "junit.xml"),
                                        ("certificates", "certificate.json"), ("conformance", "conformance.json")])
def test_clean_never_reads_a_huge_file_whole_and_keeps_its_entry(tmp_path, kind, name):
    from harness.report.clean import clean
    entry = tmp_path / kind / "20200101-000000-x"
    entry.mkdir(parents=True)
    if kind == "runs":
        (entry / "spec.json").write_text(json.dumps({"spec": {"name": "x"}}))
    (entry / ".busy").write_text("")
    _sparse(entry / name)
    os.utime(entry, (OLD, OLD))
    with _peak(16 << 20), deadline(10):
        kept, deleted, _ = clean(tmp_path, keep=0)
    assert entry in kept and not deleted and entry.is_dir()


def test_clean_does_not_block_on_a_fifo_as_the_lock_file(tmp_path, capsys):
    from harness.report.rundir import in_use
    run = tmp_path / "runs" / "20200101-000000-x"
    run.mkdir(parents=True)
    os.mkfifo(run / ".busy")
    with deadline(5):
        assert in_use(run) is False


def test_check_nightly_refuses_a_fifo_spec_json_in_one_line_leaving_nothing(tmp_path, capsys):
    run = _run(tmp_path / "runs" / "20260101-000000-r")
    (run / "spec.json").unlink()
    os.mkfifo(run / "spec.json")
    table = tmp_path / "nightly"
    rc, out, err = _main(["check", "--nightly", str(table), str(run)], capsys, seconds=10)
    assert rc == exitcodes.BAD_INPUT, (out, err)
    _one_line(err, str(run / "spec.json"), "not a regular file")
    assert not table.exists() and _left(run) == {"history.jsonl", "spec.json"}


def test_check_nightly_refuses_a_huge_verdict_and_survives_a_spec_of_odd_shapes(tmp_path, capsys):
    run = _run(tmp_path / "r1")
    _sparse(run / "verdict.json")
    table = tmp_path / "nightly"
    rc, _, err = _main(["check", "--nightly", str(table), str(run)], capsys)
    assert rc == exitcodes.BAD_INPUT and not table.exists()
    _one_line(err, str(run / "verdict.json"), "bytes")
    # a spec that is no object, a seed that is no number: the row keeps what it can, never a crash
    (run / "verdict.json").unlink()
    for spec in ('{"spec": 5}', '[1]', '{"spec": {"seed": "banana"}}', '{"spec": '):
        (run / "spec.json").write_text(spec)
        rc, _, err = _main(["check", "--nightly", str(table), str(run)], capsys)
        assert rc == exitcodes.PASS, (spec, err)
    import pyarrow.parquet as pq
    assert [r["seed"] for r in pq.read_table(table).to_pylist()] == [-1] * 4


def test_check_nightly_refuses_a_table_path_that_is_a_file(tmp_path, capsys):
    run = _run(tmp_path / "r1")
    table = tmp_path / "table"
    table.write_text("not a table")
    rc, _, err = _main(["check", "--nightly", str(table), str(run)], capsys)
    assert rc == exitcodes.BAD_INPUT
    _one_line(err, str(table), "not a directory")
    assert _left(run) == {"history.jsonl", "spec.json"}  # refused before the check: nothing written


@pytest.mark.parametrize("name", ["spec.json", "verdict.json"])
@pytest.mark.parametrize("how", ["fifo", "huge", "dev-zero"])
def test_page_refuses_a_fifo_or_huge_spec_or_verdict_in_one_line(tmp_path, capsys, name, how):
    run = _run(tmp_path / "run")
    (run / name).unlink(missing_ok=True)
    if how == "fifo":
        os.mkfifo(run / name)
    elif how == "huge":
        _sparse(run / name)
    else:
        (run / name).symlink_to("/dev/zero")
    with _peak(32 << 20):
        rc, out, err = _main(["page", str(run)], capsys, seconds=10)
    assert rc == exitcodes.BAD_INPUT, (out, err)
    _one_line(err, str(run / name))
    assert not (run / "run.html").exists()


def test_a_fifo_where_page_or_check_writes_is_replaced_never_blocked_on(tmp_path, capsys):
    run = _run(tmp_path / "run")
    os.mkfifo(run / "run.html")
    os.mkfifo(run / "check-inprocess.json")
    rc, out, err = _main(["page", str(run)], capsys, seconds=20)
    assert rc == 0, err
    rc, out, err = _main(["check", str(run)], capsys, seconds=20)
    assert rc == 0, err
    assert (run / "run.html").is_file() and json.loads((run / "check-inprocess.json").read_text())["verdict"] == "PASS"
    assert not [p for p in run.iterdir() if p.name.endswith(".tmp")]


# ------------------------------------------------------------------ history files: type-checked, never blocking


@pytest.mark.parametrize("name", ["history.jsonl", "history.parquet"])
def test_a_fifo_history_in_a_run_directory_is_bad_input_not_a_missing_history(tmp_path, capsys, name):
    run = tmp_path / "run"
    run.mkdir()
    (run / "spec.json").write_text("{}")
    os.mkfifo(run / name)
    for argv in (["check", str(run)], ["check", str(run / name)], ["check", str(tmp_path)]):
        rc, out, err = _main(argv, capsys, seconds=10)
        assert rc == exitcodes.BAD_INPUT, (argv, out, err)
        _one_line(err, str(run / name), "not a regular file")
    with deadline(5), pytest.raises(HarnessError, match="not a regular file"):
        load_history(run / name)
    assert _left(run) == {"spec.json", name}


def test_page_of_a_fifo_history_is_one_line(tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    os.mkfifo(run / "history.jsonl")
    rc, _, err = _main(["page", str(run)], capsys, seconds=10)
    assert rc == exitcodes.BAD_INPUT
    _one_line(err, str(run / "history.jsonl"), "not a regular file")


def test_a_history_that_is_a_link_to_dev_zero_is_refused_at_once(tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    (run / "history.jsonl").symlink_to("/dev/zero")
    rc, _, err = _main(["check", str(run)], capsys, seconds=10)
    assert rc == exitcodes.BAD_INPUT
    _one_line(err, "not a regular file")


# ------------------------------------------------------------------ nightly-report: a wrong-schema part


def _table(tmp_path: Path) -> Path:
    from harness.spark.nightly import COLUMNS, append
    row = {c: "x" for c in COLUMNS}
    row.update(seed=1, anomalies=0, events=10, deliveries=3, throughput_rps=1.5, night="2026-01-01", verdict="PASS")
    table = tmp_path / "nightly"
    append(table, [row])
    return table


@pytest.mark.parametrize("defect", ["wrong-type", "missing-column", "not-parquet", "fifo"])
def test_nightly_report_of_a_table_with_a_wrong_part_is_one_line_of_bad_input_before_spark(tmp_path, capsys,
                                                                                          defect):
    import pyarrow as pa
    import pyarrow.parquet as pq
    table = _table(tmp_path)
    part = table / "part-20260102T000000-bad.parquet"
    if defect == "wrong-type":
        pq.write_table(pa.table({**{c: ["x"] for c in pq.read_schema(next(table.glob("part-*"))).names},
                                 "seed": ["not a number"]}), part)
    elif defect == "missing-column":
        pq.write_table(pa.table({"run": ["x"]}), part)
    elif defect == "not-parquet":
        part.write_text("not parquet")
    else:
        os.mkfifo(part)
    started = time.monotonic()
    rc, out, err = _main(["nightly-report", str(table)], capsys, seconds=60)
    assert rc == exitcodes.BAD_INPUT, (out, err)
    _one_line(err, str(part))
    assert time.monotonic() - started < 10  # refused from the footers: no Spark started
    assert not (table / "report.html").exists()


def test_nightly_report_of_no_table_is_one_line(tmp_path, capsys):
    (tmp_path / "file").write_text("x")
    for target in (tmp_path / "missing", tmp_path / "file", tmp_path):
        rc, _, err = _main(["nightly-report", str(target)], capsys)
        assert rc == exitcodes.BAD_INPUT
        _one_line(err, "nightly table")


# ------------------------------------------------------------------ page: a malformed spec.json


@pytest.mark.parametrize("spec", ["[1]", '{"spec": 5}', '{"spec": ', "", '"text"', '{"spec": [1, 2]}'])
def test_page_with_a_malformed_spec_json_is_one_line_of_bad_input(tmp_path, capsys, spec):
    run = _run(tmp_path / "run")
    (run / "spec.json").write_text(spec)
    rc, out, err = _main(["page", str(run)], capsys)
    assert rc == exitcodes.BAD_INPUT, (out, err)
    _one_line(err, str(run / "spec.json"))
    assert not (run / "run.html").exists()


def test_page_with_a_verdict_that_is_not_an_object_is_one_line(tmp_path, capsys):
    run = _run(tmp_path / "run")
    (run / "verdict.json").write_text("[1, 2]")
    rc, _, err = _main(["page", str(run)], capsys)
    assert rc == exitcodes.BAD_INPUT
    _one_line(err, str(run / "verdict.json"))
    assert not (run / "run.html").exists()


# ------------------------------------------------------------------ a crashed run's last line cut short


def test_a_history_cut_short_in_its_last_line_is_unknown_with_its_prefix_checked(tmp_path, capsys):
    run = _run(tmp_path / "run")
    whole = (run / "history.jsonl").read_text()
    n = whole.count("\n")
    cut = json.dumps({"index": n, "time": 10 ** 12, "process": "consumer-0", "type": "ok", "f": "poll",
                      "value": {"records": []}})
    (run / "history.jsonl").write_text(whole + cut[: len(cut) // 2])  # the writer died mid-line
    rc, out, err = _main(["check", str(run)], capsys)
    assert rc == exitcodes.UNKNOWN, (out, err)
    assert err == "" and f"line {n + 1}" in out and "cut short" in out and f"the {n} lines before it" in out
    assert "no-loss                  PASS" in out  # the prefix was checked, and reported
    assert "verdict: UNKNOWN" in out
    data = json.loads((run / "check-inprocess.json").read_text())
    assert data["verdict"] == "UNKNOWN" and data["results"][0]["checker"] == "history"
    # the page draws the complete lines
    rc, out, _ = _main(["page", str(run)], capsys)
    assert rc == 0 and (run / "run.html").is_file()


def test_a_cut_multibyte_character_at_the_end_is_a_cut_line_too(tmp_path, capsys):
    run = _run(tmp_path / "run")
    with open(run / "history.jsonl", "ab") as handle:
        handle.write('{"index": 99, "process": "é'.encode()[:-1])
    rc, out, _ = _main(["check", str(run)], capsys)
    assert rc == exitcodes.UNKNOWN and "cut short" in out


@pytest.mark.parametrize("where", ["middle", "last-with-newline", "last-complete-not-an-op"])
def test_garbage_anywhere_but_a_cut_last_line_stays_malformed(tmp_path, capsys, where):
    run = _run(tmp_path / "run")
    lines = (run / "history.jsonl").read_text().splitlines()
    if where == "middle":
        lines.insert(3, '{"index": 3, "ti')
        text = "\n".join(lines) + "\n"
    elif where == "last-with-newline":
        text = "\n".join(lines) + '\n{"index": 99, "ti\n'
    else:
        text = "\n".join(lines) + '\n{"index": 99}'  # JSON, complete: a line that is not an op
    (run / "history.jsonl").write_text(text)
    rc, out, err = _main(["check", str(run)], capsys)
    assert rc == exitcodes.BAD_INPUT, (out, err)
    _one_line(err, "malformed history", str(run / "history.jsonl"), "line ")
    assert not (run / "check-inprocess.json").exists()


def test_read_history_stays_strict_and_read_history_prefix_says_why(tmp_path):
    from harness.history.store import read_history, read_history_prefix
    path = _jsonl(tmp_path / "history.jsonl", base().ops)
    with open(path, "a") as handle:
        handle.write('{"ind')
    with pytest.raises(HarnessError, match="malformed history .* line 16"):
        read_history(path)
    ops, partial = read_history_prefix(path)
    assert len(ops) == 15 and partial is not None and partial.lineno == 16


# ------------------------------------------------------------------ empty paths


def _namespace(**kw) -> argparse.Namespace:
    defaults = {"engine": "inprocess", "spark_master": None, "spark_threshold": 10 ** 9, "nightly": None,
                "json": False, "screenshot": None, "keep": 0, "all": True, "dry_run": False, "root": None}
    return argparse.Namespace(**{**defaults, **kw})


def test_an_empty_path_is_refused_by_check_page_and_clean_never_the_current_directory(tmp_path, monkeypatch,
                                                                                    capsys):
    """The handlers refuse an empty path (the parser keeps "" as typed only if it passes strings: with
    `type=Path`, "" is "." before a handler sees it, see the report)."""
    from harness.cli.report import cmd_check, cmd_nightly_report
    from harness.cli.upkeep import cmd_clean, cmd_page
    run = _run(tmp_path)  # the current directory is a run, under a reports directory's layout
    stale = tmp_path / "reports" / "runs" / "20200101-000000-old"
    _run(stale)
    os.utime(stale, (OLD, OLD))
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("KSH_REPORTS_DIR", raising=False)
    calls = {"check": lambda: cmd_check(_namespace(history=[""])),
             "check --nightly": lambda: cmd_check(_namespace(history=[str(run)], nightly="")),
             "page": lambda: cmd_page(_namespace(run_dir="")),
             "page --screenshot": lambda: cmd_page(_namespace(run_dir=str(run), screenshot="")),
             "clean": lambda: cmd_clean(_namespace(root="")),
             "nightly-report": lambda: cmd_nightly_report(_namespace(table="", out=None))}
    for name, call in calls.items():
        with pytest.raises(HarnessError) as exc:
            call()
        assert "empty path" in str(exc.value) and "\n" not in str(exc.value), (name, exc.value)
    assert _left(run) == {"history.jsonl", "spec.json", "reports"} and stale.is_dir()
    capsys.readouterr()


def test_clean_root_given_as_the_current_directory_deletes_no_folder_of_the_user(tmp_path, monkeypatch, capsys):
    """`--root .` (what `--root ""` used to mean; an empty path is now refused by the parser): a user's
    folders there are never deleted (only what the harness made), and a directory that is no reports
    directory is refused."""
    (tmp_path / "runs" / "my-folder").mkdir(parents=True)
    (tmp_path / "runs" / "my-folder" / "data.csv").write_text("1,2\n")
    os.utime(tmp_path / "runs" / "my-folder", (OLD, OLD))
    monkeypatch.chdir(tmp_path)
    rc, out, err = _main(["clean", "--root", ".", "--keep", "0", "--all"], capsys)
    assert rc in (exitcodes.PASS, exitcodes.BAD_INPUT), (out, err)
    assert (tmp_path / "runs" / "my-folder" / "data.csv").is_file() and "deleted" not in out
    monkeypatch.chdir(tmp_path / "runs")
    rc, _, err = _main(["clean", "--root", ".", "--keep", "0", "--all"], capsys)
    assert rc == exitcodes.BAD_INPUT
    _one_line(err)
    assert (tmp_path / "runs" / "my-folder").is_dir()


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
    _jsonl(run / "history.jsonl", HOSTILE_JSONL[case](_ops_json()))
    rc, out, err = _main(["check", str(run)], capsys)
    assert rc == exitcodes.BAD_INPUT, (out, err)
    line, word = HOSTILE_WHY[case]
    text = _one_line(err, f"malformed history {run / 'history.jsonl'} line {line}")
    assert word in text or (word == "clock" and "moves" in text), text
    assert _left(run) == {"history.jsonl"}  # nothing written beside it


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
    rc, _, err = _main(["check", str(path.parent)], capsys)
    assert rc == exitcodes.BAD_INPUT
    _one_line(err, str(path))
    assert _left(path.parent) == {"history.parquet"}


def test_parquet_rows_out_of_index_order_but_each_op_once_are_still_a_history(tmp_path, monkeypatch, rows):
    """A history's rows need not be in index order (`test_unit_inprocess_stream`'s late config): only an
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
            load_history(_jsonl(tmp_path / f"{case}.jsonl", [op.to_json() for op in ops]))


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


def _history_for_spark(path: Path, records: int) -> Path:
    from harness.model.simulate import SimConfig, simulate
    path.parent.mkdir(parents=True, exist_ok=True)
    return EventTable.from_ops(simulate(SimConfig(seed=1, records=records, partitions=4, consumers=3))
                               ).write_parquet(path)


#: What the JVM prints as it starts, on every Spark check (not the interrupt's).
_JVM_START = ("WARNING: Using incubator modules", "Setting default log level", "To adjust logging level")


@pytest.mark.spark
@pytest.mark.real
@pytest.mark.nightly  # two Spark starts in subprocesses: over a minute under CI's load (CI, 41dacae: timed out)
@pytest.mark.parametrize("when", ["session-start", "job"])
def test_ctrl_c_during_check_engine_spark_is_one_line_and_130_with_the_jvm_stopped(tmp_path, when):
    """SIGINT, as a terminal sends it, once the JVM is up: while the session starts, or once the job's Python
    tasks run (Spark's Python workers, children of the JVM, are up)."""
    file = _history_for_spark(tmp_path / "run" / "history.parquet", 20_000)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp_path)}
    child = subprocess.Popen([sys.executable, "-m", "harness.cli", "check", "--engine", "spark", str(file)],
                             cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        started = time.monotonic()
        while child.poll() is None and time.monotonic() - started < 120:
            jvm = _children(child.pid, b"java")
            if jvm and (when == "session-start" or any(_children(pid, b"pyspark") for pid in jvm)):
                break
            time.sleep(0.05)
        assert child.poll() is None and jvm, f"the Spark JVM (and, for {when}, its job) never started"
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=60)
    finally:
        child.kill()
    lines = [line for line in err.strip().splitlines() if not line.startswith(_JVM_START)]
    assert child.returncode == exitcodes.INTERRUPTED, (child.returncode, out, err)
    assert lines == ["share-harness: interrupted; everything it started was stopped"], err
    assert "Traceback" not in err and "verdict" not in out
    assert not any(Path(f"/proc/{pid}").exists() for pid in jvm), "the Spark JVM outlived the command"
    assert not list(tmp_path.glob("ksh-spark-*")), "the Spark scratch directory was left"
    assert not (file.parent / "check-spark.json").exists()


def _children(pid: int, word: bytes) -> list[int]:
    """The processes whose parent is `pid` (made by any of its threads) and whose command line holds `word`."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            stat = (proc / "stat").read_text()
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid and word in (proc / "cmdline").read_bytes():
                found.append(int(proc.name))
        except (OSError, IndexError, ValueError):
            pass
    return found


# ------------------------------------------------------------------ clean: only what the harness made


def test_clean_refuses_a_root_that_is_not_a_reports_directory(tmp_path, capsys):
    home = tmp_path / "home"
    (home / "photos").mkdir(parents=True)
    os.utime(home / "photos", (OLD, OLD))
    rc, out, err = _main(["clean", "--root", str(home), "--keep", "0", "--all"], capsys)
    assert rc == exitcodes.BAD_INPUT, (out, err)
    _one_line(err, str(home), "not a reports directory")
    assert (home / "photos").is_dir()


def test_clean_never_deletes_a_folder_the_harness_did_not_make(tmp_path, capsys):
    runs = tmp_path / "runs"
    mine = runs / "my-notes"
    mine.mkdir(parents=True)
    (mine / "notes.txt").write_text("keep me")
    stamped_but_not_ours = runs / "20200101-000000-backup"
    (stamped_but_not_ours / "logs").mkdir(parents=True)
    odd_spec = runs / "20200101-000001-odd"
    odd_spec.mkdir()
    (odd_spec / "spec.json").write_text('{"name": "not a run spec"}')
    ours = _run(runs / "20200101-000002-run")
    (ours / "verdict.json").write_text(json.dumps({"valid": True}))
    cluster = runs / "20200101-000003-cluster"
    (cluster / "logs").mkdir(parents=True)
    (cluster / ".busy").write_text("")
    (tmp_path / "suites" / "my-suite-notes").mkdir(parents=True)
    for p in [*runs.iterdir(), tmp_path / "suites" / "my-suite-notes"]:
        os.utime(p, (OLD, OLD))
    rc, out, err = _main(["clean", "--root", str(tmp_path), "--keep", "0", "--all"], capsys)
    assert rc == exitcodes.PASS, err
    assert sorted(p.name for p in runs.iterdir()) == ["20200101-000000-backup", "20200101-000001-odd", "my-notes"]
    assert (mine / "notes.txt").read_text() == "keep me" and (tmp_path / "suites" / "my-suite-notes").is_dir()
    assert f"deleted {ours}" in out and f"deleted {cluster}" in out


# ------------------------------------------------------------------ page --screenshot: no directory made


def test_page_screenshot_into_a_missing_directory_is_refused_and_nothing_is_made(tmp_path, capsys):
    run = _run(tmp_path / "run")
    target = tmp_path / "nonexistent" / "dir" / "x.png"
    rc, out, err = _main(["page", str(run), "--screenshot", str(target)], capsys)
    assert rc == exitcodes.BAD_INPUT, (out, err)
    _one_line(err, str(target.parent), "does not exist")
    assert not (tmp_path / "nonexistent").exists() and not (run / "run.html").exists()
    from harness.report.browser import open_page
    with pytest.raises(HarnessError, match="does not exist"):
        open_page(run / "run.html", screenshot=target)
