"""compose/docker-compose.yml for real: `docker-compose up` brings up a 3-node cluster on the host
network with loopback listeners, the harness checks a workload on it as an external cluster, and
`docker-compose down` leaves no container behind.

Ports come from the harness's registry (KSH_N<i>_PORT, KSH_N<i>_CONTROLLER), so the cluster never
meets another test's; the containers are registered with the reaper, so a killed test leaves none.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from harness.cluster.docker.engine import engine, require_image
from harness.cluster.external import ExternalCluster
from harness.cluster.inspect import ClusterInspector
from harness.run import run
from harness.sys.ports import allocate, release
from harness.sys.procs import REAPER, python_env
from harness.sys.procs import run as run_tool
from harness.sys.wait import wait_until

pytestmark = [pytest.mark.real, pytest.mark.docker]

COMPOSE = Path(__file__).resolve().parents[2] / "compose" / "docker-compose.yml"


def _compose(project: str, env: dict[str, str], *args: str, timeout: float = 180):
    done = run_tool(f"compose {args[0]}", ["docker-compose", "-f", str(COMPOSE), "-p", project, *args],
                    timeout=timeout, env={**os.environ, **env})
    assert done.returncode == 0, f"docker-compose {' '.join(args)} failed: {done.stderr.strip()[-1500:]}"
    return done.stdout


@pytest.fixture(scope="module")
def compose_cluster(ksh_spec):
    if shutil.which("docker-compose") is None:
        pytest.fail("docker-compose not found: apt-get install docker-compose (bash scripts/docker_engine.sh start "
                    "installs it)", pytrace=False)
    image = f"apache/kafka:{ksh_spec.kafka_version}"
    require_image(engine(), image)  # one line naming the build when it is missing
    ports = allocate(6)
    env = {"KAFKA_IMAGE": image}
    for i in range(3):
        env[f"KSH_N{i + 1}_PORT"], env[f"KSH_N{i + 1}_CONTROLLER"] = str(ports[2 * i]), str(ports[2 * i + 1])
    project = f"ksh-compose-{os.getpid()}"
    bootstrap = ",".join(f"127.0.0.1:{env[f'KSH_N{i}_PORT']}" for i in (1, 2, 3))
    ids: list[str] = []
    try:
        _compose(project, env, "up", "-d")
        ids = _compose(project, env, "ps", "-q").split()
        for container_id in ids:
            REAPER.register_container(container_id)
        assert len(ids) == 3
        inspector = ClusterInspector(bootstrap)
        wait_until(lambda: inspector.broker_ids() == [1, 2, 3], timeout=120, what="the compose cluster's 3 brokers")
        yield bootstrap, project, ids
    finally:
        _compose(project, env, "down", "--timeout", "10")
        for container_id in ids:
            REAPER.forget_container(container_id)
        release(ports)


def test_compose_cluster_listens_on_loopback_only(compose_cluster):
    _, project, ids = compose_cluster
    client = engine()
    for container_id in ids:
        container = client.containers.get(container_id)
        assert container.attrs["HostConfig"]["NetworkMode"] == "host"
        assert container.attrs["NetworkSettings"]["Ports"] in ({}, None)  # nothing published
    assert {n.name for n in client.networks.list()} <= {"host", "none", "bridge"}, "compose made a network"


def test_external_backend_checks_a_workload_on_the_compose_cluster(compose_cluster, ksh_spec):
    bootstrap, _, _ = compose_cluster
    cluster = ExternalCluster(bootstrap)
    cluster.start()
    outcome = run(replace(ksh_spec, name="compose", records=200, bootstrap_servers=bootstrap), cluster=cluster)
    assert outcome.overall is True, outcome.summary()


#: The conformance smoke on the compose cluster (the external backend's way: no process or link faults).
CONFORMANCE_SMOKE = tuple(f"suites/conformance/test_acknowledgement.py::{name}" for name in (
    "test_release_makes_records_available_again_with_a_higher_count", "test_reject_archives_records",
    "test_acknowledging_after_the_lock_expired_fails", "test_close_releases_acquired_records"))


@pytest.mark.nightly  # ~1 min; CI checks a workload on the compose cluster (above) and the conformance suite locally
def test_conformance_smoke_passes_on_the_compose_cluster(compose_cluster, ksh_spec, tmp_path):
    bootstrap, _, _ = compose_cluster
    root = COMPOSE.parent.parent
    done = run_tool("compose conformance", [sys.executable, "-m", "pytest", *CONFORMANCE_SMOKE, "-q", "-p",
                                            "no:cacheprovider", "--bootstrap-servers", bootstrap, "--kafka-version",
                                            ksh_spec.kafka_version, "--ksh-conformance-out", str(tmp_path)],
                    timeout=600, cwd=root, env=python_env())
    summary = done.stdout.strip().splitlines()[-1:] or ["no output"]
    assert done.returncode == 0, f"conformance smoke on the compose cluster: {summary[0]}\n{done.stdout[-3000:]}"
    assert re.search(r"\b4 passed\b", summary[0]), summary[0]
