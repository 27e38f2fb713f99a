"""Log truncation: records a leader acknowledged that the cluster later throws away.

Clean variant: isolate the leader of one partition from every other node
(its client links stay up), write records to it with `acks=1` (they reach
its log only), wait for the controller to elect another leader, heal, wait
until the old leader is back in sync, which means it truncated its log to the
new leader's, and read the partition to see which of those offsets now hold
other records or nothing.

Unclean variant (`unclean.leader.election.enable=true` and
`min.insync.replicas=1` on the topic while it lasts): cut the followers off
the leader until the ISR is the leader alone, write with `acks=1` (these
records are committed), kill the leader, and let an out-of-sync follower lead (asking for
an unclean election if the controller does not hold one itself).

The history gets the produces (process `nemesis`) and, after the heal, one
`truncated` operation listing the offsets that are gone, so checkers know
those records were never committed. If nothing was truncated, the fault is
reported as not applied.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass

from confluent_kafka import Consumer, ElectionType, KafkaException, TopicPartition

from harness.clients.logging import client_logging
from harness.clients.producer import HistoryProducer
from harness.cluster.admin import set_topic_configs, topic_configs
from harness.cluster.base import Installed, Killable, Partitionable
from harness.cluster.java_admin import active_controller
from harness.faults.base import FaultContext, NotApplied, Plan, choose, wait_effect
from harness.faults.network import cut_and_prove, heal_and_prove
from harness.faults.recovery import restore_preferred_leaders, wait_in_sync
from harness.proxy.links import Link
from harness.sys.paths import cache_dir
from harness.sys.wait import wait_until

UNWRITTEN = 5  # records written to the leader that must never be committed
UNCLEAN_CONFIGS = {"unclean.leader.election.enable": "true", "min.insync.replicas": "1"}


@dataclass(frozen=True)
class Truncation:
    unclean: bool = False
    group: str = "truncate"
    effects: tuple[str, ...] = ("leader-change", "coordinator-loss")
    needs: tuple[type, ...] = (Partitionable, Killable)
    exclusive: bool = True
    takes_node: bool = True

    @property
    def name(self) -> str:
        return "truncate-unclean" if self.unclean else "truncate"

    def plan(self, ctx: FaultContext, pick: int) -> Plan:
        # Not a partition led by the active controller: cut off in combined mode, it can keep brokers
        # heartbeating to it and the cluster fenced for as long as the cut lasts (seen on 4.3.1).
        controller = _active_controller(ctx)
        partitions = [p for p in ctx.partitions() if ctx.inspector.leader_of(ctx.topic, p) != controller]
        partition = choose(partitions, pick, "partition not led by the active controller")
        # The leader every broker names (a leader elected a moment ago is not yet known to all)
        def agreed() -> int | None:
            seen = _leaders_seen(ctx, partition, ctx.cluster.broker_ids)
            return seen.pop() if len(seen) == 1 and isinstance(next(iter(seen)), int) else None
        leader = wait_effect(agreed, ctx.timeout, f"every broker to name the same leader of {ctx.topic}-{partition}",
                             interval=0.5)
        if leader == controller:
            raise NotApplied(f"{ctx.topic}-{partition} came to be led by the active controller n{leader}")
        followers = [b for b in ctx.inspector.isr_of(ctx.topic, partition) if b != leader]
        if not followers:
            raise NotApplied(f"{ctx.topic}-{partition} has no follower in sync to take over")
        lm = ctx.cluster_as(Partitionable).links
        links = [lm.broker(f, leader) for f in followers] if self.unclean else lm.touching(leader)
        return Plan([f"n{leader}"] + [link.name for link in links], ctx.topic, [partition],
                    state={"node": leader, "partition": partition, "links": [link.name for link in links],
                           "produced": []})

    def _links(self, ctx: FaultContext, plan: Plan) -> list[Link]:
        return [ctx.cluster_as(Partitionable).links.get(*n.split("->")) for n in plan.state["links"]]

    def apply(self, ctx: FaultContext, plan: Plan) -> str:
        node, p = plan.state["node"], plan.state["partition"]
        plan.state["since"] = len(ctx.history.ops())  # every produce from here on may reach the old leader only
        if self.unclean:  # min ISR 1, so the ISR may shrink to the leader and its acks=1 writes commit
            before = topic_configs(ctx.inspector.admin, ctx.topic)
            plan.state["restore"] = {k: before.get(k) for k in UNCLEAN_CONFIGS}
            set_topic_configs(ctx.inspector.admin, ctx.topic, UNCLEAN_CONFIGS)
        cut = cut_and_prove(ctx, self._links(ctx, plan))
        self._still_leads(ctx, plan)
        written = self._write(ctx, plan)
        if self.unclean:  # followers that stopped fetching behind the new records leave the ISR; then they commit
            wait_effect(lambda: ctx.inspector.isr_of(ctx.topic, p) == [node], ctx.timeout,
                        f"the ISR of {ctx.topic}-{p} to shrink to its leader n{node}")
            ctx.cluster_as(Killable).kill_node(node)
        new = wait_effect(lambda: self._new_leader(ctx, p, node), ctx.timeout,
                          f"{ctx.topic}-{p} to get a leader other than n{node}", interval=0.5)
        return (f"{cut}; {len(written)} acks=1 records written to n{node} at offsets {sorted(written)}; "
                f"leader of {ctx.topic}-{p} moved n{node} -> n{new}" + ("" if not self.unclean else " (unclean)"))

    def _still_leads(self, ctx: FaultContext, plan: Plan) -> None:
        """The cut node, asked alone after the cut, still leads the partition: then the writes go to it (its
        own metadata is all the producer learns) and, cut off from the controllers, it believes it leads
        until the heal. A leadership that moved before the cut (a preferred-leader election of the last
        heal, a fencing) would send them to the new leader, which commits them: nothing to truncate."""
        node, p = plan.state["node"], plan.state["partition"]
        seen = _leaders_seen(ctx, p, [node]).pop()
        if seen != node:
            raise NotApplied(f"asked when the cut was proven, n{node} named {seen} (not itself) the leader of "
                             f"{ctx.topic}-{p}: the acks=1 records would reach a leader that replicates them")

    def _write(self, ctx: FaultContext, plan: Plan) -> dict[int, str]:
        """Produce to the isolated leader only (bootstrap: its own client link), acks=1, no retries."""
        node, p = plan.state["node"], plan.state["partition"]
        port = ctx.cluster_as(Partitionable).links.client(node).listen_port
        producer = HistoryProducer(f"127.0.0.1:{port}", ctx.history, process="nemesis", extra={
            "acks": 1, "enable.idempotence": False, "retries": 0, "message.timeout.ms": 8000})
        tag = uuid.uuid4().hex[:6]
        for i in range(UNWRITTEN):
            producer.produce(ctx.topic, f"unreplicated-{plan.id or tag}-{i}", partition=p)
        producer.flush(15)
        written = {op.value["offset"]: op.value["id"] for op in ctx.history.ops()
                   if op.process == "nemesis" and op.f == "produce" and op.type == "ok"
                   and op.value["id"].startswith(f"unreplicated-{plan.id or tag}-")}
        plan.state["produced"] = sorted(written.items())
        if not written:
            raise NotApplied(f"no acks=1 record was acknowledged by the isolated leader n{node}")
        return written

    def _new_leader(self, ctx: FaultContext, p: int, old: int) -> int | None:
        """The leader as every other broker reports it (the isolated one answers with stale metadata)."""
        views = _leaders_seen(ctx, p, [b for b in ctx.cluster.broker_ids if b != old])
        leader = views.pop() if len(views) == 1 else None
        if leader is not None and leader != old:
            return leader
        if self.unclean and leader is None:
            try:  # ask for it, in case the controller does not elect an out-of-sync replica by itself
                ctx.inspector.admin.elect_leaders(ElectionType.UNCLEAN, [TopicPartition(ctx.topic, p)],
                                                  ).result()
            except KafkaException:
                pass
        return None

    def heal(self, ctx: FaultContext, plan: Plan) -> str:
        node = plan.state["node"]
        cluster = ctx.cluster_as(Killable)
        if not cluster.node_alive(node):
            cluster.start_node(node, wait=False)  # its links must answer again: it has to run
        evidence = heal_and_prove(ctx, self._links(ctx, plan), wait_cluster=False)
        wait_in_sync(ctx)
        restore_preferred_leaders(ctx)
        if "restore" in plan.state:
            set_topic_configs(ctx.inspector.admin, ctx.topic, plan.state.pop("restore"))
        produced = dict(plan.state["produced"])
        if not produced:
            return evidence + "; nothing was written, so nothing to truncate"
        # Besides the nemesis's own records, any record acknowledged to this partition since the cut may
        # have reached the old leader only (acks=all with the ISR shrunk to it, in the unclean variant).
        p = plan.state["partition"]
        since = [op for op in ctx.history.ops()[plan.state.get("since", 0):]
                 if op.f == "produce" and op.type == "ok" and op.value.get("topic") == ctx.topic
                 and op.value.get("partition") == p and op.process != "nemesis" and op.value["offset"] >= 0]
        others = sorted({(op.value["offset"], op.value["id"]) for op in since})  # an offset may be reused
        offsets = list(produced) + [o for o, _ in others]
        now = read_ids(ctx.cluster.bootstrap_servers, ctx.topic, p, min(offsets), max(offsets), ctx.timeout)
        low = log_start(ctx.cluster.bootstrap_servers, ctx.topic, p, ctx.timeout) if others else 0
        gone, lost = truncated_records(produced, others, now, low)
        ctx.history.append("nemesis", "ok", "truncated", {
            "id": plan.id, "topic": ctx.topic, "partition": p, "unclean": self.unclean,
            "records": [{"offset": o, "id": produced[o]} for o in gone] + [{"offset": o, "id": rid} for o, rid in lost]})
        kept = sorted(set(produced) - set(gone))
        if kept:
            plan.state["not_applied"] = f"offsets {kept} still hold the acks=1 records: not truncated"
        return (f"{evidence}; n{node} in sync again; offsets {gone} no longer hold the records written to it"
                + (f"; offsets {kept} still do" if kept else "")
                + (f"; {len(lost)} other records acknowledged since the cut were lost too: offsets "
                   f"{[o for o, _ in lost]}" if lost else ""))


def _leaders_seen(ctx: FaultContext, partition: int, brokers) -> set[int | str | None]:
    """The leaders of the partition as each of `brokers`, asked alone through its client link, names them
    ("no answer" for one that does not describe it)."""
    links = ctx.cluster_as(Partitionable).links
    seen: set[int | str | None] = set()
    for b in brokers:
        try:
            seen.add(ctx.inspector.seen_by(f"127.0.0.1:{links.client(b).listen_port}", ctx.topic, partition).leader)
        except KafkaException:
            seen.add("no answer")
    return seen


def _active_controller(ctx: FaultContext) -> int | None:
    try:
        return active_controller(ctx.cluster_as(Installed).distribution, cache_dir(), ctx.cluster.bootstrap_servers)
    except RuntimeError as exc:
        raise NotApplied(f"could not find the active controller: {exc}") from None


#: seconds the log's end must stay where it is before an end short of the offsets asked for is believed:
#: a leader elected a moment ago (the heal restores preferred leaders) serves its high watermark as it
#: was, and raises it to the log's committed end once its followers fetch again
END_SETTLE = 5.0


def truncated_records(produced: dict[int, str], others: list[tuple[int, str]], now: dict[int, str],
                      low: int) -> tuple[list[int], list[tuple[int, str]]]:
    """(the offsets of the nemesis's acks=1 records `produced` no longer there, the (offset, id) of the `others`
    acknowledged since the cut no longer there) given what the log holds `now` and its start `low`. Another record
    below the log start was deleted (deleteRecords, retention), not seen lost (the explorer's 4.4.0 finding
    `truncated-delivered` was a record deleted below the log start taken for truncated); the nemesis's own
    records, which never left the old leader, are gone whatever the log start."""
    gone = sorted(o for o, rid in produced.items() if now.get(o) != rid)
    lost = [(o, rid) for o, rid in others if o >= low and now.get(o) != rid]
    return gone, lost


def log_start(bootstrap: str, topic: str, partition: int, timeout: float) -> int:
    """The partition's log start offset (its low watermark) as its leader reports it."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"ksh-truncation-{uuid.uuid4().hex[:8]}",
                         "enable.auto.commit": False, **client_logging()})
    try:
        low, _ = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=timeout)
        return int(low)
    finally:
        consumer.close()


