"""Issue 47, the commands users point at files (check, page, clean, nightly-report): every file is read as a
regular file of bounded size (a fifo never blocks, a huge file is never read whole); bad input is exit 2 and
one line on stderr, with nothing left behind; a crashed run's history cut short in its last line is unknown
(3), its complete lines checked; `clean` deletes only what the harness made, under a reports directory; a
screenshot never creates directories."""

from __future__ import annotations

import argparse
import json
import os
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from harness import exitcodes
from harness.errors import HarnessError
from harness.history.events import load_history
from tests.support.builders import base
from tests.support.commands import OLD, left_in, one_line, run_dir_of, run_main, sparse_file, write_jsonl
from tests.support.timeouts import deadline

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
    rc, out, err = run_main(["clean", "--root", str(tmp_path), "--keep", "0"], capsys, seconds=10)
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
    sparse_file(entry / name)
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
    run = run_dir_of(tmp_path / "runs" / "20260101-000000-r")
    (run / "spec.json").unlink()
    os.mkfifo(run / "spec.json")
    table = tmp_path / "nightly"
    rc, out, err = run_main(["check", "--nightly", str(table), str(run)], capsys, seconds=10)
    assert rc == exitcodes.BAD_INPUT, (out, err)
    one_line(err, str(run / "spec.json"), "not a regular file")
    assert not table.exists() and left_in(run) == {"history.jsonl", "spec.json"}


def test_check_nightly_refuses_a_huge_verdict_and_survives_a_spec_of_odd_shapes(tmp_path, capsys):
    run = run_dir_of(tmp_path / "r1")
    sparse_file(run / "verdict.json")
    table = tmp_path / "nightly"
    rc, _, err = run_main(["check", "--nightly", str(table), str(run)], capsys)
    assert rc == exitcodes.BAD_INPUT and not table.exists()
    one_line(err, str(run / "verdict.json"), "bytes")
    # a spec that is no object, a seed that is no number: the row keeps what it can, never a crash
    (run / "verdict.json").unlink()
    for spec in ('{"spec": 5}', '[1]', '{"spec": {"seed": "banana"}}', '{"spec": '):
        (run / "spec.json").write_text(spec)
        rc, _, err = run_main(["check", "--nightly", str(table), str(run)], capsys)
        assert rc == exitcodes.PASS, (spec, err)
    import pyarrow.parquet as pq
    assert [r["seed"] for r in pq.read_table(table).to_pylist()] == [-1] * 4


def test_check_nightly_refuses_a_table_path_that_is_a_file(tmp_path, capsys):
    run = run_dir_of(tmp_path / "r1")
    table = tmp_path / "table"
    table.write_text("not a table")
    rc, _, err = run_main(["check", "--nightly", str(table), str(run)], capsys)
    assert rc == exitcodes.BAD_INPUT
    one_line(err, str(table), "not a directory")
    assert left_in(run) == {"history.jsonl", "spec.json"}  # refused before the check: nothing written


@pytest.mark.parametrize("name", ["spec.json", "verdict.json"])
@pytest.mark.parametrize("how", ["fifo", "huge", "dev-zero"])
def test_page_refuses_a_fifo_or_huge_spec_or_verdict_in_one_line(tmp_path, capsys, name, how):
    run = run_dir_of(tmp_path / "run")
    (run / name).unlink(missing_ok=True)
    if how == "fifo":
        os.mkfifo(run / name)
    elif how == "huge":
        sparse_file(run / name)
    else:
        (run / name).symlink_to("/dev/zero")
    with _peak(32 << 20):
        rc, out, err = run_main(["page", str(run)], capsys, seconds=10)
    assert rc == exitcodes.BAD_INPUT, (out, err)
    one_line(err, str(run / name))
    assert not (run / "run.html").exists()


def test_a_fifo_where_page_or_check_writes_is_replaced_never_blocked_on(tmp_path, capsys):
    run = run_dir_of(tmp_path / "run")
    os.mkfifo(run / "run.html")
    os.mkfifo(run / "check-inprocess.json")
    rc, out, err = run_main(["page", str(run)], capsys, seconds=20)
    assert rc == 0, err
    rc, out, err = run_main(["check", str(run)], capsys, seconds=20)
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
        rc, out, err = run_main(argv, capsys, seconds=10)
        assert rc == exitcodes.BAD_INPUT, (argv, out, err)
        one_line(err, str(run / name), "not a regular file")
    with deadline(5), pytest.raises(HarnessError, match="not a regular file"):
        load_history(run / name)
    assert left_in(run) == {"spec.json", name}


