"""The local-process backend: each Kafka node a `java ... kafka.Kafka` process on loopback.

Phases of `start`: resolve jars -> start Toxiproxy -> allocate ports and create
one proxy per directed link -> render configs -> format storage (StorageTool)
-> start nodes -> wait until every broker is registered and a share group can
consume a record. `close` stops nodes and Toxiproxy, deletes data dirs and
releases the cluster's ports (logs stay in the run directory). Every process
(StorageTool included) is a managed child (`harness.procs`); an interrupted
`start` closes what it started.
"""

from __future__ import annotations

import base64
import os
import random
import re
import shutil
import signal
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from harness.cluster.inspect import ClusterInspector
from harness.cluster.readiness import wait_share_consumable
from harness.errors import HarnessError
from harness.kafka import config as kconfig
from harness.kafka.jars import KafkaDistribution, resolve
from harness.kafka.wire import probe
from harness.kafka.versions import check_supported
from harness.paths import cache_dir
from harness import procs
from harness.ports import allocate, release, validate_base
from harness.procs import REAPER, ManagedProcess, spawn
from harness.proxy.links import Link, LinkMap
from harness.wait import wait_until

if TYPE_CHECKING:
    from harness.proxy.client import ToxiproxyClient
    from harness.proxy.server import ToxiproxyServer


@dataclass(frozen=True)
class LocalClusterSpec:
    """How to build a local cluster. Brokers are 1..brokers; separate controllers follow."""

    version: str
    brokers: int = 3
    controllers: int = 0  # 0: every broker is also a controller (combined mode)
    heap_mb: int = 512
    replication_factor: int = 3
    min_insync_replicas: int = 2
    internal_partitions: int = 5
    consumer_lanes: int = 3  # consumer i connects on lane i % lanes (its own listener and proxies)
    base_port: int | None = None
    kafka_home: str | None = None
    broker_overrides: dict[str, str] = field(default_factory=dict)
    start_timeout: float = 90.0
    sasl_users: dict[str, str] = field(default_factory=dict)  # user -> password: a SASL/PLAIN listener and ACLs

    def validate(self) -> None:
        if self.brokers < 1:
            raise HarnessError(f"invalid broker count {self.brokers}: use 1 or more")
        if not 1 <= self.replication_factor <= self.brokers:
            raise HarnessError(f"invalid replication factor {self.replication_factor}: use 1..{self.brokers} (the broker count)")
        if not 1 <= self.min_insync_replicas <= self.replication_factor:
            raise HarnessError(f"invalid min.insync.replicas {self.min_insync_replicas}: use 1..{self.replication_factor}")
        if not 0 <= self.consumer_lanes <= 16:
            raise HarnessError(f"invalid consumer lanes {self.consumer_lanes}: use 0..16")
        if self.heap_mb < 128:
            raise HarnessError(f"invalid heap {self.heap_mb} MB: use 128 or more")
        for user, password in self.sasl_users.items():
            if not re.fullmatch(r"[A-Za-z0-9_-]+", user) or not re.fullmatch(r"[A-Za-z0-9_.-]+", password):
                raise HarnessError(f"invalid SASL user {user!r}: use letters, digits, _ and - (passwords also .)")
        if self.controllers < 0:
            raise HarnessError(f"invalid controller count {self.controllers}: use 0 (combined mode) or more")
        if self.base_port is not None:
            validate_base(self.base_port, self.port_count())  # before any download or process

    def port_count(self) -> int:
        """Ports the cluster takes: Toxiproxy's API, every node's listeners, one proxy per link."""
        b, lanes, sasl = self.brokers, self.consumer_lanes, int(bool(self.sasl_users))
        controllers = b if self.controllers == 0 else self.controllers
        nodes = b + self.controllers
        listeners = b * (1 + b + lanes + sasl) + controllers
        links = b * (1 + lanes) + b * (b - 1) + controllers * (nodes - 1)
        return 1 + listeners + links


