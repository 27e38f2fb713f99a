"""Issue 47, security: what another local user (or a hostile option) could do, closed.

- the authorization area's SASL users get random passwords per run (from `secrets`), and the node's
  server.properties that holds them is 0600;
- the docker backend's image layout check passes `--kafka-image-classpath` as an argument, never
  inside a shell string;
- the port registry is the user's own (`<tmp>/ksh-ports-<uid>`, 0700), refused when another user owns
  it or may write to it; its lock files are 0600 and never opened through a symbolic link;
- the README states the trust model, and that scripts/docker_run.py is root on the host.

No Kafka, no Docker: the functions that write the files or build the command, with fakes.
"""

from __future__ import annotations

import importlib.util
import os
import random
import re
import stat
from pathlib import Path
from types import SimpleNamespace

import pytest

from harness.errors import HarnessError
from harness.sys import ports

ROOT = Path(__file__).resolve().parents[3]


# -- SASL users -----------------------------------------------------------------------------------

def _conformance_conftest():
    spec = importlib.util.spec_from_file_location("ksh_conformance_conftest_under_test",
                                                  ROOT / "suites" / "conformance" / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_authorization_users_passwords_are_random_per_run_not_fixed_and_not_from_the_seed():
    first, second = _conformance_conftest().SASL_USERS, _conformance_conftest().SASL_USERS
    assert set(first) == {"alice", "bob"}
    assert "alice-secret" not in first.values() and "bob-secret" not in first.values()
    assert first["alice"] != second["alice"] and first["bob"] != second["bob"] and first["alice"] != first["bob"]
    assert all(len(p) >= 24 and re.fullmatch(r"[A-Za-z0-9_.-]+", p) for p in first.values())

    from harness.cluster.local.spec import LocalClusterSpec, random_sasl_users
    random.seed(1)
    drawn = random_sasl_users("alice")
    random.seed(1)  # the run's seeded RNG, drawn again from the same seed: other passwords all the same
    assert random_sasl_users("alice") != drawn
    LocalClusterSpec(version="4.3.1", sasl_users=random_sasl_users("alice", "bob")).validate()
    # nowhere in the suite is a password written out
    text = (ROOT / "suites" / "conformance" / "test_authorization.py").read_text()
    assert "-secret" not in text


def test_the_server_properties_holding_the_sasl_passwords_is_readable_by_its_user_only(tmp_path, monkeypatch):
    from harness.cluster.local import files as local_files
    from harness.cluster.local.spec import LocalClusterSpec, plan_ports
    from harness.kafka.versions import release_line
    from harness.proxy.links import LinkMap

    registered = []
    monkeypatch.setattr(local_files, "REAPER", SimpleNamespace(register_dir=registered.append))
    users = {"alice": "pw-of-alice", "bob": "pw-of-bob"}
    spec = LocalClusterSpec(version="4.3.1", brokers=1, replication_factor=1, min_insync_replicas=1,
                            internal_partitions=1, consumer_lanes=0, sasl_users=users)
    plan = plan_ports(spec, list(range(30000, 30000 + spec.port_count() - 1)))
    dist = SimpleNamespace(release_line=release_line("4.3.1"))
    home = tmp_path / "nodes" / "n1"
    node = local_files.write_node(1, home, spec, plan, LinkMap(plan.links), dist)
    text = node.config.read_text()
    assert f'user_alice="{users["alice"]}"' in text and f'user_bob="{users["bob"]}"' in text
    assert stat.S_IMODE(node.config.stat().st_mode) == 0o600
    # written again (a node's upgrade): narrowed to 0600 whatever the file's mode was
    os.chmod(node.config, 0o644)
    local_files.write_node(1, home, spec, plan, LinkMap(plan.links), dist)
    assert stat.S_IMODE(node.config.stat().st_mode) == 0o600
    # never written through a symbolic link planted in its place
    elsewhere = tmp_path / "elsewhere.properties"
    node.config.unlink()
    node.config.symlink_to(elsewhere)
    with pytest.raises(OSError):
        local_files.write_node(1, home, spec, plan, LinkMap(plan.links), dist)
    assert not elsewhere.exists()


# -- the docker backend's layout check ------------------------------------------------------------

class _Containers:
    def __init__(self) -> None:
        self.runs: list[tuple[str, list[str], dict]] = []

    def run(self, image, command, **kwargs):
        self.runs.append((image, command, kwargs))
        return b""


def test_the_image_classpath_is_an_argument_of_the_layout_check_never_shell_text():
    pytest.importorskip("docker")
    from harness.cluster.docker.engine import check_layout
    hostile = '/x"; id; echo "'
    client = SimpleNamespace(containers=_Containers())
    check_layout(client, "some/image:1", hostile + "/*")
    (image, command, kwargs), = client.containers.runs
    assert image == "some/image:1" and isinstance(command, list)
    assert command[-1] == hostile  # the folder, whole, as one argument of its own
    assert not any(hostile in part or "id;" in part for part in command[:-1]), command
    assert kwargs["network_mode"] == "none" and kwargs["entrypoint"] == []


def test_the_layout_checks_script_finds_jars_in_the_folder_it_is_given_and_runs_nothing_else(tmp_path):
    import shutil
    import subprocess
    if not shutil.which("sh"):
        pytest.skip("no sh")
    from harness.cluster.docker.engine import layout_command

    def run(classpath: str) -> int:  # the check's command here, `sh` standing in for the image's `java`
        shell, flag, script, *args = layout_command(classpath)
        return subprocess.run([shell, flag, script.replace("command -v java", "command -v sh"), *args],
                              capture_output=True).returncode

    marker = tmp_path / "ran"
    assert run(f'{tmp_path}/x"; touch {marker}; echo "/*') == 4  # no jar in that (missing) folder
    assert not marker.exists()  # and nothing of the option ran
    (tmp_path / "libs").mkdir()
    assert run(f"{tmp_path}/libs/*") == 4
    (tmp_path / "libs" / "kafka_2.13-4.3.1.jar").write_bytes(b"")
    assert run(f"{tmp_path}/libs/*") == 0


# -- the port registry ----------------------------------------------------------------------------

@pytest.fixture
def own_tmp(tmp_path, monkeypatch):
    """The system temporary directory is `tmp_path`; no KSH_PORTS_DIR."""
    monkeypatch.delenv("KSH_PORTS_DIR", raising=False)
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    yield tmp_path
    ports.release(ports.held_ports())


def test_the_default_registry_is_the_users_own_directory_0700(own_tmp):
    path = ports.registry_dir()
    assert path == own_tmp / f"ksh-ports-{os.getuid()}"
    st = os.lstat(path)
    assert stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid()
    assert stat.S_IMODE(st.st_mode) == 0o700
    assert not (own_tmp / "ksh-ports").exists()  # no directory every user shares


@pytest.mark.parametrize("make, says", [
    (lambda p: (p.mkdir(), os.chmod(p, 0o777)), "writable by its group or others"),
    (lambda p: (p.mkdir(), os.chmod(p, 0o1777)), "writable by its group or others"),
    (lambda p: (p.parent.joinpath("theirs").mkdir(mode=0o700), p.symlink_to(p.parent / "theirs")), "not a directory"),
    (lambda p: p.write_text(""), "not a directory"),
])
def test_a_registry_another_user_could_write_to_is_refused_in_one_line_naming_ksh_ports_dir(own_tmp, make, says):
    make(own_tmp / f"ksh-ports-{os.getuid()}")
    with pytest.raises(HarnessError) as exc:
        ports.registry_dir()
    message = str(exc.value)
    assert says in message and "set KSH_PORTS_DIR" in message and "\n" not in message
    with pytest.raises(HarnessError):
        ports.allocate(1)


def test_a_registry_owned_by_another_user_is_refused(own_tmp, monkeypatch):
    real = os.getuid()
    monkeypatch.setattr(os, "getuid", lambda: real + 4242)  # the directory is the real user's: not "ours"
    (own_tmp / f"ksh-ports-{real + 4242}").mkdir(mode=0o700)
    with pytest.raises(HarnessError, match=rf"owned by uid {real}, not {real + 4242}.*set KSH_PORTS_DIR"):
        ports.registry_dir()


def test_ksh_ports_dir_still_chooses_the_registry(tmp_path, monkeypatch):
    monkeypatch.setenv("KSH_PORTS_DIR", str(tmp_path / "mine" / "registry"))
    try:
        got = ports.allocate(2)
        assert ports.registry_dir() == tmp_path / "mine" / "registry"
        assert (tmp_path / "mine" / "registry" / f"block-{ports._block_of(got[0])}.lock").exists()
    finally:
        ports.release(ports.held_ports())


def test_lock_files_are_0600(tmp_path, monkeypatch):
    registry = tmp_path / "registry"
    monkeypatch.setenv("KSH_PORTS_DIR", str(registry))
    try:
        got = ports.allocate(1)
        lock = registry / f"block-{ports._block_of(got[0])}.lock"
        assert stat.S_IMODE(lock.stat().st_mode) == 0o600
    finally:
        ports.release(ports.held_ports())


def test_lock_files_are_never_opened_through_a_symbolic_link(tmp_path, monkeypatch):
    registry = tmp_path / "registry"
    registry.mkdir()
    monkeypatch.setenv("KSH_PORTS_DIR", str(registry))
    try:
        block = ports.candidate_blocks()[0]
        target = tmp_path / "planted"
        (registry / f"block-{block}.lock").symlink_to(target)
        with ports._lock:
            assert ports._try_lock_block(block) is False
        assert not target.exists()  # not created through the link
        assert block not in ports._blocks
    finally:
        ports.release(ports.held_ports())


# -- the trust model ------------------------------------------------------------------------------

def test_the_readme_states_the_trust_model():
    text = (ROOT / "README.md").read_text()
    match = re.search(r"^## Trust model\n(.*?)(?=^## )", text, re.S | re.M)
    assert match, "README.md has no '## Trust model' section"
    section = " ".join(match.group(1).split())
    for sentence in ("Every listener it starts is on loopback (127.0.0.1) only",
                     "Its PLAINTEXT listeners are anonymous",
                     "their principal `ANONYMOUS` is the super user",
                     "Toxiproxy's API has no authentication",
                     "A Spark master (`--spark-master`, `harness.spark.standalone`) has no authentication",
                     "`--pid host --network host`: that is root on the host"):
        assert sentence in section, sentence


def test_docker_run_says_it_is_root_on_the_host(capsys):
    spec = importlib.util.spec_from_file_location("docker_run_under_test", ROOT / "scripts" / "docker_run.py")
    docker_run = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(docker_run)
    with pytest.raises(SystemExit):
        docker_run.main(["--help"])
    assert "root on the host" in " ".join(capsys.readouterr().out.split())


def test_the_admin_clients_sasl_properties_are_private(tmp_path, monkeypatch):
    """The ShareAdmin run as a SASL user reads its password from a properties file: 0600, like
    server.properties (it was 0644)."""
    import stat as stat_module

    import harness.cluster.java_admin as java_admin
    from harness.conformance.admin_ops import AdminOperations

    seen = {}

    def run_java(dist, cache, program, bootstrap, command, *args, env=None):
        props = env["KSH_CLIENT_PROPERTIES"]
        seen["mode"] = stat_module.S_IMODE(os.stat(props).st_mode)
        seen["text"] = open(props).read()
        return {}

    monkeypatch.setattr(java_admin, "run_java", run_java)
    ops = AdminOperations.__new__(AdminOperations)
    ops.run_dir = tmp_path
    ops.cluster = type("C", (), {"bootstrap_servers": "127.0.0.1:1"})()
    monkeypatch.setattr(AdminOperations, "sasl_bootstrap", lambda self: "127.0.0.1:2", raising=False)
    monkeypatch.setattr(AdminOperations, "dist", lambda self: None, raising=False)
    ops.admin("list", user=("alice", "s3cret-random"))
    assert seen["mode"] == 0o600
    assert "s3cret-random" in seen["text"]
