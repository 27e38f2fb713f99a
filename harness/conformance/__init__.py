"""Conformance sessions: one share group on a real cluster, driven step by step.

A test opens a `ShareSession` (a fresh topic and share group with the configs it asks for),
produces records, starts consumers in step mode (`StepConsumer`: each a driver process that runs
one command at a time, see `docs/driver.md`), and asserts a KIP-932 behaviour on what the
consumers were given. Every operation goes into the session's history, which `finish()` checks with
all seven checkers against the reference model, as the chaos suites do: a test passes only if its
own assertion holds and the history conforms record by record.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from harness.history.store import HistoryWriter
from harness.wait import wait_until


@dataclass(frozen=True)
class Record:
    """A record as a consumer was given it."""

    id: str
    topic: str
    partition: int
    offset: int
    delivery_count: int

    @property
    def key(self) -> tuple[str, int, int]:
        return self.topic, self.partition, self.offset


class StepConsumer:
    """One share consumer in its own process, in step mode."""

    def __init__(self, driver, mode: str = "explicit", features: tuple[str, ...] | None = None) -> None:
        self.driver = driver
        self.mode = mode
        self.features = features  # what the driver declares (None: take it as supporting everything)
        self.name = driver.name
        self.last_error: str | None = None  # the error the client raised on the last command, if any

    def _do(self, cmd: dict[str, Any], timeout: float = 60.0):
        reply, ops = self.driver.command(cmd, timeout)
        self.last_error = reply.get("error")
        return reply, ops

    def poll(self, timeout: float = 10.0) -> list[Record]:
        """One batch (empty if none came within `timeout` seconds)."""
        _, ops = self._do({"cmd": "poll", "timeout": timeout}, timeout + 30)
        return [Record(r["id"], r["topic"], r["partition"], r["offset"], r["delivery_count"])
                for op in ops if op.f == "poll" and op.type == "ok" for r in op.value["records"]]

    def poll_until(self, count: int, timeout: float = 30.0, ack: str | None = None) -> list[Record]:
        """Batches until `count` records came or `timeout` passed (all of them, in order). In explicit
        mode a batch must be acknowledged before the next poll: `ack` names the type each batch gets
        (without it, a short first batch is an error rather than a refused poll)."""
        import time
        deadline, got = time.monotonic() + timeout, []
        while len(got) < count and (left := deadline - time.monotonic()) > 0:
            batch = self.poll(min(left, 5.0))
            got.extend(batch)
            if batch and ack is not None:
                self.ack(batch, ack)
            elif batch and self.mode == "explicit" and len(got) < count:
                raise HarnessError(f"{self.name}: {len(got)} of {count} records in the first batch; pass ack= "
                                   f"to acknowledge each batch (explicit mode refuses a poll before that)")
        return got

    def poll_until_error(self, codes: tuple[str, ...], timeout: float = 30.0) -> str:
        """Poll until the client reports one of the Kafka errors `codes` (e.g. GROUP_AUTHORIZATION_FAILED);
        the one it reported. Records given meanwhile are in the history (`records_given`)."""
        seen: dict[str, str] = {}

        def refused() -> bool:
            _, ops = self._do({"cmd": "poll", "timeout": 1.0}, 31.0)
            for op in ops:
                if op.f == "error":
                    text = f"{op.value.get('code')} {op.value.get('message')}"
                    seen.update({"code": code for code in codes if error_is(text, code)})
            return "code" in seen
        wait_until(refused, timeout=timeout, interval=0.0, what=f"{self.name} to be refused with {' or '.join(codes)}")
        return seen["code"]

    def records_given(self) -> list[Record]:
        """Every record any poll of this consumer was given so far."""
        return [Record(r["id"], r["topic"], r["partition"], r["offset"], r["delivery_count"])
                for op in self.driver.history.ops() if op.process == self.name and op.f == "poll"
                and op.type == "ok" for r in op.value["records"]]

    def _require(self, feature: str) -> None:
        """Skip the test as "not supported" if the driver does not declare `feature`."""
        if self.features is not None and feature not in self.features:
            import pytest
            pytest.skip(f"not supported by the {self.name} driver: {feature}")

    def ack(self, records, type_: str = "ACCEPT") -> str | None:
        """Acknowledge `records` with `type_`; the client's error if it refused one, else None."""
        self._require(f"ack:{type_}")
        reply, _ = self._do({"cmd": "ack", "records": [
            {"topic": r.topic, "partition": r.partition, "offset": r.offset, "type": type_} for r in records]})
        return reply.get("error")

    def commit_sync(self) -> list[dict[str, Any]]:
        """commit_sync: its per-partition results ({topic, partition, error}); an exception is a HarnessError."""
        self._require("commit_sync")
        _, ops = self._do({"cmd": "commit_sync"})
        for op in ops:
            if op.f == "commit" and op.type == "ok":
                return op.value["results"]
            if op.f == "commit" and op.type == "info":
                raise HarnessError(f"{self.name}: commit_sync raised {op.value.get('error')}")
        return []

    def commit_async(self) -> None:
        self._require("commit_async")
        self._do({"cmd": "commit_async"})

    def close(self) -> None:
        if self.driver.alive():
            self._do({"cmd": "close"})
        self.driver.close()


