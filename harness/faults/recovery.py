"""Observing recovery: every partition led with a full ISR, leaders back on their preferred replicas.

`auto.leader.rebalance.enable` is off in the harness's configs, so leadership
moves only when a fault moves it; a heal moves it back explicitly (a
preferred-replica election), inside the fault's window in the history.
"""

from __future__ import annotations

from confluent_kafka import ElectionType, KafkaException, TopicPartition

from harness.cluster.base import implementation_of
from harness.cluster.inspect import OFFSETS_TOPIC, SHARE_STATE_TOPIC
from harness.faults.base import FaultContext
from harness.kafka import wire
from harness.kafka.wire import PartitionMeta
from harness.sys.wait import wait_until

INTERNAL = (OFFSETS_TOPIC, SHARE_STATE_TOPIC)


def topics_of(ctx: FaultContext) -> list[str]:
    """The test topic and Apache Kafka's internal topics (kfake keeps its groups' state in memory: none)."""
    internal = list(INTERNAL) if implementation_of(ctx.cluster) == "apache" else []
    return ([ctx.topic] if ctx.topic else []) + internal


def partition_metadata(ctx: FaultContext, topic: str | None, partition: int) -> PartitionMeta | None:
    """`topic`-`partition` as the first live broker to answer our own Metadata v7 request reports it
    (leader epoch and offline replicas, which the Admin API does not give); None if none answers."""
    for host, port in wire.addresses(ctx.cluster.bootstrap_servers):
        try:
            found = wire.partition_metadata(port, topic or "", timeout=3.0, host=host)
        except (OSError, ValueError):
            continue
        if partition in found:
            return found[partition]
    return None


def in_sync(ctx: FaultContext, topics: list[str]) -> bool:
    """Every partition of `topics` has a live leader and all its replicas in sync."""
    live = set(ctx.cluster.broker_ids)
    for topic in topics:
        for p in ctx.inspector.partitions(topic):
            if p.leader is None or p.leader not in live:
                return False
            if len(p.isr) < len(p.replicas):
                return False
    return True


def wait_in_sync(ctx: FaultContext, timeout: float | None = None, topics: list[str] | None = None) -> None:
    topics = topics or topics_of(ctx)
    registered = sorted(ctx.cluster.broker_ids)
    # A broker SIGKILLed and started again recovers every log before it registers: on two loaded cores,
    # with another cluster restarting beside it, that has taken 51 s (116 logs recovered in 13 s, the JVM
    # itself slow to start), so registration gets twice the fault timeout.
    wait_until(lambda: ctx.inspector.broker_ids() == registered, timeout=2 * (timeout or ctx.timeout),
               what=f"brokers {registered} to be registered", interval=0.3)
    wait_until(lambda: in_sync(ctx, topics), timeout=timeout or ctx.timeout,
               what=f"every partition of {', '.join(topics)} to have a leader and a full ISR", interval=0.3)


def off_preferred(ctx: FaultContext, topics: list[str]) -> list[TopicPartition]:
    out = []
    for topic in topics:
        for p in ctx.inspector.partitions(topic):
            if p.replicas and p.leader != p.replicas[0]:
                out.append(TopicPartition(topic, p.id))
    return out


def restore_preferred_leaders(ctx: FaultContext, timeout: float | None = None) -> list[str]:
    """Elect preferred leaders where needed and wait until they lead; returns what moved."""
    topics = topics_of(ctx)
    moved = off_preferred(ctx, topics)
    if not moved:
        return []

    def elect() -> bool:
        todo = off_preferred(ctx, topics)
        if not todo:
            return True
        try:
            ctx.inspector.admin.elect_leaders(ElectionType.PREFERRED, todo).result()
        except KafkaException:
            pass  # ELECTION_NOT_NEEDED / a replica still catching up: look again
        return not off_preferred(ctx, topics)

    wait_until(elect, timeout=timeout or ctx.timeout, what="preferred leaders to lead again", interval=0.5)
    return [f"{tp.topic}-{tp.partition}" for tp in moved]
