"""The local-process backend: each Kafka node a `java ... kafka.Kafka` process on loopback.

Phases of `start`: resolve jars -> start Toxiproxy -> allocate ports and create
one proxy per directed link -> render configs -> format storage (StorageTool)
-> start nodes -> wait until every broker is registered and a share group can
consume a record. `close` stops nodes and Toxiproxy, deletes data dirs and
releases the cluster's ports (logs stay in the run directory). Every process
(StorageTool included) is a managed child (`harness.sys.procs`); an interrupted
`start` closes what it started.

This package's front is the `LocalCluster` class, which composes the parts: the spec and port
layout (`spec`), one node's process (`node`), its files on disk (`files`), the Toxiproxy links
(`links`) and the server logs (`logs`). `LocalClusterSpec`,
`LogMark` and `copy_new_log_bytes` are importable from here too.
"""

from __future__ import annotations

import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from harness.cluster.inspect import ClusterInspector
from harness.cluster.java_admin import share_probe
from harness.cluster.local.files import cluster_id_of, format_storage, log_dirs, write_node
from harness.cluster.local.links import ProxyLinks
from harness.cluster.local.logs import LogMark, copy_new_log_bytes, error_tails
from harness.cluster.local.node import LocalNode, wait_listening
from harness.cluster.local.spec import LocalClusterSpec, PortPlan, plan_ports
from harness.cluster.readiness import wait_share_consumable
from harness.errors import HarnessError
from harness.kafka import cds
from harness.kafka import config as kconfig
from harness.kafka import features
from harness.kafka.jars import KafkaDistribution, resolve
from harness.kafka.versions import check_supported, parse_version, release_line
from harness.proxy.links import LinkMap
from harness.sys.paths import cache_dir
from harness.sys.ports import allocate, release
from harness.sys.procs import REAPER
from harness.sys.wait import wait_until
from harness.timing import timed

if TYPE_CHECKING:
    from harness.proxy.client import ToxiproxyClient

__all__ = ["LocalCluster", "LocalClusterSpec", "LogMark", "copy_new_log_bytes"]


