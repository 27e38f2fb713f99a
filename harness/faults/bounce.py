"""Bounces operators meet every week: one broker restarted at once (faster than failure detection), and
every broker restarted in turn (a rolling restart).

`bounce-kill` SIGKILLs the leader of one partition of the test topic and starts a new process in its
place at once, without waiting for the controller to notice; `bounce-stop` does the same after a
graceful SIGTERM (controlled shutdown). The new process has empty in-memory share-partition state while
the consumers still hold share sessions to the old one. When a consumer holds records it has not
acknowledged yet (idle between polls), the bounce waits for that moment (up to `IN_FLIGHT_WAIT`) and
names the holder.

What KRaft does with such a bounce (Kafka's `ClusterControlManager.registerBroker`): a new incarnation
cannot register while the old one's broker session is valid (DUPLICATE_BROKER_REGISTRATION, "should
self-resolve once the heartbeat manager expires the broker's session"), so the controller fences the
old incarnation when `broker.session.timeout.ms` runs out and leadership moves then, even though the
new process started long before. The proof records it as the release reports it: the new pid, how
soon it started, and the partition's leader and leader epoch (Metadata v7) before the bounce and once
the node is back in the ISR.

`rolling-restart` (SIGTERM) and `rolling-kill` (SIGKILL) restart every node in turn with the workload
running, waiting for every partition to be led with a full ISR between steps (as operators do); the
proof is a new pid on every node and a full ISR after each step.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from harness.cluster.base import Killable, node_ids
from harness.faults.base import FaultContext, NotApplied, Plan, choose, wait_effect
from harness.faults.consumer import in_flight, wait_for_moment
from harness.faults.process import DISRUPTS, take_down
from harness.faults.recovery import partition_metadata, restore_preferred_leaders, wait_in_sync
from harness.kafka import config as kconfig
from harness.sys.wait import WaitTimeout

SESSION_TIMEOUT_MS = int(kconfig.TEST_DEFAULTS["broker.session.timeout.ms"])


def session_timeout_ms(ctx: FaultContext) -> int:
    """The cluster's `broker.session.timeout.ms`: its spec's override where it has one, else the harness's."""
    spec = getattr(ctx.cluster, "spec", None)
    overrides = getattr(spec, "broker_overrides", None) or {}
    return int(overrides.get("broker.session.timeout.ms", SESSION_TIMEOUT_MS))


def leader_epoch(ctx: FaultContext, partition: int) -> tuple[int, int] | None:
    """(leader, leader epoch) of the test topic's `partition` as a live broker's metadata reports it
    (None if no broker answers)."""
    found = partition_metadata(ctx, ctx.topic, partition)
    return None if found is None else (found.leader, found.epoch)


def _epoch_text(value: tuple[int, int] | None) -> str:
    return "unknown (no broker answered Metadata)" if value is None else f"n{value[0]} epoch {value[1]}"


def _holders(ctx: FaultContext) -> list[str]:
    """Consumers holding records they have not acknowledged yet (their last poll not committed)."""
    if ctx.consumers is None:
        return []
    return [f"{d.name} ({n} record{'s' if n != 1 else ''})" for d in sorted(ctx.consumers.live(), key=lambda d: d.name)
            if (n := in_flight(ctx, d.name))]


def _restart_at_once(ctx: FaultContext, node: int, mode: str) -> tuple[int | None, int, float]:
    """Take `node` down (`kill` or `stop`), then start a new process without waiting for it to serve:
    (old pid, new pid, ms from the signal to the new process); NotApplied if there is no new process."""
    cluster = ctx.cluster_as(Killable)
    old_pid, started = cluster.node_pid(node), time.monotonic()
    take_down(ctx, node, mode)
    wait_effect(lambda: not cluster.node_alive(node), ctx.timeout, f"n{node}'s process to exit")
    cluster.start_node(node, wait=False)
    new_pid = cluster.node_pid(node)
    if new_pid is None or new_pid == old_pid:
        raise NotApplied(f"n{node} has no new process (pid {old_pid} -> {new_pid})")
    return old_pid, new_pid, (time.monotonic() - started) * 1000


