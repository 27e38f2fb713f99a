"""Readiness: a cluster is ready when a share group really consumes a record.

Broker registration is necessary but not sufficient: the group coordinator,
the share coordinator and `__share_group_state` must all work. So the probe
creates a topic, produces one record with acks=all, and polls a fresh share
group (auto offset reset earliest) until that record is delivered.

The steps overlap where Kafka allows (`benchmarks/cluster_start.py` prints each
one): the group coordinator's topic is created lazily by the first group
lookup, so the probe asks for its group while its topic is being created; the
consumer joins while the record is produced. Both coordinator topics are made
lazily by Kafka: `__consumer_offsets` at the first group lookup and
`__share_group_state` at the group's first assignment, which the share-state
persister would then wait out with a fixed 1 s backoff
(`PersisterStateManager.REQUEST_BACKOFF_MS`). So the probe first asks a broker
for a group and a share coordinator itself (FindCoordinator v6, through
`harness.kafka.wire`, not librdkafka): both topics are created while the probe's
own topic is.
"""

from __future__ import annotations

import base64
import logging
import uuid
from typing import Callable

from confluent_kafka import Producer, ShareConsumer

from harness.clients.logging import client_logging
from harness.cluster.admin import ensure_topic, set_group_configs
from harness.cluster.inspect import ClusterInspector
from harness.kafka import wire
from harness.sys.wait import wait_until

READY_TOPIC = "__ksh_ready"
log = logging.getLogger(__name__)


def wait_share_consumable(bootstrap: str, inspector: ClusterInspector, *, timeout: float,
                          replication_factor: int, fatal: Callable[[], str | None] | None = None,
                          diagnostics: Callable[[], str] | None = None,
                          steps: Callable[[str], None] | None = None,
                          java: Callable[[str, str, str, float], None] | None = None,
                          administer: Callable[[str, str], None] | None = None) -> None:
    """Block until a share consumer receives a freshly produced record; return nothing else.
    `steps` (if given) is called with each step's name as it completes (the benchmark's breakdown).
    `java` (for a release librdkafka's ShareConsumer cannot talk to): `java(group, topic, token, timeout)`
    consumes the record with the release's own KafkaShareConsumer instead. `administer` (for an implementation
    that serves no Admin API: `harness.cluster.base.SelfAdministered`): `administer(topic, group)` makes the
    probe's topic and sets its group to read from the earliest offset instead of the Admin API."""
    done = steps or (lambda step: None)
    group = f"ksh-ready-{uuid.uuid4().hex[:8]}"
    if administer is not None:
        administer(READY_TOPIC, group)
        wait_until(lambda: inspector.all_led(READY_TOPIC, min_isr=replication_factor), timeout=timeout,
                   what=f"{READY_TOPIC} to have a leader and a full ISR", interval=0.2, fatal=fatal,
                   diagnostics=diagnostics)
        done("topic created and led, group configured")
        _consume(bootstrap, group, timeout, fatal, diagnostics, done)
        return
    # Never a group-coordinator request through librdkafka's Admin API here (an earlier warm-up was one):
    # in librdkafka 2.16.0 a coordinator request that times out or meets a broker's death can abort the
    # whole process later (rdkafka_queue.h: rd_kafka_enq_once_del_source_return: Assertion
    # `eonce->refcnt > 0' failed, called only from rdkafka_admin.c's coordinator request/response), and
    # readiness runs after every restart. The coordinators are asked through harness.kafka.wire instead.
    _ask_coordinators(bootstrap, group)
    wait_until(lambda: _try_create(inspector, replication_factor), timeout=timeout,
               what=f"topic {READY_TOPIC} to be created", interval=0.3, fatal=fatal, diagnostics=diagnostics)
    wait_until(lambda: _try_group_config(inspector, group), timeout=timeout,
               what=f"group config of {group}", interval=0.3, fatal=fatal, diagnostics=diagnostics)
    wait_until(lambda: inspector.all_led(READY_TOPIC, min_isr=replication_factor), timeout=timeout,
               what=f"{READY_TOPIC} to have a leader and a full ISR", interval=0.2, fatal=fatal,
               diagnostics=diagnostics)
    done("topic created and led, group configured")
    if java is not None:
        token = uuid.uuid4().hex.encode()
        _produce(bootstrap, token, timeout)
        done("record produced (acks=all)")
        java(group, READY_TOPIC, token.decode(), timeout)
        done("record share-consumed")
        return
    _consume(bootstrap, group, timeout, fatal, diagnostics, done)


def _consume(bootstrap: str, group: str, timeout: float, fatal, diagnostics, done: Callable[[str], None]) -> None:
    """Join `group` (librdkafka's ShareConsumer), produce a fresh record and poll until it is delivered."""
    token = uuid.uuid4().hex.encode()
    consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group, **client_logging()})
    try:
        consumer.subscribe([READY_TOPIC])  # joins in the background while the record is produced
        _produce(bootstrap, token, timeout)
        done("record produced (acks=all)")

        def received() -> bool:
            return any(m.error() is None and m.value() == token for m in consumer.poll(0.5))

        wait_until(received, timeout=timeout, what="a share group to consume a record",
                   interval=0.0, fatal=fatal, diagnostics=diagnostics)
        done("record share-consumed")
    finally:
        consumer.close()


def _ask_coordinators(bootstrap: str, group: str) -> None:
    """Make the brokers create `__consumer_offsets` and `__share_group_state` now (each broker asks its
    controller when a FindCoordinator names a topic that does not exist), so neither is created lazily
    in the middle of the probe. Only a head start: the probe's consumption is still what proves the
    coordinators work, so a broker that cannot answer this request (a security protocol the wire
    client does not speak) changes nothing but the time."""
    topic_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
    try:
        host, port = wire.addresses(bootstrap)[0]
        for key_type, key in ((wire.GROUP_COORDINATOR, group), (wire.SHARE_COORDINATOR, f"{group}:{topic_id}:0")):
            found = wire.find_coordinators(port, key_type, [key], timeout=3.0, host=host)
            log.debug("readiness: FindCoordinator(%s) -> %s", key, found)
    except (OSError, ValueError) as exc:
        log.debug("readiness: no coordinator head start from %s: %s", bootstrap, exc)


def _produce(bootstrap: str, token: bytes, timeout: float) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                         **client_logging()})
    producer.produce(READY_TOPIC, token)
    if producer.flush(timeout) != 0:
        raise TimeoutError(f"readiness record not acknowledged within {timeout}s")


def _try_create(inspector: ClusterInspector, rf: int) -> bool:
    ensure_topic(inspector.admin, READY_TOPIC, 1, rf, timeout=inspector.timeout)
    return True


def _try_group_config(inspector: ClusterInspector, group: str) -> bool:
    set_group_configs(inspector.admin, group, {"share.auto.offset.reset": "earliest"},
                      timeout=inspector.timeout)
    return True
