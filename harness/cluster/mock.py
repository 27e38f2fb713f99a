"""The mock backend: librdkafka's mock cluster, the one confluent-kafka's wheel bundles, as the implementation
under test.

Many applications and client libraries test their share-consumer code against this mock instead of a broker.
`harness.cluster.rdmock` runs it as a process of its own (the library loaded with ctypes: nothing to
download, nothing to build); this module supervises that process through `harness.cluster.launcher`.

What the mock offers of the Cluster protocol (`harness.cluster.base`), and what it does not:
- `Cluster`: start, close, logs; Metadata (leaders, ISRs), so the inspector's read-only questions that
  ride on it;
- `LeaderMoves` (`harness.cluster.kfake`): a partition's leader moved, the group coordinators moved, with
  every broker up: the mock's own hooks;
- `InjectedFaults`: errors answered to the next requests of an API, a broker's answers delayed, a broker
  set down (its connections closed, new ones refused) and up again;
- `SelfAdministered`: the mock serves no CreateTopics, DescribeConfigs or IncrementalAlterConfigs (a request
  of them closes the connection), so the run's topics are made and its group's settings set through the
  launcher; its share-group settings are the cluster's, not one group's (`set_group_configs`);
- not `Killable`, `Pausable`, `Upgradable`, `Disks`: every broker is a thread of one process, its log in
  memory; not `Partitionable`, `ConsumerLanes`: each broker advertises its own listener;
- no `__share_group_state` and none of the share-group offset APIs: the durable-state property has nothing
  to read, so it is left out of every verdict and named there as not checked (`unchecked`).
Tests and faults that need what is missing are skipped with the reason (`UNSUPPORTED`).

On this backend `--kafka-version` names the Kafka release whose client API the harness expects; it defaults to
the release whose share-group API the mock serves (`MOCK_KAFKA_LEVEL`: v1 of each share RPC, no RENEW).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from harness.cluster.inspect import ClusterInspector
from harness.cluster.launcher import LaunchedCluster, Launcher
from harness.cluster.readiness import wait_share_consumable
from harness.errors import HarnessError
from harness.kafka import wire
from harness.kafka.implementations import MOCK, MOCK_KAFKA_LEVEL
from harness.timing import timed

#: What the mock lacks, by capability: the reason a test or fault that needs it is skipped.
UNSUPPORTED = {
    "process": "librdkafka's mock runs every broker as a thread of one process with its log in memory: a broker "
               "cannot be stopped, paused or killed alone, and a restart loses all state",
    "links": "the mock's brokers advertise the addresses they listen on, so no proxy can sit on a link",
    "state-topic": "the mock keeps share-group state in memory: no __share_group_state topic, no share "
                   "coordinator RPCs and none of the share-group offset APIs",
    "sasl": "the harness's mock backend starts no SASL listener",
    "admin": "the mock serves no Admin API beyond Metadata (no CreateTopics, DescribeConfigs, "
             "IncrementalAlterConfigs, DeleteRecords, DescribeCluster, ListGroups, ShareGroupDescribe or share-group "
             "offset requests: a request of them closes the connection)",
}

#: Kafka's group config names -> the launcher's command and how the value is read (the mock's share-group
#: settings; `limit`: the key of `harness.cluster.admin.LIMITS` it sets).
_GROUP_SETTINGS = {
    "share.record.lock.duration.ms": ("lock-duration", "lock_duration_ms"),
    "share.delivery.count.limit": ("delivery-limit", "delivery_count_limit"),
    "share.session.timeout.ms": ("session-timeout", "session_timeout_ms"),
    "share.heartbeat.interval.ms": ("heartbeat-interval", "heartbeat_interval_ms"),
    "share.auto.offset.reset": ("offset-reset", None),
    "share.isolation.level": ("isolation", None),
}
#: What a group's set-up sends for a setting it does not name: the mock's defaults (below), and the isolation
#: level and offset reset a Kafka group has unless set.
SETUP_DEFAULTS = {"share.record.lock.duration.ms": "30000", "share.delivery.count.limit": "5",
                  "share.session.timeout.ms": "45000", "share.heartbeat.interval.ms": "5000",
                  "share.auto.offset.reset": "latest", "share.isolation.level": "read_uncommitted"}
#: The mock's defaults (src/rdkafka_mock_sharegrp.c, rd_kafka_mock_sharegrps_init): what is in force until set.
DEFAULT_LIMITS = {"session_timeout_ms": 45000, "heartbeat_interval_ms": 5000, "delivery_count_limit": 5,
                  "lock_duration_ms": 30000}


#: What the mock logs (`mock.log` of the run): each request it handles and each share-group step it takes, the
#: evidence beside the history of what it did.
MOCK_DEBUG = "mock"


class NotServed(HarnessError):
    """A setting the mock has no equivalent of (a group config it does not know, a value it cannot take): what
    needs it cannot be exercised on the mock (a conformance test is skipped with this reason)."""


#: The values of the named settings the mock takes (the others it refuses).
_VALUES = {"share.auto.offset.reset": ("earliest", "latest"), "share.isolation.level": ("read_uncommitted",
                                                                                          "read_committed")}


class MetadataInspector(ClusterInspector):
    """The inspector's questions as the mock can answer them: its brokers from Metadata (it serves no
    DescribeCluster)."""

    def broker_ids(self) -> list[int]:
        return sorted(self.admin.list_topics(timeout=self.timeout).brokers)


class LibrdkafkaMock(LaunchedCluster):
    """An N-broker mock cluster in one supervised launcher process: a `Cluster` with `LeaderMoves`,
    `InjectedFaults` and `SelfAdministered`; a context manager (`__enter__` starts it, `__exit__` closes it)."""

    LOG = "mock"
    implementation = MOCK
    unchecked = {"durable-state": UNSUPPORTED["state-topic"]}
    no_admin = UNSUPPORTED["admin"]

    def __init__(self, run_dir: Path, *, brokers: int = 3, version: str = MOCK_KAFKA_LEVEL,
                 timeout: float = 60.0, group_configs: dict[str, str] | None = None) -> None:
        self.run_dir = run_dir
        self.brokers = brokers
        self.version = version
        self.timeout = timeout
        #: cluster-wide share-group settings applied at start (the conformance suite's own-cluster overrides)
        self.group_configs = dict(group_configs or {})
        self._bootstraps = ""
        self._launcher = Launcher("rdmock", "the librdkafka mock launcher", self.log_path)
        self._inspector: ClusterInspector | None = None
        self._limits = dict(DEFAULT_LIMITS)
        self._coordinators: dict[str, int] = {}  # the share groups set up here -> their coordinator
        self.reported_version: str | None = None

    # -- Cluster --------------------------------------------------------------------------------
    @property
    def bootstrap_servers(self) -> str:
        return self._bootstraps

    @property
    def broker_ids(self) -> list[int]:
        return list(range(1, self.brokers + 1))  # the mock numbers its brokers 1..N

    @timed("cluster")
    def start(self) -> None:
        """Start the launcher, wait for its ready line, then until a share group consumes a record. A start
        that fails (or is interrupted) part-way leaves nothing running."""
        try:
            ready = self._launcher.start([sys.executable, "-m", "harness.cluster.rdmock", "--brokers",
                                          str(self.brokers), "--debug", MOCK_DEBUG], self.timeout)
            self._bootstraps = str(ready.get("bootstraps") or "")
            self.reported_version = ready.get("librdkafka")
            if not self._bootstraps:
                raise HarnessError(f"the librdkafka mock launcher gave no bootstraps: {ready}")
            self._limits = dict(DEFAULT_LIMITS)
            self.set_group_configs("", self.group_configs)
            self._inspector = MetadataInspector(self.bootstrap_servers)
            wait_share_consumable(self.bootstrap_servers, self._inspector, timeout=self.timeout,
                                  replication_factor=1, fatal=self._launcher.died, administer=self._ready_topic)
        except BaseException:
            self.close()
            raise

    def _ready_topic(self, topic: str, group: str) -> None:
        self.create_topic(topic, 1, 1)
        self.set_group_configs(group, {"share.auto.offset.reset": "earliest"})

    @timed("cluster")
    def close(self) -> None:
        """Drop the inspector's client, close the launcher (it destroys the mock and exits). Safe twice."""
        self._inspector = None
        self._launcher.close()
        self._bootstraps = ""

    # -- SelfAdministered -----------------------------------------------------------------------
    def create_topic(self, topic: str, partitions: int, replication_factor: int) -> None:
        self._command(f"topic-create {topic} {partitions} {min(replication_factor, self.brokers)}")

    def set_group_configs(self, group: str, configs: dict[str, str]) -> dict[str, int]:
        """The mock's share-group settings are the cluster's: setting them for `group` sets them for every
        group (those made later, for the session timeout and heartbeat interval), which the harness's one
        group per run never tells apart. So a group's set-up sends every setting, the mock's defaults for those
        not given, and no group inherits the one before's (`group` "": only what is given). A config the mock
        has no setting for is refused in one line."""
        if group:
            configs = {**SETUP_DEFAULTS, **configs}
        unknown = sorted(set(configs) - set(_GROUP_SETTINGS))
        if unknown:
            raise NotServed(f"the librdkafka mock has no setting for group config {', '.join(unknown)}: it sets "
                               f"only {', '.join(_GROUP_SETTINGS)}; leave {', '.join(unknown)} out on the mock backend")
        for name, value in configs.items():
            if name in _VALUES and value not in _VALUES[name]:
                raise NotServed(f"the librdkafka mock takes {name} {' or '.join(_VALUES[name])} only, not {value!r}")
        for name, value in configs.items():
            command, limit = _GROUP_SETTINGS[name]
            self._command(f"{command} {value}")
            if limit is not None:
                self._limits[limit] = int(value)
        if group and group not in self._coordinators:  # placed by the harness, so a rehash knows where it is
            self._command(f"coordinator {group} {self.broker_ids[0]}")
            self._coordinators[group] = self.broker_ids[0]
        return dict(self._limits)

    # -- LeaderMoves ----------------------------------------------------------------------------
    def move_leader(self, topic: str, partition: int, node_id: int) -> None:
        self._command(f"leader {topic} {partition} {node_id}")

    def rehash_coordinators(self) -> None:
        """Every group set up here to the next broker's coordinator (the mock moves one group key at a time;
        the harness placed each, so it knows where each is: the mock's FindCoordinator is v0-3, one key)."""
        ids = self.broker_ids
        for group, now in list(self._coordinators.items()):
            after = ids[(ids.index(now) + 1) % len(ids)]
            self._command(f"coordinator {group} {after}")
            self._coordinators[group] = after

    def leader_of(self, topic: str, partition: int) -> int | None:
        return self.inspector.leader_of(topic, partition)

    # -- InjectedFaults -------------------------------------------------------------------------
    def push_request_errors(self, api_key: int, codes: list[int]) -> None:
        self._command(f"errors {api_key} {','.join(str(code) for code in codes)}")

    def clear_request_errors(self, api_key: int) -> None:
        self._command(f"errors-clear {api_key}")

    def set_rtt(self, broker: int, ms: int) -> None:
        self._command(f"rtt {broker} {ms}")

    def set_broker_down(self, broker: int, down: bool) -> None:
        self._command(f"broker-{'down' if down else 'up'} {broker}")

    def injected_closes(self) -> int:
        try:
            with open(self.log_path, "rb") as log:
                return sum(line.count(b"Forcing close of connection") for line in log)
        except OSError:
            return 0

    def _command(self, line: str) -> dict[str, Any]:
        return self._launcher.command(line, "ok", refused="the librdkafka mock")