@dataclass(frozen=True)
class Bounce:
    """Take out the leader of one partition (SIGKILL or SIGTERM) and start it again at once."""

    mode: str  # kill | stop
    group: str = "restart"
    effects: tuple[str, ...] = DISRUPTS + ("session-loss",)
    needs: tuple[type, ...] = (Killable,)
    exclusive: bool = False
    takes_node: bool = True

    @property
    def name(self) -> str:
        return f"bounce-{self.mode}"

    def plan(self, ctx: FaultContext, pick: int) -> Plan:
        partition = choose(ctx.partitions(), pick, "partition")
        leader = ctx.inspector.leader_of(ctx.topic, partition)
        if leader is None:
            raise NotApplied(f"{ctx.topic}-{partition} has no leader to bounce")
        processes = [d.name for d in ctx.consumers.live()] if ctx.consumers else []
        return Plan([f"n{leader}"], ctx.topic, None, processes=processes,
                    state={"node": leader, "partition": partition, "mode": self.mode})

    def apply(self, ctx: FaultContext, plan: Plan) -> str:
        node, p = plan.state["node"], plan.state["partition"]
        # the moment a consumer sits between polls holding unacknowledged records, if one comes
        held = wait_for_moment(lambda: _holders(ctx), "a consumer holding records") or []
        before = leader_epoch(ctx, p)
        old_pid, new_pid, restarted_ms = _restart_at_once(ctx, node, self.mode)
        session = session_timeout_ms(ctx)
        if self.mode == "kill" and restarted_ms >= session:
            raise NotApplied(f"n{node} was started again only {restarted_ms:.0f} ms after the kill, past "
                             f"broker.session.timeout.ms {session}: not a bounce faster than "
                             f"failure detection")
        plan.state["before"] = before
        how = "killed (SIGKILL)" if self.mode == "kill" else "stopped (SIGTERM, controlled shutdown)"
        return (f"{how} n{node} (pid {old_pid}) and started it again {restarted_ms:.0f} ms later (pid {new_pid}; "
                f"broker.session.timeout.ms {session}); {ctx.topic}-{p} before: {_epoch_text(before)}; "
                + (f"holding unacknowledged records: {', '.join(held)}" if held else "no consumer held records"))

    def heal(self, ctx: FaultContext, plan: Plan) -> str:
        cluster, node, p = ctx.cluster_as(Killable), plan.state["node"], plan.state["partition"]
        # until the new process serves and is registered: the old incarnation's registration (its
        # session still valid) would let a full ISR pass at once
        cluster.start_node(node, wait=True)
        wait_in_sync(ctx)
        before, after = plan.state.get("before"), leader_epoch(ctx, p)
        change = ("unknown" if before is None or after is None else
                  "leadership moved" if after[0] != before[0] else
                  "same leader, new epoch" if after[1] != before[1] else "same leader, same epoch")
        moved = restore_preferred_leaders(ctx)
        return (f"n{node} registered again, every partition in sync; {ctx.topic}-{p}: {_epoch_text(before)} before "
                f"the bounce, {_epoch_text(after)} after it ({change})"
                + (f"; preferred leaders restored on {len(moved)} partitions" if moved else ""))


@dataclass(frozen=True)
class RollingRestart:
    """Restart every node in turn (SIGTERM or SIGKILL), a full ISR between steps."""

    mode: str  # stop | kill
    group: str = "restart"
    effects: tuple[str, ...] = DISRUPTS + ("session-loss",)
    needs: tuple[type, ...] = (Killable,)
    exclusive: bool = True
    takes_node: bool = True

    @property
    def name(self) -> str:
        return "rolling-restart" if self.mode == "stop" else "rolling-kill"

    def plan(self, ctx: FaultContext, pick: int) -> Plan:
        nodes = node_ids(ctx.cluster_as(Killable))
        first = pick % len(nodes)  # the seeded node to start the roll with
        order = nodes[first:] + nodes[:first]
        processes = [d.name for d in ctx.consumers.live()] if ctx.consumers else []
        return Plan([f"n{n}" for n in order], ctx.topic, None, processes=processes, state={"order": order})

    def apply(self, ctx: FaultContext, plan: Plan) -> str:
        cluster, steps = ctx.cluster_as(Killable), []
        for node in plan.state["order"]:
            started = time.monotonic()
            old_pid, new_pid, _ = _restart_at_once(ctx, node, self.mode)
            try:
                cluster.start_node(node, wait=True)  # serving, and registered as the new incarnation
                wait_in_sync(ctx)
            except WaitTimeout as exc:
                raise NotApplied(f"after restarting n{node}: {str(exc).splitlines()[0]}") from None
            steps.append(f"n{node} pid {old_pid} -> {new_pid}, in sync after {time.monotonic() - started:.1f} s")
        how = "SIGTERM" if self.mode == "stop" else "SIGKILL"
        return f"rolling {how} restart, a full ISR between steps: " + "; ".join(steps)

    def heal(self, ctx: FaultContext, plan: Plan) -> str:
        return heal_roll(ctx, plan.state["order"])


def heal_roll(ctx: FaultContext, order: list[int], running: str = "") -> str:
    """The heal of a roll over `order`: every node started (after a failed apply nothing stays down),
    every partition in sync, the preferred leaders restored; `running` is said of the nodes."""
    cluster = ctx.cluster_as(Killable)
    for node in order:
        cluster.start_node(node, wait=True)
    wait_in_sync(ctx)
    moved = restore_preferred_leaders(ctx)
    return f"every node running{running}, every partition in sync" + (
        f", preferred leaders restored on {len(moved)} partitions" if moved else "")
