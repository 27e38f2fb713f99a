"""Nothing is left behind: an interrupted or killed run releases every process, port and data dir.

The run tests start `share-harness run` in a subprocess, wait (on real conditions)
until its cluster and consumers are up, then interrupt it (SIGINT, SIGTERM)
or kill it outright (SIGKILL, so only the parent-death signal and the reaper
can clean up), and count the processes it had started and the ports they
listened on before and after. The cluster tests check what a closed cluster
leaves (processes started late, by a restart, included) and a start-up
interrupted by Ctrl-C while it formats storage or starts nodes.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from harness.sys import ports as port_registry
from harness.sys.procs import live_processes, python_env
from harness.sys.wait import wait_until

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


def _listening() -> dict[int, set[int]]:
    """Listening TCP ports on this machine -> socket inodes (from /proc/net/tcp and tcp6)."""
    found: dict[int, set[int]] = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] == "0A":  # LISTEN
                found.setdefault(int(fields[1].rsplit(":", 1)[1], 16), set()).add(int(fields[9]))
    return found


def _ports_of(pids: set[int]) -> set[int]:
    """The ports `pids` listen on."""
    inodes = set()
    for pid in pids:
        try:
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                target = os.readlink(fd)
                if target.startswith("socket:["):
                    inodes.add(int(target[8:-1]))
        except OSError:
            continue
    return {port for port, socks in _listening().items() if socks & inodes}


def _naming(path: Path) -> set[int]:
    """Processes whose command line names `path` (every node of a run names its config under it)."""
    found = set()
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if str(path) in (proc / "cmdline").read_bytes().decode(errors="replace"):
                    found.add(int(proc.name))
            except OSError:
                pass
    return found


def _still_listening(ports: set[int]) -> set[int]:
    return ports & set(_listening())


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


# Ctrl-C of a whole run is nightly: CI sends it during the start, a heal and the durable read (below)
@pytest.mark.parametrize("sig", [pytest.param(signal.SIGINT, id="ctrl-c", marks=pytest.mark.nightly),
                                 pytest.param(signal.SIGTERM, id="sigterm"), pytest.param(signal.SIGKILL, id="sigkill")])
def test_interrupted_run_leaves_nothing_behind(tmp_path, sig):
    before = _children(os.getpid())
    proc, run_dir = _start_run(tmp_path)
    try:
        started = _children(proc.pid)
        kinds = " ".join(_cmdlines(started))
        assert kinds.count("kafka.Kafka") == 3 and "toxiproxy" in kinds and "confluent_share_driver" in kinds, kinds
        ports = _ports_of(started)
        assert len(ports) > 3 * 4, ports  # every node's listeners, Toxiproxy's API and its proxies
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
    wait_until(lambda: not _still_listening(ports), timeout=30,
               what=f"nothing to listen on the run's ports; still: {sorted(_still_listening(ports))}")
    assert (run_dir / "history.jsonl").exists()  # the evidence stays
    assert _children(os.getpid()) - before <= set()


def _small_spec(**overrides):
    from harness.cluster.local import LocalClusterSpec
    from harness.kafka.versions import DEFAULT_VERSION
    return LocalClusterSpec(version=os.environ.get("KSH_KAFKA_VERSION", DEFAULT_VERSION), brokers=1,
                            replication_factor=1, min_insync_replicas=1, internal_partitions=1,
                            consumer_lanes=1, heap_mb=256, start_timeout=60, **overrides)


def test_closed_cluster_leaves_no_process_port_or_data_even_after_a_restart(tmp_path):
    from harness.cluster.local import LocalCluster
    before = _children(os.getpid())
    cluster = LocalCluster(_small_spec(), tmp_path / "run")
    try:
        cluster.start()
        first = cluster.node_pid(1)
        cluster.restart_node(1)  # a process started after the cluster came up
        assert cluster.node_pid(1) not in (None, first)
        started = {pid for pid in _children(os.getpid()) - before  # the reaper lives as long as we do
                   if "harness.sys.reaper" not in " ".join(_cmdlines({pid}))}
        kinds = " ".join(_cmdlines(started))
        assert "kafka.Kafka" in kinds and "toxiproxy" in kinds, kinds
        ports = set(cluster._ports)
        assert _ports_of(started) <= ports and len(_ports_of(started)) >= 4
        assert ports <= port_registry.held_ports()
    finally:
        cluster.close()
    assert not _alive(started), _cmdlines(_alive(started))  # close waits for them
    assert not _still_listening(ports), sorted(_still_listening(ports))
    assert not ports & port_registry.held_ports()  # released: another cluster may take them
    assert not any((tmp_path / "run" / "nodes").glob("n*/data"))
    assert not [p for p in live_processes() if p.pid in started]
    cluster.close()  # idempotent


_START = textwrap.dedent("""
    import sys
    from pathlib import Path
    sys.path.insert(0, sys.argv[2])
    from tests.real.test_cleanup_real import _small_spec
    from harness.cluster.local import LocalCluster
    cluster = LocalCluster(_small_spec(), Path(sys.argv[1]))
    try:
        cluster.start()
    except KeyboardInterrupt:
        sys.exit(130)
    sys.exit(3)  # started before the interrupt came: the test did not hit start-up
