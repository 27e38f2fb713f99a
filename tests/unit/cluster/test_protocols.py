"""The cluster and consumer-pool protocols without a cluster: which backend offers which capability
(checked with isinstance), the backends as context managers, the nemesis's final heal asking for
capabilities, and the driver pool spawning its client's driver (import cycles: test_layout)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from harness.cluster.base import (Cluster, ConsumerLanes, Installed, Killable, Nodes, Partitionable, Pausable,
                                  SaslListeners, node_ids)
from harness.errors import HarnessError
from harness.history.store import HistoryWriter

CAPABILITIES = (Nodes, Killable, Pausable, Partitionable, Installed, ConsumerLanes, SaslListeners)


def _local():
    from harness.cluster.local import LocalCluster, LocalClusterSpec
    from harness.kafka.versions import DEFAULT_VERSION
    return LocalCluster(LocalClusterSpec(version=DEFAULT_VERSION), Path("/nonexistent-run-dir"))


def test_the_local_backend_has_every_capability():
    cluster = _local()
    # Before `start` it has no inspector and no distribution (AttributeError: never a half-made inspector)
    assert cluster._inspector is None
    cluster._inspector, cluster._dist = object(), object()  # as `start` leaves them
    assert isinstance(cluster, Cluster)
    assert all(isinstance(cluster, cap) for cap in CAPABILITIES)


def test_the_local_backend_unstarted_makes_no_inspector():
    cluster = _local()
    with pytest.raises(AttributeError, match="not started"):
        cluster.inspector
    with pytest.raises(AttributeError, match="not started"):
        cluster.distribution
    isinstance(cluster, Cluster)  # reads the members on Python < 3.12: must not cache an inspector of no servers
    assert cluster._inspector is None


def test_the_external_backend_is_a_cluster_without_capabilities():
    from harness.cluster.external import ExternalCluster
    cluster = ExternalCluster("127.0.0.1:1")
    assert isinstance(cluster, Cluster)
    assert not any(isinstance(cluster, cap) for cap in CAPABILITIES)
    assert node_ids(cluster) == []


@pytest.mark.parametrize("backend", ["local", "external"])
def test_a_backend_is_a_context_manager_that_starts_and_always_closes(backend, monkeypatch):
    from harness.cluster.external import ExternalCluster
    cluster = _local() if backend == "local" else ExternalCluster("127.0.0.1:1")
    calls = []
    monkeypatch.setattr(cluster, "start", lambda: calls.append("start"))
    monkeypatch.setattr(cluster, "close", lambda: calls.append("close"))
    with cluster as entered:
        assert entered is cluster and calls == ["start"]
    assert calls == ["start", "close"]
    with pytest.raises(RuntimeError):
        with cluster:
            raise RuntimeError("boom")
    assert calls == ["start", "close", "start", "close"]


class _Bare:
    """A backend with nothing beyond `Cluster`."""

    version = "test"
    bootstrap_servers = "127.0.0.1:1"
    inspector = None

    def __init__(self) -> None:
        self.calls: list[str] = []

    @property
    def broker_ids(self) -> list[int]:
        return [1, 2, 3]

    def start(self) -> None: ...

    def close(self) -> None: ...

    def collect_logs(self, dest):
        return []

    def __enter__(self):
        return self

    def __exit__(self, *exc_info) -> None: ...


class _Pausable(_Bare):
    controller_ids = [3, 4]

    def pause_node(self, node_id: int) -> None:
        self.calls.append(f"pause {node_id}")

    def resume_node(self, node_id: int) -> None:
        self.calls.append(f"resume {node_id}")


class _Full(_Pausable):
    links = toxiproxy = None
    dead = {2, 4}

    def stop_node(self, node_id): ...

    def kill_node(self, node_id): ...

    def start_node(self, node_id, wait=True):
        self.calls.append(f"start {node_id}")

    def restart_node(self, node_id): ...

    def node_alive(self, node_id):
        return node_id not in self.dead

    def node_pid(self, node_id):
        return None

    def wait_ready(self, timeout=None): ...

    def cut(self, link_name): ...

    def heal(self, link_name): ...

    def heal_all(self):
        self.calls.append("heal_all")


@pytest.mark.parametrize("cluster, calls", [
    (_Bare(), []),
    (_Pausable(), ["resume 1", "resume 2", "resume 3", "resume 4"]),
    (_Full(), ["heal_all", "resume 1", "resume 2", "start 2", "resume 3", "resume 4", "start 4"]),
])
def test_the_final_heal_uses_the_capabilities_the_backend_has(cluster, calls, tmp_path):
    from harness.faults.base import FaultContext
    from harness.faults.nemesis import Nemesis
    assert isinstance(cluster, Cluster)
    assert isinstance(cluster, Killable) == isinstance(cluster, Partitionable) == (type(cluster) is _Full)
    Nemesis(FaultContext(cluster, HistoryWriter(tmp_path / "history.jsonl"))).heal_all()
    assert cluster.calls == calls


def test_a_fault_context_gives_the_cluster_as_a_capability_it_has_and_refuses_one_it_has_not(tmp_path):
    from harness.faults.base import FaultContext, NotApplied
    ctx = FaultContext(_Pausable(), HistoryWriter(tmp_path / "history.jsonl"))
    assert ctx.cluster_as(Pausable) is ctx.cluster
    with pytest.raises(NotApplied, match="not Killable"):
        ctx.cluster_as(Killable)


class _Laned(_Bare):
    def consumer_bootstrap(self, index: int) -> str:
        return f"lane{index % 2}:9092"

    def lane_of(self, index: int) -> int | None:
        return index % 2


def _pool(tmp_path, cluster=None, **kwargs):
    from harness.clients.pool import DriverPool
    return DriverPool(cluster or _Bare(), {"group": "g", "topics": ["t"], "behaviour": "accept-explicit",
                                           "seed": 3, "hold_ms": 100, "client_config": {}},
                      HistoryWriter(tmp_path / "history.jsonl"), tmp_path, **kwargs)


def test_the_pool_runs_the_confluent_driver_by_default_through_the_clusters_lanes(tmp_path, monkeypatch):
    from harness.clients.driver import ConsumerDriver
    from harness.faults.base import ConsumerPool
    monkeypatch.setattr(ConsumerDriver, "start", lambda self: None)
    pool = _pool(tmp_path, _Laned())
    assert isinstance(pool, ConsumerPool)
    first, second = pool._spawn(), pool._spawn()
    assert type(first) is ConsumerDriver and first.module == "harness.clients.confluent_share_driver"
    assert (first.name, second.name) == ("consumer-0", "consumer-1")
    assert first.config == {"group": "g", "topics": ["t"], "behaviour": "accept-explicit", "seed": 3,
                            "hold_ms": 100, "client_config": {}, "bootstrap": "lane0:9092"}
    assert second.config["bootstrap"] == "lane1:9092" and pool._lanes == {"consumer-0": 0, "consumer-1": 1}
    third = _pool(tmp_path)._spawn()  # no lanes: the shared bootstrap servers
    assert third.config["bootstrap"] == "127.0.0.1:1"


class _FakeDist:
    version = "4.3.1"
    classpath = ""


@pytest.mark.parametrize("client", ["java", "franz"])
def test_step_mode_drivers_run_a_chaos_runs_behaviour_from_the_harness(client, tmp_path, monkeypatch):
    from harness.clients.stepped import SteppedConsumer
    monkeypatch.setattr(SteppedConsumer, "start", lambda self: None)
    driver = _pool(tmp_path, client=client, dist=_FakeDist())._spawn()
    assert isinstance(driver, SteppedConsumer) and driver.step.config["mode"] == "explicit"
    assert driver.name == "consumer-0" and driver.behaviour == "accept-explicit" and driver.seed == 3


def test_a_driver_without_autonomous_behaviours_is_refused_saying_what_it_lacks():
    from harness.clients.registry import DriverInfo
    info = DriverInfo("mine", (), lambda *a: None, lacks="it prints no poll events")
    with pytest.raises(HarnessError, match="runs step mode only.*it prints no poll events"):
        info.make_autonomous("consumer-0", {}, None, Path("."))


def _manifest(tmp_path: Path, start_value: dict) -> Path:
    """A manifest driver that prints its start event (with the config it was given) and waits for stdin."""
    script = tmp_path / "driver.py"
    script.write_text("import json, sys\n"
                      "config = json.loads(sys.argv[1])\n"
                      f"start = {start_value!r}\n"
                      "start['behaviour'] = config['behaviour']\n"
                      "print(json.dumps({'type': 'ok', 'f': 'start', 'value': start}), flush=True)\n"
                      "sys.stdin.readline()\n"
                      "print(json.dumps({'type': 'ok', 'f': 'close', 'value': {}}), flush=True)\n")
    manifest = tmp_path / "driver.json"
    manifest.write_text('{"name": "fake", "contract": 1, "command": ["{python}", "driver.py"], "features": []}')
    return manifest


def test_a_manifest_driver_runs_the_behaviour_on_its_own(tmp_path):
    from harness.clients.driver import ExternalDriver
    pool = _pool(tmp_path, client=str(_manifest(tmp_path, {"client": "fake", "contract": 1})))
    try:
        [driver] = pool.start(1)
        assert type(driver) is ExternalDriver and driver.command_line()[:2] == [sys.executable,
                                                                                str(tmp_path / "driver.py")]
        start = next(op for op in pool.history.ops() if op.f == "start")
        assert start.process == "consumer-0" and start.value["behaviour"] == "accept-explicit"
        assert pool.close_one("consumer-0", 10) == "ok"
    finally:
        pool.close_all()


def test_a_manifest_driver_speaking_another_contract_is_refused(tmp_path):
    pool = _pool(tmp_path, client=str(_manifest(tmp_path, {"client": "fake", "contract": 7})))
    with pytest.raises(HarnessError, match="speaks contract 7"):
        pool.start(1)
    assert pool.live() == []


class _FakeDriver:
    def __init__(self, name: str, alive: bool) -> None:
        self.name, self._alive, self.crashed = name, alive, False

    def alive(self) -> bool:
        return self._alive

    def crash(self) -> None:
        self.crashed, self._alive = True, False


def test_replace_kills_a_driver_still_running_and_refuses_one_not_of_the_pool(tmp_path, monkeypatch):
    pool = _pool(tmp_path)
    old, gone = _FakeDriver("consumer-0", True), _FakeDriver("consumer-1", False)
    pool._drivers += [old, gone]
    joined = []
    monkeypatch.setattr(pool, "join", lambda: joined.append(1) or f"consumer-{len(pool._drivers)}")
    assert pool.replace(old) == "consumer-2" and old.crashed
    assert pool.replace(gone) == "consumer-2" and not gone.crashed
    assert pool.replace(None) == "consumer-2"
    with pytest.raises(ValueError, match="not a driver of this pool"):
        pool.replace(_FakeDriver("consumer-9", False))
    assert len(joined) == 3
