"""Disk failure: the disk under one of a broker's log directories fails mid-run.

Every broker of a harness cluster has two log directories (`data/disk0`, `data/disk1`: JBOD, and the
metadata log apart in `data/meta`), so one can fail without halting the broker. `disk-fail` fails the
disk that holds one test-topic partition on its leader; `disk-fail-state` the disk that holds the
`__share_group_state` partition of one share-partition on its share coordinator. The failure is the
one Kafka's own LogDirFailureTest makes: the directory and everything in it is gone and a file stands
in its place, so the broker's next write or checkpoint there throws an IOException and it takes the
directory offline ("Stopping serving replicas in dir ... because the log directory has failed"); the
controller then moves the leadership of every partition on that disk away from the broker, which
keeps running and keeps leading the partitions on its other disk.

Proof of effect, from our own Metadata v7 request (the Admin API reports neither): the partition has a
new leader and leader epoch, the broker is listed among its offline replicas, and the broker's
process still runs. The heal is an operator's disk replacement: stop the broker, a new empty
directory formatted with StorageTool `format --ignore-formatted` (a new directory id), start it, and
wait until every partition is in sync again (re-replicated onto the new disk) and the preferred
leaders lead.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from harness.cluster.base import Disks, Killable
from harness.cluster.inspect import SHARE_STATE_TOPIC
from harness.faults.base import FaultContext, NotApplied, Plan, choose, wait_effect
from harness.faults.process import DISRUPTS
from harness.faults.recovery import partition_metadata, restore_preferred_leaders, wait_in_sync


#: How long a failed disk may take to be noticed and its partitions' leadership moved (an effect's bound).
DETECT_S = 120.0


@dataclass(frozen=True)
class DiskFailure:
    """Fail the disk holding one partition's replica on its leader; the broker stays up."""

    target: str  # data: a test-topic partition | state: a share-partition's __share_group_state partition
    effects: tuple[str, ...] = DISRUPTS
    needs: tuple[type, ...] = (Killable, Disks)
    exclusive: bool = False
    takes_node: bool = True

    @property
    def name(self) -> str:
        return "disk-fail" if self.target == "data" else "disk-fail-state"

    @property
    def group(self) -> str:  # the role the failed disk takes from its broker
        return "leader" if self.target == "data" else "coordinator"

    def plan(self, ctx: FaultContext, pick: int) -> Plan:
        disks = ctx.cluster_as(Disks)
        partition = choose(ctx.partitions(), pick, "partition")
        if self.target == "data":
            topic, index = ctx.topic, partition
        else:
            if not ctx.group:
                raise NotApplied("no share group in this run")
            if not ctx.inspector.partitions(SHARE_STATE_TOPIC):
                raise NotApplied(f"{SHARE_STATE_TOPIC} does not exist yet (no share group was assigned)")
            topic, index = SHARE_STATE_TOPIC, ctx.inspector.share_state_partition(ctx.group, ctx.topic, partition)
        state = next((p for p in ctx.inspector.partitions(topic) if p.id == index), None)
        if state is None or state.leader is None:
            raise NotApplied(f"{topic}-{index} has no leader whose disk could fail")
        node = state.leader
        if not set(state.isr) - {node}:
            raise NotApplied(f"{topic}-{index} has no other in-sync replica to take over from n{node}")
        dirs = disks.log_dirs(node)
        if len(dirs) < 2:
            raise NotApplied(f"n{node} has {len(dirs)} log directory: a disk failure the broker survives needs "
                             "two or more (--log-dirs 2)")
        disk = next((d for d in dirs if (d / f"{topic}-{index}").is_dir()), None)
        if disk is None:
            raise NotApplied(f"no log directory of n{node} holds {topic}-{index}")
        return Plan([f"n{node}"], ctx.topic, None, state={
            "node": node, "disk": str(disk), "topic": topic, "index": index, "partition": partition})

    def apply(self, ctx: FaultContext, plan: Plan) -> str:
        s = plan.state
        node, disk, topic, index = s["node"], Path(s["disk"]), s["topic"], s["index"]
        cluster = ctx.cluster_as(Killable)
        held = sorted(p.name for p in disk.iterdir() if p.is_dir())
        before = partition_metadata(ctx, topic, index)
        s["failed"] = True  # set first: a failure half done is healed by a new disk too
        ctx.cluster_as(Disks).fail_log_dir(node, disk)

        def taken_over():
            meta = partition_metadata(ctx, topic, index)
            return meta if meta is not None and meta.leader not in (node, -1) and node in meta.offline else None

        # the broker notices the failure at its next write or checkpoint in that directory, then the controller
        # moves the leadership: seconds on an idle host, past a minute once in CI with Spark taking both cores
        # (14-51 s for the whole fault and heal over ten clean-clone runs, then one 60 s timeout)
        after = wait_effect(taken_over, max(ctx.timeout, DETECT_S),
                            f"{topic}-{index} to be led by another broker with n{node} listed offline (its disk "
                            f"{disk.name} failed)")
        if not cluster.node_alive(node):
            raise NotApplied(f"n{node} exited after its disk {disk.name} failed: a crash, not a disk failure "
                             "it survives")
        role = "" if self.target == "data" else f" (the share state of {ctx.topic}-{s['partition']})"
        epoch = f"epoch {before.epoch} -> {after.epoch}" if before is not None else f"epoch {after.epoch}"
        return (f"n{node}'s disk {disk.name} failed (replaced by a file): {topic}-{index}{role} moved n{node} -> "
                f"n{after.leader} ({epoch}), n{node} listed offline for it and still running; the disk held "
                f"{len(held)} partitions: {', '.join(held)}")

    def heal(self, ctx: FaultContext, plan: Plan) -> str:
        s = plan.state
        node, disk = s["node"], Path(s["disk"])
        cluster = ctx.cluster_as(Killable)
        if s.get("failed"):  # an operator's disk replacement: stop, a new formatted disk, start
            cluster.stop_node(node)
            ctx.cluster_as(Disks).replace_log_dir(node, disk)
            cluster.start_node(node, wait=True)
        wait_in_sync(ctx)
        moved = restore_preferred_leaders(ctx)
        restored = sorted(p.name for p in disk.iterdir() if p.is_dir()) if disk.is_dir() else []
        return ((f"n{node} restarted on a new formatted disk {disk.name}; " if s.get("failed") else "")
                + f"every partition in sync, {len(restored)} partitions re-replicated onto {disk.name}"
                + (f", preferred leaders restored on {len(moved)} partitions" if moved else ""))
