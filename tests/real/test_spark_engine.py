"""The Spark engine against the in-process engine: identical verdicts, anomalies, allowances, stats.

Histories: the model's (seeded configs, and hypothesis-drawn ones), the model's with each mutation
applied, run-shaped ones (a model run plus every operation kind only real runs record), and every
history the real-cluster tests and suites left in reports/runs. Spark runs
embedded (local[2], JVM heap 1g); one job checks many histories at once, as users run it.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.check import check_histories
from harness.check.histories import history_files
from harness.check.inprocess import check_inprocess
from harness.checkers import verdict_word
from harness.errors import HarnessError
from harness.history.events import EventTable
from harness.model.simulate import SimConfig, simulate
from harness.spark.engine import check_files

pytestmark = [pytest.mark.spark, pytest.mark.real]

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module", autouse=True)
def spark():
    from harness.spark.session import spark_session, stop
    yield spark_session("local[2]")
    stop()


def _same(spark_check, file: Path) -> None:
    """Field by field, so a difference names itself."""
    mine = check_inprocess(file)
    for s, i in zip(spark_check.results, mine.results):
        where = f"{file} {s.checker}"
        assert (s.checker, verdict_word(s.valid)) == (i.checker, verdict_word(i.valid)), (where, s.reason, i.reason)
        assert [(a.kind, a.message, a.evidence) for a in s.anomalies] == \
               [(a.kind, a.message, a.evidence) for a in i.anomalies], where
        assert s.allowances == i.allowances, where
        assert s.stats == i.stats, where
        assert s.reason == i.reason, where
    assert spark_check.events == mine.events
    assert spark_check.facts == mine.facts


def _write(ops, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    return EventTable.from_ops(ops).write_parquet(path)


def _model_histories(tmp: Path) -> list[Path]:
    """40 seeded model histories over the model's knobs, and each mutation on some of them."""
    from harness.mutants import MUTANTS
    classes = ("drop-delivery", "duplicate-acquisition", "count-past-limit", "swap-in-batch", "redeliver-accepted",
               "drop-ack-result")
    rng = random.Random(932)
    files = []
    for n in range(40):
        cfg = SimConfig(seed=rng.randrange(10**6), partitions=rng.randint(1, 4), consumers=rng.randint(1, 3),
                        records=rng.randint(10, 120), limit=rng.randint(2, 4), max_poll=rng.randint(1, 8),
                        version=rng.choice(["4.1", "4.2", "4.3"]), p_release=rng.choice([0.0, 0.1]),
                        p_reject=rng.choice([0.0, 0.05]), p_ignore=rng.choice([0.0, 0.05]),
                        p_close=rng.choice([0.0, 0.03]), p_crash=rng.choice([0.0, 0.03]),
                        leader_changes=rng.randint(0, 2))
        ops = simulate(cfg)
        files.append(_write(ops, tmp / f"model-{n}" / "history.parquet"))
        mutant = MUTANTS[classes[n % len(classes)]](ops, random.Random(rng.randrange(2**32)))
        if mutant is not None:
            files.append(_write(mutant.ops, tmp / f"mutated-{n}" / "history.parquet"))
    files.append(_write(simulate(SimConfig(seed=1, records=20))[:0], tmp / "empty" / "history.parquet"))
    no_config = [op for op in simulate(SimConfig(seed=2, records=20)) if op.f != "config"]
    files.append(_write(no_config, tmp / "no-config" / "history.parquet"))
    return files


@pytest.mark.parametrize("layout, share", [("direct", 1), pytest.param("shuffle", 2, marks=pytest.mark.nightly),
                                           pytest.param("shuffle", 1, marks=pytest.mark.nightly, id="shuffle-all")])
