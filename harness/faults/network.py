"""Network faults through Toxiproxy: partitions (cuts) and degradation (toxics).

Every directed link is its own proxy (`harness.proxy.links`), so a cut stops
exactly the links named. A cut is proven by sending a Kafka ApiVersions
request through each cut proxy and seeing it time out; a heal, by seeing it
answered again. Degradation installs a toxic, proves it with the same probe
where the toxic is observable from one request (latency, reset_peer) and by
the Toxiproxy API otherwise, and removes exactly the toxics it added.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from harness.cluster.base import Partitionable, node_ids
from harness.faults.base import FaultContext, NotApplied, Plan, choose, connection_reset_after, probe, wait_effect
from harness.faults.recovery import restore_preferred_leaders, wait_in_sync
from harness.proxy.client import CUT_TOXIC_PREFIX
from harness.proxy.links import Link

TOXIC_PREFIX = "ksh_"


def _probe_all(links: list[Link], timeout: float = 1.5) -> dict[str, str]:
    if not links:
        return {}
    with ThreadPoolExecutor(max_workers=min(16, len(links))) as pool:
        results = pool.map(lambda link: probe(link.listen_port, timeout)[0], links)
        return dict(zip((link.name for link in links), results))


def _named_links(ctx: FaultContext, plan: Plan) -> list[Link]:
    """The links a plan names (`state["links"]`: `src->dst` names)."""
    links = ctx.cluster_as(Partitionable).links
    return [links.get(*name.split("->")) for name in plan.state["links"]]


def _lane_processes(ctx: FaultContext, links: list[Link]) -> list[str]:
    if ctx.consumers is None:
        return []
    lanes = {int(link.src[4:]) for link in links if link.kind == "lane"}
    return sorted(p for lane in lanes for p in ctx.consumers.lane_processes(lane))


def cut_and_prove(ctx: FaultContext, links: list[Link]) -> str:
    """Cut `links` and prove it (ApiVersions through each times out); the evidence, else NotApplied."""
    cluster = ctx.cluster_as(Partitionable)
    for link in links:
        cluster.cut(link.name)
    results = _probe_all(links)
    # "reset" means Toxiproxy closed the probe: it could not dial the node behind the link. Probe again
    # (a node may just be binding its listeners); if the node still refuses connections directly, it is
    # down (another fault took it out): the link carries nothing either way, and the cut is proven by
    # its toxics being listed, which the evidence says.
    results.update(_probe_all([link for link in links if results[link.name] == "reset"]))
    down = [link for link in links if results[link.name] == "reset" and probe(link.upstream_port)[0] == "refused"]
    listed = {link.name for link in down if _cut_listed(ctx, link)}
    through = sorted(f"{name} ({result})" for name, result in results.items()
                     if result != "timeout" and name not in listed)
    if through:
        raise NotApplied(f"cut links did not time out: {', '.join(through)}")
    timed_out = sorted(name for name, result in results.items() if result == "timeout")
    evidence = f"cut {len(links)} links; ApiVersions timed out through each of {', '.join(timed_out)}"
    if listed:
        evidence += f"; node behind {', '.join(sorted(listed))} is down (refuses connections), cut toxics listed"
    return evidence


def _cut_listed(ctx: FaultContext, link: Link, any_: bool = False) -> bool:
    """Both cut toxics (one per direction) are on the link's proxy; with `any_`, at least one is."""
    toxics = ctx.cluster_as(Partitionable).toxiproxy.list_toxics(link.name)
    count = sum(t.name.startswith(CUT_TOXIC_PREFIX) for t in toxics)
    return count >= 1 if any_ else count == 2


