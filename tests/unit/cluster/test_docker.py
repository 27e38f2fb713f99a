"""The docker backend's pure parts: the spec's backend fields, the options that carry them to a pytest
child, the CLI flags, and the command a container runs (no engine needed)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from harness.cli.parser import build_parser
from harness.cluster.docker import DEFAULT_CLASSPATH, _docker_name, default_image
from harness.cluster.docker.node import ContainerNode
from harness.cluster.local.node import LocalNode
from harness.errors import HarnessError
from harness.kafka import config as kconfig
from harness.settings import backend_args
from harness.spec import RunSpec


def test_local_is_the_default_backend_and_needs_no_options():
    spec = RunSpec().validate()
    assert spec.backend == "local" and spec.kafka_image is None
    assert backend_args(spec) == []


def test_docker_options_round_trip_through_the_command_line():
    spec = replace(RunSpec(), backend="docker", kafka_image="example/kafka-fork:1.2",
                   kafka_image_classpath="/usr/share/kafka/libs/*").validate()
    args = build_parser().parse_args(["run", *backend_args(spec)])
    assert (args.backend, args.kafka_image, args.kafka_image_classpath) == (
        "docker", "example/kafka-fork:1.2", "/usr/share/kafka/libs/*")
    assert backend_args(replace(spec, kafka_image=None, kafka_image_classpath=DEFAULT_CLASSPATH)) == [
        "--backend", "docker"]


@pytest.mark.parametrize("fields, message", [
    ({"backend": "podman"}, r"invalid backend 'podman': use one of local, docker"),
    ({"backend": "docker", "bootstrap_servers": "127.0.0.1:9092"}, r"leave out bootstrap-servers"),
    ({"backend": "docker", "kafka_home": "/opt/kafka"}, r"leave out kafka-home"),
    ({"kafka_image": "apache/kafka:4.3.1"}, r"needs the docker backend"),
    ({"backend": "docker", "kafka_image_classpath": "libs/*"}, r"an absolute path inside the image"),
])
def test_bad_backend_fields_are_one_line(fields, message):
    with pytest.raises(HarnessError, match=message):
        replace(RunSpec(), **fields).validate()


def test_the_cli_refuses_an_unknown_backend(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["run", "--backend", "podman"])
    assert "invalid choice: 'podman'" in capsys.readouterr().err


def test_default_image_is_the_projects_own():
    assert default_image("4.3.1") == "apache/kafka:4.3.1"


def test_container_names_keep_to_dockers_alphabet():
    assert _docker_name("ksh-12-2026-11-26T07:30:00-cluster") == "ksh-12-2026-11-26T07-30-00-cluster"
    assert _docker_name("::") == "ksh"


def test_a_container_runs_the_local_command_over_the_images_jars(tmp_path: Path):
    ports = kconfig.NodePorts(client=19092, controller=19093, peers={}, lanes={}, sasl=None)
    local = LocalNode(1, ("broker", "controller"), tmp_path, tmp_path / "server.properties", ports)
    node = ContainerNode(1, local.roles, local.home, local.config, ports, image="apache/kafka:4.3.1")
    command = node.java_command(512, node.image_classpath)
    assert command == local.java_command(512, "/opt/kafka/libs/*")
    assert command[-3:] == ["/opt/kafka/libs/*", "kafka.Kafka", str(tmp_path / "server.properties")]
    assert not node.alive() and node.pid() is None and node.death() is None  # never started


class _Container:
    def __init__(self, name: str, label: str) -> None:
        self.name, self.labels, self.removed = name, {"org.kafka-share-harness": label}, False

    def remove(self, force: bool) -> None:
        self.removed = force


class _Engine:
    def __init__(self, containers: list[_Container]) -> None:
        self.containers = self
        self._all = containers

    def list(self, all: bool, filters: dict) -> list[_Container]:
        return self._all


def test_sweep_removes_only_this_hosts_containers_of_dead_harnesses():
    import os
    import socket

    from harness.cluster.docker.engine import owner, sweep
    host = socket.gethostname()
    dead = 2 ** 22 + 12345  # above pid_max's default: no such process
    mine, gone = _Container("mine", owner()), _Container("gone", f"{host}/{dead}")
    elsewhere, odd = _Container("elsewhere", f"another-host/{dead}"), _Container("odd", "not-ours")
    engine = _Engine([mine, gone, elsewhere, odd])
    assert sweep(engine) == ["gone"]
    assert sweep(engine, pid=os.getpid()) == ["mine"]
    assert not elsewhere.removed and not odd.removed
