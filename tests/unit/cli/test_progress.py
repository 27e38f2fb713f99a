"""The progress of a run (harness.report.progress) from its growing history, without a cluster."""

from __future__ import annotations

import io

from harness.history.store import HistoryWriter
from harness.report.progress import RunProgress


def test_figures_follow_the_history_and_plain_lines_name_phase_and_counts(tmp_path):
    history = HistoryWriter(tmp_path / "history.jsonl")
    out = io.StringIO()
    progress = RunProgress(history, "run-x", out=out, tty=False, interval_s=0.01, plain_every_s=3600)
    for i in range(4):
        history.append("producer-0", "ok", "produce", {"id": f"r{i}", "topic": "t", "partition": 0, "offset": i})
    history.append("consumer-0", "ok", "acknowledge", {"records": [
        {"topic": "t", "partition": 0, "offset": 0, "type": "ACCEPT"},
        {"topic": "t", "partition": 0, "offset": 1, "type": "RELEASE"},
        {"topic": "t", "partition": 0, "offset": 2, "type": "REJECT"}]})
    history.append("nemesis", "ok", "fault-start", {"id": "f1", "fault": "leader-kill"})
    history.append("nemesis", "fail", "fault-start", {"id": "f2", "fault": "truncate", "error": "x"})
    history.append("nemesis", "ok", "fault-heal", {"id": "f1", "fault": "leader-kill"})
    f = progress.update()
    assert (f.phase, f.produced, f.settled) == ("faults", 4, 2)  # RELEASE is not settled
    assert (f.faults_applied, f.faults_not_applied, f.faults_healed) == (1, 1, 1)
    with progress:
        history.append("harness", "invoke", "drain", {"timeout": 30})
        import time
        deadline = time.monotonic() + 10
        while "drain:" not in out.getvalue() and time.monotonic() < deadline:
            time.sleep(0.01)
    history.close()
    lines = out.getvalue().splitlines()
    assert any(line == "run-x: drain: produced 4, settled 2, faults 1 applied / 1 healed / 1 NOT applied, "
               "2 to settle" for line in lines), lines
    assert progress.update() is progress.figures and progress._seen == 9  # nothing read twice


def test_a_terminal_gets_a_rich_bar(tmp_path):
    history = HistoryWriter(tmp_path / "history.jsonl")
    out = io.StringIO()
    with RunProgress(history, "run-y", out=out, tty=True, interval_s=0.01):
        history.append("producer-0", "ok", "produce", {"id": "r0", "topic": "t", "partition": 0, "offset": 0})
    history.close()
    assert "settled of produced" in out.getvalue()
