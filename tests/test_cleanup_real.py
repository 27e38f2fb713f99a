"""Nothing is left behind: an interrupted or killed run releases every process and data dir.

Each test runs `share-harness run` in a subprocess, waits (on real conditions)
until its cluster and consumers are up, then interrupts it (SIGINT, SIGTERM)
or kills it outright (SIGKILL, so only the parent-death signal and the reaper
can clean up), and counts the processes it had started before and after.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from harness.wait import wait_until

pytestmark = [pytest.mark.real, pytest.mark.local_only]


def _children(pid: int) -> set[int]:
    """All live descendants of `pid`, from /proc."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[0] != "Z":
                parents[int(entry.name)] = int(fields[1])
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def _alive(pids: set[int]) -> set[int]:
    alive = set()
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            alive.add(pid)
    return alive


def _cmdlines(pids: set[int]) -> list[str]:
    out = []
    for pid in pids:
        try:
            out.append(Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode())
        except OSError:
            pass
    return out


def _output(tmp_path: Path) -> str:
    return (tmp_path / "cli.out").read_text(errors="replace")


def _start_run(tmp_path: Path) -> tuple[subprocess.Popen, Path]:
    env = {**os.environ, "KSH_REPORTS_DIR": str(tmp_path / "reports")}
    out = open(tmp_path / "cli.out", "wb")
    proc = subprocess.Popen([sys.executable, "-m", "harness.cli", "run", "--name", "cleanup", "--records", "20000"],
                            env=env, stdout=out, stderr=subprocess.STDOUT)
    history = tmp_path / "reports" / "runs" / "latest" / "history.jsonl"

    def consuming() -> bool:
        return history.exists() and '"f":"start"' in history.read_text()

    wait_until(consuming, timeout=180, what="the run to reach its workload",
               fatal=lambda: f"run exited early: {_output(tmp_path)[-500:]}" if proc.poll() is not None else None)
    return proc, (tmp_path / "reports" / "runs" / "latest").resolve()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL], ids=["ctrl-c", "sigterm", "sigkill"])
def test_interrupted_run_leaves_nothing_behind(tmp_path, sig):
    before = _children(os.getpid())
    proc, run_dir = _start_run(tmp_path)
    try:
        started = _children(proc.pid)
        kinds = " ".join(_cmdlines(started))
        assert kinds.count("kafka.Kafka") == 3 and "toxiproxy" in kinds and "confluent_share_driver" in kinds, kinds
        proc.send_signal(sig)
        code = proc.wait(120)
    finally:
        if proc.poll() is None:  # the test failed before its signal: do not leak the run
            proc.send_signal(signal.SIGINT)
            proc.wait(120)
    if sig != signal.SIGKILL:
        assert code == 130, _output(tmp_path)[-2000:]
        assert "Traceback" not in _output(tmp_path)
    wait_until(lambda: not _alive(started), timeout=60,
               what=f"every process the run started to exit; left: {_cmdlines(_alive(started))}")
    wait_until(lambda: not any((run_dir / "nodes").glob("n*/data")), timeout=30,
               what="the data dirs to be removed")
    assert (run_dir / "history.jsonl").exists()  # the evidence stays
    assert _children(os.getpid()) - before <= set()
