"""The fault plan of a run's spec (`harness.spec.RunSpec.chaos`): which faults, drawn how, from which seed;
validated here against the catalogue, the profile's timing and what the cluster can host.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from harness.cluster.plan import ClusterPlan, is_int
from harness.errors import HarnessError
from harness.kafka.implementations import HOSTED_FAULTS
from harness.faults.schedule import TIMINGS, shortest_interval

FAULT_MODES = ("random", "once")


@dataclass(frozen=True)
class FaultPlan:
    """Catalogue names, a seed for the schedule (default: the run's), mean seconds between starts, and the mode:
    random, a seeded schedule of `faults`; once, each of `faults` once, at seeded times."""

    faults: tuple[str, ...] = ()
    fault_seed: int | None = None
    fault_interval: float | None = None
    fault_mode: str = "random"

    def validate(self, cluster: ClusterPlan, profile: str, events: tuple[str, ...] = ()) -> "FaultPlan":
        """`events`: the consumer faults a workload schedules beside the plan's (checked as the plan's are)."""
        if self.fault_seed is not None and not is_int(self.fault_seed):
            raise HarnessError(f"invalid fault-seed {self.fault_seed!r}: use a whole number")
        if self.faults or events:
            from harness.faults.catalogue import parse_faults  # (deferred: loads confluent_kafka)
            for names in (self.faults, events):
                if names:
                    parse_faults(",".join(names))  # a bad name is a one-line error listing the valid ones
        if cluster.bootstrap_servers is None:
            self._check_fit_backend(cluster.backend, events)
        if self.fault_mode not in FAULT_MODES:
            raise HarnessError(f"invalid fault-mode {self.fault_mode!r}: use one of {', '.join(FAULT_MODES)}")
        if self.fault_interval is not None:
            self._check_interval(self.fault_interval, profile)
        return self

    def _check_fit_backend(self, backend: str, events: tuple[str, ...]) -> None:
        """A fault the backend cannot apply is refused now, not recorded as not applied after a whole run:
        kfake offers leader moves only, librdkafka's mock leader moves and its own injected faults (no process
        or link control); Apache Kafka's backends move leaders by taking brokers down, never by the
        implementation's own hooks."""
        from harness.faults.catalogue import CATALOGUE  # (deferred: loads confluent_kafka)
        hosted = HOSTED_FAULTS.get(backend)
        for name in (*self.faults, *events):
            needs = {cap.__name__ for cap in CATALOGUE[name].needs}
            if hosted is not None and needs - hosted:
                hostable = sorted(n for n, f in CATALOGUE.items() if f.needs and {c.__name__ for c in f.needs} <= hosted)
                raise HarnessError(f"fault {name} needs {', '.join(sorted(needs))}, which the {backend} backend has not "
                                   f"(one in-memory process, no proxies): on {backend} use the consumer faults or "
                                   f"{', '.join(hostable)}")
            own = {"LeaderMoves", "InjectedFaults"} & needs
            if hosted is None and own:
                having = [b for b, f in HOSTED_FAULTS.items() if own <= f]
                which = f"the {having[0]} backend has" if len(having) == 1 else f"the {' and '.join(having)} backends have"
                raise HarnessError(f"fault {name} acts through the implementation's own hooks ({', '.join(sorted(own))}), "
                                   f"which only {which}: on the {backend} backend use leader-stop, leader-kill or "
                                   "leader-pause")

    def check_hostable(self, cluster: ClusterPlan, events: tuple[str, ...] = ()) -> "FaultPlan":
        """The plan, if `cluster` can host its faults: an external cluster (bootstrap-servers) is one the
        harness has no process, disk or link of, so only the consumer faults (which act on the harness's own
        consumers) can be applied there; any other would end "not applied" after a whole run."""
        if cluster.bootstrap_servers is None:
            return self
        from harness.faults.catalogue import CATALOGUE  # (deferred: loads confluent_kafka)
        for name in (*self.faults, *events):
            needs = sorted(cap.__name__ for cap in CATALOGUE[name].needs)
            if needs:
                hosted = [n for n, f in CATALOGUE.items() if not f.needs]
                raise HarnessError(f"fault {name} needs {', '.join(needs)}, which an external cluster "
                                   f"(bootstrap-servers) does not give the harness (no process, disk or link "
                                   f"control): drop bootstrap-servers to run it on a cluster the harness starts, or "
                                   f"use the consumer faults {', '.join(hosted)}")
        return self

    @staticmethod
    def _check_interval(interval: Any, profile: str) -> None:
        timing = TIMINGS[profile]
        phase = timing.phase
        if isinstance(interval, bool) or not isinstance(interval, (int, float)) or not math.isfinite(interval) \
                or interval <= 0:
            raise HarnessError(f"invalid fault-interval {interval!r}: use a positive, finite number of seconds")
        least = shortest_interval(timing)
        if interval < least:  # faults could not start that often: the schedule would only pile them up
            raise HarnessError(f"invalid fault-interval {interval:g}: the {profile} profile's faults last at "
                               f"least {timing.min_duration:g} s and at most {timing.max_overlap} run at once, so "
                               f"one can start at most every {least:g} s: use {least:g} <= interval <= {phase:g}")
        if interval > phase:  # the schedule would be empty: a run with no chaos that passes
            longer = " (or the nightly profile for longer ones)" if interval <= TIMINGS["nightly"].phase else ""
            raise HarnessError(f"invalid fault-interval {interval:g}: the {profile} profile starts faults "
                               f"during its first {phase:g} s, so use 0 < interval <= {phase:g}{longer}")
