"""Read-only questions about a cluster, answered through the Admin API.

Which broker leads a topic-partition, which broker is a share group's group
coordinator, which broker is the share coordinator of a share-partition (the
leader of the `__share_group_state` partition that holds its state). The
partition formulas are Kafka's own: `Utils.abs(groupId.hashCode()) % n`
(GroupCoordinatorService.partitionFor) and `Utils.abs("group:topicId:partition"
.hashCode()) % n` (ShareCoordinatorService.partitionFor). Works for any backend.
"""

from __future__ import annotations

from dataclasses import dataclass

from confluent_kafka import KafkaError, KafkaException, TopicCollection
from confluent_kafka.admin import AdminClient

from harness.clients.logging import client_logging

OFFSETS_TOPIC = "__consumer_offsets"
SHARE_STATE_TOPIC = "__share_group_state"


def java_string_hash(text: str) -> int:
    """Java's `String.hashCode()` (UTF-16 code units, 32-bit overflow)."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + int.from_bytes(data[i:i + 2], "big")) & 0xFFFFFFFF
    return h - (1 << 32) if h >= (1 << 31) else h


def kafka_abs(value: int) -> int:
    """Kafka's `Utils.abs`: Integer.MIN_VALUE maps to 0."""
    return 0 if value == -(1 << 31) else abs(value)


def group_partition(group_id: str, partitions: int) -> int:
    return kafka_abs(java_string_hash(group_id)) % partitions


def share_state_partition(group_id: str, topic_id: str, partition: int, partitions: int) -> int:
    return kafka_abs(java_string_hash(f"{group_id}:{topic_id}:{partition}")) % partitions


@dataclass(frozen=True)
class PartitionState:
    """One partition as the cluster's metadata reports it (leader None while it has none)."""

    id: int
    leader: int | None
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


class ClusterInspector:
    """Admin-API queries; never changes the cluster.

    Partition state comes from Metadata requests (any live broker answers), not
    DescribeTopics, which librdkafka routes through the controller id a broker
    reported: after that node is killed it times out until a refresh.
    """

    def __init__(self, bootstrap_servers: str, timeout: float = 10.0) -> None:
        self.timeout = timeout
        self._bootstrap = bootstrap_servers
        self.admin = self._new_admin()
        self._topic_ids: dict[str, str] = {}

    def _new_admin(self) -> AdminClient:
        return AdminClient({"bootstrap.servers": self._bootstrap,
                            "socket.timeout.ms": int(self.timeout * 1000), **client_logging()})

    def broker_ids(self) -> list[int]:
        """Brokers currently registered (and fenced-out ones excluded) as the cluster reports.

        librdkafka sends DescribeCluster to the controller id a broker once reported (in KRaft, any live
        broker); when that node was paused or killed the call times out until a metadata refresh, which
        has taken longer than two minutes after a SIGCONT. A failed call therefore replaces the client:
        the next one bootstraps again and asks a broker that answers now.
        """
        try:
            desc = self.admin.describe_cluster(request_timeout=self.timeout).result()
        except KafkaException:
            self.admin = self._new_admin()
            raise
        return sorted(node.id for node in desc.nodes)

    def partitions(self, topic: str) -> list[PartitionState]:
        """Every partition of `topic`, by id (raises KafkaException if the topic is unknown)."""
        import time
        deadline = time.monotonic() + self.timeout
        while True:  # a broker that has not caught up with a new topic's metadata answers "unknown" for a moment
            meta = self.admin.list_topics(topic, timeout=self.timeout).topics.get(topic)
            if meta is not None and meta.error is None:
                break
            if time.monotonic() >= deadline:
                raise KafkaException(meta.error if meta is not None else f"unknown topic {topic}")
            time.sleep(0.2)
        return [PartitionState(p.id, p.leader if p.leader >= 0 else None, tuple(p.replicas), tuple(sorted(p.isrs)))
                for p in sorted(meta.partitions.values(), key=lambda p: p.id)]

    def seen_by(self, bootstrap: str, topic: str, partition: int) -> PartitionState:
        """The partition as the broker at `bootstrap` alone reports it (a fresh client knows only that
        broker), e.g. to ask a majority broker while another one is isolated and answers stale metadata."""
        admin = AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": int(self.timeout * 1000),
                             **client_logging()})
        meta = admin.list_topics(topic, timeout=self.timeout).topics.get(topic)
        if meta is None or meta.error is not None or partition not in meta.partitions:
            raise KafkaException(f"broker at {bootstrap} does not know {topic}-{partition}")
        p = meta.partitions[partition]
        return PartitionState(p.id, p.leader if p.leader >= 0 else None, tuple(p.replicas), tuple(sorted(p.isrs)))

    def partition(self, topic: str, partition: int) -> PartitionState:
        for p in self.partitions(topic):
            if p.id == partition:
                return p
        raise KafkaException(f"{topic} has no partition {partition}")

    def topic_id(self, topic: str) -> str:
        """The topic's id (DescribeTopics). Like `partitions`, it waits out a broker that has not caught up with a
        new topic's metadata (seen in CI: UNKNOWN_TOPIC_OR_PART for a topic another broker had just shown led)."""
        import time
        deadline = time.monotonic() + self.timeout
        while topic not in self._topic_ids:
            futures = self.admin.describe_topics(TopicCollection([topic]), request_timeout=self.timeout)
            try:
                self._topic_ids[topic] = str(futures[topic].result().topic_id)
            except KafkaException as exc:
                error = exc.args[0] if exc.args else None
                unknown = getattr(error, "code", lambda: None)() == KafkaError.UNKNOWN_TOPIC_OR_PART
                if not unknown or time.monotonic() >= deadline:
                    raise
                time.sleep(0.2)
        return self._topic_ids[topic]

    def leader_of(self, topic: str, partition: int) -> int | None:
        """Id of the leader of topic-partition, or None while it has none."""
        return self.partition(topic, partition).leader

    def isr_of(self, topic: str, partition: int) -> list[int]:
        return list(self.partition(topic, partition).isr)

    def all_led(self, topic: str, min_isr: int = 1) -> bool:
        """True if every partition of `topic` has a leader and at least `min_isr` in-sync replicas."""
        parts = self.partitions(topic)
        return bool(parts) and all(p.leader is not None and len(p.isr) >= min_isr for p in parts)

    def group_coordinator(self, group_id: str) -> int | None:
        """The broker coordinating share group `group_id` (leader of its __consumer_offsets partition)."""
        n = len(self.partitions(OFFSETS_TOPIC))
        return self.leader_of(OFFSETS_TOPIC, group_partition(group_id, n))

    def share_coordinator(self, group_id: str, topic: str, partition: int) -> int | None:
        """The share coordinator of share-partition (group, topic, partition)."""
        return self.leader_of(SHARE_STATE_TOPIC, self.share_state_partition(group_id, topic, partition))

    def share_state_partition(self, group_id: str, topic: str, partition: int) -> int:
        """The `__share_group_state` partition that holds share-partition (group, topic, partition)'s state."""
        n = len(self.partitions(SHARE_STATE_TOPIC))
        return share_state_partition(group_id, self.topic_id(topic), partition, n)
