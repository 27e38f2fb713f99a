"""The traffic of a chaos run: consumer drivers, the seeded producer, and the faults beside them (what a
named workload, `harness.workloads`, asks for is applied to the spec before; here it runs).

`start_consumers` starts `spec.consumers` drivers of the spec's client, each in its own process,
behaving as `spec.behaviour` says; `produce` writes `spec.records` unique ids at `spec.produce_rate`
to seeded partitions; `produce_under_faults` runs the producer in a thread while the nemesis plays
the seeded schedule in this one, heals everything and waits until the cluster and the consumers
recovered.
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import replace

from harness.clients.pool import DriverPool
from harness.clients.producer import HistoryProducer
from harness.clients.registry import driver_info, effective_options
from harness.faults.base import FaultContext
from harness.faults.nemesis import Nemesis
from harness.faults.recovery import wait_in_sync
from harness.faults.schedule import TIMINGS, generate, to_json
from harness.history.store import HistoryWriter
from harness.report.rundir import write_json
from harness.run.context import RunContext
from harness.run.drain import all_settled
from harness.spec import RunSpec
from harness.sys.wait import WaitTimeout, wait_until
from harness.timing import spent, timed


def start_consumers(ctx: RunContext) -> DriverPool:
    """`spec.consumers` drivers of `spec.client` in chaos mode, each its own process."""
    spec = ctx.spec
    # `slow` holds a batch past its lock: the lock in force, the tolerance, and a second to spare.
    hold_ms = ctx.limits.get("lock_duration_ms", 30000) + spec.lock_tolerance_ms + 1000
    pool = DriverPool(ctx.cluster, {"group": ctx.group, "topics": [ctx.topic], "behaviour": spec.behaviour,
                                    "seed": spec.seed, "hold_ms": hold_ms,
                                    "client_config": {"max.poll.records": str(spec.max_poll_records),
                                                      **effective_options(spec)}},
                      ctx.history, ctx.run_dir / "logs", client=spec.client,
                      dist=ctx.dist() if driver_info(spec.client).jvm else None)
    try:
        pool.start(spec.consumers)
    except BaseException:  # (a driver that did not start, a contract refused): none left running
        pool.close_all()
        raise
    return pool


@timed("workload")
def produce(ctx: RunContext, spec: RunSpec | None = None) -> None:
    """Produce at `produce_rate` on a fixed schedule; partitions are drawn from the seed. A producer that
    hits a fatal error (after an unclean election) is flushed as far as it can be and replaced."""
    spec = spec or ctx.spec
    history = ctx.history
    rng = random.Random(spec.seed)
    generation = 0
    producer = HistoryProducer(ctx.cluster.bootstrap_servers, history)
    start = time.monotonic()
    for seq in range(spec.records):
        due = start + seq / spec.produce_rate
        while (wait := due - time.monotonic()) > 0 and producer.fatal is None:
            producer.poll(wait)  # serves delivery reports until the record is due
        if producer.fatal is not None:
            flush(producer, history)
            generation += 1
            producer = HistoryProducer(ctx.cluster.bootstrap_servers, history, process=f"producer-{generation}")
        producer.produce(ctx.topic, f"{spec.seed}-{seq}", partition=rng.randrange(spec.topic_partitions))
    flush(producer, history)


def flush(producer: HistoryProducer, history: HistoryWriter) -> None:
    """Wait up to a minute for the producer's outstanding records; what is left is recorded."""
    outstanding = producer.flush(60)
    if outstanding or producer.fatal:
        history.append("harness", "info", "produce-flush", {"outstanding": outstanding, "process": producer.process,
                                                            "error": producer.fatal})


def produce_under_faults(ctx: RunContext, pool: DriverPool) -> list:
    """Workload and nemesis together: the producer in a thread (spread over the fault phase), the seeded
    schedule in this thread, then heal everything and wait for recovery. The fault records, in start order."""
    spec = ctx.spec
    schedule = generate(spec.faults, spec.effective_fault_seed, TIMINGS[spec.profile], spec.fault_interval,
                        spec.fault_mode, spec.workload_events)
    write_json(ctx.run_dir / "schedule.json", {"seed": spec.effective_fault_seed, "faults": list(spec.faults),
                                               "mode": spec.fault_mode, "workload_events": list(spec.workload_events),
                                               "schedule": to_json(schedule)})
    paced = replace(spec, produce_rate=min(spec.produce_rate, spec.records / TIMINGS[spec.profile].phase))
    errors: list[BaseException] = []

    def producing() -> None:
        try:
            produce(ctx, paced)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the main thread
            errors.append(exc)

    producer = threading.Thread(target=producing, name="producer", daemon=True)
    fault_ctx = FaultContext(ctx.cluster, ctx.history, ctx.topic, ctx.group, pool,
                             config={**ctx.limits, "lock_tolerance_ms": spec.lock_tolerance_ms})
    nemesis = Nemesis(fault_ctx)
    producer.start()
    try:
        with spent("workload"):
            nemesis.run(schedule)
    finally:
        nemesis.heal_all()
        producer.join()
    if errors:
        raise errors[0]
    wait_recovered(fault_ctx, ctx.history, pool, spec.consumers, min(60.0, spec.drain_timeout))
    return nemesis.records


def wait_recovered(fault_ctx, history: HistoryWriter, pool: DriverPool, consumers: int,
                   progress_timeout: float = 60.0) -> None:
    """After the heal: every partition led with a full ISR, every consumer slot running, consumers progressing
    (waited for up to `progress_timeout`: 60 s, or the run's drain timeout if shorter)."""
    history.append("harness", "invoke", "recover", {})
    wait_in_sync(fault_ctx, timeout=120)
    for _ in range(max(0, consumers - len(pool.live()))):
        pool.join()  # a slot no process holds any more
    mark = len(history.ops())
    try:
        wait_until(lambda: any(op.f == "poll" for op in history.ops()[mark:]) or all_settled(history.ops()),
                   timeout=progress_timeout, what="consumers to make progress after the faults healed", interval=0.5)
        history.append("harness", "ok", "recover", {})
    except WaitTimeout as exc:  # recorded; the drain and the checkers say what it cost
        history.append("harness", "info", "recover", {"error": str(exc).splitlines()[0]})