@dataclass
class _Node:
    node_id: int
    roles: tuple[str, ...]
    home: Path
    config: Path
    ports: kconfig.NodePorts
    proc: ManagedProcess | None = None

    @property
    def listener_ports(self) -> list[int]:
        p = self.ports
        return [port for port in (p.client, p.controller, *p.peers.values(), *p.lanes.values(), p.sasl)
                if port is not None]


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
        self._nodes: dict[int, _Node] = {}
        self._links = LinkMap([])
        self._proxy: ToxiproxyServer | None = None
        self._toxi: ToxiproxyClient | None = None
        self._dist: KafkaDistribution | None = None
        self._inspector: ClusterInspector | None = None
        self._ports: list[int] = []  # every port allocated for this cluster, released by close()
        self._log_marks: dict[int, LogMark] = {}  # node -> how far collect_logs has copied its server.log

    # ---- Cluster -------------------------------------------------------
    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"{kconfig.HOST}:{self._links.client(b).listen_port}" for b in self.broker_ids)

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
        return ",".join(f"{kconfig.HOST}:{self._links.lane(lane, b).listen_port}" for b in self.broker_ids)

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
        return self._links

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

    def start(self) -> None:
        """Bring the cluster up; on any failure, release everything and re-raise."""
        try:
            self._dist = resolve(self.spec.version, cache_dir(), self.spec.kafka_home)
            self.version = self._dist.version
            check_supported(self.version)
            self._start_proxies()
            self._prepare_nodes()
            self._format_all()
            for node_id in sorted(self._nodes):
                self.start_node(node_id, wait=False)
            self.wait_ready()
        except BaseException:
            self.close()
            raise

    def wait_ready(self, timeout: float | None = None) -> None:
        """Every broker registered, and a share group consumes a record."""
        timeout = timeout or self.spec.start_timeout
        self._wait_serving(list(self._nodes), timeout)
        wait_share_consumable(self.bootstrap_servers, self.inspector, timeout=timeout,
                              replication_factor=self.spec.replication_factor,
                              fatal=self._dead_node, diagnostics=self._log_tails)

    def close(self) -> None:
        """Stop every node and Toxiproxy, delete data dirs, release the ports. Safe to call twice."""
        running = [n.proc for n in self._nodes.values() if n.proc is not None]
        for proc in running:
            proc.signal(signal.SIGCONT)
            proc.signal(signal.SIGTERM)
        with ThreadPoolExecutor(max_workers=max(1, len(running))) as pool:
            list(pool.map(lambda p: p.stop(timeout=10), running))
        if self._proxy is not None:
            self._proxy.stop()
        for node in self._nodes.values():
            data = node.home / "data"
            shutil.rmtree(data, ignore_errors=True)
            REAPER.forget_dir(data)
        ports, self._ports = self._ports, []
        release(ports)  # every process that bound them is gone

    def collect_logs(self, dest: Path) -> list[Path]:
        """Each node's server.log written since the previous call (the whole log the first time),
        appended to `dest/n<id>-server.log`: a long-lived cluster's runs each get their own part."""
        dest.mkdir(parents=True, exist_ok=True)
        copied = []
        for node in self._nodes.values():
            src = node.home / "logs" / "server.log"
            if src.exists():
                target = dest / f"n{node.node_id}-server.log"
                if src.resolve() != target.resolve():
                    self._log_marks[node.node_id] = copy_new_log_bytes(
                        src, self._log_marks.get(node.node_id), target)
                copied.append(target)
        return copied

    # ---- Killable / Pausable ---------------------------------------------
    def start_node(self, node_id: int, wait: bool = True) -> None:
        node = self._nodes[node_id]
        if node.proc is not None and node.proc.alive():
            return
        logs = node.home / "logs"
        cmd = ["java", f"-Xms{self.spec.heap_mb}m", f"-Xmx{self.spec.heap_mb}m", "-XX:+UseG1GC",
               "-XX:MaxGCPauseMillis=20", "-XX:+ExitOnOutOfMemoryError", "-Djava.awt.headless=true",
               f"-Dlog4j2.configurationFile={node.home / 'log4j2.properties'}", f"-Dkafka.logs.dir={logs}",
               "-cp", self.distribution.classpath, "kafka.Kafka", str(node.config)]
        node.proc = spawn(f"n{node_id}", cmd, log_path=logs / "stdout.log", cwd=node.home)
        if wait:
            self._wait_serving([node_id], self.spec.start_timeout)

    def _wait_serving(self, node_ids: list[int], timeout: float) -> None:
        """The nodes answer ApiVersions on every listener they bind, then every broker is registered.

        The listeners come first: a node killed a moment ago is still registered until its
        session times out, so registration alone would pass before the new process serves.
        """
        ports = [(i, port) for i in node_ids for port in self._nodes[i].listener_ports]

        def answered(port: int) -> bool:
            return probe(port, timeout=1.0)[0] == "answered"

        def silent() -> str:
            return "not answering: " + ", ".join(f"n{i}:{port}" for i, port in ports if not answered(port))
        wait_until(lambda: all(answered(port) for _, port in ports), timeout=timeout,
                   what=f"nodes {node_ids} to answer on every listener", interval=0.2, fatal=self._dead_node,
                   diagnostics=lambda: f"{silent()}\n{self._log_tails()}")
        want = self.broker_ids
        wait_until(lambda: self.inspector.broker_ids() == want, timeout=timeout,
                   what=f"brokers {want} to register", interval=0.2,
                   fatal=self._dead_node, diagnostics=self._log_tails)

    def stop_node(self, node_id: int) -> None:
        proc = self._nodes[node_id].proc
        if proc is not None:
            proc.stop(timeout=30)

    def kill_node(self, node_id: int) -> None:
        proc = self._nodes[node_id].proc
        if proc is not None:
            proc.kill()

    def restart_node(self, node_id: int) -> None:
        self.stop_node(node_id)
        self.start_node(node_id)

    def node_alive(self, node_id: int) -> bool:
        proc = self._nodes[node_id].proc
        return proc is not None and proc.alive()

    def node_pid(self, node_id: int) -> int | None:
        proc = self._nodes[node_id].proc
        return proc.pid if proc is not None and proc.alive() else None

    def pause_node(self, node_id: int) -> None:
        proc = self._nodes[node_id].proc
        if proc is not None:
            proc.signal(signal.SIGSTOP)

    def resume_node(self, node_id: int) -> None:
        proc = self._nodes[node_id].proc
        if proc is not None:
            proc.signal(signal.SIGCONT)

    # ---- Partitionable ---------------------------------------------------
    def cut(self, link_name: str) -> None:
        self._links.get(*link_name.split("->"))
        self._toxi.cut(link_name)

    def heal(self, link_name: str) -> None:
        self._toxi.heal(link_name)

    def heal_all(self) -> None:
        self._toxi.reset()

    @property
    def toxiproxy(self) -> ToxiproxyClient:
        """The typed Toxiproxy client (for toxics beyond cut/heal)."""
        return self._toxi

    # ---- internals ---------------------------------------------------------
    def _start_proxies(self) -> None:
        from harness.proxy.client import ToxiproxyClient
        from harness.proxy.server import ToxiproxyServer, find_or_build_toxiproxy

        binary = find_or_build_toxiproxy(cache_dir())
        self._proxy = ToxiproxyServer(spawn=lambda argv, log: spawn("toxiproxy", argv, log_path=log))
        port = allocate(1, self.spec.base_port)[0]
        self._ports.append(port)
        (self.run_dir / "logs").mkdir(parents=True, exist_ok=True)
        self._proxy.start(binary, port=port, log_path=self.run_dir / "logs" / "toxiproxy.log")
        self._toxi = ToxiproxyClient(self._proxy.api_url)

    def _prepare_nodes(self) -> None:
        b, c = self.spec.brokers, self.spec.controllers
        roles = {i: ("broker", "controller") if c == 0 else ("broker",) for i in range(1, b + 1)}
        roles.update({i: ("controller",) for i in range(b + 1, b + c + 1)})
        brokers = [i for i, r in roles.items() if "broker" in r]
        controllers = [i for i, r in roles.items() if "controller" in r]
        base = None if self.spec.base_port is None else self.spec.base_port + 1
        lanes = range(self.spec.consumer_lanes)
        sasl = bool(self.spec.sasl_users)
        allocated = allocate(self.spec.port_count() - 1, base)  # every port but Toxiproxy's API (taken first)
        self._ports += allocated
        ports = iter(allocated)
        real = {i: kconfig.NodePorts(
            client=next(ports) if i in brokers else None,
            peers={k: next(ports) for k in brokers} if i in brokers else {},
            controller=next(ports) if i in controllers else None,
            lanes={k: next(ports) for k in lanes} if i in brokers else {},
            sasl=next(ports) if sasl and i in brokers else None) for i in roles}
        links: list[Link] = []
        for j in brokers:
            links.append(Link("client", f"n{j}", next(ports), real[j].client))
            links += [Link(f"lane{k}", f"n{j}", next(ports), real[j].lanes[k]) for k in lanes]
            links += [Link(f"n{i}", f"n{j}", next(ports), real[j].peers[i]) for i in brokers if i != j]
        for j in controllers:
            links += [Link(f"n{i}", f"c{j}", next(ports), real[j].controller) for i in roles if i != j]
        self._links = LinkMap(links)
        for link in links:
            self._toxi.create_proxy(link.name, f"{kconfig.HOST}:{link.listen_port}",
                                    f"{kconfig.HOST}:{link.upstream_port}")
        for i, node_roles in roles.items():
            self._nodes[i] = self._write_node(i, node_roles, real, brokers, controllers)

    def _write_node(self, i: int, roles: tuple[str, ...], real: dict[int, kconfig.NodePorts],
                    brokers: list[int], controllers: list[int]) -> _Node:
        home = self.run_dir / "nodes" / f"n{i}"
        (home / "logs").mkdir(parents=True, exist_ok=True)
        (home / "data").mkdir(parents=True, exist_ok=True)
        REAPER.register_dir(home / "data")
        is_broker = "broker" in roles
        cfg = kconfig.NodeConfig(
            node_id=i, roles=roles, ports=real[i], data_dir=home / "data",
            advertised_client=self._links.client(i).listen_port if is_broker else None,
            advertised_lanes={k: self._links.lane(k, i).listen_port for k in real[i].lanes},
            advertised_peers={k: (real[i].peers[k] if k == i else self._links.broker(k, i).listen_port)
                              for k in brokers} if is_broker else {},
            voters={j: (real[j].controller if j == i else self._links.controller(i, j).listen_port)
                    for j in controllers},
            replication_factor=self.spec.replication_factor,
            min_insync_replicas=self.spec.min_insync_replicas,
            internal_partitions=self.spec.internal_partitions,
            overrides=dict(self.spec.broker_overrides), sasl_users=dict(self.spec.sasl_users))
        config = home / "server.properties"
        config.write_text(kconfig.render(cfg, self.distribution.profile))
        (home / "log4j2.properties").write_text(kconfig.render_log4j2(home / "logs"))
        return _Node(i, roles, home, config, real[i])

    def _format_all(self) -> None:
        cluster_id = base64.urlsafe_b64encode(random.SystemRandom().randbytes(16)).decode().rstrip("=")
        features = [arg for f in self.distribution.profile.format_features() for arg in ("--feature", f)]

        tag = f"storage-format {id(self):x}"  # names this cluster's StorageTool processes

        def fmt(node: _Node) -> None:
            cmd = ["java", "-Xmx256m", "-XX:TieredStopAtLevel=1", "-cp", self.distribution.classpath,
                   "kafka.tools.StorageTool", "format", f"--cluster-id={cluster_id}", "-c", str(node.config), *features]
            try:
                proc = procs.run(f"{tag} n{node.node_id}", cmd, timeout=120, env={**os.environ, "KAFKA_LOG4J_OPTS": ""})
            except subprocess.TimeoutExpired:
                raise HarnessError(f"formatting storage of node {node.node_id} took over 120 s: "
                                   "check the machine's load") from None
            if proc.returncode != 0:
                tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
                raise HarnessError(f"formatting storage of node {node.node_id} failed: {tail[0]}")

        pool = ThreadPoolExecutor(max_workers=len(self._nodes), thread_name_prefix="storage-format")
        try:
            list(pool.map(fmt, self._nodes.values()))
        except BaseException:  # e.g. Ctrl-C: do not wait for the formats still running
            for proc in procs.live_processes():
                if proc.name.startswith(tag):
                    proc.kill()
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    def _dead_node(self) -> str | None:
        for node in self._nodes.values():
            if node.proc is not None and not node.proc.alive():
                return f"node {node.node_id} exited with code {node.proc.exit_code()} (see {node.home / 'logs'})"
        return None

    def _log_tails(self) -> str:
        parts = []
        for node in self._nodes.values():
            log = node.home / "logs" / "server.log"
            if log.exists():
                lines = [l for l in log.read_text(errors="replace").splitlines() if " ERROR " in l][-3:]
                parts += [f"  n{node.node_id}| {l[:300]}" for l in lines]
        return "\n".join(parts)


