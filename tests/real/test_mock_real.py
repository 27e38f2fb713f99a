"""The mock backend's smoke (CI): librdkafka's mock cluster, the one confluent-kafka's wheel bundles, started
as the implementation under test (`harness.cluster.mock`); a checked workload with leader moves over it; the
property it gives nothing to check named, never passed; its deviations still met (each strict: when the mock
is fixed the test says to take the deviation off). The whole gate is `tox -e mock`."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from harness.kafka.implementations import MOCK_KAFKA_LEVEL, mock_version
from harness.spec import RunSpec


@pytest.fixture(scope="module")
def mock(tmp_path_factory):
    from harness.cluster.mock import LibrdkafkaMock
    with LibrdkafkaMock(tmp_path_factory.mktemp("mock")) as cluster:
        yield cluster


def _run(mock, **fields):
    from harness.run import run
    spec = replace(RunSpec(name="mock-smoke", backend="mock", kafka_version=MOCK_KAFKA_LEVEL).with_profile(),
                   records=150, consumers=2, behaviour="accept-explicit", **fields).validate()
    return run(spec, cluster=mock)


def test_the_launcher_serves_the_bundled_librdkafka_and_leaves_nothing(mock, tmp_path):
    from harness.cluster.mock import LibrdkafkaMock
    from harness.sys.procs import live_processes
    assert mock.reported_version == mock_version()  # the library confluent-kafka loads: nothing else is under test
    assert mock.inspector.broker_ids() == [1, 2, 3]  # from Metadata: the mock serves no DescribeCluster
    before = {p.pid for p in live_processes()}
    other = LibrdkafkaMock(tmp_path, brokers=1)
    other.start()
    proc = other._launcher._proc
    other.close()
    assert proc is not None and not proc.alive()
    assert {p.pid for p in live_processes()} <= before
    assert (tmp_path / "mock" / "mock.log").is_file()


def test_a_group_config_the_mock_cannot_set_is_one_line(mock):
    from harness.errors import HarnessError
    with pytest.raises(HarnessError, match="no setting for group config share.partition.max.record.locks"):
        mock.set_group_configs("g", {"share.partition.max.record.locks": "10"})


def test_a_checked_workload_with_leader_moves_passes_and_durable_state_is_named_not_checked(mock):
    """Readiness, the topic and group set up through the launcher, the workload under leader moves, a
    coordinator rehash and a connection the mock drops at a ShareFetch, the history and every checker; durable-state (nothing to read on the mock) is named
    NOT CHECKED in the verdict and left out of its results, never counted a pass."""
    outcome = _run(mock, faults=("leader-move", "leader-shuffle", "share-fetch-drop"), fault_mode="once")
    assert outcome.overall is True, outcome.summary()
    assert all(f.applied and f.healed_ok for f in outcome.faults) and len(outcome.faults) == 3, outcome.summary()
    drop = next(f for f in outcome.faults if f.fault == "share-fetch-drop")
    assert "Forcing close of connection" in drop.evidence, outcome.summary()  # the mock's own word for it
    assert "durable-state" not in {r.checker for r in outcome.results}
    verdict = json.loads((outcome.run_dir / "verdict.json").read_text())
    assert "durable-state" in verdict["not_checked"] and "NOT CHECKED" in outcome.summary()


def test_the_apiversions_deviation_still_keeps_java_and_franz_off_the_mock(mock):
    """Deviation `apiversions-unsupported-answer-malformed` (docs/implementations/librdkafka-mock.md): an
    ApiVersions request of a version the mock does not serve is not answered as ApiVersionsResponse v0, which
    Java's and franz-go's clients cannot read (the matrix's java and franz cells on the mock). When librdkafka
    fixes it this test fails: take the deviation off harness/certify/matrix.py and the page."""
    from harness.cluster.mock import apiversions_answer_deviation
    evidence = apiversions_answer_deviation(mock.bootstrap_servers)
    if evidence is None:
        pytest.fail(f"librdkafka {mock_version()}'s mock answers an unsupported ApiVersions version as Kafka does: "
                    "take apiversions-unsupported-answer-malformed off harness/certify/matrix.py and "
                    "docs/implementations/librdkafka-mock.md, and run the java and franz cells")
    assert "error 35" in evidence and "v4 answered 0023" in evidence, evidence


def test_another_clients_disconnect_still_ends_a_members_share_session(mock):
    """Deviation `connection-close-ends-every-share-session` (docs/implementations/librdkafka-mock.md), shown
    without any timing: a consumer holds records under its share session; another client connects to the
    brokers and disconnects; the consumer's ACCEPT of those records then fails with
    SHARE_SESSION_NOT_FOUND and they come back (KIP-932: a share session is the member's, opened with
    ShareSessionEpoch 0 and closed by the member with -1). When librdkafka fixes it this test fails: take the
    deviation off harness/conformance/deviations.py and the page."""
    import time
    import uuid

    from confluent_kafka import Producer, ShareConsumer

    from harness.kafka import wire
    from harness.sys.wait import wait_until
    topic, group = f"ksh-sessions-{uuid.uuid4().hex[:6]}", f"ksh-sessions-{uuid.uuid4().hex[:6]}"
    mock.create_topic(topic, 1, 1)
    mock.set_group_configs(group, {"share.auto.offset.reset": "earliest"})
    producer = Producer({"bootstrap.servers": mock.bootstrap_servers})
    for n in range(5):
        producer.produce(topic, f"r{n}".encode())
    assert producer.flush(10) == 0
    consumer = ShareConsumer({"bootstrap.servers": mock.bootstrap_servers, "group.id": group,
                              "share.acknowledgement.mode": "explicit"})
    try:
        consumer.subscribe([topic])
        held: list = []
        wait_until(lambda: held.extend(m for m in consumer.poll(0.5) if m.error() is None) or len(held) >= 5,
                   timeout=30, what="the consumer to hold the 5 records")
        log_before = mock.log_path.read_bytes().count(b"closed")
        for _, port in wire.addresses(mock.bootstrap_servers):  # another client: one ApiVersions on its own
            assert wire.probe(port)[0] == "answered"          # connection to each broker, then closed
        wait_until(lambda: mock.log_path.read_bytes().count(b"closed") > log_before, timeout=10,
                   what="the mock to log the other client's connection closed")
        for message in held:
            consumer.acknowledge(message)
        results = consumer.commit_sync(10)
        errors = [str(e) for e in results.values() if e is not None]
        if not errors:
            pytest.fail(f"librdkafka {mock_version()}'s mock kept the member's share session when another client "
                        "disconnected: take connection-close-ends-every-share-session off "
                        "harness/conformance/deviations.py and docs/implementations/librdkafka-mock.md")
        assert any("SHARE_SESSION_NOT_FOUND" in e for e in errors), errors
        again = []
        deadline = time.monotonic() + 15
        while len(again) < 5 and time.monotonic() < deadline:
            again += [m for m in consumer.poll(0.5) if m.error() is None]
        assert sorted(m.offset() for m in again) == [0, 1, 2, 3, 4]  # released with the session: delivered again
    finally:
        consumer.close()
