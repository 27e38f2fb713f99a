"""Consumer workloads: what the consumers do while the faults happen (seeded, named, reproducible), and the
traffic part of a run's spec (`Traffic`, `harness.spec.RunSpec.traffic`) that a workload sets.

A workload sets the consumers' behaviour (`harness.clients.behaviours`), how many
consumers share how many partitions, and consumer-side events the run schedules
beside its faults (crashes and restarts, members joining and leaving). Runs with a
workload use short acquisition locks and a low delivery-count limit, so lock
expiry and archiving happen within seconds.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from harness.clients.behaviours import BEHAVIOURS
from harness.cluster.plan import check_sizes
from harness.errors import HarnessError

if TYPE_CHECKING:
    from harness.spec import RunSpec

#: Upper bounds of what one machine runs (2 cores: a consumer is a process): beyond them, a typo.
SIZE_LIMITS = {"topic_partitions": 10_000, "consumers": 64, "records": 100_000_000, "max_poll_records": 100_000}

LOCK_DURATION_MS = 5000
DELIVERY_COUNT_LIMIT = 3


@dataclass(frozen=True)
class Workload:
    name: str
    behaviour: str
    summary: str
    consumers: int = 3
    partitions: int = 3
    events: tuple[str, ...] = ()  # consumer faults scheduled beside the run's faults


WORKLOADS: dict[str, Workload] = {w.name: w for w in (
    Workload("accept-implicit", "accept-implicit", "implicit acknowledgement: each commit accepts the batch"),
    Workload("accept-explicit", "accept-explicit", "explicit ACCEPT of every record"),
    Workload("mix", "mix", "a seeded mix of ACCEPT / RELEASE / REJECT per record and delivery"),
    Workload("poison", "poison", "one record in ten always released: archived at the delivery-count limit"),
    Workload("slow", "slow", "one batch in five held past its acquisition lock: it moves to another consumer"),
    Workload("crash", "accept-explicit", "consumers killed mid-batch (SIGKILL) and restarted",
             events=("consumer-kill",)),
    Workload("churn", "accept-implicit", "consumers join the group and leave it during the run",
             events=("consumer-join",)),
    Workload("wide", "accept-implicit", "more consumers (5) than partitions (2)", consumers=5, partitions=2),
    Workload("accept-async", "accept-async", "explicit ACCEPT of every record, committed with commitAsync: "
             "results arrive by callback while the consumer polls on"),
)}


def apply_workload(spec: "RunSpec", name: str) -> "RunSpec":
    """`spec` running workload `name`; an unknown name is a one-line error listing the valid ones."""
    workload = WORKLOADS.get(name)
    if workload is None:
        raise HarnessError(f"invalid workload {name!r}: use one of {', '.join(WORKLOADS)}")
    return replace(spec, workload=name, behaviour=workload.behaviour, consumers=workload.consumers,
                   topic_partitions=workload.partitions, workload_events=workload.events,
                   lock_duration_ms=LOCK_DURATION_MS, delivery_count_limit=DELIVERY_COUNT_LIMIT)


@dataclass(frozen=True)
class Traffic:
    """What a run produces and how its consumers take it: the topic, the records, the consumers and what
    they do (a workload sets these), how long the drain may wait for the records to settle."""

    topic_partitions: int = 3
    consumers: int = 3
    behaviour: str = "accept-implicit"
    records: int = 300
    produce_rate: float = 200.0  # records per second, so consumers poll while records arrive
    max_poll_records: int = 20
    drain_timeout: float = 90.0
    workload: str | None = None  # a WORKLOADS name; sets behaviour, consumers, partitions, events
    workload_events: tuple[str, ...] = ()  # consumer faults scheduled beside the fault plan's (crashes, joins)

    def validate(self) -> "Traffic":
        check_sizes(self, SIZE_LIMITS)
        if self.behaviour not in BEHAVIOURS:
            raise HarnessError(f"invalid behaviour {self.behaviour!r}: use one of {', '.join(BEHAVIOURS)}")
        if self.produce_rate <= 0:
            raise HarnessError(f"invalid produce-rate {self.produce_rate}: use a positive number of records per second")
        if self.workload is not None and self.workload not in WORKLOADS:
            raise HarnessError(f"invalid workload {self.workload!r}: use one of {', '.join(WORKLOADS)}")
        if self.drain_timeout <= 0:
            raise HarnessError(f"invalid drain-timeout {self.drain_timeout}: use a positive number of seconds")
        return self
