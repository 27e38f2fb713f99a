"""CI's kfake smoke: the kfake backend starts franz-go's kfake from the launcher the harness builds, serves a
share group that consumes, moves a leader on request, passes a checked workload, and leaves nothing behind;
and kfake's null-records deviation still breaks librdkafka after a leader move (proven by the checkers).

The whole conformance suite, the client certificates and the chaos kfake can host run from one command
(`share-harness matrix --versions kfake --workers 2`, README); the deviations found are on
docs/implementations/kfake.md."""

from __future__ import annotations

import json
import os
import signal
from dataclasses import replace

import pytest

from harness.cluster.kfake import KfakeCluster
from harness.kafka.implementations import KFAKE_KAFKA_LEVEL, KFAKE_VERSION
from harness.spec import RunSpec

pytestmark = [pytest.mark.real]


@pytest.fixture(scope="module")
def kfake(tmp_path_factory):
    with KfakeCluster(tmp_path_factory.mktemp("kfake")) as cluster:
        yield cluster


def test_the_launcher_serves_the_pinned_kfake_and_leaves_with_the_harness(kfake, tmp_path):
    assert kfake.reported_version == KFAKE_VERSION  # the module version built in, not just the one asked for
    assert kfake.inspector.broker_ids() == [0, 1, 2]
    # a second cluster closed: its process gone, its ports free to bind again
    from harness.sys.ports import is_free
    other = KfakeCluster(tmp_path, brokers=1)
    other.start()
    proc, ports = other._launcher._proc, list(other._ports)
    other.close()
    assert proc is not None and not proc.alive()
    assert all(is_free(port) for port in ports)
    assert (tmp_path / "kfake" / "kfake.log").is_file()


def test_a_start_that_fails_leaves_nothing_running(tmp_path, monkeypatch):
    """A start that does not complete (here: no time to become ready) stops the launcher and frees its ports."""
    from harness.errors import HarnessError
    from harness.sys.ports import is_free
    from harness.sys.procs import live_processes
    seen: dict = {}

    from harness.cluster.launcher import Launcher
    next_answer = Launcher._next_answer

    def watched(launcher, timeout, what):
        seen.update(ports=list(cluster._ports), proc=launcher._proc)
        return next_answer(launcher, timeout, what)

    monkeypatch.setattr(Launcher, "_next_answer", watched)
    before = {p.pid for p in live_processes()}
    cluster = KfakeCluster(tmp_path, brokers=2, timeout=0.001)
    with pytest.raises((HarnessError, TimeoutError)):  # the ready line, or readiness after it: both too late
        cluster.start()
    assert seen["ports"] and seen["proc"] is not None  # it got as far as running the launcher
    assert not cluster._launcher.running and cluster._ports == [] and not seen["proc"].alive()
    assert {p.pid for p in live_processes()} <= before
    assert all(is_free(port) for port in seen["ports"])
    assert (tmp_path / "kfake" / "kfake.log").is_file()


def test_a_leader_moves_on_request_and_the_metadata_follows(kfake):
    from harness.cluster.admin import ensure_topic
    ensure_topic(kfake.inspector.admin, "ksh-moves", 2, 3, timeout=10)
    leader = kfake.inspector.leader_of("ksh-moves", 1)
    target = next(b for b in kfake.broker_ids if b != leader)
    kfake.move_leader("ksh-moves", 1, target)
    assert kfake.leader_of("ksh-moves", 1) == target
    from harness.sys.wait import wait_until
    wait_until(lambda: kfake.inspector.leader_of("ksh-moves", 1) == target, timeout=10,
               what=f"the Admin API to report n{target} leading ksh-moves-1")
    from harness.errors import HarnessError
    with pytest.raises(HarnessError, match="node 99 not found"):
        kfake.move_leader("ksh-moves", 1, 99)


def _run(kfake, client: str = "confluent", **fields):
    from harness.run import run
    spec = replace(RunSpec(name=f"kfake-smoke-{client}", backend="kfake", kafka_version=KFAKE_KAFKA_LEVEL).with_profile(),
                   records=150, consumers=2, behaviour="accept-explicit", client=client, **fields).validate()
    return run(spec, cluster=kfake)


def test_a_checked_workload_passes_on_kfake(kfake):
    """Readiness, the workload, the history and every checker work against kfake: no record lost, none handed
    to two members at once, batches in order, the durable state read back (DescribeShareGroupOffsets)."""
    outcome = _run(kfake)
    assert outcome.overall is True, outcome.summary()
    durable = next(r for r in outcome.results if r.checker == "durable-state")
    assert durable.stats.get("start_offset_reads", 0) >= 1, outcome.summary()


def test_kfakes_null_records_deviation_still_stops_librdkafka_after_a_leader_move(kfake):
    """The deviation `share-fetch-null-records` (docs/implementations/kfake.md), reproduced: after the move,
    the old leader's NOT_LEADER_OR_FOLLOWER answer carries a null Records field, which librdkafka rejects as a
    bad message, so the moved partition is never consumed again. When kfake fixes it this run passes and
    this test fails: take the deviation off `harness.conformance.deviations`."""
    from harness.conformance.deviations import DEVIATIONS
    deviation = next(d for d in DEVIATIONS if d.name == "share-fetch-null-records")
    outcome = _run(kfake, faults=("leader-move",), fault_mode="once", drain_timeout=10.0)
    move = next(f for f in outcome.faults if f.fault == "leader-move")
    assert move.applied and "moved n" in move.evidence, outcome.summary()
    if not deviation.expected_on(KFAKE_VERSION) or outcome.overall is True:
        pytest.fail(f"kfake {KFAKE_VERSION} no longer shows {deviation.name} (the run passed: {outcome.run_dir}); "
                    "take it off harness/conformance/deviations.py and docs/implementations/kfake.md")
    # librdkafka drops the old leader's whole answer: the moved partition, and any other it led, stops
    no_loss = next(r for r in outcome.results if r.checker == "no-loss")
    moved = move.evidence.split("leader of ", 1)[1].split(" moved", 1)[0]  # <topic>-<partition>
    assert no_loss.anomalies and any(f"{moved}@" in json.dumps(a.to_json()) for a in no_loss.anomalies), \
        outcome.summary()
    assert all(a.kind == "lost" for a in no_loss.anomalies), outcome.summary()
    logs = "".join(p.read_text(errors="replace") for p in (outcome.run_dir / "logs").glob("consumer-*.log"))
    assert "ShareFetch reply error: Local: Bad message format" in logs, outcome.run_dir


def test_the_launcher_exits_when_the_harness_dies(tmp_path):
    """When the harness is killed (SIGKILL: no clean-up of its own runs), the launcher does not outlive it (the
    parent-death signal, the reaper and the end of its stdin each stop it)."""
    import subprocess
    import sys
    import textwrap
    code = textwrap.dedent(f"""
        import sys, time
        from pathlib import Path
        from harness.cluster.kfake import KfakeCluster
        c = KfakeCluster(Path({str(tmp_path)!r}), brokers=1)
        c.start()
        print(c._launcher._proc.pid, flush=True)
        time.sleep(300)
    """)
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        launcher = int(parent.stdout.readline())
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait(timeout=10)
        from harness.sys.wait import wait_until
        wait_until(lambda: not _alive(launcher), timeout=15, what=f"the kfake launcher {launcher} to exit")
    finally:
        parent.kill()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (exited, not yet reaped by init) is gone for our purpose
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False