class ShareSession:
    """A fresh topic and share group on `cluster`, its history, producer and step consumers."""

    def __init__(self, cluster, spec, run_dir: Path, client: str = "confluent") -> None:
        from harness.report.rundir import write_json
        from harness.runner import _setup
        self.cluster, self.spec, self.run_dir, self.client = cluster, spec, run_dir, client
        write_json(run_dir / "spec.json", {"spec": json.loads(spec.to_json()), "reproduce": spec.reproduce_command()})
        self.history = HistoryWriter(run_dir / "history.jsonl")
        safe = re.sub(r"[^A-Za-z0-9._-]+", "-", spec.name).strip("-")[:100]
        self.topic = f"ksh-{safe}-{uuid.uuid4().hex[:6]}"
        self.group = f"{self.topic}-group"
        self.limits = _setup(cluster, spec, self.topic, self.group, self.history)
        self.consumers: list[StepConsumer] = []
        self._producer = None
        self._producers = 0
        self._produced = 0
        self.results: tuple = ()
        self.valid: bool | None = None

    # -- producing ------------------------------------------------------------
    def produce(self, count: int, partition: int | None = 0, timestamp_ms: int | None = None) -> list[str]:
        """Produce `count` records (to `partition`, or spread by the seed) and wait until all are written;
        `timestamp_ms`: their CreateTime (default: now)."""
        import random

        from harness.clients.producer import HistoryProducer
        if self._producer is None:
            self._producer = HistoryProducer(self.cluster.bootstrap_servers, self.history,
                                             process=f"producer-{self._producers}")
        rng = random.Random(self.spec.seed * 7919 + self._produced)
        ids = []
        for _ in range(count):
            rid = f"{self.spec.seed}-{self._produced}"
            self._produced += 1
            part = partition if partition is not None else rng.randrange(self.spec.topic_partitions)
            self._producer.produce(self.topic, rid, partition=part, timestamp_ms=timestamp_ms)
            ids.append(rid)
        if self._producer.flush(60):
            raise HarnessError(f"{self.topic}: records not written within 60 s")
        return ids

    def add_partitions(self, total: int) -> None:
        """Grow the topic to `total` partitions and wait until each new one has a leader."""
        from confluent_kafka.admin import NewPartitions

        from harness.cluster.inspect import ClusterInspector
        inspector = ClusterInspector(self.cluster.bootstrap_servers)
        inspector.admin.create_partitions([NewPartitions(self.topic, total)])[self.topic].result(30)
        wait_until(lambda: len(inspector.partitions(self.topic)) == total and inspector.all_led(self.topic),
                   timeout=60, what=f"{self.topic}'s {total} partitions to have leaders")
        self._await_every_broker_knows(total)
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
        from harness.cluster.admin import set_topic_configs
        from harness.cluster.inspect import ClusterInspector
        set_topic_configs(ClusterInspector(self.cluster.bootstrap_servers).admin, self.topic, {
            "cleanup.policy": "compact", "segment.ms": "100", "min.cleanable.dirty.ratio": "0.01",
            "min.compaction.lag.ms": "0", "delete.retention.ms": "0"})

    def produce_keyed(self, keys: list[str], partition: int = 0) -> list[str]:
        """Produce one record per key in `keys` (in order) to `partition`; their ids."""
        from harness.clients.producer import HistoryProducer
        if self._producer is None:
            self._producer = HistoryProducer(self.cluster.bootstrap_servers, self.history,
                                             process=f"producer-{self._producers}")
        ids = []
        for key in keys:
            rid = f"{self.spec.seed}-{self._produced}"
            self._produced += 1
            self._producer.produce(self.topic, rid, partition=partition, key=key)
            ids.append(rid)
        if self._producer.flush(60):
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
        from harness.clients.producer import HistoryProducer
        self._producers += 1
        name = f"txn-producer-{self._producers}"
        producer = HistoryProducer(self.cluster.bootstrap_servers, self.history, process=name,
                                   extra={"transactional.id": f"{self.topic}-{name}"})
        ids = [f"{self.spec.seed}-{self._produced + i}" for i in range(count)]
        self._produced += count
        producer.transaction(self.topic, ids, partition, commit)
        return ids

    def read_share_offsets(self) -> dict[int, dict[str, Any]]:
        """The group's offsets per partition of the topic (Admin listShareGroupOffsets: start_offset, and
        lag where the release reports it, else None), recorded in the history as a `share-offsets`
        read; partitions not initialized yet are absent."""
        from harness.cluster.java_admin import read_share_offsets
        from harness.paths import cache_dir
        found = read_share_offsets(self._dist(), cache_dir(), self.cluster.bootstrap_servers, self.group,
                                   self.history) or []
        return {p["partition"]: p for p in found if p["topic"] == self.topic}

    def read_start_offsets(self) -> dict[int, int]:
        """The group's start offset per partition of the topic (see `read_share_offsets`)."""
        return {p: found["start_offset"] for p, found in self.read_share_offsets().items()}

    def delete_records(self, partition: int, before: int) -> int:
        """Delete the records of `partition` below offset `before` (Admin deleteRecords); the new log
        start offset, recorded in the history as `records-deleted`."""
        from confluent_kafka import TopicPartition

        from harness.cluster.inspect import ClusterInspector
        admin = ClusterInspector(self.cluster.bootstrap_servers).admin
        [future] = admin.delete_records([TopicPartition(self.topic, partition, before)]).values()
        low = future.result(30).low_watermark
        self.history.append("admin", "ok", "records-deleted", {"topic": self.topic, "partition": partition,
                                                               "offset": low})
        return low

    # -- consumers ------------------------------------------------------------
    def consumer(self, mode: str = "explicit", user: tuple[str, str] | None = None, group: str | None = None,
                 **client_config: str) -> StepConsumer:
        """A new share consumer of the group in step mode (`explicit` or `implicit` acknowledgement).
        `user`: (name, password) to connect as on the cluster's SASL/PLAIN listener; `group`: another
        group id to join instead of the session's (a test of the group namespace)."""
        info = self.driver
        self.require(mode)
        name = f"consumer-{len(self.consumers)}"
        bootstrap = self.cluster.bootstrap_servers
        if user is not None:
            bootstrap = self._sasl_bootstrap()
            client_config = {**sasl_client_config(self.client, *user), **client_config}
        config = {"group": group or self.group, "topics": [self.topic], "mode": mode, "seed": self.spec.seed,
                  "bootstrap": bootstrap,
                  "client_config": {"max.poll.records": str(self.spec.max_poll_records),
                                    **{k.replace("_", "."): v for k, v in client_config.items()}}}
        driver = info.make(name, config, self.history, self.run_dir / "logs",
                           self._dist() if info.name == "java" else None)
        driver.start()
        wait_until(lambda: any(op.process == name and op.f == "start" for op in self.history.ops()) or
                   not driver.alive(), timeout=60, what=f"{name} to start")
        if driver.contract_error:
            driver.close(10)
            raise HarnessError(driver.contract_error)
        if not driver.alive():
            raise HarnessError(f"{name} exited at start (see {driver.log_path})")
        consumer = StepConsumer(driver, mode, info.features)
        self.consumers.append(consumer)
        return consumer

    # -- the verdict ----------------------------------------------------------
    def finish(self):
        """Close what is open, read the durable state, check the history with all seven checkers."""
        from harness.checkers import check_safe, compose, verdict_word
        from harness.history.events import EventTable
        from harness.report.rundir import write_json
        from harness.runner import CHECKERS, _read_durable_state
        try:
            for c in self.consumers:
                c.close()
            if self._producer is not None:
                self._producer.flush(30)
            _read_durable_state(self.cluster, self.spec, self.topic, self.group, self.history)
        finally:
            for c in self.consumers:
                c.driver.close(10)
            self.cluster.collect_logs(self.run_dir / "logs")
            self.history.close()
        events = EventTable.from_ops(self.history.ops())
        events.write_parquet(self.run_dir / "history.parquet")
        self.results = tuple(check_safe(name, fn, events) for name, fn in CHECKERS.items())
        self.valid = compose(self.results)
        write_json(self.run_dir / "verdict.json", {
            "valid": self.valid, "verdict": verdict_word(self.valid), "results": [r.to_json() for r in self.results],
            "seed": self.spec.seed, "kafka_version": self.cluster.version, "engine": "inprocess",
            "reproduce": self.spec.reproduce_command()})
        return self

    @property
    def driver(self):
        """The driver this session's consumers run (`harness.clients.registry.DriverInfo`)."""
        from harness.clients.registry import driver_info
        return driver_info(self.client)

    def require(self, *features: str) -> None:
        """Skip the test as "not supported by <client>" unless the driver declares every one of `features`."""
        missing = [f for f in features if not self.driver.supports(f)]
        if missing:
            import pytest
            pytest.skip(f"not supported by the {self.driver.name} driver: {', '.join(missing)}")

    def _dist(self):
        from harness.kafka.jars import resolve
        from harness.paths import cache_dir
        from harness.runner import _version
        return resolve(_version(self.cluster, self.spec), cache_dir(), self.spec.kafka_home)

    # -- administration (Admin API, through harness/java/ShareAdmin.java) -------------------------
    def admin(self, command: str, *args: str, user: tuple[str, str] | None = None) -> dict[str, Any]:
        """Run a ShareAdmin command (describe, list, delete, alter-offsets, delete-offsets): its JSON
        result, or {"error": ExceptionName, "message"} when the broker refused it. `user`: (name,
        password) to run it as on the SASL/PLAIN listener."""
        from harness.cluster.java_admin import run_java
        from harness.paths import cache_dir
        bootstrap, env = self.cluster.bootstrap_servers, None
        if user is not None:
            bootstrap = self._sasl_bootstrap()
            props = self.run_dir / f"admin-{user[0]}.properties"
            props.write_text("".join(f"{k}={v}\n" for k, v in sasl_client_config("java", *user).items()))
            env = {"KSH_CLIENT_PROPERTIES": str(props)}
        try:
            return run_java(self._dist(), cache_dir(), "ShareAdmin", bootstrap, command, *args, env=env)
        except RuntimeError as exc:
            raise HarnessError(f"ShareAdmin {command} failed: {exc}") from None

    def try_group_configs(self, group: str, **configs: str) -> str | None:
        """Set configs of `group` (underscores for dots, e.g. share_record_lock_duration_ms="2000"): None
        if the cluster accepted them, else the Kafka error it refused them with (e.g. INVALID_CONFIG)."""
        from harness.cluster.admin import group_config_refusal
        from harness.cluster.inspect import ClusterInspector
        return group_config_refusal(ClusterInspector(self.cluster.bootstrap_servers).admin, group,
                                    {k.replace("_", "."): v for k, v in configs.items()})

    def broker_config(self, name: str) -> str | None:
        """The value of broker config `name` on the first broker (a bound the cluster enforces)."""
        from harness.cluster.admin import broker_configs
        from harness.cluster.inspect import ClusterInspector
        admin = ClusterInspector(self.cluster.bootstrap_servers).admin
        return broker_configs(admin, self.cluster.broker_ids[0]).get(name)

    def _sasl_bootstrap(self) -> str:
        servers = getattr(self.cluster, "sasl_bootstrap_servers", None)
        if not servers:
            raise HarnessError("this cluster has no SASL/PLAIN listener: start a local one with sasl_users")
        return servers

    def describe(self) -> dict[str, Any]:
        return self.admin("describe", self.group)

    def alter_offset(self, partition: int, offset: int) -> dict[str, Any]:
        """Alter the group's start offset of `partition` (recorded in the history as `reset-offsets`)."""
        records = sorted({(op.value["offset"], op.value["id"]) for op in self.history.ops()
                          if op.f == "produce" and op.type == "ok" and op.value.get("topic") == self.topic
                          and op.value.get("partition") == partition and op.value.get("offset", -1) >= offset})
        value = {"group": self.group, "topic": self.topic, "partitions": [
            {"partition": partition, "offset": offset, "records": [{"offset": o, "id": i} for o, i in records]}]}
        self.history.append("admin", "invoke", "reset-offsets", value)
        result = self.admin("alter-offsets", self.group, self.topic, str(partition), str(offset))
        if "error" in result:
            self.history.append("admin", "fail", "reset-offsets", {**value, "error": result["error"]})
        else:
            self.history.append("admin", "ok", "reset-offsets", value)
        return result

    def delete_offsets(self) -> dict[str, Any]:
        """Delete the group's offsets of the topic (Admin deleteShareGroupOffsets). With earliest, the
        share-partitions start again at the log start: recorded as a `reset-offsets` to offset 0
        naming every record produced (which the group must then deliver again)."""
        result = self.admin("delete-offsets", self.group, self.topic)
        if "error" not in result:
            for p in range(self.spec.topic_partitions):
                records = sorted({(op.value["offset"], op.value["id"]) for op in self.history.ops()
                                  if op.f == "produce" and op.type == "ok" and op.value.get("topic") == self.topic
                                  and op.value.get("partition") == p and op.value.get("offset", -1) >= 0})
                self.history.append("admin", "ok", "reset-offsets", {"group": self.group, "topic": self.topic,
                                    "partitions": [{"partition": p, "offset": 0, "records": [
                                        {"offset": o, "id": i} for o, i in records]}]})
        return result

    def assert_conforms(self, without: tuple[str, ...] = ()) -> None:
        """Close the session, check its history against the reference model, assert the verdict.
        `without`: properties the test makes impossible to judge (e.g. durable-state once the group
        is deleted); each must still not fail, and every other one must pass."""
        from harness.checkers import compose
        self.finish()
        judged = [r for r in self.results if r.checker not in without]
        assert all(r.valid is not False for r in self.results) and compose(judged) is True, self.summary()

    def ops(self, process: str | None = None, f: str | None = None) -> list:
        return [op for op in self.history.ops() if (process is None or op.process == process)
                and (f is None or op.f == f)]

    def summary(self) -> str:
        from harness.checkers import verdict_word
        lines = [f"{verdict_word(self.valid)} {self.run_dir}"]
        for r in self.results:
            if r.valid is not True:
                lines.append(f"  {r.checker}: {verdict_word(r.valid)} {r.reason} "
                             + "; ".join(a.message for a in r.anomalies[:5]))
        return "\n".join(lines)


