"""The class-data archives `share-harness setup` builds (`harness.kafka.cds`): the JVM on this machine
maps them (it refuses to start under `-Xshare:on` when an archive does not fit its classpath or
JDK), and the nodes of a local cluster start with them."""

import subprocess
from pathlib import Path

import pytest

from harness.cluster.local import LocalCluster
from harness.kafka import cds
from harness.kafka.jars import resolve
from harness.kafka.versions import DEFAULT_VERSION
from harness.sys.paths import cache_dir

pytestmark = [pytest.mark.real]

#: A short command of each program that loads its main class and exits 0.
_VERSION_COMMANDS = {"broker": ["kafka.Kafka", "--version"], "storage": ["kafka.tools.StorageTool", "version"]}


@pytest.mark.parametrize("program", cds.PROGRAMS)
def test_the_archive_maps_on_this_jvm(program):
    dist = resolve(DEFAULT_VERSION, cache_dir())
    archive = cds.ensure(dist) / f"{program}.jsa"
    assert cds.flags(dist, program) == [f"-XX:SharedArchiveFile={archive}"]
    done = subprocess.run(["java", "-Xshare:on", *cds.flags(dist, program), "-cp", dist.classpath,
                           *_VERSION_COMMANDS[program]], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, f"the JVM refused {archive}: {(done.stderr or done.stdout).strip()[-400:]}"


@pytest.mark.cluster
def test_local_nodes_start_with_the_archive(kafka_cluster):
    if not isinstance(kafka_cluster, LocalCluster) or type(kafka_cluster) is not LocalCluster:
        pytest.skip("only local processes map the host's archives")
    flag = f"-XX:SharedArchiveFile={cds.archive(kafka_cluster.distribution, 'broker')}"
    for node_id in kafka_cluster.broker_ids:
        pid = kafka_cluster.node_pid(node_id)
        assert pid is not None, f"node {node_id} does not run"
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        assert flag.encode() in cmdline, f"node {node_id} started without {flag}"
