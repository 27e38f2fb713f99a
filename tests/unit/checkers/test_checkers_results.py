"""Unit tests of the seven checkers on hand-written histories (`tests.support.builders.H`, each checker a
valid history and one per anomaly kind, asserting the exact kind):
ack-results, durable-state, check_safe/compose and `share-harness check`."""

from __future__ import annotations

import pytest

from harness.checkers import Result, ack_results, check_safe, compose, durable_state, no_loss, verdict_word
from harness.checkers.registry import property_result
from harness.history.schema import Op
from tests.support.builders import ALL, H, T, base, kinds

# ------------------------------------------------------------------ ack-results


def test_ack_result_missing():
    h = H()
    h.produce("a", 0, 0)
    h.poll("consumer-0", [("a", 0, 0)])
    ack = h.ack("consumer-0", [(0, 0)])
    r = property_result(ack_results.NAME, h.ops)
    assert kinds(r) == ["ack-result-missing"] and r.anomalies[0].evidence == (ack.index,)


def test_commit_result_without_callback_is_a_result():
    h = H()
    h.produce("a", 0, 0)
    h.poll("consumer-0", [("a", 0, 0)])
    h.ack("consumer-0", [(0, 0)])
    h.commit("consumer-0", {0: None}, callback=False)
    assert property_result(ack_results.NAME, h.ops).valid is True and property_result(no_loss.NAME, h.ops).valid is True


def test_ack_result_duplicate_and_unsolicited():
    h = base()
    h.add("consumer-0", "ok", "callback", {"partitions": [{"topic": T, "partition": 1, "offsets": [0]}], "error": None})
    assert "ack-result-duplicate" in kinds(property_result(ack_results.NAME, h.ops))
    h2 = base()
    h2.produce("d", 1, 1)
    h2.add("consumer-1", "ok", "callback", {"partitions": [{"topic": T, "partition": 1, "offsets": [1]}], "error": None})
    assert "ack-result-unsolicited" in kinds(property_result(ack_results.NAME, h2.ops))


def test_ack_lost_with_a_killed_consumer_is_an_allowance():
    h = H()
    h.produce("a", 0, 0)
    h.poll("consumer-0", [("a", 0, 0)])
    h.ack("consumer-0", [(0, 0)])
    h.add("harness", "info", "crash", {"process": "consumer-0"})
    h.consume("consumer-1", [("a", 0, 0, 2)])
    r = property_result(ack_results.NAME, h.ops)
    assert r.valid is True and r.allowances == {"ack-lost-with-consumer": 1}


# ------------------------------------------------------------------ durable-state


def test_durable_start_offset_behind_acknowledgements_is_recorded_not_failed():
    h = base()
    h.read_start({0: 1, 1: 1})
    r = property_result(durable_state.NAME, h.ops)
    assert r.valid is True and r.stats["start_offset_behind_acknowledged"] == {"t-0": 1}


def test_durable_state_ahead():
    h = base()
    h.produce("d", 1, 1)
    h.read_start({0: 2, 1: 2})
    assert kinds(property_result(durable_state.NAME, h.ops)) == ["durable-state-ahead"]


def test_durable_state_unknown_without_a_read():
    h = H()
    h.produce("a", 0, 0)
    h.consume("consumer-0", [("a", 0, 0)])
    r = property_result(durable_state.NAME, h.ops)
    assert r.valid == "unknown" and "no read of durable state" in r.reason


# ------------------------------------------------------------------ check_safe / compose


def test_crashing_checker_is_unknown_through_check_safe():
    def boom(history):
        raise RuntimeError("kaput")

    r = check_safe("boom", boom, [])
    assert r.valid == "unknown"
    assert r.checker == "boom"
    assert "RuntimeError" in r.reason and "kaput" in r.reason


