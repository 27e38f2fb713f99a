"""Toxiproxy on every link, proven on a real cluster: a cut stops exactly one directed link."""

from __future__ import annotations

import json
import sys
import uuid

import pytest
from confluent_kafka.admin import NewTopic

from harness.cluster.inspect import ClusterInspector
from harness.sys.procs import run
from harness.sys.wait import wait_until

pytestmark = [pytest.mark.real, pytest.mark.cluster, pytest.mark.local_only]


def _topic(inspector: ClusterInspector, replicas: list[int]) -> str:
    name = f"links-{uuid.uuid4().hex[:8]}"
    inspector.admin.create_topics([NewTopic(name, num_partitions=1, replica_assignment=[replicas])])[name].result()
    wait_until(lambda: inspector.leader_of(name, 0) == replicas[0] and inspector.isr_of(name, 0) == sorted(replicas),
               timeout=60, what=f"{name} led by {replicas[0]} with a full ISR")
    return name


_PRODUCE = """
import json, sys
from confluent_kafka import Producer
bootstrap, topic, n, timeout_ms = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
errors = []
producer = Producer({"bootstrap.servers": bootstrap, "acks": 1, "message.timeout.ms": timeout_ms, "log_level": 3})
for i in range(n):
    producer.produce(topic, f"r{i}".encode(), on_delivery=lambda err, msg: errors.append(err and err.name()))
producer.flush(timeout_ms / 1000 + 10)
print(json.dumps(errors))
"""


def _produce(bootstrap: str, topic: str, n: int = 5, timeout_ms: int = 20000) -> list[str | None]:
    """Produce n records with acks=1; return each delivery's error (None = delivered).

    In a child process: librdkafka aborted the whole pytest worker once, in a producer right after a
    heal (an assertion inside the client library, not the behaviour this file checks); a child
    that dies names itself and what it printed instead of taking the worker's other tests along.
    """
    done = run("links-producer", [sys.executable, "-c", _PRODUCE, bootstrap, topic, str(n), str(timeout_ms)],
               timeout=timeout_ms / 1000 + 60)
    assert done.returncode == 0, (f"the producer process exited with {done.returncode} (librdkafka crashed?): "
                                  f"{done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_cutting_one_broker_link_stalls_only_that_direction(local_cluster):
    inspector = ClusterInspector(local_cluster.bootstrap_servers)
    led_by_1 = _topic(inspector, [1, 2, 3])
    led_by_2 = _topic(inspector, [2, 1, 3])
    link = local_cluster.links.broker(2, 1)  # broker 2 dials broker 1: 2 follows 1's partitions over it
    local_cluster.cut(link.name)
    try:
        assert _produce(local_cluster.bootstrap_servers, led_by_1) == [None] * 5
        wait_until(lambda: inspector.isr_of(led_by_1, 0) == [1, 3], timeout=60,
                   what="follower 2 to drop out of the ISR of a partition led by 1")
        # The other direction (1 follows 2) and the other follower (3 follows 1) keep replicating.
        assert _produce(local_cluster.bootstrap_servers, led_by_2) == [None] * 5
        assert inspector.isr_of(led_by_2, 0) == [1, 2, 3]
        assert 3 in inspector.isr_of(led_by_1, 0)
    finally:
        local_cluster.heal(link.name)
    wait_until(lambda: inspector.isr_of(led_by_1, 0) == [1, 2, 3], timeout=60,
               what="follower 2 to rejoin the ISR after the heal")


def test_cutting_a_client_link_times_out_only_that_broker(local_cluster):
    inspector = ClusterInspector(local_cluster.bootstrap_servers)
    led_by_1 = _topic(inspector, [1, 2, 3])
    led_by_2 = _topic(inspector, [2, 1, 3])
    # A producer that already knows the leaders, so the cut hits its produce requests to broker 1.
    link = local_cluster.links.client(1)
    local_cluster.cut(link.name)
    try:
        errors = _produce(local_cluster.bootstrap_servers, led_by_1, n=3, timeout_ms=4000)
        assert errors and all(e is not None for e in errors), errors
        assert all("TIMED_OUT" in e for e in errors), errors
        assert _produce(local_cluster.bootstrap_servers, led_by_2, n=3, timeout_ms=20000) == [None] * 3
    finally:
        local_cluster.heal(link.name)
    assert _produce(local_cluster.bootstrap_servers, led_by_1, n=3) == [None] * 3


def test_link_map_covers_every_directed_link(local_cluster):
    brokers = local_cluster.broker_ids
    names = set(local_cluster.links.names())
    expected = {f"client->n{b}" for b in brokers} | {f"lane{k}->n{b}" for b in brokers for k in range(3)}
    expected |= {f"n{a}->n{b}" for a in brokers for b in brokers if a != b}
    expected |= {f"n{a}->c{b}" for a in brokers for b in local_cluster.controller_ids if a != b}
    assert names == expected
    proxies = local_cluster.toxiproxy.list_proxies()
    assert set(proxies) == expected and all(p.enabled for p in proxies.values())
