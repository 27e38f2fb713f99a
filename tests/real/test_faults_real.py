"""Every fault of the catalogue on the real 3-node cluster: it takes effect, heals, and leaves nothing behind.

Each test starts one fault through the nemesis (so the history records it),
asserts the fault observed its effect (the evidence names it), checks the
effect independently where it can be observed from outside, heals, and then
asserts nothing is left: every node running and not stopped, every proxy
enabled without toxics, every partition led by its preferred replica with a
full ISR, and no harness process besides the cluster's and the test's own.

The ci profile proves one fault of each kind here (`nightly`-marked variants run nightly): the chaos
suites apply every variant in CI under a workload, with the same proof of effect (docs/ci.md).
"""

from __future__ import annotations

import re
import threading
import uuid

import pytest

from harness.cluster.admin import create_topic, set_group_configs
from harness.cluster.java_admin import HELPER_NAME
from harness.faults.base import FaultContext, probe
from harness.faults.nemesis import Nemesis
from harness.faults.recovery import in_sync, off_preferred, restore_preferred_leaders, topics_of
from harness.history.store import HistoryWriter
from harness.sys.procs import live_processes
from harness.sys.wait import wait_until

pytestmark = [pytest.mark.real, pytest.mark.cluster, pytest.mark.local_only]


@pytest.fixture
def ctx(local_cluster, tmp_path):
    inspector = local_cluster.inspector
    topic = f"faults-{uuid.uuid4().hex[:8]}"
    create_topic(inspector.admin, topic, 3, 3, {"min.insync.replicas": "2"})
    wait_until(lambda: inspector.all_led(topic, min_isr=3), timeout=60, what=f"{topic} to be led")
    group = f"{topic}-group"
    set_group_configs(inspector.admin, group, {"share.auto.offset.reset": "earliest",
                                               "share.record.lock.duration.ms": "5000"})
    history = HistoryWriter(tmp_path / "history.jsonl")
    context = FaultContext(local_cluster, history, topic, group, config={"lock_duration_ms": 5000,
                                                                       "lock_tolerance_ms": 1000})
    before = {p.pid for p in live_processes()}
    context.nemeses = []
    yield context
    for nemesis in context.nemeses:  # a failed assertion must not leave a fault in place for the next test
        nemesis.heal_all()
    history.close()
    assert_nothing_left(context, before)


def assert_nothing_left(ctx: FaultContext, before: set[int]) -> None:
    cluster = ctx.cluster
    for node in cluster.broker_ids:
        assert cluster.node_alive(node), f"n{node} is not running"
        assert cluster._nodes[node].proc.state() != "T", f"n{node} is still stopped (SIGSTOP)"
        silent = [port for port in cluster._nodes[node].listener_ports if probe(port)[0] != "answered"]
        assert silent == [], f"n{node} does not answer on listener ports {silent}"
    proxies = cluster.toxiproxy.list_proxies()
    assert all(p.enabled for p in proxies.values())
    assert [(n, t.name) for n, p in proxies.items() for t in p.toxics] == []
    # The heal already waited for a full ISR and restored preferred leaders (its evidence says so). A
    # follower of a just-truncated log may drop out right after and its leadership move (seen in CI on a
    # loaded machine): that is Kafka's doing after a proven heal, not a fault left in place. So this waits,
    # bounded, for a full ISR, then elects preferred leaders again where Kafka moved one, and names what
    # is still out of place if either does not happen.
    wait_until(lambda: in_sync(ctx, topics_of(ctx)), timeout=90,
               what="every partition in sync after the heal",
               diagnostics=lambda: f"off preferred: {off_preferred(ctx, topics_of(ctx))}")
    # (Kafka may move a leader again right after an election, seen in CI after controller-cut: elect again
    # until the preferred leaders hold with a full ISR, bounded)

    def settled() -> bool:
        if off_preferred(ctx, topics_of(ctx)):
            restore_preferred_leaders(ctx, timeout=60)
        return off_preferred(ctx, topics_of(ctx)) == [] and in_sync(ctx, topics_of(ctx))
    wait_until(settled, timeout=120, interval=2, what="the preferred leaders with a full ISR after the heal",
               diagnostics=lambda: f"off preferred: {off_preferred(ctx, topics_of(ctx))}")
    # the cluster's nodes, and the long-lived Java helper (durable reads, quorum probes) may stay
    extra = {p.name for p in live_processes()
             if p.pid not in before and not re.fullmatch(r"n\d+", p.name) and p.name != HELPER_NAME}
    assert extra == set(), f"processes left behind: {extra}"


