"""Issue 23: the in-process engine streams a Parquet history, with the results of the whole load.

The old path (`check_inprocess(file, stream=False)`: `load_history` and every checker of the registry
on the table) against the streamed default, field by field, on every stored history, a model history,
mutated ones and odd shapes, read in small batches so a history spans many; and bad input is the same
one-line error, raised while streaming.
"""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path

import pytest

from harness.check import inprocess
from harness.check.inprocess import check_inprocess
from harness.errors import HarnessError
from harness.history.events import EventTable

HISTORIES = sorted((Path(__file__).resolve().parents[2] / "histories").glob("*.jsonl.gz"))


@pytest.fixture(autouse=True)
def small_batches(monkeypatch):
    """Histories of a few thousand rows span many batches (and row groups)."""
    monkeypatch.setattr(inprocess, "BATCH_ROWS", 1000)


def _write(ops, path: Path, row_group: int | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    table = EventTable.from_ops(ops)
    if row_group is None:
        return table.write_parquet(path)
    import pyarrow.parquet as pq
    pq.write_table(table.to_arrow(), path, row_group_size=row_group)
    return path


def _same(file: Path) -> None:
    """The streamed check is the whole load's, field by field (so a difference names itself), then whole."""
    old, new = check_inprocess(file, stream=False), check_inprocess(file)
    assert [r.checker for r in new.results] == [r.checker for r in old.results]
    for o, n in zip(old.results, new.results):
        where = f"{file.parent.name} {o.checker}"
        assert n.valid == o.valid, (where, o.reason, n.reason)
        assert n.reason == o.reason, where
        assert [(a.kind, a.message, a.evidence, a.detail) for a in n.anomalies] == \
               [(a.kind, a.message, a.evidence, a.detail) for a in o.anomalies], where
        assert n.allowances == o.allowances, where
        assert n.allowance_evidence == o.allowance_evidence, where
        assert n.stats == o.stats, where
    assert new.results == old.results
    assert (new.events, new.facts) == (old.events, old.facts)
    assert new.path == old.path


@pytest.mark.parametrize("name", [p.name for p in HISTORIES])
def test_a_stored_history_streamed_has_the_results_of_the_whole_load(tmp_path, name):
    from harness.mutants import read_ops
    _same(_write(read_ops(Path(__file__).resolve().parents[2] / "histories" / name), tmp_path / "run" / "history.parquet",
                 row_group=700))


def test_the_stored_histories_are_there():
    assert len(HISTORIES) >= 7


def test_a_model_history_streamed_has_the_results_of_the_whole_load(tmp_path):
    from harness.history.events import _flatten
    from harness.model.simulate import config_for_events, simulate
    table = EventTable()
    simulate(config_for_events(30_000, 3), sink=lambda op: _flatten(table, op))
    assert len(table) > 20_000
    _same(table.write_parquet(tmp_path / "history.parquet"))


def test_mutated_model_histories_streamed_have_the_results_of_the_whole_load(tmp_path):
    from harness.model.simulate import SimConfig, simulate
    from harness.mutants import MUTANTS
    rng = random.Random(23)
    failed = 0
    for n, kind in enumerate(sorted(MUTANTS)):
        ops = simulate(SimConfig(seed=rng.randrange(10**6), partitions=3, consumers=3, records=400, limit=3,
                                 p_release=0.1, p_crash=0.01, leader_changes=1))
        mutant = MUTANTS[kind](ops, random.Random(n))
        if mutant is None:
            continue
        file = _write(mutant.ops, tmp_path / f"m{n}" / "history.parquet")
        _same(file)
        failed += check_inprocess(file).valid is False
    assert failed  # the mutants are caught, streamed too


def test_odd_histories_streamed_have_the_results_of_the_whole_load(tmp_path):
    from harness.model.simulate import SimConfig, simulate
    ops = simulate(SimConfig(seed=5, records=600, partitions=2, consumers=2))
    config = next(op for op in ops if op.f == "config")
    late = [op for op in ops if op.f != "config"]
    late.insert(len(late) * 2 // 3, config)  # the config row batches after the first
    no_profile = [replace(op, value={**op.value, "model_profile": "9.9"}) if op.f == "config" else op
                  for op in ops]  # no model profile: the replay crashes, unknown
    cases = {"empty": ops[:0], "no-config": late[:len(late) * 2 // 3] + late[len(late) * 2 // 3 + 1:],
             "late-config": late, "no-profile": no_profile, "one-row": ops[:1]}
    for name, case in cases.items():
        _same(_write(case, tmp_path / name / "history.parquet"))
    assert check_inprocess(tmp_path / "empty" / "history.parquet").results[0].reason == "the history is empty"
    [reason] = {r.reason for r in check_inprocess(tmp_path / "no-profile" / "history.parquet").results}
    assert reason.startswith("checker crashed: ValueError: config names Kafka 9.9")


def test_a_replay_crash_is_unknown_for_every_checker_and_bad_input_after_it_still_wins(tmp_path, monkeypatch):
    from harness.checkers.replay import Replay
    from harness.model.simulate import SimConfig, simulate
    ops = simulate(SimConfig(seed=7, records=1500, partitions=2, consumers=2))
    file = _write(ops, tmp_path / "run" / "history.parquet")
    cutoff = ops[len(ops) // 3].index
    original = Replay.delivery

    def crashing(self, index, *args):  # a third of the way (each replay of the old path crashes there too)
        if index >= cutoff:
            raise KeyError("a replay bug")
        return original(self, index, *args)
    monkeypatch.setattr(Replay, "delivery", crashing)
    new = check_inprocess(file)
    old = check_inprocess(file, stream=False)
    assert new.valid == "unknown" and {r.valid for r in new.results} == {"unknown"}
    assert new.results == old.results and "KeyError" in new.results[0].reason
    assert (new.events, new.facts) == (old.events, old.facts)  # the facts count the rows after the crash
    bad = _late_bad_value(file, tmp_path / "bad" / "history.parquet")
    with pytest.raises(HarnessError) as exc:
        check_inprocess(bad)
    assert "op " in str(exc.value) and str(bad) in str(exc.value)


def test_a_checker_that_is_not_the_registrys_own_still_runs_and_a_crash_is_unknown(tmp_path, monkeypatch):
    from harness.checkers import registry
    from harness.model.simulate import SimConfig, simulate
    file = _write(simulate(SimConfig(seed=1, records=50)), tmp_path / "history.parquet")

    def broken(history):
        raise ZeroDivisionError("a checker bug")
    monkeypatch.setitem(registry.CHECKERS, "no-loss", broken)
    check = check_inprocess(file)
    [result] = [r for r in check.results if r.checker == "no-loss"]
    assert result.valid == "unknown" and "ZeroDivisionError" in result.reason and check.valid == "unknown"
    assert check.results == check_inprocess(file, stream=False).results


# ------------------------------------------------------------------ bad input


def _late_bad_value(good: Path, path: Path) -> Path:
    """`good` with the value of a crash row near its end made one no writer makes."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    table = pq.read_table(good)
    n = table.num_rows
    row = {c: [None] for c in table.schema.names}
    row.update(index=[n + 10], time=[10 ** 9], process=["nemesis"], type=["info"], f=["crash"], value=['{"who": 1}'])
    table = pa.concat_tables([table.slice(0, n - 5), pa.table(row, schema=table.schema), table.slice(n - 5)])
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path, row_group_size=700)
    return path


def _errors(file: Path) -> tuple[str, str]:
    with pytest.raises(HarnessError) as old:
        check_inprocess(file, stream=False)
    with pytest.raises(HarnessError) as new:
        check_inprocess(file)
    text = str(new.value)
    assert "\n" not in text and len(text) < 600 and str(file) in text, text
    return str(old.value), text


def test_a_bad_value_in_a_late_batch_is_the_same_one_line_error_met_while_streaming(tmp_path, monkeypatch):
    import threading

    from harness.checkers.replay import Replay
    from harness.model.simulate import SimConfig, simulate
    good = _write(simulate(SimConfig(seed=3, records=1500, partitions=2, consumers=2)), tmp_path / "good.parquet")
    bad = _late_bad_value(good, tmp_path / "run" / "history.parquet")
    replayed = []
    original = Replay.delivery

    def spy(self, *args):
        replayed.append(args[0])
        return original(self, *args)
    monkeypatch.setattr(Replay, "delivery", spy)
    before = set(threading.enumerate())
    old, new = _errors(bad)
    assert new == old and "value.process" in new and "op " in new
    assert len(replayed) > 1000  # the replay was under way: the bad row was met while streaming
    left = [t for t in set(threading.enumerate()) - before if t.name.startswith("ksh-read-ahead")]
    assert not left, f"the read ahead of the stream that failed is still running: {left}"


@pytest.mark.parametrize("defect", ["missing-column", "mistyped-column", "schema-version", "not-parquet",
                                    "bad-config"])
def test_bad_parquet_input_is_the_same_one_line_error_before_streaming(tmp_path, defect):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from harness.model.simulate import SimConfig, simulate
    table = EventTable.from_ops(simulate(SimConfig(seed=4, records=300))).to_arrow()
    path = tmp_path / "run" / "history.parquet"
    path.parent.mkdir(parents=True)
    if defect == "missing-column":
        table = table.drop_columns(["delivery_count"])
    elif defect == "mistyped-column":
        table = table.set_column(table.schema.get_field_index("offset"), "offset",
                                 pa.array([None if v is None else str(v) for v in table["offset"].to_pylist()]))
    elif defect == "schema-version":
        table = table.replace_schema_metadata({"ksh.schema_version": "one"})
    elif defect == "bad-config":
        values = table["value"].to_pylist()
        values[table["f"].to_pylist().index("config")] = '"4.3"'
        table = table.set_column(table.schema.get_field_index("value"), "value", pa.array(values, pa.string()))
    if defect == "not-parquet":
        path.write_bytes(b"PAR1 this is not a Parquet file at all" * 10)
    else:
        pq.write_table(table, path, row_group_size=100)
    old, new = _errors(path)
    if defect == "missing-column":
        assert "'delivery_count' is missing" in new
    if defect == "not-parquet":  # the whole read names the file twice (Arrow's dataset says it again)
        head = f"unreadable Parquet history {path}: "
        assert new.startswith(head) and old.startswith(head) and old.endswith(new[len(head):]), (old, new)
    else:
        assert new == old


def test_the_read_ahead_hands_every_batch_in_order_raises_the_reads_error_and_leaves_no_thread():
    """`read_ahead` (the next batch decoded in a thread): the batches as the reader gives them, a read's
    error out of `next` as the reader raised it, and its thread gone once the batches end, fail or are
    abandoned."""
    import threading

    from harness.history.events import read_ahead

    before = set(threading.enumerate())  # (another test's stream a traceback still holds may keep its own)

    def readers() -> list:
        return [t for t in set(threading.enumerate()) - before if t.name.startswith("ksh-read-ahead")]

    assert list(read_ahead(iter(range(5)))) == [0, 1, 2, 3, 4]

    def failing():
        yield "first"
        raise OSError("a corrupt page")

    batches = read_ahead(failing())
    assert next(batches) == "first"
    with pytest.raises(OSError, match="a corrupt page"):
        next(batches)
    abandoned = read_ahead(iter(range(100)))
    assert next(abandoned) == 0
    abandoned.close()
    assert not readers(), readers()
