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