""")


@pytest.mark.parametrize("phase", ["kafka.tools.StorageTool", "kafka.Kafka"], ids=["formatting", "nodes-starting"])
def test_ctrl_c_during_start_leaves_no_process_port_or_data(tmp_path, phase):
    run_dir = tmp_path / "run"
    out = open(tmp_path / "start.out", "wb")
    proc = subprocess.Popen([sys.executable, "-c", _START, str(run_dir), str(Path(__file__).resolve().parents[2])],
                            env=python_env(), stdout=out, stderr=subprocess.STDOUT)
    seen: set[int] = set()
    try:
        def in_phase() -> bool:
            kids = _children(proc.pid)
            seen.update(kids)
            return any(phase in line for line in _cmdlines(kids))
        wait_until(in_phase, timeout=60, interval=0.02, what=f"the cluster start to reach {phase}",
                   fatal=lambda: f"start exited: {(tmp_path / 'start.out').read_text()[-500:]}"
                   if proc.poll() is not None else None)
        started = _children(proc.pid) | seen
        ports = _ports_of(started)
        for config in run_dir.glob("nodes/n*/server.properties"):  # what the nodes bind (or were about to)
            ports |= {int(p) for p in re.findall(r"127\.0\.0\.1:(\d+)", config.read_text())}
        proc.send_signal(signal.SIGINT)
        code = proc.wait(60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        out.close()
    output = (tmp_path / "start.out").read_text(errors="replace")
    assert code == 130, output[-2000:]
    wait_until(lambda: not _alive(started), timeout=30,
               what=f"every process of the start to exit; left: {_cmdlines(_alive(started))}")
    assert not _still_listening(ports), sorted(_still_listening(ports))
    assert not any(run_dir.glob("nodes/n*/data")), list(run_dir.glob("nodes/n*/data"))


def _interrupt_run_when(tmp_path: Path, name: str, args: list[str], reached, what: str) -> None:
    """Start `share-harness run --name NAME ARGS`, send Ctrl-C once `reached(children, history text)`
    holds, then check the run exited 130 without a traceback and left no process (also one started
    after the last look, found by its run-directory path), no listening port and no data dir."""
    env = {**os.environ, "KSH_REPORTS_DIR": str(tmp_path / "reports")}
    out = open(tmp_path / "cli.out", "wb")
    proc = subprocess.Popen([sys.executable, "-m", "harness.cli", "run", "--name", name, *args],
                            env=env, stdout=out, stderr=subprocess.STDOUT)
    history = tmp_path / "reports" / "runs" / "latest" / "history.jsonl"
    seen: set[int] = set()
    ports: set[int] = set()
    try:
        def in_phase() -> bool:
            kids = _children(proc.pid)
            seen.update(kids)
            ports.update(_ports_of(kids))
            return reached(_cmdlines(kids), history.read_text() if history.exists() else "")
        wait_until(in_phase, timeout=240, interval=0.02, what=what,
                   fatal=lambda: f"run exited: {_output(tmp_path)[-500:]}" if proc.poll() is not None else None)
        started = _children(proc.pid) | seen
        proc.send_signal(signal.SIGINT)
        code = proc.wait(120)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            proc.wait(120)
        out.close()
    assert code == 130 and "Traceback" not in _output(tmp_path), _output(tmp_path)[-2000:]
    wait_until(lambda: not _alive(started), timeout=60,
               what=f"every process the run started to exit; left: {_cmdlines(_alive(started))}")
    wait_until(lambda: not _naming(tmp_path), timeout=60,
               what=f"no process to name the run's directory; left: {_cmdlines(_naming(tmp_path))}")
    assert not _still_listening(ports), sorted(_still_listening(ports))
    run_dir = next((tmp_path / "reports" / "runs").glob(f"*-{name}"))
    assert not any(run_dir.glob("nodes/n*/data")), list(run_dir.glob("nodes/n*/data"))


def test_ctrl_c_during_the_durable_read_leaves_no_process_port_or_data(tmp_path):
    """Ctrl-C while the run reads the group's start offsets and __share_group_state (short Java
    programs started from a worker thread): nothing the run started survives."""
    _interrupt_run_when(tmp_path, "durable-read", ["--brokers", "1", "--partitions", "1", "--consumers", "1",
                                                   "--records", "30"],
                        lambda cmdlines, _: any("ShareOffsets" in c or "ShareState" in c for c in cmdlines),
                        "the run to reach its durable read")


def test_ctrl_c_during_a_heal_leaves_no_process_port_or_data(tmp_path):
    """Ctrl-C while the nemesis heals a killed leader (the broker restarting): nothing the run
    started survives, the restarted broker included."""
    _interrupt_run_when(tmp_path, "heal", ["--partitions", "1", "--consumers", "1", "--records", "200",
                                           "--faults", "leader-kill", "--fault-mode", "once"],
                        lambda _, history: history.count('"fault-heal"') == 1,  # invoked, not yet ended
                        "the nemesis to start healing")