def test_spark_engine_equals_the_in_process_engine_on_model_and_mutated_histories(tmp_path, layout, share):
    """Both layouts: each slot reading its file (direct), and the rows shuffled to their slots. In CI the
    shuffle takes the first half of the seeds (each with its mutant) and the empty and config-less files
    (it costs twice the direct layout per file); nightly, all of them."""
    files = _model_histories(tmp_path)
    if share > 1:
        files = files[:(len(files) - 2) // share] + files[-2:]
    checks = check_files(files, layout=layout)
    assert [c.path for c in checks] == files
    failing = sum(1 for c in checks if c.valid is False)
    assert failing >= 5, "the mutations must make some histories fail (else the comparison proves little)"
    for check, file in zip(checks, files):
        _same(check, file)


@pytest.mark.parametrize("layouts", [("auto",), pytest.param(("direct", "shuffle"), marks=pytest.mark.nightly,
                                                            id="direct-shuffle")])
def test_spark_engine_spreads_share_partitions_over_more_slots_than_cores(tmp_path, monkeypatch, layouts):
    """Histories too big for one slot per core are spread over more slots (each replays its
    share-partitions with the run's global rows): the same results, with many runs in one slot
    (shuffle) and a file read by several slots (direct); "auto" sends the biggest files through
    the shuffle and the rest direct, in one call (CI, on every sixth model history: 14 s instead of 19 for every
    third, both kinds of spreading still asserted below); each layout alone for every third file (nightly)."""
    import harness.spark.engine as engine
    from harness.check.histories import events_in
    files = _model_histories(tmp_path)[::6 if layouts == ("auto",) else 3]
    sizes = [events_in([f]) for f in files]
    monkeypatch.setattr(engine, "SLOT_ROWS", max(1, max(sizes) // 6))
    monkeypatch.setattr(engine, "MIN_SLOT_ROWS", 1)
    assert any(-(-n // engine.SLOT_ROWS) > engine.DIRECT_SLOTS for n in sizes), "no file takes the shuffle"
    assert any(1 < -(-n // engine.SLOT_ROWS) <= engine.DIRECT_SLOTS for n in sizes), "no file is read by many slots"
    for layout in layouts:
        for check, file in zip(check_files(files, layout=layout), files):
            _same(check, file)


SETTINGS = settings(max_examples=6, deadline=None, database=None, suppress_health_check=list(HealthCheck))


@SETTINGS
@given(cfg=st.builds(SimConfig, seed=st.integers(0, 10**6), partitions=st.integers(1, 3),
                     consumers=st.integers(1, 3), records=st.integers(5, 80), limit=st.integers(2, 4),
                     leader_changes=st.integers(0, 2), p_crash=st.sampled_from([0.0, 0.05])))
def test_spark_engine_equals_the_in_process_engine_on_hypothesis_histories(tmp_path_factory, cfg):
    file = _write(simulate(cfg), tmp_path_factory.mktemp("h") / "history.parquet")
    [check] = check_files([file])
    _same(check, file)


def _run_shaped_histories(tmp: Path) -> list[Path]:
    """Histories shaped like the runner's, for when reports/runs holds none: a model run as the base,
    plus the operations only real runs record (failed and unknown produces, holds, client errors,
    commits of unknown outcome, a truncation fault, deleted and compacted records, an aborted
    transaction, an offset reset, the harness's phases, a durable-state read), each history a seeded
    subset of them. Written as history.jsonl, read back (validated, as `read_history` reads a run's)
    and converted to history.parquet, as the runner does."""
    from harness.history.schema import Op
    from harness.history.store import read_history
    files = []
    for n in range(8):
        rng = random.Random(2020 + n)
        cfg = SimConfig(seed=rng.randrange(10**6), partitions=3, consumers=2, records=rng.randint(20, 60),
                        leader_changes=rng.randint(0, 1), p_crash=rng.choice([0.0, 0.03]))
        base = simulate(cfg)
        topic, group = cfg.topic, cfg.group
        ops: list[Op] = list(base)
        nxt = {p: 1 + max([op.value["offset"] for op in base if op.f == "produce" and op.type == "ok"
                           and op.value["partition"] == p] or [-1]) for p in range(cfg.partitions)}
        starts = {p["partition"]: p["start_offset"] for op in base if op.f == "share-offsets" and op.type == "ok"
                  for p in op.value["partitions"]}

        def add(process: str, type_: str, f: str, value=None) -> None:
            ops.append(Op(len(ops), ops[-1].time + rng.randint(1, 50) * 1_000_000, process, type_, f, value))

        def produce(rid: str, p: int, process: str = "producer-1") -> None:
            add(process, "invoke", "produce", {"id": rid, "topic": topic, "partition": p})
            add(process, "ok", "produce", {"id": rid, "topic": topic, "partition": p, "offset": nxt[p]})
            nxt[p] += 1

        def produce_failed() -> None:
            add("producer-1", "invoke", "produce", {"id": "x-fail", "topic": topic, "partition": 0})
            add("producer-1", "fail", "produce", {"id": "x-fail", "topic": topic, "partition": 0,
                                                  "error": "Broker: Not enough in-sync replicas"})

        def produce_unknown() -> None:
            add("producer-1", "invoke", "produce", {"id": "x-info", "topic": topic, "partition": 1})
            add("producer-1", "info", "produce", {"id": "x-info", "topic": topic, "partition": 1,
                                                  "error": "Local: Message timed out"})

        def client_noise() -> None:
            add("consumer-0", "ok", "hold", {"seconds": 1.5})
            add("consumer-1", "info", "error", {"code": "_TRANSPORT", "message": "Broker transport failure"})
            add("consumer-0", "invoke", "commit", {})
            add("consumer-0", "info", "commit", {"error": "KafkaError{code=_TIMED_OUT}"})

        def truncation() -> None:
            add("nemesis", "invoke", "fault-start", {"id": "truncate-1", "fault": "truncate-leader",
                                                     "targets": ["n1"], "effects": ["leader-change"], "topic": topic,
                                                     "partitions": [0]})
            add("nemesis", "ok", "fault-start", {"id": "truncate-1", "fault": "truncate-leader", "targets": ["n1"],
                                                 "effects": ["leader-change"], "topic": topic, "partitions": [0],
                                                 "evidence": "leader of t-0 moved n1 -> n2"})
            rid, offset = "x-trunc", nxt[0]
            produce(rid, 0)
            add("nemesis", "invoke", "fault-heal", {"id": "truncate-1", "fault": "truncate-leader"})
            add("nemesis", "ok", "fault-heal", {"id": "truncate-1", "fault": "truncate-leader", "evidence": "healed"})
            add("nemesis", "ok", "truncated", {"id": "truncate-1", "topic": topic, "partition": 0, "unclean": False,
                                               "records": [{"offset": offset, "id": rid}]})

        def log_changes() -> None:
            produce("x-del", 1)
            add("admin", "ok", "records-deleted", {"topic": topic, "partition": 1, "offset": nxt[1]})
            produce("x-cmp", 2)
            add("admin", "ok", "records-compacted", {"topic": topic, "partition": 2, "offsets": [nxt[2] - 1]})

        def aborted_transaction() -> None:
            produce("x-txn", 2, process="producer-txn")
            add("producer-txn", "invoke", "transaction", {"topic": topic, "outcome": "abort", "ids": ["x-txn"]})
            add("producer-txn", "ok", "transaction", {"topic": topic, "outcome": "abort", "ids": ["x-txn"]})

        def offset_reset() -> None:
            value = {"group": group, "topic": topic, "partitions": [{"partition": 0, "offset": nxt[0], "records": []}]}
            add("admin", "invoke", "reset-offsets", value)
            add("admin", "ok", "reset-offsets", value)

        def phases() -> None:
            add("harness", "invoke", "drain", {})
            add("harness", "ok", "drain", {})
            add("harness", "info", "produce-flush", {"outstanding": 0, "process": "producer-1", "error": None})
            add("harness", "invoke", "recover", {})
            add("harness", "ok", "recover", {})

        def durable_state() -> None:
            add("admin-state", "invoke", "share-state", {"group": group})
            add("admin-state", "ok", "share-state", {"group": group, "partitions": [
                {"topic": topic, "partition": p, "start_offset": s, "batches": [[0, s - 1, 2, 1]] if s > 0 else []}
                for p, s in sorted(starts.items())]})

        extras = [produce_failed, produce_unknown, client_noise, truncation, log_changes, aborted_transaction,
                  offset_reset, phases, durable_state]
        for extra in extras if n == 0 else rng.sample(extras, rng.randint(2, len(extras))):
            extra()
        run = tmp / f"run-{n}"
        run.mkdir(parents=True)
        (run / "history.jsonl").write_text("".join(json.dumps(op.to_json()) + "\n" for op in ops))
        files.append(_write(read_history(run / "history.jsonl"), run / "history.parquet"))
    return files


def _dead_letter_histories(tmp: Path) -> list[Path]:
    """The committed real run with a dead-letter queue (tests/histories: its `dead-letters` read is
    flattened to a row every slot replays and one row per share-partition), and its two DLQ mutants."""
    from harness.mutants import MUTANTS, read_ops
    ops = read_ops(REPO / "tests" / "histories" / "dlq-poison-leader.jsonl.gz")
    files = [_write(ops, tmp / "dlq" / "history.parquet")]
    for name in ("dead-letter-dropped", "accepted-dead-lettered"):
        files.append(_write(MUTANTS[name](ops, random.Random(1)).ops, tmp / name / "history.parquet"))
    return files


def test_spark_engine_equals_the_in_process_engine_on_run_shaped_histories(tmp_path, ksh_spec):
    """Every history the real-cluster tests and suites wrote (reports/runs), the newest 60 (15 in the ci
    profile: each costs seconds per layout, and the built ones below hold every kind of operation), and always
    the run-shaped ones built here, so the test never passes on nothing (an empty reports/runs, as
    on a fresh clone)."""
    # finished runs only, each once: not `latest` (a link), nor a run another xdist worker is still
    # writing (it has no verdict yet; CI once read such a history half-written)
    runs = sorted(p for p in (REPO / "reports" / "runs").glob("*/history.parquet")
                  if not p.parent.is_symlink() and (p.parent / "verdict.json").is_file())
    runs = runs[-(60 if ksh_spec.profile == "nightly" else 15):]
    built = _run_shaped_histories(tmp_path)
    kinds = {f for file in built for f in EventTable.read_parquet(file).columns["f"]}
    assert kinds >= {"produce", "poll", "acknowledge", "commit", "callback", "hold", "error", "fault-start",
                     "fault-heal", "truncated", "records-deleted", "records-compacted", "transaction",
                     "reset-offsets", "drain", "produce-flush", "recover", "share-offsets", "share-state"}, kinds
    files = runs + built + _dead_letter_histories(tmp_path)
    verdicts = set()
    for layout in ("direct", "shuffle"):
        checks = check_files(files, layout=layout)
        assert [c.path for c in checks] == files
        for check, file in zip(checks, files):
            _same(check, file)
            verdicts.add(verdict_word(check.valid))
    assert len(verdicts) >= 2, f"the built histories all came out {verdicts}: the comparison proves little"


def test_check_writes_results_beside_the_history_and_appends_the_nightly_table(tmp_path):
    from harness.cli import main
    from harness.spark.nightly import report
    run = tmp_path / "runs" / "20261121-010203-test_x-s4-leader-kill-mix-"
    _write(simulate(SimConfig(seed=4, records=30)), run / "history.parquet")
    (run / "spec.json").write_text(json.dumps({"spec": {"name": "test_x[s4-leader-kill-mix]", "seed": 4,
                                                        "kafka_version": "4.3.1"}}))
    table = tmp_path / "nightly"
    assert main(["check", "--engine", "spark", "--nightly", str(table), str(tmp_path / "runs")]) == 0
    data = json.loads((run / "check-spark.json").read_text())
    assert data["verdict"] == "PASS" and len(data["results"]) == 7 and data["engine"] == "spark"
    assert (run / "check-spark-anomalies.parquet").is_file()
    import pyarrow.parquet as pq
    rows = pq.read_table(table).to_pylist()
    assert len(rows) == 1 and rows[0]["scenario"] == "test_x[leader-kill-mix]" and rows[0]["seed"] == 4
    assert rows[0]["night"] == "2026-11-21" and rows[0]["verdict"] == "PASS" and rows[0]["version"] == "4.3.1"
    html = report(table, tmp_path / "report.html").read_text()
    assert "test_x[leader-kill-mix]" in html and "1/1" in html


def test_bad_input_is_a_one_line_error_naming_the_file(tmp_path, capsys):
    from harness.cli import main
    bad = tmp_path / "run" / "history.parquet"
    bad.parent.mkdir()
    bad.write_bytes(b"not parquet at all")
    with pytest.raises(HarnessError, match=f"unreadable Parquet history {bad}"):
        history_files([bad.parent])
    with pytest.raises(HarnessError, match="does not exist"):
        history_files([tmp_path / "missing"])
    assert main(["check", "--engine", "spark", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(bad) in err
    # a readable footer over damaged data pages: the task reading it names the file
    damaged = _write(simulate(SimConfig(seed=3, records=40)), tmp_path / "damaged" / "history.parquet")
    data = bytearray(damaged.read_bytes())
    data[8:len(data) // 2] = b"\xff" * (len(data) // 2 - 8)
    damaged.write_bytes(bytes(data))
    history_files([damaged])  # the schema still reads
    for layout in ("direct", "shuffle"):
        with pytest.raises(HarnessError, match="the Spark check of 1 histories failed") as failed:
            check_files([damaged], layout=layout)
        assert "\n" not in str(failed.value)
        if layout == "direct":
            assert str(damaged) in str(failed.value), str(failed.value)


def test_auto_engine_picks_spark_above_the_threshold(tmp_path):
    file = _write(simulate(SimConfig(seed=5, records=20)), tmp_path / "r" / "history.parquet")
    assert check_histories([file], "auto", threshold=10**9)[1] == "inprocess"
    checks, engine = check_histories([file], "auto", threshold=10)
    assert engine == "spark" and checks[0].valid is True