def run_fault(ctx: FaultContext, name: str, pick: int = 0):
    nemesis = Nemesis(ctx)
    ctx.nemeses.append(nemesis)
    record = nemesis.start(name, pick)
    assert record.applied, f"{name} not applied: {record.reason}"
    ops = [op for op in ctx.history.ops() if op.f == "fault-start"]
    assert [op.type for op in ops] == ["invoke", "ok"] and ops[1].value["evidence"] == record.evidence
    return nemesis, record


def heal(nemesis: Nemesis, record) -> None:
    nemesis.heal(record)
    assert record.healed_ok, f"{record.fault} did not heal: {record.reason}"
    heals = [op.type for op in nemesis.ctx.history.ops() if op.f == "fault-heal"]
    assert heals == ["invoke", "ok"]


@pytest.mark.parametrize("mode", [pytest.param("stop", marks=pytest.mark.nightly), "kill", pytest.param("pause", marks=pytest.mark.nightly)])
def test_leader_failover_moves_the_leader_and_returns_it(ctx, mode):
    partition = 1
    old = ctx.inspector.leader_of(ctx.topic, partition)
    nemesis, record = run_fault(ctx, f"leader-{mode}", pick=partition)
    assert record.targets == [f"n{old}"]
    now = ctx.inspector.leader_of(ctx.topic, partition)
    assert now is not None and now != old
    if mode == "pause":
        assert ctx.cluster._nodes[old].proc.state() == "T"
    else:
        assert not ctx.cluster.node_alive(old)
    heal(nemesis, record)
    # as the heal observed it, right after the preferred-replica election: Kafka may move leadership again
    # after a proven heal (seen in CI); the fixture's end check waits that out and re-elects
    assert f"{ctx.topic}-{partition} led by n{old}" in record.heal_evidence, record.heal_evidence


@pytest.mark.parametrize("role", [pytest.param("group", marks=pytest.mark.nightly), "share",
                                  pytest.param("controller", marks=pytest.mark.nightly)])
def test_coordinator_loss_moves_the_role(ctx, role):
    name = {"group": "group-coordinator-kill", "share": "share-coordinator-kill", "controller": "controller-kill"}[role]
    if role == "group":
        old = ctx.inspector.group_coordinator(ctx.group)
    elif role == "share":
        old = ctx.inspector.share_coordinator(ctx.group, ctx.topic, 0)
    else:
        old = None
    nemesis, record = run_fault(ctx, name, pick=0)
    node = int(record.targets[0][1:])
    assert old is None or node == old
    assert not ctx.cluster.node_alive(node)
    assert f"moved n{node} -> n" in record.evidence
    if role == "group":
        assert ctx.inspector.group_coordinator(ctx.group) not in (None, node)
    heal(nemesis, record)


@pytest.mark.parametrize("name", ["isolate-node", pytest.param("split", marks=pytest.mark.nightly), "one-way-cut", "controller-cut"])
def test_network_partition_cuts_links_and_heals(ctx, name):
    nemesis, record = run_fault(ctx, name, pick=1)
    links = [ctx.cluster.links.get(*t.split("->")) for t in record.targets]
    assert links
    assert all(probe(link.listen_port, 1.0)[0] == "timeout" for link in links)
    if name == "one-way-cut":
        (link,) = links
        reverse = ctx.cluster.links.get(link.dst, link.src)
        assert probe(reverse.listen_port, 2.0)[0] == "answered"
    heal(nemesis, record)
    assert all(probe(link.listen_port, 2.0)[0] == "answered" for link in links)


@pytest.mark.parametrize("name", ["latency", "bandwidth", "slow-close", "reset-peer", "slicer"])
def test_degradation_installs_and_removes_its_toxic(ctx, name):
    nemesis, record = run_fault(ctx, name, pick=2)
    toxics = {n: [t.name for t in ctx.cluster.toxiproxy.list_toxics(n)] for n in record.targets}
    assert all(any(t.startswith("ksh_") for t in names) for names in toxics.values()), toxics
    heal(nemesis, record)


@pytest.mark.parametrize("name", ["truncate", pytest.param("truncate-unclean", marks=pytest.mark.nightly)])
def test_truncation_is_observed_and_recorded(ctx, name):
    nemesis, record = run_fault(ctx, name, pick=0)
    heal(nemesis, record)
    truncated = [op for op in ctx.history.ops() if op.f == "truncated"]
    assert len(truncated) == 1 and truncated[0].value["records"], truncated
    assert record.applied, record.reason
    written = {op.value["offset"]: op.value["id"] for op in ctx.history.ops()
               if op.process == "nemesis" and op.f == "produce" and op.type == "ok"}
    gone = {r["offset"] for r in truncated[0].value["records"]}
    assert gone == set(written), (gone, written)


