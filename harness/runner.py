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
import os
import random
import re
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.checkers import Result, check_safe, compose, no_loss, verdict_word
from harness.checkers.registry import CHECKERS  # re-exported: Spark, conformance and suites use runner.CHECKERS
from harness.cluster.admin import create_topic, group_configs_shown, limits_in_force, set_group_configs
from harness.cluster.base import Cluster
from harness.clients.pool import DriverPool
from harness.clients.logging import LOGGER
from harness.clients.producer import HistoryProducer
from harness.errors import HarnessError
from harness.history.events import EventTable
from harness.history.schema import SCHEMA_VERSION
from harness.history.store import HistoryWriter
from harness.report.rundir import new_run_dir, write_json
from harness.spec import RunSpec
from harness.wait import WaitTimeout, wait_until


@dataclass(frozen=True)
class RunOutcome:
    """What a run produced: the composed verdict, each checker's result, and where it is stored."""

    spec: RunSpec
    valid: Any
    results: tuple[Result, ...]
    run_dir: Path
    faults: tuple = ()  # harness.faults.nemesis.FaultRecord, in start order

    @property
    def faults_not_applied(self) -> list:
        return [f for f in self.faults if not f.applied or not f.healed_ok]

    @property
    def chaos_missing(self) -> str | None:
        """Why the chaos asked for did not happen as asked (None when it did, or none was asked): a
        schedule that came out empty, a fault not applied, a heal that failed. Such a run is unknown."""
        if not (self.spec.faults or self.spec.workload_events):
            return None
        if not self.faults:
            return "faults were asked for but none was scheduled or applied (the schedule came out empty)"
        missing = self.faults_not_applied
        if missing:
            return f"{len(missing)} of {len(self.faults)} faults not applied or not healed: " + "; ".join(
                f"{f.id} {'NOT APPLIED' if not f.applied else 'HEAL FAILED'}: {f.reason}" for f in missing[:3])
        return None

    @property
    def overall(self) -> Any:
        """The run's verdict as a gate: the checkers' (a violation stays a violation), made unknown
        when the chaos asked for did not happen (`chaos_missing`)."""
        if self.valid is False or self.chaos_missing is None:
            return self.valid
        return "unknown"

    def summary(self) -> str:
        lines = [f"verdict: {verdict_word(self.overall)}  ({self.spec.name}, seed {self.spec.seed})"]
        if self.chaos_missing is not None:
            lines.append(f"  chaos: UNKNOWN - {self.chaos_missing}")
        for r in self.results:
            lines.append(f"  {r.checker}: {verdict_word(r.valid)} {r.stats}" + (f" - {r.reason}" if r.reason else ""))
            lines += [f"    {a.kind}: {a.message}" for a in r.anomalies[:5]]
        lines += self._stories()
        if self.faults:
            applied = sum(1 for f in self.faults if f.applied)
            lines.append(f"faults: {len(self.faults)} scheduled, {applied} applied (seed {self.spec.effective_fault_seed})")
            lines += [f"  {f.id} {','.join(f.targets)}: NOT APPLIED: {f.reason}" for f in self.faults if not f.applied]
            lines += [f"  {f.id}: HEAL FAILED: {f.reason}" for f in self.faults if f.applied and not f.healed_ok]
        lines.append(f"run directory: {self.run_dir}")
        lines.append(f"reproduce: {self.spec.reproduce_command()}")
        return "\n".join(lines)


    def _stories(self, most: int = 2) -> list[str]:
        """The history of the records the first anomalies name (`harness.history.story`), so a failure
        can be read from a log alone (in CI the run directory goes with the clone)."""
        from harness.history.story import record_named, story
        from harness.history.store import read_history
        keys = []
        for r in self.results:
            for a in r.anomalies[:1]:
                key = record_named(a.message)
                if key is not None and key not in keys:
                    keys.append(key)
        if not keys:
            return []
        try:
            ops = read_history(self.run_dir / "history.jsonl")
        except (OSError, HarnessError) as exc:
            return [f"  (no record histories: {exc})"]
        lines = []
        for key in keys[:most]:
            lines.append(f"  history of {key[0]}-{key[1]}@{key[2]}:")
            lines += [f"    {line}" for line in story(ops, key)]
        return lines


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
    pool = None
    faults: list = []
    try:
        if own_cluster:
            cluster = make_cluster(spec, run_dir)
            cluster.start()
        safe = re.sub(r"[^A-Za-z0-9._-]+", "-", spec.name).strip("-")[:120]  # Kafka's topic name alphabet
        topic = f"ksh-{safe}-s{spec.seed}-{uuid.uuid4().hex[:6]}"  # fresh per run, also on a shared cluster
        group = f"{topic}-group"
        limits = _setup(cluster, spec, topic, group, history)
        pool = _start_consumers(cluster, spec, topic, group, history, run_dir, limits)
        if spec.faults or spec.workload_events:
            faults = _produce_under_faults(cluster, spec, topic, group, history, pool, limits, run_dir)
        else:
            _produce(cluster, spec, topic, history)
        _drain(spec, history, pool, limits)
        pool.close_all()  # closed before the durable read, so every acknowledgement is in
        _read_durable_state(cluster, spec, topic, group, history)
    finally:
        try:
            if pool is not None:
                pool.close_all()  # only on failure: the ones not closed yet
            if cluster is not None:
                cluster.collect_logs(run_dir / "logs")
        finally:  # whatever the log copy met (a full disk), the cluster is stopped and the history closed
            try:
                if cluster is not None and own_cluster:
                    cluster.close()
            finally:
                history.close()
                LOGGER.removeHandler(client_log)
                client_log.close()
                if spec.faults or spec.workload_events:  # the evidence of a failed run too
                    from harness.report.timeline import write_timeline
                    write_timeline(history.ops(), run_dir / "timeline.html", f"{spec.name} seed {spec.seed}")
    events = EventTable.from_ops(history.ops())
    events.write_parquet(run_dir / "history.parquet")
    engine = check_engine(len(events))
    if engine == "spark":
        from harness.spark.engine import check_files
        results = check_files([run_dir / "history.parquet"])[0].results
    else:
        results = tuple(check_safe(name, fn, events) for name, fn in CHECKERS.items())
    outcome = RunOutcome(spec, compose(results), results, run_dir, tuple(faults))
    write_json(run_dir / "verdict.json", {"valid": outcome.valid, "verdict": verdict_word(outcome.valid),
                                          "overall": outcome.overall, "chaos_missing": outcome.chaos_missing,
                                          "results": [r.to_json() for r in results], "seed": spec.seed,
                                          "faults": [f.to_json() for f in faults],
                                          "kafka_version": cluster.version, "engine": engine,
                                          "reproduce": spec.reproduce_command()})
    return outcome


