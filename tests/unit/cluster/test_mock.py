"""Fast tests of the mock backend's pure parts: the spec and the faults it can host, the group settings it maps
onto the launcher's commands (through a launcher that records them), the coordinators a rehash moves, the
property it gives nothing to check, the matrix's mock column, and the ApiVersions check its deviation rests
on. The launcher and the mock themselves run in tests/real/test_mock_real.py."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from harness.errors import HarnessError
from harness.kafka.implementations import MOCK, MOCK_KAFKA_LEVEL, default_kafka_version, implementation
from harness.settings import backend_args
from harness.spec import RunSpec


def test_the_mock_runs_at_the_kafka_api_level_it_serves_and_names_librdkafka():
    import confluent_kafka
    assert default_kafka_version("mock") == MOCK_KAFKA_LEVEL
    assert implementation("mock") == (MOCK, confluent_kafka.libversion()[0])


def test_the_spec_takes_the_mock_and_refuses_what_does_not_fit_it():
    spec = RunSpec(backend="mock", kafka_version=MOCK_KAFKA_LEVEL).validate()
    assert backend_args(spec) == ["--backend", "mock"]
    with pytest.raises(HarnessError, match="backend mock starts its own cluster"):
        RunSpec(backend="mock", bootstrap_servers="localhost:9092").validate()
    with pytest.raises(HarnessError, match="needs the kfake backend"):
        RunSpec(backend="mock", kfake_version="v0.0.0-20260515175617-8268a5d078c0").validate()


def test_the_mock_hosts_leader_moves_and_refuses_process_faults_in_one_line():
    RunSpec(backend="mock", kafka_version=MOCK_KAFKA_LEVEL, faults=("leader-move", "leader-shuffle")).validate()
    with pytest.raises(HarnessError, match=r"fault leader-kill needs Killable, which the mock backend has not .*"
                                           r"leader-move, leader-shuffle, share-fetch-drop"):
        RunSpec(backend="mock", kafka_version=MOCK_KAFKA_LEVEL, faults=("leader-kill",)).validate()
    from harness.faults import CATALOGUE, parse_faults
    assert "share-fetch-drop" not in parse_faults("all") and CATALOGUE["share-fetch-drop"].effects == ("session-loss",)
    with pytest.raises(HarnessError, match=r"share-fetch-drop acts through the implementation's own hooks "
                                           r"\(InjectedFaults\), which only the mock backend has"):
        RunSpec(faults=("share-fetch-drop",)).validate()
    with pytest.raises(HarnessError, match="fault share-fetch-drop needs InjectedFaults, which the kfake backend has not"):
        RunSpec(backend="kfake", faults=("share-fetch-drop",)).validate()


class _Recorder:
    """A launcher that answers every command ok and keeps them."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def command(self, line: str, key: str, refused: str | None = None) -> dict:
        self.lines.append(line)
        return {"ok": True}


@pytest.fixture
def mock(tmp_path: Path):
    from harness.cluster.mock import LibrdkafkaMock
    cluster = LibrdkafkaMock(tmp_path, brokers=3)
    cluster._launcher = _Recorder()
    return cluster


def test_group_configs_become_the_launchers_commands_and_the_limits_in_force(mock):
    limits = mock.set_group_configs("g", {"share.record.lock.duration.ms": "2000", "share.delivery.count.limit": "3",
                                          "share.auto.offset.reset": "earliest"})
    # every setting is sent (the mock's are the cluster's: none is left from the group before), the defaults for
    # those not given
    assert sorted(mock._launcher.lines) == sorted(["lock-duration 2000", "delivery-limit 3", "offset-reset earliest",
                                                   "session-timeout 45000", "heartbeat-interval 5000",
                                                   "isolation read_uncommitted", "coordinator g 1"])
    assert limits == {"lock_duration_ms": 2000, "delivery_count_limit": 3, "session_timeout_ms": 45000,
                      "heartbeat_interval_ms": 5000}  # the rest: the mock's defaults (rdkafka_mock_sharegrp.c)
    mock._launcher.lines.clear()
    limits = mock.set_group_configs("h", {"share.isolation.level": "read_committed"})
    assert "isolation read_committed" in mock._launcher.lines and "lock-duration 30000" in mock._launcher.lines
    assert limits["lock_duration_ms"] == 30000  # g's 2000 not inherited


