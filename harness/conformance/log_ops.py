"""A conformance session's operations on the log: producing (plain, keyed, transactional), growing the
topic, compaction, deleting records, and reading what the log holds. Each is recorded in the
session's history where the checkers need it (`records-compacted`, `records-deleted`,
`transaction`). Mixed into `harness.conformance.session.ShareSession`, whose fields it uses
(cluster, spec, history, topic)."""

from __future__ import annotations

from harness.cluster.base import SelfAdministered
from harness.conformance.outcomes import needs_admin_api
from harness.errors import HarnessError
from harness.sys.wait import wait_until


class LogOperations:
    """Producing and the log (see the module docstring); needs the session's fields."""

    def _writer(self):
        """The session's current producer (a new one after the topic grew)."""
        from harness.clients.producer import HistoryProducer  # (deferred: loads confluent_kafka)
        if self._producer is None:
            self._producer = HistoryProducer(self.cluster.bootstrap_servers, self.history,
                                             process=f"producer-{self._producers}", extra=self.producer_config)
        return self._producer

    def _next_id(self) -> str:
        rid = f"{self.spec.seed}-{self._produced}"
        self._produced += 1
        return rid

    def produce(self, count: int, partition: int | None = 0, timestamp_ms: int | None = None,
                topic: str | None = None) -> list[str]:
        """Produce `count` records (to `partition`, or spread by the seed) and wait until all are written;
        `timestamp_ms`: their CreateTime (default: now); `topic`: a topic of `second_topic` instead of the
        session's (record ids stay unique across both)."""
        import random
        producer = self._writer()
        rng = random.Random(self.spec.seed * 7919 + self._produced)
        ids, topic = [], topic or self.topic
        for _ in range(count):
            rid = self._next_id()
            part = partition if partition is not None else rng.randrange(self.spec.topic_partitions)
            producer.produce(topic, rid, partition=part, timestamp_ms=timestamp_ms)
            ids.append(rid)
        if producer.flush(60):
            raise HarnessError(f"{topic}: records not written within 60 s")
        return ids

    def second_topic(self) -> str:
        """Create a second topic for the session's group (`<topic>-2`, one partition, every replica as the
        session's), wait until it is led, and return its name: a test of the subscription moves a consumer
        to it. The group's configs apply to it as to the session's topic (they are the group's)."""
        from harness.cluster.admin import create_topic  # (deferred: loads confluent_kafka)
        from harness.cluster.inspect import ClusterInspector  # (deferred: loads confluent_kafka)
        name = f"{self.topic}-2"
        inspector = ClusterInspector(self.cluster.bootstrap_servers)
        rf = min(self.spec.replication_factor, len(self.cluster.broker_ids))
        if isinstance(self.cluster, SelfAdministered):  # made through the implementation's own launcher
            self.cluster.create_topic(name, 1, rf)
        else:
            create_topic(inspector.admin, name, 1, rf,
                         {"min.insync.replicas": str(min(self.spec.min_insync_replicas, rf))})
        wait_until(lambda: inspector.all_led(name, min_isr=rf), timeout=60, what=f"{name}'s partition to have a leader")
        return name

    def settle_writes(self, timeout: float = 60.0) -> int:
        """Wait until the producer has the outcome of every record it was given (a produce that timed out under a
        fault may still be written once the fault heals); the number still without one after `timeout`."""
        return self._producer.flush(timeout) if self._producer is not None else 0

    def add_partitions(self, total: int) -> None:
        """Grow the topic to `total` partitions and wait until each new one has a leader."""
        from confluent_kafka.admin import NewPartitions

        from harness.cluster.inspect import ClusterInspector  # (deferred: loads confluent_kafka)
        needs_admin_api(self.cluster, "CreatePartitions")
        inspector = ClusterInspector(self.cluster.bootstrap_servers)
        before = len(inspector.partitions(self.topic))
        inspector.admin.create_partitions([NewPartitions(self.topic, total)])[self.topic].result(30)
        self.history.append("admin", "ok", "partitions-added", {"topic": self.topic, "partitions": total,
                                                                "from": before})
        wait_until(lambda: len(inspector.partitions(self.topic)) == total and inspector.all_led(self.topic),
                   timeout=60, what=f"{self.topic}'s {total} partitions to have leaders")
        self._await_every_broker_knows(total)
        self._renew_producer()

    def partitions_grew(self, before: int, now: int) -> None:
        """The topic was seen with `now` partitions after a createPartitions whose call failed (a timeout under a
        fault) had found `before`: recorded as `partitions-added`, and the producer renewed."""
        self.history.append("admin", "ok", "partitions-added", {"topic": self.topic, "partitions": now,
                                                                "from": before})
        self._renew_producer()

    def _renew_producer(self) -> None:
        if self._producer is not None:  # its metadata knows the old partitions only: a new one will do
            self._producer.flush(30)
            self._producers += 1
            self._producer = None

    def _await_every_broker_knows(self, partitions: int, timeout: float = 30.0) -> None:
        """Wait until each broker's metadata lists `partitions` partitions of the topic: a producer
        bootstrapping from a broker that has not applied the new partitions yet fails their records
        with "Unknown partition" (a harness race, not the behaviour under test)."""
        from confluent_kafka.admin import AdminClient
        admins = [AdminClient({"bootstrap.servers": server}) for server in self.cluster.bootstrap_servers.split(",")]

        def known() -> bool:
            for admin in admins:
                meta = admin.list_topics(self.topic, timeout=5).topics.get(self.topic)
                if meta is None or meta.error is not None or len(meta.partitions) != partitions:
                    return False
            return True
        wait_until(known, timeout=timeout, what=f"every broker to list {partitions} partitions of {self.topic}")

    def compacted(self) -> None:
        """Make the topic compacted, cleaned as soon as a segment rolls (segments roll every 100 ms
        of appends, any dirty ratio, no compaction lag)."""
        from harness.cluster.admin import set_topic_configs  # (deferred: loads confluent_kafka)
        from harness.cluster.inspect import ClusterInspector  # (deferred: loads confluent_kafka)
        needs_admin_api(self.cluster, "IncrementalAlterConfigs of a topic (compaction)")
        set_topic_configs(ClusterInspector(self.cluster.bootstrap_servers).admin, self.topic, {
            "cleanup.policy": "compact", "segment.ms": "100", "min.cleanable.dirty.ratio": "0.01",
            "min.compaction.lag.ms": "0", "delete.retention.ms": "0"})

    def produce_keyed(self, keys: list[str], partition: int = 0) -> list[str]:
        """Produce one record per key in `keys` (in order) to `partition`; their ids."""
        producer = self._writer()
        ids = []
        for key in keys:
            rid = self._next_id()
            producer.produce(self.topic, rid, partition=partition, key=key)
            ids.append(rid)
        if producer.flush(60):
            raise HarnessError(f"{self.topic}: records not written within 60 s")
        return ids

    def log_offsets(self, partition: int) -> set[int]:
        """The offsets of the records the partition's log holds now (read from its start with a plain
        consumer up to the high watermark; transaction markers are not records)."""
        from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition
        reader = Consumer({"bootstrap.servers": self.cluster.bootstrap_servers, "group.id": f"{self.topic}-reader",
                           "enable.auto.commit": False, "enable.partition.eof": True})
        try:
            _, high = reader.get_watermark_offsets(TopicPartition(self.topic, partition), timeout=30)
            reader.assign([TopicPartition(self.topic, partition, OFFSET_BEGINNING)])
            held: set[int] = set()
            import time
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                msg = reader.poll(1.0)
                if msg is None:
                    continue
                if msg.error():
                    if msg.error().code() == KafkaError._PARTITION_EOF:  # read up to the end
                        break
                    raise HarnessError(f"reading {self.topic}-{partition}: {msg.error().str()}")
                held.add(msg.offset())
                if msg.offset() >= high - 1:
                    break
            else:
                raise HarnessError(f"reading {self.topic}-{partition} up to offset {high} took over 30 s")
            return held
        finally:
            reader.close()

    def await_compaction(self, partition: int, superseded: set[int], timeout: float = 120.0) -> set[int]:
        """Wait until the log cleaner removed every offset in `superseded` (records whose key was
        written again later), appending a record of a fresh key now and then so the segment holding
        them rolls and becomes cleanable. Records the removed offsets in the history
        (`records-compacted`: the produced offsets the log no longer holds) and returns them."""
        produced = {op.value["offset"] for op in self.history.ops() if op.f == "produce" and op.type == "ok"
                    and op.value.get("topic") == self.topic and op.value.get("partition") == partition}
        seen: dict[str, set[int]] = {"gone": set()}
        fillers = [0]

        def compacted() -> bool:
            seen["gone"] = produced - self.log_offsets(partition)
            if not superseded <= seen["gone"]:
                fillers[0] += 1
                self.produce_keyed([f"roll-{fillers[0]}"], partition)  # rolls the segment once 100 ms old
                return False
            return True

        wait_until(compacted, timeout=timeout, interval=1.0,
                   what=f"the log cleaner to remove offsets {sorted(superseded)} of {self.topic}-{partition}")
        self.history.append("admin", "ok", "records-compacted", {"topic": self.topic, "partition": partition,
                                                                 "offsets": sorted(seen["gone"])})
        return seen["gone"]

    def produce_transaction(self, count: int, commit: bool, partition: int = 0) -> list[str]:
        """Produce `count` records in one transaction of a new transactional producer, then commit or
        abort it (a `transaction` operation in the history names its ids)."""
        from harness.clients.producer import HistoryProducer  # (deferred: loads confluent_kafka)
        self._producers += 1
        name = f"txn-producer-{self._producers}"
        producer = HistoryProducer(self.cluster.bootstrap_servers, self.history, process=name,
                                   extra={**self.producer_config, "transactional.id": f"{self.topic}-{name}"})
        ids = [f"{self.spec.seed}-{self._produced + i}" for i in range(count)]
        self._produced += count
        producer.transaction(self.topic, ids, partition, commit)
        return ids

    def delete_records(self, partition: int, before: int) -> int:
        """Delete the records of `partition` below offset `before` (Admin deleteRecords); the new log
        start offset, recorded in the history as `records-deleted`."""
        from confluent_kafka import TopicPartition

        from harness.cluster.inspect import ClusterInspector  # (deferred: loads confluent_kafka)
        needs_admin_api(self.cluster, "DeleteRecords")
        admin = ClusterInspector(self.cluster.bootstrap_servers).admin
        [future] = admin.delete_records([TopicPartition(self.topic, partition, before)]).values()
        low = future.result(30).low_watermark
        self.history.append("admin", "ok", "records-deleted", {"topic": self.topic, "partition": partition,
                                                               "offset": low})
        return low