def check_engine(events: int) -> str:
    """The engine that checks a run's history: $KSH_CHECK_ENGINE (inprocess, spark, or auto: spark
    above $KSH_SPARK_THRESHOLD events; the pytest plugin's --ksh-engine and --ksh-spark-threshold)."""
    from harness.spark.engine import SPARK_THRESHOLD
    engine = os.environ.get("KSH_CHECK_ENGINE", "auto")
    if engine not in ("auto", "inprocess", "spark"):
        raise HarnessError(f"invalid KSH_CHECK_ENGINE {engine!r}: use auto, inprocess or spark")
    if engine == "auto":
        from harness import parse
        try:
            threshold = parse.count(os.environ.get("KSH_SPARK_THRESHOLD", str(SPARK_THRESHOLD)))
        except ValueError as exc:
            raise HarnessError(f"KSH_SPARK_THRESHOLD: {exc} (a number of events)") from None
        engine = "spark" if events > threshold else "inprocess"
    return engine


def _setup(cluster: Cluster, spec: RunSpec, topic: str, group: str, history: HistoryWriter) -> dict[str, Any]:
    from harness.cluster.inspect import ClusterInspector
    inspector = ClusterInspector(cluster.bootstrap_servers)
    rf = min(spec.replication_factor, len(cluster.broker_ids))
    create_topic(inspector.admin, topic, spec.topic_partitions, rf,
                 {"min.insync.replicas": str(min(spec.min_insync_replicas, rf))})
    wait_until(lambda: inspector.all_led(topic, min_isr=rf), timeout=60, what=f"{topic} partitions to have leaders")
    version = _version(cluster, spec)
    configs = {"share.auto.offset.reset": "earliest", **_limit_configs(spec, version), **spec.group_configs}
    set_group_configs(inspector.admin, group, configs)
    # Group configs reach the brokers through the metadata log: a describe right after the change may
    # still show the old values (seen in CI: limit 5 recorded while the broker archived at 3).
    wait_until(lambda: all(group_configs_shown(inspector.admin, group, configs) for _ in range(3)), timeout=30,
               what=f"group {group}'s configs {configs} to be shown", interval=0.2)
    limits = limits_in_force(inspector.admin, group, cluster.broker_ids[0])
    limits.update(_limits_set(spec, version))  # what this run set is what is in force once shown
    history.append("harness", "ok", "config", {
        "schema_version": SCHEMA_VERSION, "group": group, "topics": [topic], "kafka_version": version,
        "model_profile": ".".join(version.split(".")[:2]),
        "auto_offset_reset": configs.get("share.auto.offset.reset", "earliest"),
        "isolation_level": configs.get("share.isolation.level", "read_uncommitted"),
        "lock_tolerance_ms": spec.lock_tolerance_ms, "settle_ms": spec.settle_ms, "seed": spec.seed, **limits})
    return {**limits, "lock_tolerance_ms": spec.lock_tolerance_ms}


