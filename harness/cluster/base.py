"""The `Cluster` protocol and its optional capabilities.

A fault asks for a capability (`isinstance(cluster, Killable)`) instead of
assuming it: the external backend has none, the local backend has them all.
Every protocol is `runtime_checkable`, so `isinstance` is how code tells what a
backend offers (never `hasattr`); each lists every member its users call. Before
Python 3.12 `isinstance` reads each member (properties included), so a backend's
properties must be cheap and free of side effects, and raise AttributeError while
they have no value (a LocalCluster's `inspector` and `distribution` before `start`).

Both backends are context managers: `with LocalCluster(spec, run_dir) as cluster:`
starts the cluster and closes it however the block ends.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from harness.cluster.inspect import ClusterInspector
    from harness.kafka.jars import KafkaDistribution
    from harness.proxy.client import ToxiproxyClient
    from harness.proxy.links import LinkMap


@runtime_checkable
class Cluster(Protocol):
    """A running Kafka cluster with share groups enabled.

    `start` must return only when every broker is registered and share groups
    can consume; `close` must release every process, port and temp dir the
    backend created and must be safe to call twice. As a context manager,
    `__enter__` starts it (and returns it) and `__exit__` closes it.
    """

    version: str

    @property
    def bootstrap_servers(self) -> str: ...

    @property
    def broker_ids(self) -> list[int]: ...

    @property
    def inspector(self) -> ClusterInspector:
        """Read-only Admin API questions (leaders, ISRs, coordinators) about this cluster."""
        ...

    def start(self) -> None: ...

    def close(self) -> None: ...

    def collect_logs(self, dest: Path) -> list[Path]:
        """Copy every node's log into `dest`; must not fail the run if a log is missing."""
        ...

    def __enter__(self) -> Cluster: ...

    def __exit__(self, *exc_info: Any) -> None: ...


@runtime_checkable
class Nodes(Protocol):
    """The backend knows its nodes by role: `broker_ids` (of `Cluster`) and `controller_ids` (a node in
    combined mode is in both). The base of every capability that acts on nodes."""

    @property
    def controller_ids(self) -> list[int]: ...


@runtime_checkable
class Killable(Nodes, Protocol):
    """Nodes can be stopped (SIGTERM), killed (SIGKILL) and started again."""

    def stop_node(self, node_id: int) -> None: ...

    def kill_node(self, node_id: int) -> None: ...

    def start_node(self, node_id: int, wait: bool = True) -> None:
        """Start the node's process unless it runs; with `wait`, until it serves and brokers are registered."""
        ...

    def restart_node(self, node_id: int) -> None: ...

    def node_alive(self, node_id: int) -> bool: ...

    def node_pid(self, node_id: int) -> int | None:
        """The pid of the node's running process (None if it does not run): tells a new process from the old."""
        ...

    def wait_ready(self, timeout: float | None = None) -> None:
        """After nodes were started with `wait=False`: every broker registered and a share group consumes."""
        ...


@runtime_checkable
class Upgradable(Killable, Protocol):
    """Nodes can move to a newer Kafka release one by one (a rolling upgrade), then the cluster's
    features are finalised at that release's levels."""

    def upgrade_unsupported(self) -> str:
        """Why this backend cannot move nodes to another release ("" when it can)."""
        ...

    def node_version(self, node_id: int) -> str: ...

    def reported_version(self, node_id: int) -> str | None:
        """The release the node's own log reported at its last start ("Kafka version: ..."), if any."""
        ...

    def upgrade_node(self, node_id: int, version: str, on_stopped: Any = None) -> str:
        """Stop the node, start it on `version`'s jars with its data kept; the version it ran before.
        `on_stopped()` is called once the old process has exited."""
        ...

    def finish_upgrade(self, release: str) -> str:
        """Every node on one release: finalise the features (`--release-version <release>`)."""
        ...

    def features(self) -> dict[str, Any]:
        """Feature name -> its supported range and finalised level."""
        ...


@runtime_checkable
class Disks(Nodes, Protocol):
    """A broker's log directories can fail (the disk under one goes) and be replaced by new disks."""

    def log_dirs(self, node_id: int) -> list[Path]:
        """The node's log directories (JBOD: more than one lets one fail without halting the broker)."""
        ...

    def fail_log_dir(self, node_id: int, path: Path) -> None: ...

    def replace_log_dir(self, node_id: int, path: Path) -> None:
        """A new, empty and formatted directory at `path`; the node must be stopped."""
        ...


