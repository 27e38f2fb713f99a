"""Process faults on Kafka nodes: leader failover, coordinator loss, cold restart.

Each takes a node out with a real signal (SIGTERM: graceful, controlled
shutdown; SIGKILL: crash; SIGSTOP: frozen past the broker session timeout),
observes that the role it held moved to another node, and on heal brings the
node back, waits until every partition is led with a full ISR, and moves
leadership back to the preferred replicas.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from harness.cluster.base import Installed, Killable, Pausable, node_ids
from harness.cluster.java_admin import active_controller
from harness.faults.base import FaultContext, NotApplied, Plan, choose, wait_effect
from harness.faults.recovery import restore_preferred_leaders, wait_in_sync
from harness.sys.paths import cache_dir

DISRUPTS = ("leader-change", "coordinator-loss")


def take_down(ctx: FaultContext, node: int, mode: str) -> None:
    if mode == "stop":
        ctx.cluster_as(Killable).stop_node(node)
    elif mode == "kill":
        ctx.cluster_as(Killable).kill_node(node)
    elif mode == "pause":
        ctx.cluster_as(Pausable).pause_node(node)
    else:
        raise ValueError(mode)


def _bring_back(ctx: FaultContext, plan: Plan) -> str:
    node, mode = plan.state["node"], plan.state["mode"]
    if mode == "pause":
        ctx.cluster_as(Pausable).resume_node(node)
    else:
        cluster = ctx.cluster_as(Killable)
        if not cluster.node_alive(node):
            cluster.start_node(node)
    wait_in_sync(ctx)
    moved = restore_preferred_leaders(ctx)
    return f"n{node} {'resumed' if mode == 'pause' else 'running again'}, every partition in sync" + (
        f", preferred leaders restored on {len(moved)} partitions" if moved else "")


@dataclass(frozen=True)
class LeaderFailover:
    """Take out the leader of one partition of the test topic; observe a new leader."""

    mode: str  # stop | kill | pause
    group: str = "leader"
    effects: tuple[str, ...] = DISRUPTS
    exclusive: bool = False
    takes_node: bool = True

    @property
    def name(self) -> str:
        return f"leader-{self.mode}"

    @property
    def needs(self) -> tuple[type, ...]:
        return (Pausable,) if self.mode == "pause" else (Killable,)

    def plan(self, ctx: FaultContext, pick: int) -> Plan:
        partition = choose(ctx.partitions(), pick, "partition")
        leader = ctx.inspector.leader_of(ctx.topic, partition)
        if leader is None:
            raise NotApplied(f"{ctx.topic}-{partition} has no leader to take out")
        return Plan([f"n{leader}"], ctx.topic, None, state={"node": leader, "mode": self.mode, "partition": partition})

    def apply(self, ctx: FaultContext, plan: Plan) -> str:
        node, p = plan.state["node"], plan.state["partition"]
        take_down(ctx, node, self.mode)
        new = wait_effect(lambda: _other(ctx.inspector.leader_of(ctx.topic, p), node), ctx.timeout,
                          f"{ctx.topic}-{p} to get a leader other than n{node}")
        return f"{self.mode} n{node}: leader of {ctx.topic}-{p} moved n{node} -> n{new}"

    def heal(self, ctx: FaultContext, plan: Plan) -> str:
        evidence = _bring_back(ctx, plan)
        p = plan.state["partition"]
        return f"{evidence}; {ctx.topic}-{p} led by n{ctx.inspector.leader_of(ctx.topic, p)}"


def _other(value: int | None, old: int) -> int | None:
    return value if value is not None and value != old else None


@dataclass(frozen=True)
class CoordinatorLoss:
    """Kill the node holding a coordinator role; observe the role move to another node."""

    role: str  # group | share | controller
    group: str = "coordinator"
    effects: tuple[str, ...] = DISRUPTS
    needs: tuple[type, ...] = (Killable,)
    exclusive: bool = False
    takes_node: bool = True

    @property
    def name(self) -> str:
        return f"{self.role}-coordinator-kill" if self.role != "controller" else "controller-kill"

    def _holder(self, ctx: FaultContext, partition: int | None) -> Callable[[], int | None]:
        if self.role == "group":
            return lambda: ctx.inspector.group_coordinator(ctx.group)
        if self.role == "share":
            return lambda: ctx.inspector.share_coordinator(ctx.group, ctx.topic, partition)
        return lambda: active_controller(ctx.cluster_as(Installed).distribution, cache_dir(),
                                         ctx.cluster.bootstrap_servers)

    def plan(self, ctx: FaultContext, pick: int) -> Plan:
        partition = choose(ctx.partitions(), pick, "partition") if self.role == "share" else None
        if self.role in ("group", "share") and not ctx.group:
            raise NotApplied("no share group in this run")
        try:
            node = self._holder(ctx, partition)()
        except RuntimeError as exc:
            raise NotApplied(f"could not find the {self.role} coordinator: {exc}") from None
        if node is None:
            raise NotApplied(f"the {self.role} coordinator is unknown right now")
        return Plan([f"n{node}"], ctx.topic, None, state={"node": node, "mode": "kill", "partition": partition})

    def apply(self, ctx: FaultContext, plan: Plan) -> str:
        node = plan.state["node"]
        holder = self._holder(ctx, plan.state["partition"])
        ctx.cluster_as(Killable).kill_node(node)

        def moved() -> int | None:
            try:
                return _other(holder(), node)
            except RuntimeError:
                return None

        new = wait_effect(moved, ctx.timeout, f"the {self.role} coordinator to move off n{node}", interval=0.5)
        what = {"group": f"group coordinator of {ctx.group}",
                "share": f"share coordinator of {ctx.topic}-{plan.state['partition']}",
                "controller": "active controller"}[self.role]
        return f"kill n{node}: {what} moved n{node} -> n{new}"

    def heal(self, ctx: FaultContext, plan: Plan) -> str:
        return _bring_back(ctx, plan)


@dataclass(frozen=True)
class ColdRestart:
    """Kill every node at once (SIGKILL), then start them all: state comes back from disk only."""

    name: str = "cold-restart"
    group: str = "restart"
    effects: tuple[str, ...] = DISRUPTS + ("session-loss",)
    needs: tuple[type, ...] = (Killable,)
    exclusive: bool = True
    takes_node: bool = True

    def plan(self, ctx: FaultContext, pick: int) -> Plan:
        cluster = ctx.cluster_as(Killable)
        nodes = node_ids(cluster)
        processes = [d.name for d in ctx.consumers.live()] if ctx.consumers else []
        return Plan([f"n{n}" for n in nodes], ctx.topic, None, processes=processes,
                    state={"nodes": nodes, "pids": {n: cluster.node_pid(n) for n in nodes}})

    def apply(self, ctx: FaultContext, plan: Plan) -> str:
        from concurrent.futures import ThreadPoolExecutor
        nodes, cluster = plan.state["nodes"], ctx.cluster_as(Killable)
        with ThreadPoolExecutor(max_workers=len(nodes)) as pool:
            list(pool.map(cluster.kill_node, nodes))
        wait_effect(lambda: not any(cluster.node_alive(n) for n in nodes), 30, "every node to exit")
        return f"killed {', '.join(f'n{n}' for n in nodes)}; no node process left"

    def heal(self, ctx: FaultContext, plan: Plan) -> str:
        nodes, cluster = plan.state["nodes"], ctx.cluster_as(Killable)
        for n in nodes:
            cluster.start_node(n, wait=False)
        cluster.wait_ready()
        wait_in_sync(ctx)
        restore_preferred_leaders(ctx)
        fresh = all(cluster.node_pid(n) not in (None, plan.state["pids"].get(n)) for n in nodes)
        if not fresh:
            raise NotApplied("not every node runs as a new process after the restart")
        return f"all {len(nodes)} nodes started as new processes; cluster ready, every partition in sync"