def _limit_settings(spec: RunSpec, version: str) -> list[tuple[str, str, int]]:
    """(limit key, group config name, value) for the spec's lock duration and delivery-count limit, where
    the release has a group-level name (else the broker's value stays; the config op records what is in force)."""
    from harness.kafka.versions import profile_for
    profile, out = profile_for(version), []
    for key, role, value in (("lock_duration_ms", "lock_duration", spec.lock_duration_ms),
                             ("delivery_count_limit", "delivery_count_limit", spec.delivery_count_limit)):
        name = profile.group_config(role)
        if value is not None and name is not None:
            out.append((key, name, value))
    return out


def _limit_configs(spec: RunSpec, version: str) -> dict[str, str]:
    return {name: str(value) for _, name, value in _limit_settings(spec, version)}


def _limits_set(spec: RunSpec, version: str) -> dict[str, int]:
    return {key: value for key, _, value in _limit_settings(spec, version)}


def _start_consumers(cluster: Cluster, spec: RunSpec, topic: str, group: str, history: HistoryWriter,
                     run_dir: Path, limits: dict[str, Any]) -> DriverPool:
    # `slow` holds a batch past its lock: the lock in force, the tolerance, and a second to spare.
    hold_ms = limits.get("lock_duration_ms", 30000) + spec.lock_tolerance_ms + 1000
    pool = DriverPool(cluster, {"group": group, "topics": [topic], "behaviour": spec.behaviour,
                                "seed": spec.seed, "hold_ms": hold_ms,
                                "client_config": {"max.poll.records": str(spec.max_poll_records)}},
                      history, run_dir / "logs")
    pool.start(spec.consumers)
    return pool