@runtime_checkable
class Pausable(Nodes, Protocol):
    """Nodes can be frozen (SIGSTOP) and thawed (SIGCONT)."""

    def pause_node(self, node_id: int) -> None: ...

    def resume_node(self, node_id: int) -> None: ...


@runtime_checkable
class Partitionable(Nodes, Protocol):
    """Every directed link runs through its own Toxiproxy proxy: links can be cut, healed and degraded."""

    @property
    def links(self) -> LinkMap: ...

    @property
    def toxiproxy(self) -> ToxiproxyClient:
        """The Toxiproxy client, for toxics beyond cut and heal (latency, bandwidth, reset_peer...)."""
        ...

    def cut(self, link_name: str) -> None: ...

    def heal(self, link_name: str) -> None: ...

    def heal_all(self) -> None: ...


@runtime_checkable
class Installed(Protocol):
    """The backend runs a Kafka release the harness installed: its jars run the Java admin tools
    (`harness.cluster.java_admin`: the active controller) and the Java driver."""

    @property
    def distribution(self) -> KafkaDistribution: ...


@runtime_checkable
class ConsumerLanes(Protocol):
    """Consumers connect through lanes: consumer `index` through lane `lane_of(index)` (its own listeners
    and proxies), so a fault can cut one consumer off one broker. Without lanes, `lane_of` is None and
    `consumer_bootstrap` the shared bootstrap servers."""

    def consumer_bootstrap(self, index: int) -> str: ...

    def lane_of(self, index: int) -> int | None: ...


@runtime_checkable
class SaslListeners(Protocol):
    """Brokers may have a SASL/PLAIN listener: its bootstrap servers, or None when there is none."""

    @property
    def sasl_bootstrap_servers(self) -> str | None: ...


@runtime_checkable
class SelfAdministered(Protocol):
    """The implementation serves no Admin API for what a run sets up (librdkafka's mock: no CreateTopics, no
    group configs): its topics are made, and its share groups set, through its own launcher. What a run would
    ask the Admin API it asks here; what the implementation cannot set is refused in one line."""

    def create_topic(self, topic: str, partitions: int, replication_factor: int) -> None: ...

    def set_group_configs(self, group: str, configs: dict[str, str]) -> dict[str, int]:
        """Apply `configs` (Kafka's group config names) to `group`; the limits in force on it afterwards
        (`harness.cluster.admin.LIMITS`' keys)."""
        ...


@runtime_checkable
class InjectedFaults(Protocol):
    """The implementation injects faults into its own brokers on request (librdkafka's mock): errors answered
    to the next requests of an API, a broker's answers delayed, a broker's connections closed."""

    def push_request_errors(self, api_key: int, codes: list[int]) -> None: ...

    def clear_request_errors(self, api_key: int) -> None:
        """Drop the errors pushed for `api_key` that no request has met yet."""
        ...

    def set_rtt(self, broker: int, ms: int) -> None: ...

    def set_broker_down(self, broker: int, down: bool) -> None: ...

    def injected_closes(self) -> int:
        """How many connections the implementation has closed on an injected error so far (its own log)."""
        ...


def unchecked_of(cluster: Cluster) -> dict[str, str]:
    """The properties the implementation gives nothing to check (property -> why; none for Apache Kafka): each
    is left out of a run's verdict and named there as not checked (never counted a pass)."""
    return dict(getattr(type(cluster), "unchecked", {}))


def implementation_of(cluster: Cluster) -> str:
    """The implementation of KIP-932 `cluster` runs: "apache" (Kafka's brokers, any backend) unless the backend
    names another in its class attribute `implementation` (kfake: `harness.cluster.kfake`)."""
    return getattr(type(cluster), "implementation", "apache")


def node_ids(cluster: Cluster) -> list[int]:
    """Every node of `cluster`, sorted: its brokers, and its controllers where it knows them (`Nodes`)."""
    controllers = cluster.controller_ids if isinstance(cluster, Nodes) else []
    return sorted(set(cluster.broker_ids) | set(controllers))