@pytest.mark.parametrize("configs, said", [
    ({"share.partition.max.record.locks": "10"}, "no setting for group config share.partition.max.record.locks"),
    ({"share.auto.offset.reset": "by_duration:PT1H"}, "takes share.auto.offset.reset earliest or latest only"),
])
def test_a_setting_the_mock_has_none_of_is_not_served_before_any_command(mock, configs, said):
    from harness.cluster.mock import NotServed
    with pytest.raises(NotServed, match=said):
        mock.set_group_configs("g", {"share.record.lock.duration.ms": "2000", **configs})
    assert mock._launcher.lines == []  # nothing half-set


def test_a_rehash_moves_every_group_the_harness_placed_to_the_next_broker(mock):
    mock.set_group_configs("a", {})
    mock.set_group_configs("b", {})
    mock._launcher.lines.clear()
    mock._coordinators["b"] = 3
    mock.rehash_coordinators()
    assert mock._launcher.lines == ["coordinator a 2", "coordinator b 1"]
    assert mock._coordinators == {"a": 2, "b": 1}


def test_the_mock_names_durable_state_not_checked_and_kafka_names_nothing(mock):
    from harness.cluster.base import InjectedFaults, SelfAdministered, unchecked_of
    assert set(unchecked_of(mock)) == {"durable-state"}
    assert isinstance(mock, SelfAdministered) and isinstance(mock, InjectedFaults)
    from harness.cluster.external import ExternalCluster
    assert unchecked_of(ExternalCluster("localhost:9092")) == {}


def test_a_runs_summary_says_what_was_not_checked(tmp_path):
    from harness.run.outcome import RunOutcome
    outcome = RunOutcome(RunSpec(), True, (), tmp_path, (), {"durable-state": "no state to read"})
    assert "  durable-state: NOT CHECKED - no state to read" in outcome.summary()


def test_the_v0_unsupported_answer_is_kafkas_and_the_mocks_bytes_are_not():
    from harness.kafka.wire import v0_unsupported_answer
    kafka = struct.pack(">hi", 35, 1) + struct.pack(">hhh", 18, 0, 4)  # what Kafka answers: ApiVersions 0-4
    assert v0_unsupported_answer(kafka)
    assert not v0_unsupported_answer(bytes.fromhex("00230100120000000200000000"))  # the mock's answer, seen
    assert not v0_unsupported_answer(struct.pack(">hi", 0, 1) + struct.pack(">hhh", 18, 0, 4))  # no error: not it
    assert not v0_unsupported_answer(b"\x00\x23")


def test_the_matrix_has_a_mock_column_with_the_chaos_it_can_host(tmp_path):
    from harness.certify.matrix import MOCK_CHAOS_SUITES, cell_command, check_matrix_args, hosted, unsupported_pair
    from harness.sys.suites import Suites
    assert hosted("mock") and not hosted("4.4.0")
    check_matrix_args(["mock"], ["confluent", "java", "franz"])
    assert unsupported_pair("mock", "confluent") == ""
    cmd = cell_command(Suites(tmp_path / "suites", tmp_path, installed=False), "mock", "confluent", tmp_path / "o", 1,
                       None)
    assert cmd[cmd.index("--backend") + 1] == "mock" and cmd[cmd.index("--kafka-version") + 1] == MOCK_KAFKA_LEVEL
    assert [c for c in cmd if c.endswith(".py")] == [str(tmp_path / "suites" / s) for s in MOCK_CHAOS_SUITES]
