"""Seeded fault schedules: which fault, when, for how long, aimed where.

`generate` draws everything from one seed, so the same seed and options give
the same schedule (the report prints both). Times are seconds after the
workload starts. Targets are drawn as a number (`pick`) that the fault turns
into a node, link or consumer from the cluster's state when it starts (e.g.
"the leader of partition pick % partitions"), so a schedule does not depend
on which node happened to lead at generation time.

Rules: an `exclusive` fault (cold restart, split, truncation) never overlaps
another; at most one fault that takes a node out, or out of the ISR (kills,
pauses, node cuts, reset_peer), runs at a time: a 3-node cluster with
min.insync.replicas=2 stays writable, and each such heal can wait for a full
ISR without another fault holding it back. At most `max_overlap` faults run
at once.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass

from harness.errors import HarnessError


@dataclass(frozen=True)
class ScheduledFault:
    at: float  # seconds after the workload starts
    duration: float  # seconds from the start until the heal is due
    fault: str
    pick: int  # the seeded choice of target


@dataclass(frozen=True)
class ScheduleTiming:
    """How a run profile (ci, nightly) spaces its faults."""

    phase: float  # seconds of workload during which faults start
    interval: float  # mean seconds between fault starts
    min_duration: float
    max_duration: float
    max_overlap: int


TIMINGS = {
    "ci": ScheduleTiming(phase=15.0, interval=6.0, min_duration=3.0, max_duration=8.0, max_overlap=2),
    "nightly": ScheduleTiming(phase=300.0, interval=20.0, min_duration=5.0, max_duration=30.0, max_overlap=3),
}


def shortest_interval(timing: ScheduleTiming) -> float:
    """The shortest mean interval between fault starts the schedule can honour: faults last at least
    `min_duration` and at most `max_overlap` run at once, so a fault can start at most every
    min_duration / max_overlap seconds (ci: 1.5 s). A shorter one would only pile faults up behind the
    overlap rules (and one of 1e-300 s would not advance the clock at all)."""
    return round(timing.min_duration / timing.max_overlap, 3)


def generate(faults: tuple[str, ...], seed: int, timing: ScheduleTiming, interval: float | None = None,
             mode: str = "random", events: tuple[str, ...] = ()) -> list[ScheduledFault]:
    """The schedule for `faults` (catalogue names) from `seed`; [] if nothing is enabled.

    `random`: faults drawn from `faults` at seeded times, about `interval` apart, over the phase.
    `once`: each of `faults` once, in order, at seeded times in the first two thirds of the phase
    (a scenario test: this fault, under this workload). `events` (a workload's consumer faults:
    crashes, joins) are drawn the same way as `random` and fitted in under the same rules.
    """
    from harness.faults import CATALOGUE  # (deferred: loads confluent_kafka)
    if not faults and not events:
        return []
    unknown = [f for f in (*faults, *events) if f not in CATALOGUE]
    if unknown:
        raise HarnessError(f"invalid fault {unknown[0]!r}: use one of {', '.join(CATALOGUE)}")
    if mode not in ("random", "once"):
        raise HarnessError(f"invalid fault mode {mode!r}: use random or once")
    interval = timing.interval if interval is None else interval
    if interval <= 0:
        raise HarnessError(f"invalid fault interval {interval}: use a positive number of seconds")
    if interval < shortest_interval(timing):
        raise HarnessError(f"invalid fault interval {interval:g}: faults start at most every "
                           f"{shortest_interval(timing):g} s (each lasts at least {timing.min_duration:g} s, at most "
                           f"{timing.max_overlap} at once): use {shortest_interval(timing):g} s or more")
    rng = random.Random(f"faults-{seed}")
    schedule: list[ScheduledFault] = []

    def add(name: str, t: float) -> float:
        fault = CATALOGUE[name]
        duration = round(rng.uniform(timing.min_duration, timing.max_duration), 3)
        pick = rng.randrange(1 << 30)
        t = _earliest(schedule, t, duration, fault, timing.max_overlap)
        schedule.append(ScheduledFault(round(t, 3), duration, name, pick))
        return t

    if mode == "once":
        slot = timing.phase * 2 / 3 / max(1, len(faults))
        for i, name in enumerate(faults):
            add(name, i * slot + rng.uniform(0.15, 0.5) * slot)
    elif faults:
        t = rng.uniform(0.2, 0.6) * interval
        while t < timing.phase:
            t = add(rng.choice(faults), t) + rng.uniform(0.5, 1.5) * interval
    if events:
        events_rng = random.Random(f"events-{seed}")
        t = events_rng.uniform(0.2, 0.6) * interval
        while t < timing.phase:
            add(events_rng.choice(events), t)
            t += events_rng.uniform(0.5, 1.5) * interval
    return sorted(schedule, key=lambda s: s.at)


def _earliest(schedule: list[ScheduledFault], t: float, duration: float, fault, max_overlap: int) -> float:
    """The first time >= t at which `fault`, lasting `duration`, may run under the overlap rules
    (checked against every entry its whole window overlaps, also ones that start later)."""
    from harness.faults import CATALOGUE  # (deferred: loads confluent_kafka)
    while True:
        overlapping = [s for s in schedule if s.at < t + duration and t < s.at + s.duration]
        blockers = [s for s in overlapping
                    if fault.exclusive or CATALOGUE[s.fault].exclusive
                    or (fault.takes_node and CATALOGUE[s.fault].takes_node)]
        if len(overlapping) >= max_overlap:
            blockers = overlapping
        if not blockers:
            return t
        t = min(s.at + s.duration for s in blockers) + 0.001  # strictly after (times are rounded to ms)


def end_of(schedule: list[ScheduledFault]) -> float:
    return max((s.at + s.duration for s in schedule), default=0.0)


def to_json(schedule: list[ScheduledFault]) -> list[dict]:
    return [asdict(s) for s in schedule]
