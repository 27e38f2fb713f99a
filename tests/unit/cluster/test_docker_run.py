"""`scripts/docker_run.py`, the one command of a machine with only Docker and Python: what it asks of
the engine (host network and pid namespace, the socket, the reports folder at the same path, no
bridge, no published port) and its one-line refusals, without an engine."""

from __future__ import annotations

import importlib.util
import subprocess
from pathlib import Path

import pytest

_SPEC = importlib.util.spec_from_file_location("docker_run", Path(__file__).resolve().parents[3] / "scripts" / "docker_run.py")
docker_run = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(docker_run)


class FakeDocker:
    """`docker ...` as an engine that has `images` and can pull `pullable`."""

    def __init__(self, images=(), pullable=(), answers=True):
        self.images, self.pullable, self.answers, self.calls = set(images), set(pullable), answers, []

    def __call__(self, *args, check=True, quiet=True):
        self.calls.append(args)
        ok = {"info": self.answers, "tag": True}.get(args[0], False)
        if args[:2] == ("image", "inspect"):
            ok = args[2] in self.images
        elif args[0] == "pull":
            ok = args[-1] in self.pullable
            self.images |= {args[-1]} if ok else set()
        if check and not ok:
            raise docker_run.BadInput(f"docker {args[0]} failed")
        return subprocess.CompletedProcess(["docker", *args], 0 if ok else 1, "", "")


def test_the_harness_container_shares_the_hosts_network_and_pids_and_mounts_reports_at_the_same_path(
        tmp_path, monkeypatch):
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    cmd = docker_run.run_command("ksh/harness:abc", ["python3", "-m", "pytest"], tmp_path)
    joined = " ".join(cmd)
    assert cmd[:3] == ["docker", "run", "--rm"]
    assert "--network host" in joined and "--pid host" in joined
    assert f"-v {tmp_path}:{tmp_path}" in joined and f"KSH_REPORTS_DIR={tmp_path}" in joined
    assert "-v /var/run/docker.sock:/var/run/docker.sock" in joined
    assert "-p" not in cmd and "--publish" not in cmd and "bridge" not in joined
    assert cmd[-4:] == ["ksh/harness:abc", "python3", "-m", "pytest"]


def test_a_docker_host_that_is_not_a_unix_socket_is_one_line(monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", "tcp://10.0.0.1:2375")
    with pytest.raises(docker_run.BadInput, match="needs the engine's unix socket"):
        docker_run.socket_path()
    monkeypatch.setenv("DOCKER_HOST", "unix:///run/user/1000/docker.sock")
    assert docker_run.socket_path() == "/run/user/1000/docker.sock"


def test_base_image_pulled_else_the_local_debootstrapped_one_else_one_line(monkeypatch):
    monkeypatch.setattr(docker_run, "docker", FakeDocker(pullable={docker_run.DEFAULT_BASE}))
    assert docker_run.choose_base(None) == docker_run.DEFAULT_BASE
    monkeypatch.setattr(docker_run, "docker", FakeDocker(images={docker_run.LOCAL_BASE}))
    assert docker_run.choose_base(None) == docker_run.LOCAL_BASE
    monkeypatch.setattr(docker_run, "docker", FakeDocker())
    with pytest.raises(docker_run.BadInput, match="docker_images.sh"):
        docker_run.choose_base(None)
    with pytest.raises(docker_run.BadInput, match="docker pull mine:1"):
        docker_run.choose_base("mine:1")


def test_the_harness_image_stands_in_for_apache_kafka_only_when_it_cannot_be_pulled(monkeypatch):
    fake = FakeDocker(pullable={f"apache/kafka:{docker_run.DEFAULT_VERSION}"})
    monkeypatch.setattr(docker_run, "docker", fake)
    assert docker_run.kafka_image("ksh/harness:abc") == f"apache/kafka:{docker_run.DEFAULT_VERSION}"
    assert not any(call[0] == "tag" for call in fake.calls)
    fake = FakeDocker()
    monkeypatch.setattr(docker_run, "docker", fake)
    docker_run.kafka_image("ksh/harness:abc")
    assert ("tag", "ksh/harness:abc", f"apache/kafka:{docker_run.DEFAULT_VERSION}") in fake.calls


def test_no_engine_and_a_missing_ca_file_are_one_line_exit_2(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(docker_run, "docker", FakeDocker(answers=False))
    assert docker_run.main([]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no Docker engine answers" in err[0]
    with pytest.raises(docker_run.BadInput, match="no such file"):
        docker_run.extra_ca([tmp_path / "missing.pem"])


def test_the_image_tag_follows_the_projects_files(tmp_path, monkeypatch):
    (tmp_path / "harness").mkdir()
    (tmp_path / "pyproject.toml").write_text("[project]\n")
    (tmp_path / "harness" / "a.py").write_text("x = 1\n")
    monkeypatch.setattr(docker_run, "ROOT", tmp_path)
    first = docker_run.source_hash()
    assert len(first) == 12 and docker_run.source_hash() == first
    (tmp_path / "harness" / "__pycache__").mkdir()
    (tmp_path / "harness" / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"compiled")
    assert docker_run.source_hash() == first  # compiled files are not the project's
    (tmp_path / "harness" / "a.py").write_text("x = 2\n")
    assert docker_run.source_hash() != first  # a changed file is a new image


def test_every_certificate_authority_of_a_bundle_goes_to_the_image_on_its_own(tmp_path):
    import base64
    one = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----"
    two = "-----BEGIN CERTIFICATE-----\nBBBB\n-----END CERTIFICATE-----"
    bundle = tmp_path / "bundle.crt"
    bundle.write_text(f"{one}\n{two}\n")
    encoded = docker_run.extra_ca([bundle]).split(",")
    assert [base64.b64decode(e).decode().strip() for e in encoded] == [one, two]


def test_the_harness_image_is_tagged_with_the_package_version(monkeypatch):
    """`ksh/harness:<version>-<hash>` is built (or found) and `ksh/harness:<version>` names it (issue 51)."""
    from importlib.metadata import version
    assert docker_run.package_version() == version("kafka-share-harness")
    built = f"ksh/harness:{docker_run.package_version()}-{docker_run.source_hash()}"
    fake = FakeDocker(images={built})
    monkeypatch.setattr(docker_run, "docker", fake)
    assert docker_run.build_harness_image(None, False, []) == built
    assert ("tag", built, f"ksh/harness:{docker_run.package_version()}") in fake.calls
