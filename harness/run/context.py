"""The run context: what one run owns from open to verdict, and the phases every run shares.

A `RunContext` holds the spec, the cluster handle (started here when the run owns it), the run
directory, the history, the topic and share group made for this run, and the limits in force on
that group. Chaos runs (`harness.run.run`: `share-harness run`, the `share_run` fixture) and
conformance sessions (`harness.conformance.ShareSession`) both go through it:

    ctx = RunContext.open(spec, cluster)  # spec.json, history, cluster, topic, group configs, config op
    ...                                   # their own steps: consumers, producing, faults, drain
    ctx.read_durable_state()              # after the consumers closed: every acknowledgement is in
    ctx.close()                           # node logs collected, an owned cluster stopped, history closed
    results, engine = ctx.check()         # every checker, in-process or on Spark (the spec says which)
    ctx.write_verdict(results, engine)    # verdict.json: one schema for every kind of run
"""

from __future__ import annotations

import json
import logging
import re
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.check import check_events, engine_for
from harness.checkers import Result, compose, verdict_word
from harness.clients.logging import LOGGER
from harness.cluster.base import Cluster, SelfAdministered, unchecked_of
from harness.cluster.java_admin import read_dead_letters, read_share_offsets, read_share_state
from harness.errors import HarnessError
from harness.history.events import EventTable
from harness.history.schema import SCHEMA_VERSION
from harness.history.store import HistoryWriter
from harness.kafka import jars
from harness.kafka.dead_letter import (TOPIC_ENABLE_CONFIG, archiving_ranges, dead_letter_topic, group_config_names,
                                       writes_pending)
from harness.kafka.versions import release_line
from harness.report.rundir import new_run_dir, write_json
from harness.settings import reproduce_command
from harness.tested_set import record as tested_set_record
from harness.version import VERSION
from harness.spec import RunSpec
from harness.sys.paths import cache_dir
from harness.sys.wait import WaitTimeout, wait_until
from harness.timing import timed

if TYPE_CHECKING:
    from harness.cluster.local import LocalCluster, LocalClusterSpec


def make_cluster(spec: RunSpec, run_dir: Path) -> Cluster:
    """The backend the spec asks for: external if bootstrap servers are given, else local processes,
    (backend docker) containers of the spec's image, (backend kfake) franz-go's kfake or (backend mock)
    librdkafka's mock cluster."""
    if spec.bootstrap_servers:
        from harness.cluster.external import ExternalCluster  # (deferred: loads confluent_kafka)
        return ExternalCluster(spec.bootstrap_servers)
    if spec.backend == "mock":
        from harness.cluster.mock import LibrdkafkaMock  # (deferred: loads confluent_kafka)
        return LibrdkafkaMock(run_dir, brokers=spec.brokers, version=spec.kafka_version)
    if spec.backend == "kfake":
        from harness.cluster.kfake import KfakeCluster  # (deferred: loads confluent_kafka)
        return KfakeCluster(run_dir, brokers=spec.brokers, version=spec.kafka_version,
                            kfake_version=spec.kfake_version, base_port=spec.base_port)
    from harness.cluster.local import LocalClusterSpec  # (deferred: loads confluent_kafka)
    local = LocalClusterSpec(
        version=spec.kafka_version, brokers=spec.brokers, controllers=spec.controllers, log_dirs=spec.log_dirs,
        heap_mb=spec.heap_mb,
        replication_factor=spec.replication_factor, min_insync_replicas=spec.min_insync_replicas,
        base_port=spec.base_port, kafka_home=spec.kafka_home)
    return backend_cluster(spec, local, run_dir)


def backend_cluster(spec: RunSpec, local: LocalClusterSpec, run_dir: Path) -> LocalCluster:
    """A cluster laid out as `local` says, on the backend (and image) `spec` names: local processes, or
    containers (a `DockerCluster` is a `LocalCluster`)."""
    from harness.cluster.local import LocalCluster  # (deferred: loads confluent_kafka)
    if spec.backend == "docker":
        from harness.cluster.docker import DockerCluster  # (deferred: loads confluent_kafka)
        return DockerCluster(local, run_dir, image=spec.kafka_image, classpath=spec.kafka_image_classpath)
    return LocalCluster(local, run_dir)


def kafka_version_of(cluster: Cluster, spec: RunSpec) -> str:
    """The Kafka version under test: the cluster's, or for an external cluster the one the spec names."""
    return cluster.version if cluster.version[:1].isdigit() else spec.kafka_version