def read_ids(bootstrap: str, topic: str, partition: int, first: int, last: int, timeout: float) -> dict[int, str]:
    """offset -> record value for offsets first..last of the committed log (fewer if the log ends sooner:
    an end before `last` counts once it stayed put for `END_SETTLE` seconds)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"ksh-truncation-{uuid.uuid4().hex[:8]}",
                         "enable.auto.commit": False, "enable.partition.eof": True, **client_logging()})
    found: dict[int, str] = {}
    try:
        consumer.assign([TopicPartition(topic, partition, first)])
        end_seen = [None]  # when the log's end was last reached with nothing read after it

        def read() -> bool:
            for msg in consumer.consume(100, 0.5):
                if msg.error() is not None:
                    if msg.error().code() == -191:  # _PARTITION_EOF: the log ends here, for now
                        end_seen[0] = end_seen[0] or time.monotonic()
                    continue
                end_seen[0] = None
                if first <= msg.offset() <= last:
                    found[msg.offset()] = (msg.value() or b"").decode(errors="replace")
                if msg.offset() >= last:
                    return True
            return end_seen[0] is not None and time.monotonic() - end_seen[0] >= END_SETTLE

        wait_until(read, timeout=timeout, what=f"reading {topic}-{partition} offsets {first}..{last}", interval=0)
    finally:
        consumer.close()
    return found
