"""Managed children: safe to spawn from any thread, and `run` leaves nothing behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from harness.sys import procs
from harness.sys.wait import wait_until

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux-only")


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_a_child_spawned_from_a_short_lived_thread_outlives_the_thread():
    box = {}
    worker = threading.Thread(target=lambda: box.setdefault("proc", procs.spawn("sleeper", ["sleep", "30"])))
    worker.start()
    worker.join(30)
    assert not worker.is_alive()
    proc = box["proc"]
    try:
        # With the parent-death signal armed on the (now gone) worker thread, the child would be
        # SIGKILLed as the thread exits; give the kernel a moment to have done so, on a real condition.
        with pytest.raises(Exception):
            wait_until(lambda: not proc.alive(), timeout=1.0, what="the child to die with its thread")
        assert proc.alive() and _alive(proc.pid)
        assert proc in procs.live_processes()
    finally:
        proc.stop()
    assert not _alive(proc.pid) and proc not in procs.live_processes()


def test_children_of_a_pool_thread_survive_the_pool():
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(2) as pool:
        children = list(pool.map(lambda i: procs.spawn(f"s{i}", ["sleep", "30"]), range(2)))
    try:
        assert all(c.alive() for c in children)
    finally:
        for c in children:
            c.kill()


def test_a_child_still_dies_with_the_harness_process(tmp_path):
    code = ("import sys, threading; from harness.sys import procs\n"
            "box = {}\n"
            "t = threading.Thread(target=lambda: box.setdefault('p', procs.spawn('s', ['sleep', '60'])))\n"
            "t.start(); t.join()\n"
            "print(box['p'].pid, flush=True); sys.stdin.read()\n")
    parent = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              env=procs.python_env())
    try:
        pid = int(parent.stdout.readline())
        assert _alive(pid)
    finally:
        parent.kill()
        parent.wait()
    wait_until(lambda: not _alive(pid), timeout=10, what=f"child {pid} to die with its SIGKILLed parent")


def test_run_returns_output_and_code_and_leaves_nothing():
    result = procs.run("sh", ["sh", "-c", "echo out; echo err >&2; exit 3"], timeout=30)
    assert (result.returncode, result.stdout, result.stderr) == (3, "out\n", "err\n")
    assert procs.run("cat", ["cat"], timeout=30, input="fed\n").stdout == "fed\n"
    assert not [p for p in procs.live_processes() if p.name in ("sh", "cat")]


def test_run_timeout_kills_the_whole_group(tmp_path):
    pidfile = tmp_path / "grandchild"
    script = f"sleep 60 & echo $! > {pidfile}; wait"
    start = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        procs.run("slow", ["sh", "-c", script], timeout=1)
    assert time.monotonic() - start < 15
    grandchild = int(pidfile.read_text())
    wait_until(lambda: not _alive(grandchild), timeout=10, what="the tool's own child to be killed")
    assert not [p for p in procs.live_processes() if p.name == "slow"]


def test_run_interrupted_kills_the_child(tmp_path):
    pidfile = tmp_path / "pid"
    timer = threading.Timer(1.0, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            procs.run("interrupted", ["sh", "-c", f"echo $$ > {pidfile}; exec sleep 60"], timeout=60)
    finally:
        timer.cancel()
    pid = int(pidfile.read_text())
    wait_until(lambda: not _alive(pid), timeout=10, what="the interrupted tool to be killed")
    assert not [p for p in procs.live_processes() if p.name == "interrupted"]


def test_run_missing_program_raises_and_registers_nothing():
    with pytest.raises(FileNotFoundError):
        procs.run("nope", ["/nonexistent/tool"], timeout=5)
    assert not [p for p in procs.live_processes() if p.name == "nope"]


def test_mvn_timeout_is_one_line_and_leaves_no_mvn(tmp_path, monkeypatch):
    from harness.errors import HarnessError
    from harness.kafka import jars
    from harness.kafka.versions import DEFAULT_VERSION
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    pidfile = tmp_path / "mvn.pid"
    (bin_dir / "mvn").write_text(f"#!/bin/sh\necho $$ > {pidfile}\nexec sleep 60\n")
    (bin_dir / "mvn").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(jars, "MVN_TIMEOUT", 1)
    with pytest.raises(HarnessError) as exc:
        jars.resolve(DEFAULT_VERSION, tmp_path / "cache")
    message = str(exc.value)
    assert "mvn did not resolve Kafka" in message and "\n" not in message
    wait_until(lambda: not _alive(int(pidfile.read_text())), timeout=10, what="the timed-out mvn to be killed")
    version_dir = tmp_path / "cache" / "kafka" / DEFAULT_VERSION
    assert not list(version_dir.glob(".mvn-*")) and not (version_dir / ".complete").exists()
    assert (tmp_path / "cache" / "kafka" / ".m2.lock").exists()