@pytest.fixture
def consuming(ctx, tmp_path):
    """Two explicit-mode consumer drivers and a producer writing 40 records/s while the test runs."""
    from harness.clients.pool import DriverPool
    from harness.clients.producer import HistoryProducer
    pool = DriverPool(ctx.cluster, {"group": ctx.group, "topics": [ctx.topic], "behaviour": "accept-explicit",
                                    "client_config": {"max.poll.records": "5"}}, ctx.history, tmp_path)
    ctx.consumers = pool
    stop = threading.Event()

    def produce() -> None:
        producer = HistoryProducer(ctx.cluster.bootstrap_servers, ctx.history)
        seq = 0
        while not stop.wait(0.025):
            producer.produce(ctx.topic, f"r-{seq}")
            seq += 1
        producer.flush(10)

    thread = threading.Thread(target=produce, daemon=True)
    try:
        pool.start(2)
        thread.start()
        wait_until(lambda: sum(1 for op in ctx.history.ops() if op.f == "poll") >= 3, timeout=60,
                   what="consumers to receive records")
        yield pool
    finally:
        stop.set()
        thread.join(15)
        pool.close_all()


@pytest.mark.parametrize("name", ["consumer-kill", "consumer-pause", "consumer-close"])
def test_consumer_fault_acts_on_the_driver_process(ctx, consuming, name):
    nemesis, record = run_fault(ctx, name, pick=1)
    (target,) = record.targets
    driver = next(d for d in consuming.all() if d.name == target)
    if name == "consumer-pause":
        assert driver.proc.state() == "T"
    else:
        assert not driver.alive()
    if name == "consumer-kill":
        assert any(op.f == "crash" and op.value["process"] == target for op in ctx.history.ops())
    if name == "consumer-close":
        assert "holding" in record.evidence
        closes = [op for op in ctx.history.ops() if op.process == target and op.f == "close"]
        assert closes and closes[0].type == "invoke"
    heal(nemesis, record)
    assert len(consuming.live()) == 2
    if name == "consumer-pause":
        assert driver.alive() and driver.proc.state() != "T"


def test_consumer_cut_isolates_one_consumer_lane_from_one_broker(ctx, consuming):
    nemesis, record = run_fault(ctx, "consumer-cut", pick=1)
    (name,) = record.targets
    link = ctx.cluster.links.get(*name.split("->"))
    assert link.kind == "lane" and consuming.lane_processes(int(link.src[4:])), link  # a lane a consumer uses
    assert probe(link.listen_port, 1.0)[0] == "timeout"
    others = [lk for lk in ctx.cluster.links if lk.kind == "lane" and lk.name != link.name]
    assert others and all(probe(lk.listen_port, 2.0)[0] == "answered" for lk in others)  # only that lane
    heal(nemesis, record)
    assert probe(link.listen_port, 2.0)[0] == "answered"


@pytest.mark.nightly
def test_cold_restart_restarts_every_node(ctx):
    pids = {n: ctx.cluster.node_pid(n) for n in ctx.cluster.broker_ids}
    nemesis, record = run_fault(ctx, "cold-restart")
    assert not any(ctx.cluster.node_alive(n) for n in pids)
    assert all(probe(ctx.cluster.links.client(n).listen_port, 1.0)[0] != "answered" for n in pids)
    heal(nemesis, record)
    assert all(ctx.cluster.node_pid(n) not in (None, pids[n]) for n in pids)


@pytest.mark.parametrize("mode", ["kill", pytest.param("stop", marks=pytest.mark.nightly)])
def test_bounce_restarts_the_leader_at_once_and_reports_its_epoch(ctx, mode):
    """A new process in the leader's place well inside broker.session.timeout.ms; the heal reports the
    partition's leader and leader epoch (Metadata v7) before and after, as the release decided them."""
    from harness.faults.bounce import leader_epoch
    partition = 2
    old = ctx.inspector.leader_of(ctx.topic, partition)
    before = leader_epoch(ctx, partition)
    assert before is not None and before[0] == old and before[1] >= 0
    pid = ctx.cluster.node_pid(old)
    nemesis, record = run_fault(ctx, f"bounce-{mode}", pick=partition)
    assert record.targets == [f"n{old}"]
    assert ctx.cluster.node_pid(old) not in (None, pid)
    assert f"before: n{old} epoch {before[1]}" in record.evidence, record.evidence
    started_ms = int(re.search(r"started it again (\d+) ms later", record.evidence).group(1))
    assert started_ms < 4000
    heal(nemesis, record)
    after = leader_epoch(ctx, partition)
    assert after is not None and after[1] > before[1]  # the old incarnation was fenced: a new epoch
    assert re.search(r"after it \((leadership moved|same leader, new epoch)\)", record.heal_evidence), record.heal_evidence


