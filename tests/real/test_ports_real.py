"""Ports of concurrent harness processes never collide, with real listeners on them.

Two processes allocate at the same moment through the user's registry on the machine (the one real
runs use: `<tmp>/ksh-ports-<uid>`, 0700, unless KSH_PORTS_DIR says otherwise), both keep theirs, then bind and listen on every one: no port is handed to both, no
bind fails (as it did when ports were picked by binding port 0 and released for the JVM).
"""

from __future__ import annotations

import multiprocessing
import socket

import pytest

from harness.sys import ports

pytestmark = pytest.mark.real


def _allocate_then_listen(count, allocated, bound, results):
    got = ports.allocate(count)
    allocated.wait()  # both hold their ports, nothing listens yet: the window the JVM used to lose
    socks, failed = [], []
    for port in got:
        sock = socket.socket()
        # as the JVM's and Go's listeners do (and ports.is_free checks): a port whose earlier
        # connections are in TIME_WAIT (a broker of an earlier test) is free to listen on
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
            sock.listen()
            socks.append(sock)
        except OSError as exc:
            failed.append((port, exc.strerror))
            sock.close()
    results.put((got, failed))
    bound.wait()  # both listen at once
    for sock in socks:
        sock.close()


def test_concurrent_processes_get_disjoint_ports_they_can_listen_on():
    import os
    import stat
    if not os.environ.get("KSH_PORTS_DIR"):  # the default registry: this user's own, no one else's to write
        registry = ports.registry_dir()
        assert registry.name == f"ksh-ports-{os.getuid()}"
        assert stat.S_IMODE(registry.stat().st_mode) == 0o700 and registry.stat().st_uid == os.getuid()
    ctx = multiprocessing.get_context("fork")
    for trial in range(20):
        allocated, bound, results = ctx.Barrier(2), ctx.Barrier(2), ctx.Queue()
        workers = [ctx.Process(target=_allocate_then_listen, args=(60, allocated, bound, results)) for _ in range(2)]
        for w in workers:
            w.start()
        try:
            (a, failed_a), (b, failed_b) = results.get(timeout=60), results.get(timeout=60)
        finally:
            for w in workers:
                w.join(30)
                if w.is_alive():
                    w.kill()
        assert not set(a) & set(b), f"trial {trial}: both processes got {sorted(set(a) & set(b))}"
        assert not failed_a and not failed_b, f"trial {trial}: binds failed: {failed_a + failed_b}"
        low, high = ports.ephemeral_range()
        assert not [p for p in a + b if low <= p <= high]


@pytest.mark.nightly  # ~2 min; CI itself runs three workers with a cluster each on one host, and the port test above
def test_two_concurrent_real_runs_on_one_host_both_pass(tmp_path):
    """Two `share-harness run`s at once (two CI jobs on one host): each starts its own cluster,
    proxies and drivers, and both pass; neither takes a port of the other."""
    import json
    import os
    import subprocess
    import sys
    cmd = [sys.executable, "-m", "harness.cli", "run", "--brokers", "1", "--partitions", "1", "--consumers", "1",
           "--records", "40"]
    procs = []
    for i in range(2):
        env = {**os.environ, "KSH_REPORTS_DIR": str(tmp_path / f"r{i}")}
        procs.append(subprocess.Popen(cmd + ["--name", f"concurrent-{i}", "--seed", str(i + 1)], env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    outputs = [p.communicate(timeout=300)[0] for p in procs]
    for proc, out in zip(procs, outputs):
        assert proc.returncode == 0, out[-3000:]
    used = []
    for i in range(2):
        spec = json.loads(next((tmp_path / f"r{i}" / "runs").glob("*/spec.json")).read_text())
        assert spec["spec"]["name"] == f"concurrent-{i}"
        used.append({int(line.split(":")[-1]) for line in
                     (tmp_path / f"r{i}" / "runs").glob("*/nodes/*/server.properties")
                     for line in [l for l in line.read_text().splitlines() if l.startswith("listeners=")]
                     for line in line.split("=", 1)[1].split(",")})
    assert used[0] and used[1] and not used[0] & used[1], used