def _produce_under_faults(cluster: Cluster, spec: RunSpec, topic: str, group: str, history: HistoryWriter,
                          pool: DriverPool, limits: dict[str, Any], run_dir: Path) -> list:
    """Workload and nemesis together: the producer in a thread (spread over the fault phase), the seeded
    schedule in this thread, then heal everything and wait for recovery."""
    import threading
    from dataclasses import replace as _replace

    from harness.faults.base import FaultContext
    from harness.faults.nemesis import Nemesis
    from harness.faults.schedule import PROFILES, generate, to_json
    schedule = generate(spec.faults, spec.effective_fault_seed, PROFILES[spec.profile], spec.fault_interval,
                        spec.fault_mode, spec.workload_events)
    write_json(run_dir / "schedule.json", {"seed": spec.effective_fault_seed, "faults": list(spec.faults),
                                           "mode": spec.fault_mode, "workload_events": list(spec.workload_events),
                                           "schedule": to_json(schedule)})
    phase = PROFILES[spec.profile].phase
    paced = _replace(spec, produce_rate=min(spec.produce_rate, spec.records / phase))
    errors: list[BaseException] = []

    def produce() -> None:
        try:
            _produce(cluster, paced, topic, history)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the main thread
            errors.append(exc)

    producer = threading.Thread(target=produce, name="producer", daemon=True)
    ctx = FaultContext(cluster, history, topic, group, pool, config=limits)
    nemesis = Nemesis(ctx)
    producer.start()
    try:
        nemesis.run(schedule)
    finally:
        nemesis.heal_all()
        producer.join()
    if errors:
        raise errors[0]
    _wait_recovered(ctx, history, pool, spec)
    return nemesis.records


def _wait_recovered(ctx, history: HistoryWriter, pool: DriverPool, spec: RunSpec) -> None:
    """After the heal: every partition led with a full ISR, every consumer slot running, consumers progressing."""
    from harness.faults.recovery import wait_in_sync
    history.append("harness", "invoke", "recover", {})
    wait_in_sync(ctx, timeout=120)
    missing = spec.consumers - len(pool.live())
    for _ in range(max(0, missing)):
        pool.replace(None)
    mark = len(history.ops())
    try:
        wait_until(lambda: any(op.f == "poll" for op in history.ops()[mark:]) or _all_settled(history.ops()),
                   timeout=60, what="consumers to make progress after the faults healed", interval=0.5)
        history.append("harness", "ok", "recover", {})
    except WaitTimeout as exc:  # recorded; the drain and the checkers say what it cost
        history.append("harness", "info", "recover", {"error": str(exc).splitlines()[0]})


def _produce(cluster: Cluster, spec: RunSpec, topic: str, history: HistoryWriter) -> None:
    """Produce at `produce_rate` on a fixed schedule; partitions are drawn from the seed. A producer that
    hits a fatal error (after an unclean election) is flushed as far as it can be and replaced."""
    rng = random.Random(spec.seed)
    generation = 0
    producer = HistoryProducer(cluster.bootstrap_servers, history)
    start = time.monotonic()
    for seq in range(spec.records):
        due = start + seq / spec.produce_rate
        while (wait := due - time.monotonic()) > 0 and producer.fatal is None:
            producer.poll(wait)  # serves delivery reports until the record is due
        if producer.fatal is not None:
            _flush(producer, history)
            generation += 1
            producer = HistoryProducer(cluster.bootstrap_servers, history, process=f"producer-{generation}")
        producer.produce(topic, f"{spec.seed}-{seq}", partition=rng.randrange(spec.topic_partitions))
    _flush(producer, history)


def _flush(producer: HistoryProducer, history: HistoryWriter) -> None:
    outstanding = producer.flush(60)
    if outstanding or producer.fatal:
        history.append("harness", "info", "produce-flush", {"outstanding": outstanding, "process": producer.process,
                                                            "error": producer.fatal})


def _version(cluster: Cluster, spec: RunSpec) -> str:
    """The Kafka version under test: the cluster's, or for an external cluster the one the spec names."""
    return cluster.version if cluster.version[:1].isdigit() else spec.kafka_version