@pytest.mark.nightly
@pytest.mark.parametrize("mode", ["stop", "kill"])
def test_rolling_restart_gives_every_node_a_new_process(ctx, mode):
    pids = {n: ctx.cluster.node_pid(n) for n in ctx.cluster.broker_ids}
    name = "rolling-restart" if mode == "stop" else "rolling-kill"
    nemesis, record = run_fault(ctx, name, pick=1)
    assert all(ctx.cluster.node_pid(n) not in (None, pids[n]) for n in pids)
    assert record.evidence.count("in sync after") == len(pids), record.evidence
    heal(nemesis, record)


@pytest.mark.nightly
def test_consumer_latency_delays_one_lane_past_the_lock(ctx, consuming):
    nemesis, record = run_fault(ctx, "consumer-latency", pick=0)
    lane = {name.split("->")[0] for name in record.targets}
    assert len(lane) == 1 and len(record.targets) == len(ctx.cluster.broker_ids), record.targets
    took = int(re.search(r"took (\d+) ms", record.evidence).group(1))
    assert took >= 6000, record.evidence  # lock 5000 ms + 1 s
    others = [lk for lk in ctx.cluster.links if lk.kind == "lane" and lk.src not in lane]
    assert others and all(probe(lk.listen_port, 2.0)[0] == "answered" for lk in others)  # only that lane
    heal(nemesis, record)
    assert all(not ctx.cluster.toxiproxy.list_toxics(name) for name in record.targets)


@pytest.mark.parametrize("name", ["disk-fail", pytest.param("disk-fail-state", marks=pytest.mark.nightly)])
def test_disk_failure_moves_leadership_off_the_failed_disk_and_the_broker_survives(ctx, name):
    """The disk under one log directory of the leader fails: the broker (the same process) takes the
    directory offline and stays up, the partition gets another leader with the broker listed offline
    (Metadata v7); the heal replaces the disk and the partition's replica is back on it, preferred."""
    from harness.cluster.inspect import SHARE_STATE_TOPIC
    from harness.faults.recovery import partition_metadata
    partition = 0
    topic, index = ((ctx.topic, partition) if name == "disk-fail" else
                    (SHARE_STATE_TOPIC, ctx.inspector.share_state_partition(ctx.group, ctx.topic, partition)))

    def leader_and_disk():
        """The partition's leader and the log directory holding its replica there (read again each round:
        the metadata a read returns may trail a leader move, and a replica's directory comes with it)."""
        leader = ctx.inspector.leader_of(topic, index)
        found = [d for d in ctx.cluster.log_dirs(leader) if (d / f"{topic}-{index}").is_dir()]
        return (leader, found[0]) if found else None
    old, disk = wait_until(leader_and_disk, timeout=30, interval=0.5,
                           what=f"the leader of {topic}-{index} to hold its replica in one of its log directories")
    pid = ctx.cluster.node_pid(old)
    nemesis, record = run_fault(ctx, name, pick=partition)
    assert record.targets == [f"n{old}"]
    meta = partition_metadata(ctx, topic, index)
    assert meta is not None and meta.leader not in (old, -1) and old in meta.offline, meta
    assert ctx.cluster.node_pid(old) == pid  # the broker survived its disk
    assert disk.is_file() and f"disk {disk.name} failed" in record.evidence, record.evidence
    heal(nemesis, record)
    assert disk.is_dir() and (disk / f"{topic}-{index}").is_dir()  # re-replicated onto the new disk
    assert ctx.cluster.node_pid(old) not in (None, pid)
    # the heal waited until the preferred replicas led again (else it fails); Kafka may move leadership
    # again after that (seen in CI), which the fixture's end check waits out and re-elects
    assert "every partition in sync" in record.heal_evidence, record.heal_evidence


def test_a_real_broker_answers_the_coordinator_head_start(local_cluster):
    """Readiness's head start (`harness.kafka.wire.find_coordinators`, best-effort there, so its bytes are
    proven here): a real broker answers FindCoordinator v6 for a group key and a share key
    (`group:topicId:partition`) with the node that coordinates each."""
    import base64

    from harness.kafka import wire
    host, port = wire.addresses(local_cluster.bootstrap_servers)[0]
    group = f"wire-{uuid.uuid4().hex[:8]}"
    share_key = f"{group}:{base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip('=')}:0"
    for key_type, key in ((wire.GROUP_COORDINATOR, group), (wire.SHARE_COORDINATOR, share_key)):
        answers: list[dict] = []
        wait_until(lambda: answers.append(wire.find_coordinators(port, key_type, [key], host=host))
                   or answers[-1].get(key, (-1, -1))[1] == 0, timeout=30,
                   what=f"FindCoordinator({key}) to name a coordinator", interval=0.5,
                   diagnostics=lambda: f"answers: {answers[-3:]}")
        assert answers[-1][key][0] in local_cluster.broker_ids, answers[-1]
