"""The port registry: ports outside the ephemeral range, never handed to two processes at once.

Each test uses its own registry directory (KSH_PORTS_DIR), so runs on the same machine do not
see each other's reservations; the real-listener version is tests/real/test_ports_real.py.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import socket
import subprocess
import sys

import pytest

from harness.errors import HarnessError
from harness.sys import ports
from harness.sys.procs import python_env
from harness.sys.wait import wait_until


@pytest.fixture(autouse=True)
def registry(tmp_path, monkeypatch):
    monkeypatch.setenv("KSH_PORTS_DIR", str(tmp_path / "registry"))
    yield tmp_path / "registry"
    ports.release(ports.held_ports())


def _outside_ephemeral(port: int) -> bool:
    low, high = ports.ephemeral_range()
    return not low <= port <= high


def test_ports_come_from_outside_the_ephemeral_range_and_are_distinct(monkeypatch):
    """Each port handed out was free when it was handed out (checked then: this test's registry is its
    own, so a harness process running beside it may bind one of them a moment later)."""
    checked: dict[int, bool] = {}
    real_is_free = ports.is_free

    def is_free(port: int, host: str = "127.0.0.1") -> bool:
        checked[port] = real_is_free(port, host)
        return checked[port]

    monkeypatch.setattr(ports, "is_free", is_free)
    got = ports.allocate(60) + ports.allocate(60)
    assert len(set(got)) == 120
    assert all(_outside_ephemeral(p) and checked.get(p) is True for p in got)
    assert ports.held_ports() >= set(got)


def test_ephemeral_range_is_read_from_the_kernel_or_defaults():
    low, high = ports.ephemeral_range()
    assert 1 <= low <= high <= 65535
    with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
        assert (low, high) == tuple(int(x) for x in f.read().split())


def test_candidate_blocks_avoid_the_ephemeral_range(monkeypatch):
    monkeypatch.setattr(ports, "ephemeral_range", lambda: (32768, 60999))
    blocks = ports.candidate_blocks()
    assert blocks and all(b % ports.BLOCK == 0 for b in blocks)
    assert all(b + ports.BLOCK - 1 < 32768 or b > 60999 for b in blocks)
    monkeypatch.setattr(ports, "ephemeral_range", lambda: (1024, 65535))  # nothing left outside: use all
    assert len(ports.candidate_blocks()) > 1000


def test_released_ports_free_their_block_for_other_processes(registry):
    got = ports.allocate(5)
    block = ports._block_of(got[0])
    assert _block_locked_elsewhere(registry, block)
    ports.release(got)
    assert not ports.held_ports() & set(got)
    assert not _block_locked_elsewhere(registry, block)


def _block_locked_elsewhere(registry, block: int) -> bool:
    """Whether another process fails to lock `block` (asked in a fresh interpreter)."""
    code = ("import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)\n"
            "try:\n    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)\nexcept OSError:\n    sys.exit(3)\n")
    proc = subprocess.run([sys.executable, "-c", code, str(registry / f"block-{block}.lock")], timeout=30)
    return proc.returncode == 3


def test_a_base_port_reserved_by_another_process_is_in_use(registry):
    child = subprocess.Popen([sys.executable, "-c",
                              "import sys; from harness.sys import ports; print(ports.allocate(3)[0], flush=True); "
                              "sys.stdin.read()"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=python_env(), text=True)
    try:
        port = int(child.stdout.readline())
        assert ports.is_free(port)  # nothing listens: only the registry knows it is taken
        with pytest.raises(HarnessError) as exc:
            ports.allocate(1, base=port)
        assert f"port {port} is in use" in str(exc.value) and "\n" not in str(exc.value)
        assert port not in ports.allocate(60)
    finally:
        child.kill()
        child.wait()
    # The child died without releasing anything: the kernel dropped its lock, the port is free again.
    assert ports.allocate(1, base=port) == [port]


def test_base_ports_validated_and_released_on_failure():
    with pytest.raises(HarnessError, match="invalid base port 0"):
        ports.allocate(1, base=0)
    with pytest.raises(HarnessError, match="invalid base port 65530"):
        ports.validate_base(65530, 10)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        busy = sock.getsockname()[1]
        # port busy-1 is an ephemeral port too: another process's connection may hold it at this moment
        # (seen under xdist), in which case the error names that one
        with pytest.raises(HarnessError, match=rf"port ({busy}|{busy - 1}) is in use"):
            ports.allocate(2, base=busy - 1)
    assert not ports.held_ports()  # nothing kept from the failed attempt


def _allocate_and_hold(count, start, held, results):
    start.wait()
    got = ports.allocate(count)
    results.put((os.getpid(), got))
    held.wait()  # both hold theirs at once, as two harness runs would


def test_two_processes_allocating_concurrently_never_collide():
    ctx = multiprocessing.get_context("fork")
    for trial in range(50):
        start, held, results = ctx.Barrier(2), ctx.Barrier(2), ctx.Queue()
        workers = [ctx.Process(target=_allocate_and_hold, args=(60, start, held, results)) for _ in range(2)]
        for w in workers:
            w.start()
        try:
            (_, a), (_, b) = results.get(timeout=30), results.get(timeout=30)
        finally:
            for w in workers:
                w.join(30)
                if w.is_alive():
                    w.kill()
        assert len(set(a)) == 60 and len(set(b)) == 60
        assert not set(a) & set(b), f"trial {trial}: both got {sorted(set(a) & set(b))}"
        assert all(_outside_ephemeral(p) for p in a + b)


def test_a_forked_child_does_not_inherit_the_parents_ports():
    mine = ports.allocate(4)
    ctx = multiprocessing.get_context("fork")
    results = ctx.Queue()

    def child():
        results.put((sorted(ports.held_ports()), ports.allocate(4)))

    proc = ctx.Process(target=child)
    proc.start()
    held, theirs = results.get(timeout=30)
    proc.join(30)
    assert held == [] and not set(theirs) & set(mine)
    assert ports.held_ports() >= set(mine)  # the child closing its copies did not drop our locks


def test_sigkilled_holder_leaves_no_reservation(registry):
    child = subprocess.Popen([sys.executable, "-c",
                              "import sys; from harness.sys import ports; print(*ports.allocate(40), flush=True); "
                              "sys.stdin.read()"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=python_env(), text=True)
    theirs = [int(p) for p in child.stdout.readline().split()]
    blocks = {ports._block_of(p) for p in theirs}
    assert all(_block_locked_elsewhere(registry, b) for b in blocks)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    wait_until(lambda: not any(_block_locked_elsewhere(registry, b) for b in blocks), timeout=10,
               what="the killed holder's blocks to be free")