def _read_durable_state(cluster: Cluster, spec: RunSpec, topic: str, group: str, history: HistoryWriter) -> None:
    """After the consumers closed: the group's start offsets (Admin API) and its state decoded from
    `__share_group_state`, for the durable-state checker. The two reads are independent (each its own
    short JVM, each recording its own invoke and outcome), so they run at the same time, the state read
    as process `admin-state` (one outstanding operation per process)."""
    from harness.cluster.inspect import ClusterInspector
    from harness.cluster.java_admin import read_share_offsets, read_share_state
    from harness.kafka.jars import resolve
    from harness.paths import cache_dir
    cache, bootstrap = cache_dir(), cluster.bootstrap_servers
    dist = resolve(_version(cluster, spec), cache, spec.kafka_home)
    names = {ClusterInspector(bootstrap).topic_id(topic): topic}
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="durable-read") as pool:
        reads = [pool.submit(read_share_offsets, dist, cache, bootstrap, group, history),
                 pool.submit(read_share_state, dist, cache, bootstrap, group, names, history, "admin-state")]
        for read in reads:
            read.result()  # each read records its own failure (compiling included); a bug is raised here


def _all_settled(ops, wait_ns: int = 0, now_ns: int | None = None, rejoin_ns: int = 0) -> bool:
    """Every record produced by the workload (not the nemesis) is settled: accepted, rejected or archived
    by a committed acknowledgement, or by one whose outcome only the durable read after the drain can
    tell (`no_loss.settlement`) and which had `wait_ns` (a lock duration) to come back if the broker
    never got it, and `rejoin_ns` (a session timeout) since the last consumer crash: until the group
    drops a crashed member, its partitions may be fetched by no one, so nothing comes back."""
    truncated = {r["id"] for o in ops if o.f == "truncated" and o.type == "ok" for r in o.value.get("records", ())}
    produced = {(o.value["topic"], o.value["partition"], o.value["offset"]) if o.value["offset"] >= 0
                else o.value["id"] for o in ops if o.f == "produce" and o.type == "ok" and o.process != "nemesis"
                and o.value["id"] not in truncated}  # the log lost those: nothing to settle
    unplaced = {key for key in produced if isinstance(key, str)}  # acknowledged without an offset
    if unplaced:  # placed by their deliveries; one never delivered is not settled
        placed = {r["id"]: (r["topic"], r["partition"], r["offset"]) for o in ops if o.f == "poll" and o.type == "ok"
                  for r in o.value["records"] if r["id"] in unplaced}
        produced = (produced - unplaced) | {placed.get(rid, rid) for rid in unplaced}
    sure, maybe = no_loss.settlement(ops)
    if not produced <= sure | set(maybe):
        return False
    now_ns = now_ns if now_ns is not None else (ops[-1].time if ops else 0)
    waiting = [t for key, t in maybe.items() if key in produced]
    if not waiting:
        return True
    crashes = [op.time for op in ops if op.f == "crash" or (op.f == "close" and op.type == "info")]
    if crashes and now_ns - max(crashes) < rejoin_ns:
        return False
    return all(now_ns - t >= wait_ns for t in waiting)


def _drain(spec: RunSpec, history: HistoryWriter, pool: DriverPool, limits: dict[str, Any]) -> None:
    """Wait until every acknowledged produce is settled; a timeout is recorded, not raised.

    A record settled only by an acknowledgement of unknown outcome (its consumer crashed before the
    commit result) or one that failed gets its lock duration, the tolerance and a poll to be delivered
    again, and after the last consumer crash the session timeout as well (the group must drop the
    crashed member before its partitions are fetched again)."""
    slack_ms = spec.lock_tolerance_ms + 2000
    wait_ns = (limits.get("lock_duration_ms", 30000) + slack_ms) * 1_000_000
    rejoin_ns = (limits.get("session_timeout_ms", 45000) + slack_ms) * 1_000_000

    def drained() -> bool:
        return _all_settled(history.ops(), wait_ns, history.now_ns(), rejoin_ns)

    history.append("harness", "invoke", "drain", {"timeout": spec.drain_timeout})
    try:
        wait_until(drained, timeout=spec.drain_timeout, what="every produced record to be settled", interval=0.5,
                   fatal=lambda: "every consumer driver exited" if not pool.live() else None)
        history.append("harness", "ok", "drain", {})
    except WaitTimeout as exc:
        history.append("harness", "info", "drain", {"error": str(exc).splitlines()[0]})