class LocalCluster:
    """A real KRaft cluster of local JVM processes, every link behind Toxiproxy.

    A `harness.cluster.base.Cluster` with every capability there (`Killable`, `Pausable`,
    `Partitionable`, `Installed`, `ConsumerLanes`, `SaslListeners`); a context manager that starts
    it and closes it.
    """

    def __init__(self, spec: LocalClusterSpec, run_dir: Path) -> None:
        spec.validate()
        if not spec.kafka_home:
            check_supported(spec.version)
        self.spec = spec
        self.run_dir = run_dir
        self.version = spec.version
        self._nodes: dict[int, LocalNode] = {}
        self._proxies = ProxyLinks()
        self._dist: KafkaDistribution | None = None
        #: the jars each node runs (a rolling upgrade moves them one by one; `distribution` is the
        #: cluster's, which the harness's own tools use, until the upgrade finishes)
        self._node_dists: dict[int, KafkaDistribution] = {}
        self._plan: PortPlan | None = None
        self._inspector: ClusterInspector | None = None
        self._ports: list[int] = []  # every port allocated for this cluster, released by close()
        self._log_marks: dict[int, LogMark] = {}  # node -> how far collect_logs has copied its server.log

    # ---- Cluster -------------------------------------------------------
    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"{kconfig.HOST}:{self.links.client(b).listen_port}" for b in self.broker_ids)

    @property
    def sasl_bootstrap_servers(self) -> str | None:
        """The SASL/PLAIN listeners (direct, not proxied) when the spec has SASL users, else None."""
        ports = [self._nodes[b].ports.sasl for b in self.broker_ids]
        if not self.spec.sasl_users or None in ports:
            return None
        return ",".join(f"{kconfig.HOST}:{port}" for port in ports)

    def consumer_bootstrap(self, index: int) -> str:
        """Bootstrap servers for consumer `index`: its lane's proxies (the shared client ones if no lanes)."""
        if not self.spec.consumer_lanes:
            return self.bootstrap_servers
        lane = self.lane_of(index)
        return ",".join(f"{kconfig.HOST}:{self.links.lane(lane, b).listen_port}" for b in self.broker_ids)

    def lane_of(self, index: int) -> int | None:
        return index % self.spec.consumer_lanes if self.spec.consumer_lanes else None

    @property
    def broker_ids(self) -> list[int]:
        return [n for n, node in sorted(self._nodes.items()) if "broker" in node.roles]

    @property
    def controller_ids(self) -> list[int]:
        return [n for n, node in sorted(self._nodes.items()) if "controller" in node.roles]

    @property
    def inspector(self) -> ClusterInspector:
        if self._inspector is None:
            if not self._nodes:  # no bootstrap servers yet: an inspector made now would never reach the cluster
                raise AttributeError("inspector: the cluster is not started")
            self._inspector = ClusterInspector(self.bootstrap_servers)
        return self._inspector

    @property
    def links(self) -> LinkMap:
        return self._proxies.links

    @property
    def distribution(self) -> KafkaDistribution:
        if self._dist is None:
            raise AttributeError("distribution: the cluster is not started")
        return self._dist

    def __enter__(self) -> LocalCluster:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @timed("cluster")
    def start(self, steps: Callable[[str], None] | None = None) -> None:
        """Bring the cluster up; on any failure, release everything and re-raise. `steps` (if given) is
        called with each step's name as it completes (`benchmarks/cluster_start.py`'s breakdown)."""
        done = steps or (lambda step: None)
        try:
            self._dist = resolve(self.spec.version, cache_dir(), self.spec.kafka_home)
            self.version = self._dist.version
            check_supported(self.version)
            self._proxies.start(lambda: self._claim_ports(1, self.spec.base_port)[0],
                                self.run_dir / "logs" / "toxiproxy.log")
            self._prepare_nodes()
            done("toxiproxy and proxies up")
            self._format_storage()
            done("storage formatted")
            for node_id in sorted(self._nodes):
                self.start_node(node_id, wait=False)
            self.wait_ready(steps=steps)
        except BaseException:
            self.close()
            raise

    def wait_ready(self, timeout: float | None = None, steps: Callable[[str], None] | None = None) -> None:
        """Every broker registered, and a share group consumes a record."""
        timeout = timeout or self.spec.start_timeout
        self._wait_serving(list(self._nodes), timeout)
        if steps:
            steps("nodes serving, brokers registered")
        wait_share_consumable(self.bootstrap_servers, self.inspector, timeout=timeout,
                              replication_factor=self.spec.replication_factor,
                              fatal=self._dead_node, diagnostics=self._log_tails, steps=steps,
                              java=self._java_probe())

    def _java_probe(self) -> Callable[[str, str, str, float], None] | None:
        """The readiness probe's consumer where librdkafka's ShareConsumer cannot talk to the release
        (`ReleaseLine.python_share_consumer`): the release's own KafkaShareConsumer."""
        if release_line(self.distribution.version).python_share_consumer:
            return None
        return lambda group, topic, token, timeout: share_probe(self.distribution, cache_dir(), self.bootstrap_servers,
                                                                group, topic, token, timeout)

    @timed("cluster")
    def close(self) -> None:
        """Stop every node and Toxiproxy, delete data dirs, release the ports. Safe to call twice."""
        # The inspector's AdminClient goes first, while the brokers still answer: one left alive keeps
        # reconnecting to stopped brokers, and twice in CI a worker that held such clients was aborted
        # inside librdkafka (the message lost to pytest's capture), taking the worker's tests with it.
        self._inspector = None
        nodes = list(self._nodes.values())
        for node in nodes:  # every node asked at once, then each waited for
            node.terminate()
        with ThreadPoolExecutor(max_workers=max(1, len(nodes))) as pool:
            list(pool.map(lambda node: node.stop(timeout=10), nodes))
        self._proxies.stop()
        for node in self._nodes.values():
            data = node.home / "data"
            shutil.rmtree(data, ignore_errors=True)
            REAPER.forget_dir(data)
        ports, self._ports = self._ports, []
        release(ports)  # every process that bound them is gone

    @property
    def server_logs(self) -> dict[int, Path]:
        """Each node's server.log as it is being written (node id -> path; a node not started yet has none)."""
        return {node.node_id: node.home / "logs" / "server.log" for node in self._nodes.values()}

    def collect_logs(self, dest: Path) -> list[Path]:
        """Each node's server.log written since the previous call (the whole log the first time),
        appended to `dest/n<id>-server.log`: a long-lived cluster's runs each get their own part."""
        dest.mkdir(parents=True, exist_ok=True)
        copied = []
        for node_id, src in self.server_logs.items():
            if src.exists():
                target = dest / f"n{node_id}-server.log"
                if src.resolve() != target.resolve():
                    self._log_marks[node_id] = copy_new_log_bytes(src, self._log_marks.get(node_id), target)
                copied.append(target)
        return copied

    # ---- Killable / Pausable ---------------------------------------------
    @timed("cluster")
    def start_node(self, node_id: int, wait: bool = True) -> None:
        node = self._nodes[node_id]
        if not node.alive():
            dist = self._node_dists.get(node_id, self.distribution)
            node.start(self.spec.heap_mb, dist.classpath, self._jvm_flags("broker", dist))
        if wait:  # (also for a process started before with wait=False: a bounce)
            self._wait_serving([node_id], self.spec.start_timeout)

    def _wait_serving(self, node_ids: list[int], timeout: float) -> None:
        """The nodes answer ApiVersions on every listener they bind, then every broker is registered.

        The listeners come first: a node killed a moment ago is still registered until its
        session times out, so registration alone would pass before the new process serves.
        """
        wait_listening([self._nodes[i] for i in node_ids], timeout, fatal=self._dead_node,
                       log_tails=self._log_tails)
        want = self.broker_ids
        wait_until(lambda: self.inspector.broker_ids() == want, timeout=timeout,
                   what=f"brokers {want} to register", interval=0.2,
                   fatal=self._dead_node, diagnostics=self._log_tails)

    @timed("cluster")
    def stop_node(self, node_id: int) -> None:
        self._nodes[node_id].stop(timeout=30)

    @timed("cluster")
    def kill_node(self, node_id: int) -> None:
        self._nodes[node_id].kill()

    @timed("cluster")
    def restart_node(self, node_id: int) -> None:
        self.stop_node(node_id)
        self.start_node(node_id)

    def node_alive(self, node_id: int) -> bool:
        return self._nodes[node_id].alive()

    def node_pid(self, node_id: int) -> int | None:
        return self._nodes[node_id].pid()

    def pause_node(self, node_id: int) -> None:
        self._nodes[node_id].pause()

    def resume_node(self, node_id: int) -> None:
        self._nodes[node_id].resume()

    # ---- Upgradable ---------------------------------------------------------
    def upgrade_unsupported(self) -> str:
        """Why this cluster cannot move to another release node by node ("" when it can)."""
        return ""

    def node_version(self, node_id: int) -> str:
        """The Kafka release node `node_id` runs (or will run when started)."""
        return self._node_dists.get(node_id, self.distribution).version

    def upgrade_node(self, node_id: int, version: str, on_stopped: Callable[[], None] | None = None) -> str:
        """One step of a rolling upgrade: stop the node (SIGTERM: controlled shutdown), give it
        `version`'s jars and a config rendered for that release, start it and wait until it serves and
        is registered. The data stays. `on_stopped` is called once the old process has exited (the
        old release runs no more). Returns the version it ran before."""
        dist = resolve(version, cache_dir())
        check_supported(dist.version)
        old = self.node_version(node_id)
        if parse_version(dist.version) < parse_version(old):
            raise HarnessError(f"n{node_id} runs Kafka {old}: {dist.version} is a downgrade, not an upgrade")
        node = self._nodes[node_id]
        node.stop(timeout=30)
        if on_stopped is not None:
            on_stopped()
        if self._plan is not None:  # the same settings, rendered for the new release line
            write_node(node_id, node.home, self.spec, self._plan, self.links, dist)
        self._node_dists[node_id] = dist
        self.start_node(node_id, wait=True)
        return old

    def reported_version(self, node_id: int) -> str | None:
        """The release node `node_id`'s server log reported at its last start ("Kafka version: ...")."""
        log = self._nodes[node_id].logs / "server.log"
        if not log.is_file():
            return None
        found = None
        with open(log, errors="replace") as lines:
            for line in lines:
                if "INFO Kafka version: " in line:
                    found = line.split("Kafka version: ", 1)[1].split()[0]
        return found

    def finish_upgrade(self, release: str) -> str:
        """Every node runs the same release now: it becomes the cluster's (the harness's own tools
        use its jars), and its `FeatureCommand upgrade --release-version <release>` finalises the
        features; returns what the command printed. A node on another release is an error."""
        versions = {self.node_version(n) for n in self._nodes}
        if len(versions) != 1:
            raise HarnessError(f"cannot finish the upgrade: the nodes run {sorted(versions)}")
        self._dist = self._node_dists[min(self._nodes)]
        self.version = self._dist.version
        return features.upgrade_release(self._dist, cache_dir(), self.bootstrap_servers, release)

    def features(self) -> dict[str, features.FeatureLevel]:
        """Every cluster feature's supported range and finalised level (the cluster's FeatureCommand)."""
        return features.describe(self.distribution, cache_dir(), self.bootstrap_servers)

    # ---- Disks -------------------------------------------------------------

    def log_dirs(self, node_id: int) -> list[Path]:
        node = self._nodes[node_id]
        return list(log_dirs(node.home / "data", self.spec.log_dirs)) if "broker" in node.roles else []

    def fail_log_dir(self, node_id: int, path: Path) -> None:
        """The disk under `path` fails: the directory and everything in it is gone and a file stands in
        its place (as Kafka's own LogDirFailureTest does), so the broker's next write or checkpoint
        there fails with an IOException and it takes the directory offline."""
        self._own_log_dir(node_id, path)
        # renamed away first, in one step: removing it in place races the broker, which may create a file
        # in it while rmtree runs (rmtree then leaves the directory, without meta.properties, in the way)
        gone = path.with_name(f"{path.name}.failed")
        shutil.rmtree(gone, ignore_errors=True)
        path.rename(gone)
        path.write_text("a failed disk (kafka-share-harness disk-fail)\n")
        shutil.rmtree(gone, ignore_errors=True)

    def replace_log_dir(self, node_id: int, path: Path) -> None:
        """A new, empty disk at `path` (the node stopped), formatted as an operator would: StorageTool
        `format --ignore-formatted` with the cluster's id, which formats only that directory."""
        node = self._own_log_dir(node_id, path)
        if node.alive():
            raise HarnessError(f"n{node_id} still runs: stop it before replacing its disk {path}")
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)
        path.mkdir()
        self._format_storage([node], cluster_id=cluster_id_of(node.home / "data"))

    def _own_log_dir(self, node_id: int, path: Path) -> LocalNode:
        if path not in self.log_dirs(node_id):
            raise HarnessError(f"{path} is not one of n{node_id}'s log directories {self.log_dirs(node_id)}")
        return self._nodes[node_id]

    # ---- Partitionable ---------------------------------------------------
    def cut(self, link_name: str) -> None:
        self._proxies.cut(link_name)

    def heal(self, link_name: str) -> None:
        self._proxies.heal(link_name)

    def heal_all(self) -> None:
        self._proxies.heal_all()

    @property
    def toxiproxy(self) -> ToxiproxyClient:
        """The typed Toxiproxy client (for toxics beyond cut/heal)."""
        return self._proxies.client

    # ---- internals ---------------------------------------------------------
    def _claim_ports(self, count: int, base: int | None) -> list[int]:
        """`count` free ports (from `base` if given), kept until `close` releases them."""
        ports = allocate(count, base)
        self._ports += ports
        return ports

    def _prepare_nodes(self) -> None:
        """Lay the ports out, put a proxy on every link, write every node's home."""
        base = None if self.spec.base_port is None else self.spec.base_port + 1
        # every port but Toxiproxy's API (taken first)
        plan = self._plan = plan_ports(self.spec, self._claim_ports(self.spec.port_count() - 1, base))
        self._proxies.wire(plan.links)
        for i in plan.roles:
            self._nodes[i] = write_node(i, self.run_dir / "nodes" / f"n{i}", self.spec, plan, self.links,
                                        self.distribution)
            self._node_dists[i] = self.distribution

    def _format_storage(self, nodes: list[LocalNode] | None = None, cluster_id: str | None = None) -> None:
        format_storage(nodes or list(self._nodes.values()), self.distribution, tag=f"storage-format {id(self):x}",
                       jvm_flags=self._jvm_flags("storage"), cluster_id=cluster_id)

    def _jvm_flags(self, program: str, dist: KafkaDistribution | None = None) -> list[str]:
        """The class-data archive of `program` ("broker", "storage") that setup built for `dist` (default:
        the cluster's), if any."""
        return cds.flags(dist or self.distribution, program)

    def _dead_node(self) -> str | None:
        for node in self._nodes.values():
            if (death := node.death()) is not None:
                return death
        return None

    def _log_tails(self) -> str:
        return error_tails((node.node_id, node.home / "logs" / "server.log") for node in self._nodes.values())