def test_page_of_a_fifo_history_is_one_line(tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    os.mkfifo(run / "history.jsonl")
    rc, _, err = run_main(["page", str(run)], capsys, seconds=10)
    assert rc == exitcodes.BAD_INPUT
    one_line(err, str(run / "history.jsonl"), "not a regular file")


def test_a_history_that_is_a_link_to_dev_zero_is_refused_at_once(tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    (run / "history.jsonl").symlink_to("/dev/zero")
    rc, _, err = run_main(["check", str(run)], capsys, seconds=10)
    assert rc == exitcodes.BAD_INPUT
    one_line(err, "not a regular file")


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
    rc, out, err = run_main(["nightly-report", str(table)], capsys, seconds=60)
    assert rc == exitcodes.BAD_INPUT, (out, err)
    one_line(err, str(part))
    assert time.monotonic() - started < 10  # refused from the footers: no Spark started
    assert not (table / "report.html").exists()


def test_nightly_report_of_no_table_is_one_line(tmp_path, capsys):
    (tmp_path / "file").write_text("x")
    for target in (tmp_path / "missing", tmp_path / "file", tmp_path):
        rc, _, err = run_main(["nightly-report", str(target)], capsys)
        assert rc == exitcodes.BAD_INPUT
        one_line(err, "nightly table")


# ------------------------------------------------------------------ page: a malformed spec.json


@pytest.mark.parametrize("spec", ["[1]", '{"spec": 5}', '{"spec": ', "", '"text"', '{"spec": [1, 2]}'])
def test_page_with_a_malformed_spec_json_is_one_line_of_bad_input(tmp_path, capsys, spec):
    run = run_dir_of(tmp_path / "run")
    (run / "spec.json").write_text(spec)
    rc, out, err = run_main(["page", str(run)], capsys)
    assert rc == exitcodes.BAD_INPUT, (out, err)
    one_line(err, str(run / "spec.json"))
    assert not (run / "run.html").exists()


def test_page_with_a_verdict_that_is_not_an_object_is_one_line(tmp_path, capsys):
    run = run_dir_of(tmp_path / "run")
    (run / "verdict.json").write_text("[1, 2]")
    rc, _, err = run_main(["page", str(run)], capsys)
    assert rc == exitcodes.BAD_INPUT
    one_line(err, str(run / "verdict.json"))
    assert not (run / "run.html").exists()


# ------------------------------------------------------------------ a crashed run's last line cut short


def test_a_history_cut_short_in_its_last_line_is_unknown_with_its_prefix_checked(tmp_path, capsys):
    run = run_dir_of(tmp_path / "run")
    whole = (run / "history.jsonl").read_text()
    n = whole.count("\n")
    cut = json.dumps({"index": n, "time": 10 ** 12, "process": "consumer-0", "type": "ok", "f": "poll",
                      "value": {"records": []}})
    (run / "history.jsonl").write_text(whole + cut[: len(cut) // 2])  # the writer died mid-line
    rc, out, err = run_main(["check", str(run)], capsys)
    assert rc == exitcodes.UNKNOWN, (out, err)
    assert err == "" and f"line {n + 1}" in out and "cut short" in out and f"the {n} lines before it" in out
    assert "no-loss                  PASS" in out  # the prefix was checked, and reported
    assert "verdict: UNKNOWN" in out
    data = json.loads((run / "check-inprocess.json").read_text())
    assert data["verdict"] == "UNKNOWN" and data["results"][0]["checker"] == "history"
    # the page draws the complete lines
    rc, out, _ = run_main(["page", str(run)], capsys)
    assert rc == 0 and (run / "run.html").is_file()


def test_a_cut_multibyte_character_at_the_end_is_a_cut_line_too(tmp_path, capsys):
    run = run_dir_of(tmp_path / "run")
    with open(run / "history.jsonl", "ab") as handle:
        handle.write('{"index": 99, "process": "é'.encode()[:-1])
    rc, out, _ = run_main(["check", str(run)], capsys)
    assert rc == exitcodes.UNKNOWN and "cut short" in out


@pytest.mark.parametrize("where", ["middle", "last-with-newline", "last-complete-not-an-op"])
def test_garbage_anywhere_but_a_cut_last_line_stays_malformed(tmp_path, capsys, where):
    run = run_dir_of(tmp_path / "run")
    lines = (run / "history.jsonl").read_text().splitlines()
    if where == "middle":
        lines.insert(3, '{"index": 3, "ti')
        text = "\n".join(lines) + "\n"
    elif where == "last-with-newline":
        text = "\n".join(lines) + '\n{"index": 99, "ti\n'
    else:
        text = "\n".join(lines) + '\n{"index": 99}'  # JSON, complete: a line that is not an op
    (run / "history.jsonl").write_text(text)
    rc, out, err = run_main(["check", str(run)], capsys)
    assert rc == exitcodes.BAD_INPUT, (out, err)
    one_line(err, "malformed history", str(run / "history.jsonl"), "line ")
    assert not (run / "check-inprocess.json").exists()


def test_read_history_stays_strict_and_read_history_prefix_says_why(tmp_path):
    from harness.history.store import read_history, read_history_prefix
    path = write_jsonl(tmp_path / "history.jsonl", base().ops)
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
    run = run_dir_of(tmp_path)  # the current directory is a run, under a reports directory's layout
    stale = tmp_path / "reports" / "runs" / "20200101-000000-old"
    run_dir_of(stale)
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
    assert left_in(run) == {"history.jsonl", "spec.json", "reports"} and stale.is_dir()
    capsys.readouterr()


def test_clean_root_given_as_the_current_directory_deletes_no_folder_of_the_user(tmp_path, monkeypatch, capsys):
    """`--root .` (what `--root ""` used to mean; an empty path is now refused by the parser): a user's
    folders there are never deleted (only what the harness made), and a directory that is no reports
    directory is refused."""
    (tmp_path / "runs" / "my-folder").mkdir(parents=True)
    (tmp_path / "runs" / "my-folder" / "data.csv").write_text("1,2\n")
    os.utime(tmp_path / "runs" / "my-folder", (OLD, OLD))
    monkeypatch.chdir(tmp_path)
    rc, out, err = run_main(["clean", "--root", ".", "--keep", "0", "--all"], capsys)
    assert rc in (exitcodes.PASS, exitcodes.BAD_INPUT), (out, err)
    assert (tmp_path / "runs" / "my-folder" / "data.csv").is_file() and "deleted" not in out
    monkeypatch.chdir(tmp_path / "runs")
    rc, _, err = run_main(["clean", "--root", ".", "--keep", "0", "--all"], capsys)
    assert rc == exitcodes.BAD_INPUT
    one_line(err)
    assert (tmp_path / "runs" / "my-folder").is_dir()


# ------------------------------------------------------------------ clean: only what the harness made


def test_clean_refuses_a_root_that_is_not_a_reports_directory(tmp_path, capsys):
    home = tmp_path / "home"
    (home / "photos").mkdir(parents=True)
    os.utime(home / "photos", (OLD, OLD))
    rc, out, err = run_main(["clean", "--root", str(home), "--keep", "0", "--all"], capsys)
    assert rc == exitcodes.BAD_INPUT, (out, err)
    one_line(err, str(home), "not a reports directory")
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
    ours = run_dir_of(runs / "20200101-000002-run")
    (ours / "verdict.json").write_text(json.dumps({"valid": True}))
    cluster = runs / "20200101-000003-cluster"
    (cluster / "logs").mkdir(parents=True)
    (cluster / ".busy").write_text("")
    (tmp_path / "suites" / "my-suite-notes").mkdir(parents=True)
    for p in [*runs.iterdir(), tmp_path / "suites" / "my-suite-notes"]:
        os.utime(p, (OLD, OLD))
    rc, out, err = run_main(["clean", "--root", str(tmp_path), "--keep", "0", "--all"], capsys)
    assert rc == exitcodes.PASS, err
    assert sorted(p.name for p in runs.iterdir()) == ["20200101-000000-backup", "20200101-000001-odd", "my-notes"]
    assert (mine / "notes.txt").read_text() == "keep me" and (tmp_path / "suites" / "my-suite-notes").is_dir()
    assert f"deleted {ours}" in out and f"deleted {cluster}" in out


# ------------------------------------------------------------------ page --screenshot: no directory made


def test_page_screenshot_into_a_missing_directory_is_refused_and_nothing_is_made(tmp_path, capsys):
    run = run_dir_of(tmp_path / "run")
    target = tmp_path / "nonexistent" / "dir" / "x.png"
    rc, out, err = run_main(["page", str(run), "--screenshot", str(target)], capsys)
    assert rc == exitcodes.BAD_INPUT, (out, err)
    one_line(err, str(target.parent), "does not exist")
    assert not (tmp_path / "nonexistent").exists() and not (run / "run.html").exists()
    from harness.report.browser import open_page
    with pytest.raises(HarnessError, match="does not exist"):
        open_page(run / "run.html", screenshot=target)
