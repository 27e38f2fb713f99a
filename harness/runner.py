"""One run, in documented phases: setup, workload, drain, check, store.

1. setup: start (or reuse) a cluster, create the test topic, set the share
   group's configs (auto offset reset earliest, plus the spec's), start the
   consumer drivers, each in its own process;
2. workload: produce `records` unique ids to seeded partitions (acks=all);
3. drain: wait until every acknowledged produce has been accepted, or the
   drain timeout passes (then the checkers report what is missing);
4. close consumers, collect logs; 5. check: every checker, composed;
6. store: spec, history, verdict, logs in the run directory.
The cluster is closed only if this run started it.
"""

from __future__ import annotations

import json
import logging
import random
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.checkers import (Result, ack_results, batch_order, check_safe, compose, delivery_count, durable_state,
                              exclusive, no_loss, no_redelivery, verdict_word)
from harness.cluster.admin import create_topic, limits_in_force, set_group_configs
from harness.cluster.base import Cluster
from harness.clients.driver import ConsumerDriver
from harness.clients.logging import LOGGER
from harness.clients.producer import HistoryProducer
from harness.history.events import EventTable
from harness.history.schema import SCHEMA_VERSION
from harness.history.store import HistoryWriter
from harness.report.rundir import new_run_dir, write_json
from harness.spec import RunSpec
from harness.wait import WaitTimeout, wait_until

CHECKERS = {m.NAME: m.check for m in (no_loss, delivery_count, batch_order, exclusive, no_redelivery, ack_results,
                                      durable_state)}


@dataclass(frozen=True)
class RunOutcome:
    """What a run produced: the composed verdict, each checker's result, and where it is stored."""

    spec: RunSpec
    valid: Any
    results: tuple[Result, ...]
    run_dir: Path

    def summary(self) -> str:
        lines = [f"verdict: {verdict_word(self.valid)}  ({self.spec.name}, seed {self.spec.seed})"]
        for r in self.results:
            lines.append(f"  {r.checker}: {verdict_word(r.valid)} {r.stats}" + (f" - {r.reason}" if r.reason else ""))
            lines += [f"    {a.kind}: {a.message}" for a in r.anomalies[:5]]
        lines.append(f"run directory: {self.run_dir}")
        lines.append(f"reproduce: {self.spec.reproduce_command()}")
        return "\n".join(lines)


def make_cluster(spec: RunSpec, run_dir: Path) -> Cluster:
    """The backend the spec asks for: external if bootstrap servers are given, else local processes."""
    if spec.bootstrap_servers:
        from harness.cluster.external import ExternalCluster
        return ExternalCluster(spec.bootstrap_servers)
    from harness.cluster.local import LocalCluster, LocalClusterSpec
    return LocalCluster(LocalClusterSpec(
        version=spec.kafka_version, brokers=spec.brokers, controllers=spec.controllers, heap_mb=spec.heap_mb,
        replication_factor=spec.replication_factor, min_insync_replicas=spec.min_insync_replicas,
        base_port=spec.base_port, kafka_home=spec.kafka_home), run_dir)


def run(spec: RunSpec, cluster: Cluster | None = None, run_dir: Path | None = None) -> RunOutcome:
    """Run `spec` end to end and store it. Never returns a pass for a run it could not check."""
    spec.validate()
    run_dir = run_dir or new_run_dir(spec.name)
    write_json(run_dir / "spec.json", {"spec": json.loads(spec.to_json()), "reproduce": spec.reproduce_command()})
    history = HistoryWriter(run_dir / "history.jsonl")
    client_log = logging.FileHandler(run_dir / "logs" / "librdkafka.log")
    LOGGER.addHandler(client_log)
    own_cluster = cluster is None
    drivers: list[ConsumerDriver] = []
    try:
        if own_cluster:
            cluster = make_cluster(spec, run_dir)
            cluster.start()
        topic = f"ksh-{spec.name}-s{spec.seed}-{uuid.uuid4().hex[:6]}"  # fresh per run, also on a shared cluster
        group = f"{topic}-group"
        _setup(cluster, spec, topic, group, history)
        drivers = _start_consumers(cluster, spec, topic, group, history, run_dir)
        _produce(cluster, spec, topic, history)
        _drain(spec, history, drivers)
        while drivers:  # closed before the durable read, so every acknowledgement is in
            drivers.pop().close()
        _read_durable_state(cluster, spec, group, history)
    finally:
        for driver in drivers:  # only on failure: the ones not closed yet
            driver.close()
        if cluster is not None:
            cluster.collect_logs(run_dir / "logs")
            if own_cluster:
                cluster.close()
        history.close()
        LOGGER.removeHandler(client_log)
        client_log.close()
    events = EventTable.from_ops(history.ops())
    events.write_parquet(run_dir / "history.parquet")
    results = tuple(check_safe(name, fn, events) for name, fn in CHECKERS.items())
    outcome = RunOutcome(spec, compose(results), results, run_dir)
    write_json(run_dir / "verdict.json", {"valid": outcome.valid, "verdict": verdict_word(outcome.valid),
                                          "results": [r.to_json() for r in results], "seed": spec.seed,
                                          "kafka_version": cluster.version,
                                          "reproduce": spec.reproduce_command()})
    return outcome


