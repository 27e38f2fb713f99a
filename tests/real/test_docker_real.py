"""The docker backend on a real Docker engine: a cluster of Kafka containers on the host network runs a
checked workload, takes one fault of every group with its proof of effect, and leaves no container
behind, also when the harness process is killed. Bad input is one line.

Needs a Docker engine and the harness's images (`.ci/run` starts `dockerd` and builds them:
`scripts/docker_engine.sh`, `scripts/docker_images.sh`). Without an engine these tests fail with the
one line that says so: deselect them with `-m "not docker"` where no engine can run.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from dataclasses import replace

import pytest

from harness.cluster.base import Killable, Partitionable, Pausable
from harness.cluster.docker.engine import LABEL, engine, owner
from harness.errors import HarnessError
from harness.faults import CATALOGUE
from harness.report.rundir import new_run_dir
from harness.run import make_cluster, run
from harness.sys.procs import python_env
from harness.sys.wait import wait_until

pytestmark = [pytest.mark.real, pytest.mark.docker]

#: One fault of every group (CATALOGUE's groups), applied once each under the workload: CI's docker smoke
#: (issue 24: one fault from each group within 6 minutes with the compose smoke).
ONE_OF_EACH_GROUP = ("leader-kill", "share-coordinator-kill", "isolate-node", "truncate", "latency",
                     "consumer-kill", "cold-restart")


def _ours(pid: int | None = None) -> list:
    containers = engine().containers.list(all=True, filters={"label": LABEL})
    return [c for c in containers if pid is None or c.labels.get(LABEL) == owner(pid)]


@pytest.fixture(scope="module")
def docker_cluster(ksh_spec):
    spec = replace(ksh_spec, backend="docker", bootstrap_servers=None).validate()
    cluster = make_cluster(spec, new_run_dir("docker-cluster"))
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.close()
    assert _ours(os.getpid()) == [], "containers of this test process left after close"


def test_one_fault_of_each_group_is_on_the_catalogue():
    groups = {CATALOGUE[name].group for name in ONE_OF_EACH_GROUP}
    assert groups == {fault.group for fault in CATALOGUE.values()}


def test_nodes_are_containers_on_the_host_network(docker_cluster):
    assert isinstance(docker_cluster, Killable) and isinstance(docker_cluster, Pausable)
    assert isinstance(docker_cluster, Partitionable)
    containers = {c.attrs["State"]["Pid"]: c for c in _ours(os.getpid())}
    for node in docker_cluster.broker_ids:
        container = containers.get(docker_cluster.node_pid(node))
        assert container is not None, f"n{node}'s process is not one of this run's containers"
        assert container.attrs["HostConfig"]["NetworkMode"] == "host"
        assert container.attrs["Config"]["Image"] == docker_cluster.image
        assert container.attrs["Config"]["Cmd"][-2:] == ["kafka.Kafka", str(docker_cluster._nodes[node].config)]
    assert all(host.startswith("127.0.0.1:") for host in docker_cluster.bootstrap_servers.split(","))


def test_nodes_map_the_class_data_archive_of_their_images_jvm(docker_cluster):
    """The archive the backend built with the image's own JVM is on every node's command line, and
    that JVM maps it (it refuses to start under -Xshare:on when the archive does not fit)."""
    archives = docker_cluster._archives()
    assert archives is not None, "no class-data archive was built for the image"
    flag = f"-XX:SharedArchiveFile={archives / 'broker.jsa'}"
    containers = {c.attrs["State"]["Pid"]: c for c in _ours(os.getpid())}
    for node in docker_cluster.broker_ids:
        assert flag in containers[docker_cluster.node_pid(node)].attrs["Config"]["Cmd"], f"n{node} runs without {flag}"
    output = engine().containers.run(docker_cluster.image, ["java", "-Xshare:on", flag, "-cp", docker_cluster.classpath,
                                                            "kafka.Kafka", "--version"], remove=True, entrypoint=[],
                                     network_mode="none", volumes={str(archives): {"bind": str(archives), "mode": "ro"}},
                                     labels={LABEL: owner()}, stderr=True)
    assert output.strip(), "kafka.Kafka --version printed nothing"


def test_a_workload_with_one_fault_of_each_group_passes_every_checker(docker_cluster, ksh_spec):
    spec = replace(ksh_spec, name="docker-faults", backend="docker", faults=ONE_OF_EACH_GROUP, fault_mode="once",
                   records=600).validate()
    outcome = run(spec, cluster=docker_cluster)
    assert outcome.overall is True, outcome.summary()
    assert sorted(f.fault for f in outcome.faults) == sorted(ONE_OF_EACH_GROUP)
    assert outcome.faults_not_applied == []  # each applied with its evidence, and healed


def test_pause_freezes_the_container_and_resume_thaws_it(docker_cluster):
    node = docker_cluster.broker_ids[-1]
    container = next(c for c in _ours(os.getpid()) if c.attrs["State"]["Pid"] == docker_cluster.node_pid(node))
    docker_cluster.pause_node(node)
    try:
        container.reload()
        assert container.status == "paused"
    finally:
        docker_cluster.resume_node(node)
    container.reload()
    assert container.status == "running"


def test_a_missing_image_is_one_line_naming_the_build(ksh_spec, tmp_path):
    spec = replace(ksh_spec, backend="docker", kafka_image="ksh/no-such-image:0").validate()
    with pytest.raises(HarnessError, match=r"image ksh/no-such-image:0 is not on this Docker engine: .*docker_images"):
        make_cluster(spec, tmp_path)


def test_an_image_without_kafka_jars_is_refused(ksh_spec, tmp_path):
    spec = replace(ksh_spec, backend="docker", kafka_image="ksh/debian-jre:bookworm-17").validate()
    with pytest.raises(HarnessError, match=r"does not fit the docker backend: no Kafka jars"):
        make_cluster(spec, tmp_path)


def test_no_engine_is_one_line(ksh_spec, tmp_path, monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    spec = replace(ksh_spec, backend="docker").validate()
    with pytest.raises(HarnessError, match=r"no Docker engine answers at unix://.*no-engine.sock"):
        make_cluster(spec, tmp_path)


_START_AND_WAIT = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from harness.cluster.docker import DockerCluster
    from harness.cluster.local import LocalClusterSpec
    cluster = DockerCluster(LocalClusterSpec(version=sys.argv[1], brokers=1, replication_factor=1,
                                             min_insync_replicas=1), Path(sys.argv[2]))
    cluster.start()
    print("started", flush=True)
    time.sleep(600)
""")


def test_killed_harness_leaves_no_container(ksh_spec, tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", _START_AND_WAIT, ksh_spec.kafka_version, str(tmp_path)],
                            stdout=subprocess.PIPE, text=True, env=python_env(), start_new_session=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "started", "cluster did not start"
        assert len(_ours(proc.pid)) == 1, "the child's node is not a labelled container"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)
    wait_until(lambda: _ours(proc.pid) == [], timeout=60, what="the reaper to remove the killed harness's container")