def sasl_client_config(client: str, user: str, password: str) -> dict[str, str]:
    """Client properties to authenticate as `user` with SASL/PLAIN: librdkafka's names for the
    confluent client, a JAAS line for the Java clients."""
    common = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN"}
    if client == "java":
        return {**common, "sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule "
                                              f'required username="{user}" password="{password}";'}
    return {**common, "sasl.username": user, "sasl.password": password}


#: Kafka's own message for an error code (Errors.java), which librdkafka prints ("Broker: <message>")
#: where it wraps the code in another one (e.g. inside _FATAL).
ERROR_MESSAGES = {
    "GROUP_ID_NOT_FOUND": "The group id does not exist",
    "INCONSISTENT_GROUP_PROTOCOL": "supported protocols are incompatible with those of existing members",
    "GROUP_MAX_SIZE_REACHED": "The group has reached its maximum size",
    "GROUP_AUTHORIZATION_FAILED": "Group authorization failed",
    "TOPIC_AUTHORIZATION_FAILED": "Topic authorization failed",
}


def error_is(error: str | None, code: str) -> bool:
    """Whether a client's error text names Kafka error `code` (e.g. INVALID_RECORD_STATE), as
    librdkafka names it, as the Java client does (InvalidRecordStateException), or by Kafka's
    message for it."""
    if not error:
        return False
    flat = error.upper().replace("_", "")
    message = ERROR_MESSAGES.get(code.upper())
    return code.upper().replace("_", "") in flat or (message is not None and message.lower() in error.lower())


def missing_requirement(version: str, line: str | None = None, group_config: str | None = None) -> str | None:
    """Why a test that needs release `line` (or later) and the group-level config `group_config`
    (a role of `harness.kafka.versions`) cannot run on Kafka `version`; None if it can."""
    from harness.kafka.versions import parse_version, profile_for
    if line and parse_version(version)[:2] < tuple(int(p) for p in line.split(".")):
        return f"needs Kafka {line} or later; the cluster runs {version}"
    if group_config and profile_for(version).group_config(group_config) is None:
        return f"Kafka {version} has no group-level config for {group_config.replace('_', ' ')}"
    return None
