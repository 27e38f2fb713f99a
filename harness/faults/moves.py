"""Leader moves without a broker going down: what an implementation that runs every broker in one process
can still do to its clients (kfake: `harness.cluster.kfake.LeaderMoves`).

`leader-move` moves one partition of the test topic to another broker while records are in flight (the
leader epoch goes up); `leader-shuffle` moves every partition of the test topic to another broker (drawn
from the fault's seed) and rehashes the group coordinators. Clients must find the new leaders (NOT_LEADER_OR_FOLLOWER, Metadata) and the share-partition's
state must carry over: no acknowledged record lost, no record handed to two members under one lock.
Both are taken only by name (neither `all` nor the `leader` group draws them): Apache Kafka's backends move
leaders by taking brokers down (`leader-stop`, `leader-kill`, ...).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from harness.cluster.kfake import LeaderMoves
from harness.faults.base import FaultContext, NotApplied, Plan, choose, wait_effect
from harness.faults.process import DISRUPTS


def _moves(ctx: FaultContext):
    return ctx.cluster_as(LeaderMoves)


def _leader_moves_type() -> tuple[type, ...]:
    return (LeaderMoves,)


@dataclass(frozen=True)
class LeaderMove:
    """`move`: one partition's leader to another broker; `shuffle`: every leader and coordinator."""

    mode: str  # move | shuffle
    group: str = "leader"
    effects: tuple[str, ...] = DISRUPTS
    exclusive: bool = False
    takes_node: bool = False
    by_name_only: bool = True

    @property
    def name(self) -> str:
        return f"leader-{self.mode}"

    @property
    def needs(self) -> tuple[type, ...]:
        return _leader_moves_type()

    def plan(self, ctx: FaultContext, pick: int) -> Plan:
        partition = choose(ctx.partitions(), pick, "partition")
        leader = ctx.inspector.leader_of(ctx.topic, partition)
        if leader is None:
            raise NotApplied(f"{ctx.topic}-{partition} has no leader to move")
        others = sorted(b for b in ctx.cluster.broker_ids if b != leader)
        target = choose(others, pick // max(1, len(ctx.partitions())), "other broker")
        return Plan([f"n{leader}"], ctx.topic, None if self.mode == "shuffle" else [partition],
                    state={"partition": partition, "from": leader, "to": target, "pick": pick})

    def apply(self, ctx: FaultContext, plan: Plan) -> str:
        moves = _moves(ctx)
        if self.mode == "move":
            p, old, target = plan.state["partition"], plan.state["from"], plan.state["to"]
            moves.move_leader(ctx.topic, p, target)
            wait_effect(lambda: ctx.inspector.leader_of(ctx.topic, p) == target, ctx.timeout,
                        f"the cluster's metadata to name n{target} leader of {ctx.topic}-{p}")
            return f"leader of {ctx.topic}-{p} moved n{old} -> n{target} (no broker stopped)"
        # shuffle: every partition of the test topic to another broker, drawn from the fault's seeded pick (the
        # implementation's own shuffle draws from an unseeded generator), then the coordinators rehashed
        rng = random.Random(plan.state["pick"])
        before = {q: moves.leader_of(ctx.topic, q) for q in ctx.partitions()}
        after = {q: rng.choice(sorted(b for b in ctx.cluster.broker_ids if b != was)) for q, was in before.items()}
        for q, node in after.items():
            moves.move_leader(ctx.topic, q, node)
        moves.rehash_coordinators()
        wait_effect(lambda: all(ctx.inspector.leader_of(ctx.topic, q) == node for q, node in after.items()),
                    ctx.timeout, f"the cluster's metadata to show the new leaders of {ctx.topic}")
        return (f"every leader of {ctx.topic} moved ({', '.join(f'{q}: n{before[q]} -> n{after[q]}' for q in after)}) "
                "and the group coordinators rehashed (no broker stopped)")

    def heal(self, ctx: FaultContext, plan: Plan) -> str:
        return "nothing to undo: every broker kept running"