def test_checker_crashing_on_malformed_op_is_unknown():
    h = H()
    h.produce("a", 0, 0)
    h.ops.append(Op(len(h.ops), 10**9, "consumer-0", "ok", "poll", {"records": [{"topic": T}]}))  # no offset
    for name, fn in ALL:
        r = check_safe(name, fn, h.ops)
        assert r.valid == "unknown" and r.checker == name and "crashed" in r.reason


def test_check_safe_rejects_invalid_verdict():
    r = check_safe("weird", lambda h: Result("weird", "maybe"), [])  # type: ignore[arg-type]
    assert r.valid == "unknown" and "invalid verdict" in r.reason


def test_check_safe_passes_valid_results_through():
    res = Result("x", True, stats={"n": 1})
    assert check_safe("x", lambda h: res, []) is res


def test_check_safe_rejects_integer_verdicts():
    r0 = check_safe("zero", lambda h: Result("zero", 0), [])  # type: ignore[arg-type]
    assert r0.valid == "unknown"
    assert compose([r0]) is not True


@pytest.mark.parametrize("verdicts, expected", [
    ([], "unknown"),
    ([True], True),
    ([True, True], True),
    (["unknown"], "unknown"),
    ([True, "unknown"], "unknown"),
    (["unknown", True], "unknown"),
    ([False], False),
    ([True, False], False),
    (["unknown", False], False),
    ([False, "unknown", True], False),
])
def test_compose_priorities(verdicts, expected):
    got = compose([Result(f"c{i}", v) for i, v in enumerate(verdicts)])
    assert got == expected and type(got) is type(expected)


def test_verdict_words():
    assert [verdict_word(v) for v in (True, False, "unknown")] == ["PASS", "FAIL", "UNKNOWN"]




# ------------------------------------------------------------------ share-harness check


def _write_jsonl(path, ops):
    import json
    path.write_text("".join(json.dumps(op.to_json()) + "\n" for op in ops))
    return path


def _check(*args):
    import subprocess
    import sys
    return subprocess.run([sys.executable, "-m", "harness.cli", "check", *map(str, args)],
                          capture_output=True, text=True, timeout=60)


def test_cli_check_table_and_exit_codes(tmp_path):
    good = _write_jsonl(tmp_path / "good.jsonl", base().ops)
    proc = _check(good)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[0].split()[:4] == ["property", "verdict", "anomalies", "allowances"]
    assert "no-loss" in proc.stdout and "verdict: PASS" in proc.stdout
    h = base()
    h.produce("d", 1, 1)
    proc = _check(_write_jsonl(tmp_path / "lost.jsonl", h.ops))
    assert proc.returncode == 1 and "no-loss: lost:" in proc.stdout
    h = H()
    h.produce("a", 0, 0)
    h.consume("consumer-0", [("a", 0, 0)])  # no start-offset read: durable-state is unknown
    proc = _check(_write_jsonl(tmp_path / "unknown.jsonl", h.ops))
    from harness import exitcodes
    assert proc.returncode == exitcodes.UNKNOWN and "verdict: UNKNOWN" in proc.stdout


def test_cli_check_reads_parquet_and_run_directories(tmp_path):
    from harness.history.events import EventTable
    run = tmp_path / "run"
    run.mkdir()
    EventTable.from_ops(base().ops).write_parquet(run / "history.parquet")
    assert _check(run).returncode == 0
    assert _check(run / "history.parquet").returncode == 0


def test_cli_check_malformed_history_names_line_and_field(tmp_path):
    lines = [op.to_json() for op in base().ops]
    lines[7]["value"]["records"][1].pop("offset")
    import json
    bad = tmp_path / "bad.jsonl"
    bad.write_text("".join(json.dumps(x) + "\n" for x in lines))
    proc = _check(bad)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip().count("\n") == 0 and "Traceback" not in proc.stderr
    assert "line 8" in proc.stderr and "value.records[1].offset" in proc.stderr
    (tmp_path / "junk.parquet").write_bytes(b"not parquet")
    proc = _check(tmp_path / "junk.parquet")
    assert proc.returncode == 2 and "unreadable Parquet history" in proc.stderr
