"""The kfake backend: franz-go's kfake, an in-memory Kafka-compatible cluster, as the implementation under test.

kfake (`github.com/twmb/franz-go/pkg/kfake`) is a Go library; `harness/go/kfakelauncher` wraps it in
a program that serves N brokers on loopback ports the harness chose, prints a ready line, answers a few
commands on stdin (leaders, coordinators) and exits when its stdin closes, so it never outlives the
harness. The launcher is built with `go build` at setup (`harness.sys.gobuild`), once per kfake version:
the version is pinned and selectable (`harness.kafka.implementations`), like Kafka's.

What kfake offers of the Cluster protocol (`harness.cluster.base`), and what it does not:
- `Cluster`: start, close, logs, the Admin API questions (kfake answers Metadata, DescribeCluster,
  CreateTopics, IncrementalAlterConfigs, the share-group admin requests);
- `LeaderMoves` (this module): a partition's leader moved to another broker and the group coordinators
  rehashed, with every broker up: kfake's own fault hooks;
- not `Killable`, `Pausable`, `Upgradable`, `Disks`: one process holds every broker, in memory, so
  a broker cannot be stopped alone and a restart loses everything (no state to recover);
- not `Partitionable`, `ConsumerLanes`: each broker advertises the address it listens on, so a proxy
  in front of it would be bypassed by the first Metadata answer;
- no `__share_group_state`: kfake keeps share state in memory and has no share coordinator RPCs.
Tests and faults that need what is missing are skipped with the reason (`unsupported`).

On this backend `--kafka-version` names the Kafka release whose client API the harness expects (its
config names, its clients' jars); it defaults to the release whose share-group API kfake serves
(`KFAKE_KAFKA_LEVEL`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from harness.cluster.inspect import ClusterInspector
from harness.cluster.readiness import wait_share_consumable
from harness.cluster.launcher import LaunchedCluster, Launcher
from harness.errors import HarnessError
from harness.kafka.implementations import KFAKE_KAFKA_LEVEL, KFAKE_MODULE, KFAKE_VERSION, check_kfake_version
from harness.sys import ports as portreg
from harness.sys.gobuild import GO_SOURCES, build_go
from harness.sys.paths import cache_dir
from harness.timing import timed

#: The Go module of the launcher.
SOURCE = GO_SOURCES / "kfakelauncher"
#: Broker configs: the lock sweep runs every 5 s by default, so an expired lock could stay held up to
#: 5 s past its deadline (100 ms keeps kfake's lock expiry within the checkers' tolerance); the cleaner of
#: compacted topics runs hourly by default (every second on the harness's Apache brokers too).
BROKER_CONFIGS = {"share.record.lock.sweep.interval.ms": "100", "log.cleaner.backoff.ms": "1000"}

#: What kfake lacks, by capability: the reason a test or fault that needs it is skipped.
UNSUPPORTED = {
    "process": "kfake runs every broker in one process with its state in memory: a broker cannot be stopped, "
               "paused or killed alone, and a restart loses all state",
    "links": "kfake's brokers advertise the addresses they listen on, so no proxy can sit on a link",
    "state-topic": "kfake keeps share-group state in memory: no __share_group_state topic and no share "
                   "coordinator RPCs",
    "sasl": "the harness's kfake backend starts no SASL listener (kfake's SASL covers every listener, and the "
            "harness's own clients speak PLAINTEXT as a super user)",
}


def build_kfake_launcher(cache: Path, version: str = KFAKE_VERSION) -> Path:
    """The launcher binary for `version` of kfake (go.mod's pin, or `go get` of another version)."""
    pins = () if version == KFAKE_VERSION else (f"{KFAKE_MODULE}@{check_kfake_version(version)}",)
    return build_go(cache, SOURCE, "kfakelauncher", f"the kfake launcher (kfake {version})", pins=pins)


@runtime_checkable
class LeaderMoves(Protocol):
    """The implementation moves a partition's leader, or group coordinators, on request (no broker stops)."""

    def move_leader(self, topic: str, partition: int, node_id: int) -> None: ...

    def rehash_coordinators(self) -> None: ...

    def leader_of(self, topic: str, partition: int) -> int | None:
        """The partition's leader as the implementation holds it (None: no such partition)."""
        ...


class KfakeCluster(LaunchedCluster):
    """A kfake cluster of `brokers` brokers in one supervised launcher process: a `Cluster` with
    `LeaderMoves`; a context manager (`__enter__` starts it, `__exit__` closes it)."""

    LOG = "kfake"
    implementation = "kfake"

    def __init__(self, run_dir: Path, *, brokers: int = 3, version: str = KFAKE_KAFKA_LEVEL,
                 kfake_version: str = KFAKE_VERSION, base_port: int | None = None, timeout: float = 60.0,
                 broker_configs: dict[str, str] | None = None, cache: Path | None = None) -> None:
        self.run_dir = run_dir
        self.brokers = brokers
        self.version = version
        self.kfake_version = check_kfake_version(kfake_version)
        self.base_port = base_port
        self.timeout = timeout
        self.broker_configs = {**BROKER_CONFIGS, **(broker_configs or {})}
        self._cache = cache
        self._ports: list[int] = []
        self._launcher = Launcher("kfake", "the kfake launcher", self.log_path)
        self._inspector: ClusterInspector | None = None
        self.reported_version: str | None = None

    # -- Cluster --------------------------------------------------------------------------------
    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"127.0.0.1:{port}" for port in self._ports)

    @property
    def broker_ids(self) -> list[int]:
        return list(range(self.brokers))  # kfake numbers its brokers 0..N-1

    @timed("cluster")
    def start(self) -> None:
        """Build (or find) the launcher, start it on fresh loopback ports, wait for its ready line, then
        until a share group consumes a record (`harness.cluster.readiness`). A start that fails (or is
        interrupted) part-way leaves nothing running: the launcher is stopped and its ports freed."""
        binary = build_kfake_launcher(self._cache or cache_dir(), self.kfake_version)
        try:
            self._start(binary)
        except BaseException:
            self.close()
            raise

    def _start(self, binary: Path) -> None:
        self._ports = portreg.allocate(self.brokers, self.base_port)
        args = [str(binary), "--ports", ",".join(map(str, self._ports))]
        for key, value in sorted(self.broker_configs.items()):
            args += ["--config", f"{key}={value}"]
        ready = self._launcher.start(args, self.timeout)
        self.reported_version = ready.get("kfake")
        if self.reported_version != self.kfake_version:  # the build is what is under test: never another one
            raise HarnessError(f"the kfake launcher runs kfake {self.reported_version}, not {self.kfake_version}: "
                               f"remove {binary.parent} and run `share-harness setup --kfake-version "
                               f"{self.kfake_version}`")
        self._inspector = ClusterInspector(self.bootstrap_servers)
        wait_share_consumable(self.bootstrap_servers, self._inspector, timeout=self.timeout,
                              replication_factor=min(3, self.brokers), fatal=self._launcher.died)

    @timed("cluster")
    def close(self) -> None:
        """Drop the Admin client (a client left reconnecting to a stopped cluster is what aborted workers on
        Kafka), close the launcher's stdin (it closes kfake and exits), stop it if it does not, close its
        output and free the ports. Safe to call twice."""
        self._inspector = None
        self._launcher.close()
        if self._ports:
            portreg.release(self._ports)
            self._ports = []

    # -- LeaderMoves ----------------------------------------------------------------------------
    def move_leader(self, topic: str, partition: int, node_id: int) -> None:
        self._command(f"move {topic} {partition} {node_id}", "ok")

    def rehash_coordinators(self) -> None:
        self._command("rehash-coordinators", "ok")

    def leader_of(self, topic: str, partition: int) -> int | None:
        leader = self._command(f"leader {topic} {partition}", "leader")["leader"]
        return None if leader < 0 else leader

    def _command(self, line: str, key: str) -> dict[str, Any]:
        return self._launcher.command(line, key, refused="kfake")