LogMark = tuple[int, int, bytes, int]
"""How far a log has been copied: (inode of the file read last, bytes of it copied, its first bytes,
its modification time then, ns). The first bytes tell the file from a later one that reused its
inode (a log line starts with a timestamp); the time tells rolled files written since from older ones."""
_HEAD = 256


def copy_new_log_bytes(src: Path, mark: LogMark | None, target: Path) -> LogMark:
    """Append to `target` what was written to log `src` since `mark` (all of it if None); the new mark.

    The log may have rolled meanwhile (log4j2 renames `server.log` to `server.log.1`, `.1` to `.2`,
    ...: renames keep the inode). The rest of the file last read is found by its inode (and first
    bytes) among the rolled files and copied first, then every newer rolled file, then the current
    log. If that file is gone (rolled past the kept ones, or the log was truncated or rewritten in
    place), the rolled files written since the mark and the whole current log are copied.
    """
    rolled = sorted((p for p in src.parent.glob(src.name + ".*") if p.name[len(src.name) + 1:].isdigit()),
                    key=lambda p: -int(p.name[len(src.name) + 1:]))  # oldest first
    with open(src, "rb") as current, open(target, "ab") as out:
        pieces: list[tuple[Path, int]] = []
        start = 0
        if mark is not None and _is_file(current, mark):
            start = mark[1]
        else:
            found = [i for i, p in enumerate(rolled) if mark is not None and _is_path(p, mark)]
            if mark is not None and found:
                i = found[-1]
                pieces = [(rolled[i], mark[1])] + [(p, 0) for p in rolled[i + 1:]]
            else:
                since = -1 if mark is None else mark[3]
                pieces = [(p, 0) for p in rolled if _mtime_ns(p) >= since]
        for path, offset in pieces:
            try:
                with open(path, "rb") as old:
                    old.seek(offset)
                    shutil.copyfileobj(old, out)
            except FileNotFoundError:  # rolled away while we read: best effort
                pass
        current.seek(start)
        shutil.copyfileobj(current, out)
        end = current.tell()
        info = os.fstat(current.fileno())
        current.seek(0)
        return info.st_ino, end, current.read(min(end, _HEAD)), info.st_mtime_ns


def _is_file(f, mark: LogMark) -> bool:
    """Whether open file `f` is the one `mark` was taken of (same inode, at least as long, same start)."""
    info = os.fstat(f.fileno())
    if info.st_ino != mark[0] or info.st_size < mark[1]:
        return False
    f.seek(0)
    return f.read(len(mark[2])) == mark[2]


def _is_path(path: Path, mark: LogMark) -> bool:
    try:
        with open(path, "rb") as f:
            return _is_file(f, mark)
    except OSError:
        return False


def _mtime_ns(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return -1
