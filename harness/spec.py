"""RunSpec: one plain, frozen description of a run (Jepsen's test map), made of parts each owned by its room.

Built from defaults, then a profile, then CLI/ini options (`harness.settings`), then per-suite
overrides (`dataclasses.replace`). Serialised flat with sorted keys into the run directory
(`spec.json`), so two runs can be diffed and any run reproduced from its seed.
"""

from __future__ import annotations

import json
from dataclasses import MISSING, asdict, dataclass, fields, replace
from typing import Any

from harness.certify.plan import CertifyPlan
from harness.check.plan import CHECK_ENGINES, SPARK_THRESHOLD, CheckPlan  # noqa: F401  (re-exported: the CLI's choices)
from harness.clients.behaviours import BEHAVIOURS  # noqa: F401  (re-exported: the CLI's choices)
from harness.clients.plan import ClientPlan
from harness.cluster.plan import (BACKENDS, IMAGE_CLASSPATH, ClusterPlan, check_bootstrap_servers,  # noqa: F401
                                  is_int, local_ports_needed)  # (re-exported: the CLI's choices and checks)
from harness.errors import HarnessError
from harness.faults.plan import FAULT_MODES, FaultPlan  # noqa: F401  (re-exported: the CLI's choices)
from harness.kafka.group_configs import GroupPlan
from harness.workloads import Traffic

PROFILES: dict[str, dict[str, Any]] = {
    "ci": {"records": 300, "drain_timeout": 90.0},
    "nightly": {"records": 20000, "drain_timeout": 600.0},
}

#: The most seeds one command runs a seeded scenario with (`certify --seeds`, the plugin's `--ksh-seeds`): a
#: typo of 10^18 would build a list (or a parametrization) that large.
MAX_SEEDS = 1000

#: The parts of a spec, by attribute, each owned (and validated) by its room.
PARTS: dict[str, type] = {"cluster": ClusterPlan, "traffic": Traffic, "group": GroupPlan, "chaos": FaultPlan,
                          "library": ClientPlan, "checking": CheckPlan, "certification": CertifyPlan}
#: Each part's field -> the part holding it: the flat names a spec is built and read by (`RunSpec(brokers=5)`,
#: `spec.brokers`, `replace(spec, seed=2)`), and the keys of `spec.json`.
FIELD_PART: dict[str, str] = {f.name: part for part, cls in PARTS.items() for f in fields(cls)}
assert len(FIELD_PART) == sum(len(fields(cls)) for cls in PARTS.values()), "two parts name the same field"


class _Field:
    """A part's field read through the spec (`spec.brokers` is `spec.cluster.brokers`); on the class, the
    field's default (`RunSpec.brokers`, what a help text names)."""

    def __init__(self, part: str, name: str) -> None:
        self.part, self.name = part, name
        default = next(f for f in fields(PARTS[part]) if f.name == name)
        self.default = default.default_factory() if default.default is MISSING else default.default

    def __get__(self, spec: Any, owner: type) -> Any:
        if spec is None:
            return self.default
        return getattr(getattr(spec, self.part), self.name)


@dataclass(frozen=True, init=False)
class RunSpec:
    """Everything one run needs, in parts each owned by its room: the cluster (`harness.cluster.plan`), the
    traffic (`harness.workloads`), the share group (`harness.kafka.group_configs`), the fault plan
    (`harness.faults.plan`), the client library (`harness.clients.plan`), the checking (`harness.check.plan`)
    and a certification's rules (`harness.certify.plan`). Every random choice derives from `seed`.

    Built from a part's fields by name (`RunSpec(brokers=5, faults=(...,))`) or from parts; read the same way
    (`spec.brokers`, `spec.cluster`); `dataclasses.replace` takes either."""

    name: str = "share-basic"
    seed: int = 1
    profile: str = "ci"
    cluster: ClusterPlan = ClusterPlan()
    traffic: Traffic = Traffic()
    group: GroupPlan = GroupPlan()
    chaos: FaultPlan = FaultPlan()
    library: ClientPlan = ClientPlan()
    checking: CheckPlan = CheckPlan()
    certification: CertifyPlan = CertifyPlan()

    def __init__(self, name: str = "share-basic", seed: int = 1, profile: str = "ci", **given: Any) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "seed", seed)
        object.__setattr__(self, "profile", profile)
        changes: dict[str, dict[str, Any]] = {part: {} for part in PARTS}
        for key, value in given.items():
            if key in PARTS:
                continue
            part = FIELD_PART.get(key)
            if part is None:
                raise TypeError(f"RunSpec got an unexpected keyword argument {key!r}")
            changes[part][key] = value
        for part, cls in PARTS.items():
            base = given.get(part, cls())
            object.__setattr__(self, part, replace(base, **changes[part]) if changes[part] else base)

    def validate(self) -> "RunSpec":
        """Reject invalid values with a one-line error naming the valid range (the CLI and the pytest plugin
        build a spec and call this; the CLI's run also calls `check_faults_hostable`): each part by its room,
        with what it needs of the others."""
        self.cluster.validate()
        if self.profile not in PROFILES:
            raise HarnessError(f"invalid profile {self.profile!r}: use one of {', '.join(PROFILES)}")
        if not is_int(self.seed):
            raise HarnessError(f"invalid seed {self.seed!r}: use a whole number")
        self.traffic.validate()
        self.library.validate()
        self.chaos.validate(self.cluster, self.profile, self.traffic.workload_events)
        self.group.validate(self.kafka_version, self.harness_started)
        self.checking.validate()
        self.certification.validate()
        return self

    def check_faults_hostable(self) -> "RunSpec":
        """The spec, if its cluster can host its faults (`FaultPlan.check_hostable`). For the spec of a run
        (the CLI's `run`, `run --suite`), not `validate`'s: a session's spec on an external cluster takes the
        suites' fault specs, whose tests are skipped there (`local_only`)."""
        self.chaos.check_hostable(self.cluster, self.traffic.workload_events)
        return self

    @property
    def harness_started(self) -> bool:
        """Whether the run's cluster is Apache Kafka started by the harness (`ClusterPlan.harness_started`)."""
        return self.cluster.harness_started

    def with_profile(self) -> "RunSpec":
        """Apply the profile's defaults (explicit options applied afterwards win)."""
        return replace(self, **PROFILES[self.profile])

    @property
    def effective_fault_seed(self) -> int:
        return self.seed if self.fault_seed is None else self.fault_seed

    def flat(self) -> dict[str, Any]:
        """The spec as one level of fields (what `spec.json` holds, and `RunSpec(**flat)` takes back)."""
        out: dict[str, Any] = {"name": self.name, "seed": self.seed, "profile": self.profile}
        for part in PARTS:
            out.update(asdict(getattr(self, part)))
        return out

    def to_json(self) -> str:
        return json.dumps(self.flat(), sort_keys=True, indent=2)

    def _has_limit_config(self) -> bool:
        """Whether the release has the group-level delivery-count limit (else the brokers' applies)."""
        return self.group.has_limit_config(self.kafka_version)

    @staticmethod
    def default(key: str) -> Any:
        """The default of a field, top-level or a part's."""
        if key in FIELD_PART:
            return getattr(RunSpec, key)
        return next(f.default for f in fields(RunSpec) if f.name == key)


for _key, _part in FIELD_PART.items():
    setattr(RunSpec, _key, _Field(_part, _key))