def _setup(cluster: Cluster, spec: RunSpec, topic: str, group: str, history: HistoryWriter) -> None:
    from harness.cluster.inspect import ClusterInspector
    inspector = ClusterInspector(cluster.bootstrap_servers)
    rf = min(spec.replication_factor, len(cluster.broker_ids))
    create_topic(inspector.admin, topic, spec.topic_partitions, rf,
                 {"min.insync.replicas": str(min(spec.min_insync_replicas, rf))})
    wait_until(lambda: inspector.all_led(topic, min_isr=rf), timeout=60, what=f"{topic} partitions to have leaders")
    set_group_configs(inspector.admin, group, {"share.auto.offset.reset": "earliest", **spec.group_configs})
    limits = limits_in_force(inspector.admin, group, cluster.broker_ids[0])
    version = _version(cluster, spec)
    history.append("harness", "ok", "config", {
        "schema_version": SCHEMA_VERSION, "group": group, "topics": [topic], "kafka_version": version,
        "model_profile": ".".join(version.split(".")[:2]), "auto_offset_reset": "earliest",
        "lock_tolerance_ms": spec.lock_tolerance_ms, "settle_ms": spec.settle_ms, "seed": spec.seed, **limits})


def _start_consumers(cluster: Cluster, spec: RunSpec, topic: str, group: str, history: HistoryWriter,
                     run_dir: Path) -> list[ConsumerDriver]:
    drivers = []
    for i in range(spec.consumers):
        config = {"bootstrap": cluster.bootstrap_servers, "group": group, "topics": [topic],
                  "behaviour": spec.behaviour, "client_config": {"max.poll.records": str(spec.max_poll_records)}}
        driver = ConsumerDriver(f"consumer-{i}", config, history, run_dir / "logs")
        driver.start()
        drivers.append(driver)
    wait_until(lambda: sum(1 for op in history.ops() if op.f == "start" and op.type == "ok") == len(drivers),
               timeout=60, what="every consumer driver to start",
               fatal=lambda: next((f"{d.name} exited early (see {d.log_path})" for d in drivers if not d.alive()), None))
    return drivers


def _produce(cluster: Cluster, spec: RunSpec, topic: str, history: HistoryWriter) -> None:
    """Produce at `produce_rate` on a fixed schedule; partitions are drawn from the seed."""
    rng = random.Random(spec.seed)
    producer = HistoryProducer(cluster.bootstrap_servers, history)
    start = time.monotonic()
    for seq in range(spec.records):
        due = start + seq / spec.produce_rate
        while (wait := due - time.monotonic()) > 0:
            producer.poll(wait)  # serves delivery reports until the record is due
        producer.produce(topic, f"{spec.seed}-{seq}", partition=rng.randrange(spec.topic_partitions))
    outstanding = producer.flush(60)
    if outstanding:
        history.append("harness", "info", "produce-flush", {"outstanding": outstanding})


def _version(cluster: Cluster, spec: RunSpec) -> str:
    """The Kafka version under test: the cluster's, or for an external cluster the one the spec names."""
    return cluster.version if cluster.version[:1].isdigit() else spec.kafka_version


def _read_durable_state(cluster: Cluster, spec: RunSpec, group: str, history: HistoryWriter) -> None:
    """After the consumers closed: the group's start offsets, for the durable-state checker."""
    from harness.cluster.java_admin import read_share_offsets
    from harness.kafka.jars import resolve
    from harness.paths import cache_dir
    dist = resolve(_version(cluster, spec), cache_dir(), spec.kafka_home)
    read_share_offsets(dist, cache_dir(), cluster.bootstrap_servers, group, history)


def _drain(spec: RunSpec, history: HistoryWriter, drivers: list[ConsumerDriver]) -> None:
    """Wait until every acknowledged produce is accepted; a timeout is recorded, not raised."""
    def drained() -> bool:
        ops = history.ops()
        produced = {(o.value["topic"], o.value["partition"], o.value["offset"])
                    for o in ops if o.f == "produce" and o.type == "ok"}
        return produced <= no_loss.accepted_records(ops).keys()

    history.append("harness", "invoke", "drain", {"timeout": spec.drain_timeout})
    try:
        wait_until(drained, timeout=spec.drain_timeout, what="every produced record to be accepted", interval=0.5,
                   fatal=lambda: "every consumer driver exited" if not any(d.alive() for d in drivers) else None)
        history.append("harness", "ok", "drain", {})
    except WaitTimeout as exc:
        history.append("harness", "info", "drain", {"error": str(exc).splitlines()[0]})
