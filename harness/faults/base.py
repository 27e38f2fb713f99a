"""What a fault is: plan, apply and prove it took effect, heal and prove it healed.

A `Fault` is one row of the catalogue (kafkatest's named failure table): a
name, the option group that enables it (`leader`, `partition`, ...), the
cluster capabilities it needs, the `effects` the checkers must know of, and
three steps. `plan` only reads (which node leads the partition now, which
link to cut); `apply` acts and returns only after it observed the effect
(the leader moved, the cut link's requests time out), else raises
`NotApplied`; `heal` undoes it and returns only after it observed the
recovery. None of them sleeps a guessed time.

The nemesis (`harness.faults.nemesis`) records every step in the history
(`fault-start` / `fault-heal`, invoke then ok or fail), so a fault that could
not be applied is reported as such, never counted as chaos that happened.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Protocol, TypeVar, runtime_checkable

from harness.cluster.base import Cluster
from harness.errors import HarnessError
from harness.history.store import HistoryWriter
from harness.kafka.wire import connection_reset_after, probe  # noqa: F401  (re-exported for the faults)
from harness.sys.wait import WaitTimeout, wait_until

if TYPE_CHECKING:
    from harness.clients.driver import ConsumerDriver
    from harness.cluster.inspect import ClusterInspector

CapabilityT = TypeVar("CapabilityT")

#: Effects a checker must know of (docs/history.md): during a fault with one of these effects
#: (until heal + settle_ms), the named allowances of `harness.model.allowances` may apply.
EFFECTS = ("leader-change", "coordinator-loss", "session-loss")


class NotApplied(HarnessError):
    """The fault could not be applied, or its effect was not observed (the message says which)."""


@runtime_checkable
class ConsumerPool(Protocol):
    """The run's consumer drivers, for consumer faults (`harness.clients.pool.DriverPool` implements it)."""

    behaviour: str

    def live(self) -> list[ConsumerDriver]:
        """Drivers whose process is running, in start order."""
        ...

    def all(self) -> list[ConsumerDriver]:
        """Every driver the run started, running or not."""
        ...

    def join(self) -> ConsumerDriver:
        """Start one more driver (a new consumer joins the group); return it once started."""
        ...

    def replace(self, driver: ConsumerDriver | None) -> ConsumerDriver:
        """Start a new driver in the place of `driver` (one of the pool's; killed first if it still runs);
        return it once started. None: a new driver for a slot no process holds (as `join`)."""
        ...

    def close_one(self, name: str, timeout: float = 60.0) -> str:
        """Close driver `name` cleanly (it leaves the group); how its close ended (ok, info, ...)."""
        ...

    def lane_processes(self, lane: int) -> list[str]:
        """Names of the live drivers that connect through consumer lane `lane`."""
        ...


@dataclass
class FaultContext:
    """What a fault may act on. `cluster` is any backend; a fault's `needs` name the capabilities
    (`harness.cluster.base`) it must have, which the nemesis checks before the fault plans."""

    cluster: Cluster
    history: HistoryWriter
    topic: str | None = None
    group: str | None = None
    consumers: ConsumerPool | None = None
    config: dict[str, Any] = field(default_factory=dict)  # limits in force (lock_duration_ms...)
    timeout: float = 60.0  # for each observed effect or recovery
    #: fault id -> the targets of each fault in place now (kept by the nemesis): a fault that needs a
    #: node it can observe picks one no other fault holds (`nodes_held`)
    active_targets: dict[str, list[str]] = field(default_factory=dict)

    def nodes_held(self) -> set[int]:
        """The nodes other faults in place now name as targets (`n<id>`: stopped, killed, paused,
        truncated); links are not nodes."""
        return {int(t[1:]) for targets in self.active_targets.values() for t in targets
                if t[:1] == "n" and t[1:].isdigit()}

    @property
    def inspector(self) -> ClusterInspector:
        return self.cluster.inspector

    def cluster_as(self, capability: type[CapabilityT]) -> CapabilityT:
        """The cluster as one of its capabilities (`harness.cluster.base`: `Killable`, `Partitionable`...),
        checked with `isinstance`; NotApplied if the backend does not have it (the nemesis checks a
        fault's `needs` before it plans, so a fault only meets this for a capability it did not declare)."""
        if not isinstance(self.cluster, capability):
            raise NotApplied(f"the cluster backend is not {capability.__name__}")
        return self.cluster

    def partitions(self) -> list[int]:
        if self.topic is None:
            raise NotApplied("no test topic in this run")
        return [p.id for p in self.inspector.partitions(self.topic)]


@dataclass
class Plan:
    """A fault's intent, fixed before it acts: targets and what heal needs."""

    targets: list[str]
    topic: str | None = None
    partitions: list[int] | None = None  # None: the effects reach every partition
    processes: list[str] = field(default_factory=list)  # consumers whose sessions the fault may end
    state: dict[str, Any] = field(default_factory=dict)
    id: str = ""  # the fault id in the history (set by the nemesis before `apply`)


class Fault(Protocol):
    """One named fault. `needs` are the `harness.cluster.base` capabilities it requires."""

    name: str
    group: str
    effects: tuple[str, ...]
    needs: tuple[type, ...]
    exclusive: bool  # nothing else may run alongside (the schedule never overlaps it)
    takes_node: bool  # takes a node out or out of the ISR; the heal waits for a full ISR, so the
    #                   schedule keeps at most one such fault at a time

    def plan(self, ctx: FaultContext, pick: int) -> Plan:
        """Choose targets with `pick` (a seeded number) from the cluster's state now; must not act."""
        ...

    def apply(self, ctx: FaultContext, plan: Plan) -> str:
        """Act, observe the effect, and return the evidence; raise NotApplied if it was not observed."""
        ...

    def heal(self, ctx: FaultContext, plan: Plan) -> str:
        """Undo and observe the recovery; return the evidence. Must be safe after a failed apply."""
        ...


def choose(items: list[Any], pick: int, what: str) -> Any:
    """The seeded choice among `items` (sorted by the caller); NotApplied if there is none."""
    if not items:
        raise NotApplied(f"no {what} to choose from")
    return items[pick % len(items)]


def wait_effect(condition: Callable[[], Any], timeout: float, what: str, interval: float = 0.2) -> Any:
    """`wait_until`, but a timeout means the fault did not take effect (NotApplied)."""
    try:
        return wait_until(condition, timeout=timeout, what=what, interval=interval)
    except WaitTimeout as exc:
        raise NotApplied(str(exc).splitlines()[0]) from None