def heal_and_prove(ctx: FaultContext, links: list[Link], wait_cluster: bool) -> str:
    """Heal `links` and prove it (each answers ApiVersions again; with `wait_cluster`, every partition in
    sync and preferred leaders back); the evidence."""
    cluster = ctx.cluster_as(Partitionable)
    for link in links:
        cluster.heal(link.name)
    down: set[str] = set()

    def healed() -> bool:
        # A link whose node is down (another fault, e.g. a leader kill beside a consumer cut) cannot answer:
        # it counts as healed when the node refuses connections directly and its cut toxics are gone.
        results = _probe_all(links)
        down.clear()
        down.update(link.name for link in links if results[link.name] != "answered"
                    and probe(link.upstream_port)[0] == "refused" and not _cut_listed(ctx, link, any_=True))
        return all(results[link.name] == "answered" or link.name in down for link in links)

    wait_effect(healed, ctx.timeout, "every healed link to answer ApiVersions")
    evidence = f"healed {len(links)} links; each answers ApiVersions"
    if down:
        evidence = (f"healed {len(links)} links; each answers ApiVersions except {', '.join(sorted(down))}, "
                    f"whose node is down (refuses connections) and whose cut toxics are gone")
    if wait_cluster:
        wait_in_sync(ctx)
        moved = restore_preferred_leaders(ctx)
        evidence += "; every partition in sync" + (f", preferred leaders restored on {len(moved)}" if moved else "")
    return evidence


