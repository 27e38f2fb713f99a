"""What each node of a local cluster has on disk before it starts.

`write_node` makes a node's home (`nodes/n<id>/` under the run directory: logs/, data/ registered
with the reaper, server.properties, log4j2.properties); `format_storage` runs Kafka's StorageTool
on every node's data dir at once, under one fresh cluster id.
"""

from __future__ import annotations

import base64
import os
import random
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable, Sequence

from harness.cluster.local.node import LocalNode
from harness.cluster.local.spec import LocalClusterSpec, PortPlan
from harness.errors import HarnessError
from harness.kafka import config as kconfig
from harness.kafka.jars import KafkaDistribution
from harness.proxy.links import LinkMap
from harness.sys import procs
from harness.sys.procs import REAPER


def write_node(i: int, home: Path, spec: LocalClusterSpec, plan: PortPlan, links: LinkMap,
               dist: KafkaDistribution) -> LocalNode:
    """Node `i`'s home, config and log config written; the node, not started."""
    (home / "logs").mkdir(parents=True, exist_ok=True)
    (home / "data").mkdir(parents=True, exist_ok=True)
    REAPER.register_dir(home / "data")
    config = home / "server.properties"
    # 0600: with SASL users it holds their passwords (the JAAS line of the SASL listener); the node,
    # a local process or a container, runs as this user (the docker backend's `user=uid:gid`)
    write_private(config, kconfig.render(node_config(i, home / "data", spec, plan, links), dist.release_line))
    (home / "log4j2.properties").write_text(kconfig.render_log4j2(home / "logs"))
    return LocalNode(i, plan.roles[i], home, config, plan.real[i])


def write_private(path: Path, text: str) -> None:
    """`text` into `path`, readable and writable by this user only (0600), never through a symbolic
    link; a file already there is narrowed to 0600 before the text goes in."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "w") as out:
        os.fchmod(fd, 0o600)
        out.write(text)


def node_config(i: int, data_dir: Path, spec: LocalClusterSpec, plan: PortPlan, links: LinkMap) -> kconfig.NodeConfig:
    """Node `i`'s settings: it listens on its real ports and advertises the proxies in front of them
    (its own listener where it would be talking to itself)."""
    real, is_broker = plan.real, "broker" in plan.roles[i]
    return kconfig.NodeConfig(
        node_id=i, roles=plan.roles[i], ports=real[i], data_dir=data_dir,
        advertised_client=links.client(i).listen_port if is_broker else None,
        advertised_lanes={k: links.lane(k, i).listen_port for k in real[i].lanes},
        advertised_peers={k: (real[i].peers[k] if k == i else links.broker(k, i).listen_port)
                          for k in plan.brokers} if is_broker else {},
        voters={j: (real[j].controller if j == i else links.controller(i, j).listen_port)
                for j in plan.controllers},
        replication_factor=spec.replication_factor,
        min_insync_replicas=spec.min_insync_replicas,
        internal_partitions=spec.internal_partitions,
        overrides=dict(spec.broker_overrides), sasl_users=dict(spec.sasl_users),
        log_dirs=log_dirs(data_dir, spec.log_dirs) if is_broker else ())


def log_dirs(data_dir: Path, count: int) -> tuple[Path, ...]:
    """A broker's log directories under `data_dir` (none of its own for one: `data_dir` itself)."""
    return tuple(data_dir / f"disk{k}" for k in range(count)) if count > 1 else ()


def cluster_id_of(data_dir: Path) -> str:
    """The cluster id a formatted node's `meta.properties` holds (its metadata directory's first);
    HarnessError if there is none."""
    for meta in (data_dir / "meta" / "meta.properties", data_dir / "meta.properties"):
        if meta.is_file():
            for line in meta.read_text().splitlines():
                if line.startswith("cluster.id="):
                    return line.partition("=")[2].strip()
    raise HarnessError(f"no formatted meta.properties with a cluster.id under {data_dir}")


Runner = Callable[[LocalNode, list[str], str], "tuple[int, str]"]
"""Runs one node's StorageTool command (named `tag`) to its end: (exit code, its output)."""


def format_storage(nodes: list[LocalNode], dist: KafkaDistribution, tag: str, runner: Runner | None = None,
                   classpath: str | None = None, jvm_flags: Sequence[str] = (), cluster_id: str | None = None) -> None:
    """StorageTool `format` on every node in parallel; `tag` names these processes (an interrupt
    kills the ones still running instead of waiting for them). `runner` runs each command (default:
    a local process) over `classpath` (default: the distribution's), `jvm_flags` first.

    With `cluster_id` (an existing cluster's), only the nodes' directories not formatted yet are
    (`--ignore-formatted`): a replaced disk, as an operator formats one."""
    extra = ["--ignore-formatted"] if cluster_id else []
    cluster_id = cluster_id or base64.urlsafe_b64encode(random.SystemRandom().randbytes(16)).decode().rstrip("=")
    features = [arg for f in dist.release_line.format_features() for arg in ("--feature", f)]
    run_one = runner or _run_local
    cp = classpath or dist.classpath

    def format_node(node: LocalNode) -> None:
        cmd = ["java", *jvm_flags, "-Xmx256m", "-XX:TieredStopAtLevel=1", "-cp", cp, "kafka.tools.StorageTool", "format",
               f"--cluster-id={cluster_id}", "-c", str(node.config), *features, *extra]
        code, output = run_one(node, cmd, f"{tag} n{node.node_id}")
        if code != 0:
            tail = output.strip().splitlines()[-1:] or ["no output"]
            raise HarnessError(f"formatting storage of node {node.node_id} failed: {tail[0]}")

    pool = ThreadPoolExecutor(max_workers=len(nodes), thread_name_prefix="storage-format")
    try:
        list(pool.map(format_node, nodes))
    except BaseException:  # e.g. Ctrl-C: do not wait for the formats still running
        for proc in procs.live_processes():
            if proc.name.startswith(tag):
                proc.kill()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _run_local(node: LocalNode, cmd: list[str], name: str) -> tuple[int, str]:
    try:
        proc = procs.run(name, cmd, timeout=120, env={**os.environ, "KAFKA_LOG4J_OPTS": ""})
    except subprocess.TimeoutExpired:
        raise HarnessError(f"formatting storage of node {node.node_id} took over 120 s: "
                           "check the machine's load") from None
    return proc.returncode, proc.stderr or proc.stdout