def topic_name(spec: RunSpec) -> str:
    """A fresh topic per run (also on a shared cluster): the run's name in Kafka's topic alphabet, its
    seed and a random suffix (the group is `<topic>-group`)."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "-", spec.name).strip("-")[:100]
    return f"ksh-{safe}-s{spec.seed}-{uuid.uuid4().hex[:6]}"


def hosted_limits(spec: RunSpec) -> dict[str, str]:
    """The spec's lock duration and delivery-count limit under Kafka's group config names, for an implementation
    that sets them itself (`SelfAdministered`: whatever the release's own names)."""
    values = (("share.record.lock.duration.ms", spec.lock_duration_ms),
              ("share.delivery.count.limit", spec.delivery_count_limit))
    return {name: str(value) for name, value in values if value is not None}


def limit_settings(spec: RunSpec, version: str) -> list[tuple[str, str, int]]:
    """(limit key, group config name, value) for the spec's lock duration and delivery-count limit, where
    the release has a group-level name (else the broker's value stays; the config op records what is in force)."""
    profile, out = release_line(version), []
    for key, role, value in (("lock_duration_ms", "lock_duration", spec.lock_duration_ms),
                             ("delivery_count_limit", "delivery_count_limit", spec.delivery_count_limit)):
        name = profile.group_config(role)
        if value is not None and name is not None:
            out.append((key, name, value))
    return out


@dataclass
class RunContext:
    """One run's handles, from `open` to `close` (also a context manager that closes)."""

    spec: RunSpec
    cluster: Cluster | None
    run_dir: Path
    history: HistoryWriter
    owns_cluster: bool
    topic: str = ""
    group: str = ""
    #: the share group's limits in force (lock_duration_ms, delivery_count_limit, session_timeout_ms, ...):
    #: the broker's values, or the group configs this run set once the cluster shows them
    limits: dict[str, int] = field(default_factory=dict)
    dead_letter_topic: str | None = None  # the group's DLQ topic (KIP-1191), when the spec turns it on
    _client_log: logging.Handler | None = None
    _closed: bool = False

    # -- open ---------------------------------------------------------------------------------
    @classmethod
    def open(cls, spec: RunSpec, cluster: Cluster | None = None, run_dir: Path | None = None,
             names: tuple[str, str] | None = None) -> "RunContext":
        """Validate the spec, store it, open the history, start a cluster unless one is given, make the
        topic and the share group (its configs shown by the cluster) and record the `config` op. What
        was opened is closed again if a step fails. `names`: (topic, group) to use instead of the run's
        own (a conformance test of the legal identifiers; the topic must not exist yet)."""
        spec.validate()
        run_dir = run_dir or new_run_dir(spec.name)
        write_json(run_dir / "spec.json", {"spec": json.loads(spec.to_json()), "reproduce": reproduce_command(spec)})
        ctx = cls(spec, cluster, run_dir, HistoryWriter(run_dir / "history.jsonl"), owns_cluster=cluster is None)
        ctx._client_log = logging.FileHandler(run_dir / "logs" / "librdkafka.log")
        LOGGER.addHandler(ctx._client_log)
        try:
            if ctx.owns_cluster:
                ctx.cluster = make_cluster(spec, run_dir)
                ctx.cluster.start()
            ctx.topic = topic_name(spec) if names is None else names[0]
            ctx.group = f"{ctx.topic}-group" if names is None else names[1]
            ctx.limits = ctx._prepare_group()
        except BaseException:
            ctx.close()
            raise
        return ctx

    def _prepare_group(self) -> dict[str, int]:
        """Create the topic (every partition led), set the group's configs, wait until the cluster shows
        them, and record the `config` op the checkers read; the limits in force."""
        # (deferred: loads confluent_kafka)
        from harness.cluster.admin import create_topic, group_configs_shown, limits_in_force, set_group_configs
        from harness.cluster.inspect import ClusterInspector  # (deferred: loads confluent_kafka)
        spec, cluster = self.spec, self.cluster
        inspector = ClusterInspector(cluster.bootstrap_servers)
        rf = min(spec.replication_factor, len(cluster.broker_ids))
        version = self.version
        settings = limit_settings(spec, version)
        if isinstance(cluster, SelfAdministered):  # no Admin API: the implementation's own launcher sets it up
            if spec.dead_letter != "off":
                raise HarnessError(f"dead-letter {spec.dead_letter} needs a broker with dead-letter queues (KIP-1191, "
                                   f"Kafka 4.4); backend {spec.backend} has none: leave dead-letter out")
            cluster.create_topic(self.topic, spec.topic_partitions, rf)
            wait_until(lambda: inspector.all_led(self.topic, min_isr=rf), timeout=60,
                       what=f"{self.topic} partitions to have leaders")
            configs = {"share.auto.offset.reset": "earliest", **hosted_limits(spec), **spec.group_configs}
            limits = cluster.set_group_configs(self.group, configs)
            settings = []
        else:
            create_topic(inspector.admin, self.topic, spec.topic_partitions, rf,
                         {"min.insync.replicas": str(min(spec.min_insync_replicas, rf))})
            wait_until(lambda: inspector.all_led(self.topic, min_isr=rf), timeout=60,
                       what=f"{self.topic} partitions to have leaders")
            configs = {"share.auto.offset.reset": "earliest", **{name: str(value) for _, name, value in settings},
                       **self._dead_letter_queue(inspector, rf, version), **spec.group_configs}
            set_group_configs(inspector.admin, self.group, configs)
            # Group configs reach the brokers through the metadata log: a describe right after the change may
            # still show the old values (seen in CI: limit 5 recorded while the broker archived at 3).
            wait_until(lambda: all(group_configs_shown(inspector.admin, self.group, configs) for _ in range(3)),
                       timeout=30, what=f"group {self.group}'s configs {configs} to be shown", interval=0.2)
            limits = limits_in_force(inspector.admin, self.group, cluster.broker_ids[0])
        limits.update({key: value for key, _, value in settings})  # what this run set is in force once shown
        self.history.append("harness", "ok", "config", {
            "schema_version": SCHEMA_VERSION, "group": self.group, "topics": [self.topic], "kafka_version": version,
            "model_profile": ".".join(version.split(".")[:2]),
            "auto_offset_reset": configs.get("share.auto.offset.reset", "earliest"),
            "isolation_level": configs.get("share.isolation.level", "read_uncommitted"),
            "lock_tolerance_ms": spec.lock_tolerance_ms, "settle_ms": spec.settle_ms, "seed": spec.seed, **limits,
            # the wall clock at the history's time 0: places the brokers' own timestamps (state-topic writes)
            "wall_clock_ms": time.time_ns() // 1_000_000 - self.history.now_ns() // 1_000_000,
            **({"dead_letter_topic": self.dead_letter_topic, "dead_letter_copy": spec.dead_letter == "copy"}
               if self.dead_letter_topic else {})})
        return limits

    def _dead_letter_queue(self, inspector, rf: int, version: str) -> dict[str, str]:
        """With the spec's dead-letter on: create the group's DLQ topic (`dlq.<topic>`, as many partitions
        as the topic, marked as a DLQ topic: the brokers do not create it by default) and return the group
        configs that name it (KIP-1191; `harness.kafka.dead_letter`)."""
        from harness.cluster.admin import create_topic  # (deferred: loads confluent_kafka)
        if self.spec.dead_letter == "off":
            return {}
        name_config, copy_config = group_config_names(version, self.spec.dead_letter)  # the cluster's release
        self.dead_letter_topic = dead_letter_topic(self.topic)
        create_topic(inspector.admin, self.dead_letter_topic, self.spec.topic_partitions, rf,
                     {"min.insync.replicas": str(min(self.spec.min_insync_replicas, rf)), TOPIC_ENABLE_CONFIG: "true"})
        return {name_config: self.dead_letter_topic, copy_config: str(self.spec.dead_letter == "copy").lower()}

    @property
    def version(self) -> str:
        return kafka_version_of(self.cluster, self.spec)

    def dist(self):
        """The Kafka distribution (jars) of the version under test, for the Java tools and driver."""
        return jars.resolve(self.version, cache_dir(), self.spec.kafka_home)

    # -- after the consumers ------------------------------------------------------------------
    @timed("check")
    def read_durable_state(self) -> None:
        """After the consumers closed: the group's start offsets (Admin API) and its state decoded from
        `__share_group_state`, for the durable-state checker. The two reads are independent (each its own
        short JVM, each recording its own invoke and outcome), so they run at the same time, the state read
        as process `admin-state` (one outstanding operation per process). Nothing is read from an implementation
        that serves no durable state (`unchecked_of`): its verdict names durable-state as not checked."""
        if "durable-state" in unchecked_of(self.cluster):
            return
        cache, bootstrap, dist = cache_dir(), self.cluster.bootstrap_servers, self.dist()
        names = self._state_topic_names()
        with ThreadPoolExecutor(max_workers=2, thread_name_prefix="durable-read") as pool:
            reads = [pool.submit(read_share_offsets, dist, cache, bootstrap, self.group, self.history),
                     pool.submit(read_share_state, dist, cache, bootstrap, self.group, names, self.history,
                                 "admin-state")]
            for read in reads:
                read.result()  # each read records its own failure (compiling included); a bug is raised here
        if self.dead_letter_topic is not None:
            self.read_dead_letters(reads[1].result(), names)

    def _state_topic_names(self) -> dict[str, str]:
        """topic id -> name of the run's topic, for decoding `__share_group_state` (keyed by topic id)."""
        from harness.cluster.inspect import ClusterInspector  # (deferred: loads confluent_kafka)
        return {ClusterInspector(self.cluster.bootstrap_servers).topic_id(self.topic): self.topic}

    def read_dead_letters(self, state: list[dict] | None = None,
                          names: dict[str, str] | None = None) -> list[dict] | None:
        """Read the group's DLQ topic to its end and record it (`dead-letters`), once the share coordinator
        has no record left ARCHIVING (its DLQ write still under way; `state`: a `share-state` read just
        made, else one is made; `names`: its topic names, if known); the DLQ records, or None if the read
        failed (recorded)."""
        cache, bootstrap, dist = cache_dir(), self.cluster.bootstrap_servers, self.dist()

        def settled() -> bool:
            nonlocal state, names
            if state is None or writes_pending(state):
                names = names or self._state_topic_names()
                state = read_share_state(dist, cache, bootstrap, self.group, names, self.history, "admin-state")
            return state is not None and not writes_pending(state)
        try:
            wait_until(settled, timeout=60, interval=0.5,
                       what=f"group {self.group}'s records ARCHIVING to be written to {self.dead_letter_topic}")
        except WaitTimeout:
            pass  # read what is there, with what is still ARCHIVING: those are not judged missing
        return read_dead_letters(dist, cache, bootstrap, self.group, self.dead_letter_topic, self.history,
                                 archiving=archiving_ranges(state or []))

    def close(self) -> None:
        """Collect the node logs, stop the cluster if this run started it, close the history. Whatever
        one step meets (a full disk), the next still runs; a second call does nothing."""
        if self._closed:
            return
        self._closed = True
        try:
            if self.cluster is not None:
                self.cluster.collect_logs(self.run_dir / "logs")
        finally:
            try:
                if self.cluster is not None and self.owns_cluster:
                    self.cluster.close()
            finally:
                self.history.close()
                if self._client_log is not None:
                    LOGGER.removeHandler(self._client_log)
                    self._client_log.close()

    def __enter__(self) -> "RunContext":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- the verdict --------------------------------------------------------------------------
    @timed("check")
    def check(self) -> tuple[tuple[Result, ...], str]:
        """Every checker on the history (also stored as history.parquet): (results, engine used)."""
        events = EventTable.from_ops(self.history.ops())
        events.write_parquet(self.run_dir / "history.parquet")
        engine = engine_for(self.spec.check_engine, len(events), self.spec.spark_threshold)
        results = check_events(events, self.run_dir / "history.parquet", engine)
        unchecked = self.unchecked
        return tuple(r for r in results if r.checker not in unchecked), engine

    @property
    def unchecked(self) -> dict[str, str]:
        """The properties the implementation under test gives nothing to check (property -> why): left out of
        the verdict's results and named in it (`not_checked`), never counted a pass."""
        return unchecked_of(self.cluster) if self.cluster is not None else {}

    def write_verdict(self, results: tuple[Result, ...], engine: str, overall: Any = None,
                      chaos_missing: str | None = None, faults: tuple = (), ended_early: bool = False) -> Any:
        """verdict.json (the same keys for every kind of run); the composed verdict of `results`.
        `overall`: the run's verdict as a gate when it differs (chaos asked for that did not happen);
        `ended_early`: a conformance test stopped before it settled its records (its assertion failed), so
        records it left unsettled are the stop's doing, not anomalies of the client or broker."""
        valid = compose(results)
        write_json(self.run_dir / "verdict.json", {
            "valid": valid, "verdict": verdict_word(valid), "overall": valid if overall is None else overall,
            "chaos_missing": chaos_missing, "results": [r.to_json() for r in results], "seed": self.spec.seed,
            "faults": [f.to_json() for f in faults], "kafka_version": self.cluster.version, "engine": engine,
            "reproduce": reproduce_command(self.spec), "ended_early": ended_early, "harness_version": VERSION,
            "not_checked": self.unchecked, "tested_set": tested_set_record()})
        return valid