#: The ApiVersions versions the check below asks with: one the mock serves none of (4: Java 4.x and franz-go
#: open with it) and the first flexible one (3: librdkafka opens with it; the mock serves 0-2).
PROBED_API_VERSIONS = (4, 3)


def apiversions_answer_deviation(bootstrap: str) -> str | None:
    """The evidence of deviation `apiversions-unsupported-answer-malformed` on a running mock (None when it
    answers as Kafka does). Kafka treats an ApiVersions request of a version it does not serve as a v0 request
    and answers ApiVersionsResponse v0 with error UNSUPPORTED_VERSION and its ApiVersions range
    (clients/.../requests/RequestContext.java: "Unsupported ApiVersion requests are treated as v0 requests"),
    so a client retries with a version it names there."""
    host, port = wire.addresses(bootstrap)[0]
    seen = []
    for version in PROBED_API_VERSIONS:
        body = wire.api_versions_answer(port, version, host=host)
        if wire.v0_unsupported_answer(body):
            return None
        seen.append(f"v{version} answered {body.hex()} ({len(body)} bytes)")
    return ("ApiVersions requests of versions the mock does not serve were not answered as ApiVersionsResponse v0: "
            + "; ".join(seen) + " (error 35, then a one-byte entry count, not v0's 4-byte array)")