@dataclass(frozen=True)
class Cut:
    """A network partition: `isolate` one node, `split` minority/majority, `one-way` between two
    brokers, `consumer` (a consumer lane from one broker), `controller` (a node from the controllers)."""

    shape: str
    group: str = "partition"
    needs: tuple[type, ...] = (Partitionable,)

    @property
    def takes_node(self) -> bool:
        # A node cut from its peers drops out of the ISR, and the heal waits for a full ISR again.
        return self.shape != "consumer"

    @property
    def name(self) -> str:
        return {"isolate": "isolate-node", "split": "split", "one-way": "one-way-cut",
                "consumer": "consumer-cut", "controller": "controller-cut"}[self.shape]

    @property
    def exclusive(self) -> bool:
        return self.shape == "split"

    @property
    def effects(self) -> tuple[str, ...]:
        return {"isolate": ("leader-change", "coordinator-loss"), "split": ("leader-change", "coordinator-loss"),
                "one-way": ("leader-change", "coordinator-loss"), "consumer": ("session-loss",),
                "controller": ("leader-change", "coordinator-loss")}[self.shape]

    def plan(self, ctx: FaultContext, pick: int) -> Plan:
        links = self._links(ctx, pick)
        return Plan([link.name for link in links], ctx.topic, None, processes=_lane_processes(ctx, links),
                    state={"links": [link.name for link in links]})

    def _links(self, ctx: FaultContext, pick: int) -> list[Link]:
        cluster = ctx.cluster_as(Partitionable)
        lm, brokers, nodes = cluster.links, sorted(cluster.broker_ids), node_ids(cluster)
        if self.shape == "isolate":
            return lm.touching(choose(nodes, pick, "node"))
        if self.shape == "split":
            minority = {nodes[(pick + k) % len(nodes)] for k in range(max(1, (len(nodes) - 1) // 2))}
            return lm.between(minority, set(nodes) - minority)
        if self.shape == "one-way":
            pairs = [(a, b) for a in brokers for b in brokers if a != b]
            a, b = choose(pairs, pick, "broker pair")
            return [lm.broker(a, b)]
        if self.shape == "consumer":
            lanes = sorted({int(link.src[4:]) for link in lm if link.kind == "lane"})
            if ctx.consumers is not None:
                used = {lane for lane in lanes if ctx.consumers.lane_processes(lane)}
                lanes = [lane for lane in lanes if lane in used]
            lane = choose(lanes, pick, "consumer lane with a live consumer")
            return [lm.lane(lane, choose(brokers, pick // len(lanes), "broker"))]
        if self.shape == "controller":
            controllers = sorted(cluster.controller_ids)
            node = choose(nodes, pick, "node")
            return [lm.controller(node, c) for c in controllers if c != node]
        raise ValueError(self.shape)

    def apply(self, ctx: FaultContext, plan: Plan) -> str:
        return cut_and_prove(ctx, _named_links(ctx, plan))

    def heal(self, ctx: FaultContext, plan: Plan) -> str:
        return heal_and_prove(ctx, _named_links(ctx, plan), wait_cluster=self.shape != "consumer")


#: toxic -> (attributes, stream). Values are chosen to degrade without being a cut.
def remove_toxics(ctx: FaultContext, links: list[str], tag: str) -> None:
    """Remove the toxics named `tag` from `links` and prove none is left (else NotApplied)."""
    toxiproxy = ctx.cluster_as(Partitionable).toxiproxy
    for name in links:
        for toxic in toxiproxy.list_toxics(name):
            if toxic.name == tag:
                toxiproxy.remove_toxic(name, toxic.name)
    left = [n for n in links if any(t.name == tag for t in toxiproxy.list_toxics(n))]
    if left:
        raise NotApplied(f"toxics left on {', '.join(left)}")


TOXICS: dict[str, tuple[dict[str, Any], str]] = {
    "latency": ({"latency": 400, "jitter": 100}, "downstream"),
    "bandwidth": ({"rate": 64}, "downstream"),  # KB/s
    "slow-close": ({"delay": 2000}, "downstream"),
    "reset-peer": ({"timeout": 500}, "upstream"),
    "slicer": ({"average_size": 64, "size_variation": 32, "delay": 2000}, "downstream"),  # delay in microseconds
}


@dataclass(frozen=True)
class Degrade:
    """One toxic on the links into or out of one node (or a consumer lane)."""

    toxic: str
    group: str = "latency"
    needs: tuple[type, ...] = (Partitionable,)
    exclusive: bool = False
    attributes: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.toxic

    @property
    def takes_node(self) -> bool:
        return self.toxic == "reset-peer"  # may fence the node; the heal waits for a full ISR

    @property
    def effects(self) -> tuple[str, ...]:
        return ("leader-change", "coordinator-loss", "session-loss") if self.toxic == "reset-peer" else ()

    def plan(self, ctx: FaultContext, pick: int) -> Plan:
        lm = ctx.cluster_as(Partitionable).links
        # a node another fault holds (down, paused) answers nothing, so the toxic's effect could not be
        # observed through it: one that no fault holds, where there is one
        brokers, held = sorted(ctx.cluster.broker_ids), ctx.nodes_held()
        node = choose([b for b in brokers if b not in held] or brokers, pick, "broker")
        links = sorted((link for link in lm if link.dst == f"n{node}" or link.src == f"n{node}"),
                       key=lambda link: link.name)
        return Plan([link.name for link in links], ctx.topic, None, processes=_lane_processes(ctx, links),
                    state={"links": [link.name for link in links], "node": node})

    def apply(self, ctx: FaultContext, plan: Plan) -> str:
        attributes, stream = TOXICS[self.toxic]
        attributes = {**attributes, **self.attributes}
        toxiproxy = ctx.cluster_as(Partitionable).toxiproxy
        kind, tag = self.toxic.replace("-", "_"), self._tag(plan)
        for name in plan.state["links"]:
            toxiproxy.add_toxic(name, kind, stream, attributes, name=tag)
        installed = [n for n in plan.state["links"] if any(t.name == tag for t in toxiproxy.list_toxics(n))]
        if len(installed) != len(plan.state["links"]):
            raise NotApplied(f"{self.toxic} toxic missing on {set(plan.state['links']) - set(installed)}")
        return f"{self.toxic} {attributes} on {len(installed)} links of n{plan.state['node']}; " + self._observe(ctx, plan)

    def _observe(self, ctx: FaultContext, plan: Plan) -> str:
        link = ctx.cluster_as(Partitionable).links.client(plan.state["node"])
        if self.toxic == "latency":
            result, seconds = probe(link.listen_port, timeout=5)
            if result != "answered" or seconds < 0.2:
                raise NotApplied(f"latency not observed on {link.name}: {result} in {seconds * 1000:.0f} ms")
            return f"ApiVersions through {link.name} took {seconds * 1000:.0f} ms"
        if self.toxic == "reset-peer":
            seconds = connection_reset_after(link.listen_port)
            if seconds is None:
                raise NotApplied(f"reset_peer not observed on {link.name}: the connection stayed open")
            return f"a connection through {link.name} was reset after {seconds * 1000:.0f} ms"
        return "toxic listed by the Toxiproxy API on every link"

    def _tag(self, plan: Plan) -> str:
        return f"{TOXIC_PREFIX}{self.toxic.replace('-', '_')}_{plan.id}"

    def heal(self, ctx: FaultContext, plan: Plan) -> str:
        remove_toxics(ctx, plan.state["links"], self._tag(plan))
        return heal_and_prove(ctx, _named_links(ctx, plan), wait_cluster=self.toxic == "reset-peer")


@dataclass(frozen=True)
class LaneLatency:
    """Latency on one consumer lane only (its links to every broker, client to broker): each request of
    the consumers on that lane, their acknowledgements included, reaches the brokers a whole acquisition
    lock later (`lock_duration_ms` + 1 s), so what they acknowledge has been released to others by then."""

    name: str = "consumer-latency"
    group: str = "consumer"  # a client-side fault, beside the consumer process faults
    needs: tuple[type, ...] = (Partitionable,)
    exclusive: bool = False
    takes_node: bool = False
    # late acknowledgements are in the history themselves (their results); a client whose requests take
    # longer than its request timeout drops the connection, and the broker ends its share session
    # (franz-go did: records it had fetched came back with their count raised)
    effects: tuple[str, ...] = ("session-loss",)

    def plan(self, ctx: FaultContext, pick: int) -> Plan:
        lm = ctx.cluster_as(Partitionable).links
        lanes = sorted({int(link.src[4:]) for link in lm if link.kind == "lane"})
        if ctx.consumers is not None:
            lanes = [lane for lane in lanes if ctx.consumers.lane_processes(lane)]
        lane = choose(lanes, pick, "consumer lane with a live consumer")
        links = sorted((link for link in lm if link.src == f"lane{lane}"), key=lambda link: link.name)
        delay = int(ctx.config.get("lock_duration_ms", 30000)) + 1000
        return Plan([link.name for link in links], ctx.topic, None, processes=_lane_processes(ctx, links),
                    state={"links": [link.name for link in links], "lane": lane, "latency_ms": delay})

    def _tag(self, plan: Plan) -> str:
        return f"{TOXIC_PREFIX}lane_latency_{plan.id}"

    def apply(self, ctx: FaultContext, plan: Plan) -> str:
        toxiproxy, delay = ctx.cluster_as(Partitionable).toxiproxy, plan.state["latency_ms"]
        for name in plan.state["links"]:
            toxiproxy.add_toxic(name, "latency", "upstream", {"latency": delay, "jitter": 0}, name=self._tag(plan))
        installed = ctx.history.now_ns()
        link = _named_links(ctx, plan)[0]
        result, seconds = probe(link.listen_port, timeout=delay / 1000 + 10)
        if result != "answered" or seconds * 1000 < delay:
            raise NotApplied(f"lane latency not observed on {link.name}: {result} in {seconds * 1000:.0f} ms")

        def sent():  # a commit (the acknowledgements it carries) a consumer of the lane sent since
            for op in reversed(ctx.history.ops()):
                if op.time < installed:
                    return None
                if op.process in plan.processes and op.f == "commit" and op.type == "invoke":
                    return op
            return None
        commit = wait_effect(sent, ctx.timeout, f"a consumer on lane {plan.state['lane']} to send acknowledgements")
        plan.state["commit"] = (commit.process, commit.time)
        return (f"latency {delay} ms (the lock duration + 1 s) on the {len(plan.state['links'])} links of consumer "
                f"lane {plan.state['lane']} ({', '.join(plan.processes)}); ApiVersions through {link.name} took "
                f"{seconds * 1000:.0f} ms; {commit.process} sent acknowledgements at +{commit.time / 1e9:.1f} s")

    def heal(self, ctx: FaultContext, plan: Plan) -> str:
        late = ""
        if "commit" in plan.state:  # not before that commit has reached the brokers, a lock too late
            process, sent = plan.state["commit"]
            due = sent + plan.state["latency_ms"] * 1_000_000
            wait_effect(lambda: ctx.history.now_ns() >= due, plan.state["latency_ms"] / 1000 + 5,
                        f"{process}'s acknowledgements to reach the brokers")
            late = f"{process}'s acknowledgements sent at +{sent / 1e9:.1f} s reached the brokers {plan.state['latency_ms']} ms later; "
        remove_toxics(ctx, plan.state["links"], self._tag(plan))
        return late + heal_and_prove(ctx, _named_links(ctx, plan), wait_cluster=False)
