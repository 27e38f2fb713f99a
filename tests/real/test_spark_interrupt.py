"""Ctrl-C during `share-harness check --engine spark` (issue 47): one line and 130, the JVM stopped."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness import exitcodes
from harness.history.events import EventTable
from tests.support.commands import ROOT


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
