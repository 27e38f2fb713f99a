"""The tested set (issue 73): one lock of every Python dependency, and every install path uses it.

Each install path is read as the text a user or CI runs, so a path that stops installing from the lock (a
`pip install .` that resolves again, a Dockerfile that reads pyproject.toml) fails here, not on a fresh machine
on the day a dependency moves."""

from __future__ import annotations

import configparser
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from harness import tested_set
from harness.cli import main as cli_main
from harness.errors import HarnessError

ROOT = Path(__file__).resolve().parents[3]
LOCK_REL = "harness/lock/requirements.txt"


def _pyproject() -> dict:
    with open(ROOT / "pyproject.toml", "rb") as handle:
        return tomllib.load(handle)


def _lock_entries() -> list[tuple[str, str, str | None, list[str]]]:
    """(name, version, marker, hashes) of every pin of the lock, read line by line as pip reads it."""
    entries, current = [], None
    for line in tested_set.LOCK.read_text().splitlines():
        pin = re.match(r"^([A-Za-z0-9][A-Za-z0-9._\-]*)==(\S+?)(?:\s*;\s*([^\\]+?))?\s*\\?$", line)
        if pin:
            current = (pin[1], pin[2], pin[3], [])
            entries.append(current)
        elif line.strip().startswith("--hash=sha256:") and current is not None:
            current[3].append(line.strip())
        elif line.strip() and not line.lstrip().startswith("#"):
            pytest.fail(f"a line of the lock pip would read as something else than a pin or its hash: {line!r}")
    return entries


def test_every_pin_of_the_lock_is_exact_and_hashed():
    entries = _lock_entries()
    assert len(entries) > 40
    assert [e[0] for e in entries if not e[3]] == [], "pins without a hash: pip --require-hashes refuses them"


def test_the_lock_pins_every_dependency_and_extra_of_pyproject_within_its_range():
    project = _pyproject()["project"]
    wanted = [Requirement(r) for r in project["dependencies"]]
    wanted += [Requirement(r) for extra in project["optional-dependencies"].values() for r in extra]
    wanted += [Requirement(r) for r in _pyproject()["build-system"]["requires"]]
    pins = tested_set.locked_python()
    for req in wanted:
        name = tested_set.canonical(req.name)
        assert name in pins, f"{req} is not in {LOCK_REL}: regenerate the lock (harness/tested_set.py says how)"
        assert req.specifier.contains(pins[name], prereleases=True), f"the lock's {name} {pins[name]} is outside {req}"


def test_the_build_requirements_file_holds_pyprojects_build_system():
    build = (ROOT / "harness/lock/build.in").read_text()
    for requirement in _pyproject()["build-system"]["requires"]:
        assert Requirement(requirement).name in build


def test_install_sh_installs_the_lock_with_hashes_and_then_only_the_harness():
    text = (ROOT / "scripts/install.sh").read_text()
    joined = text.replace("\\\n", " ")  # (continuation lines joined, as the shell reads them)
    commands = [" ".join(c.split()) for c in re.findall(r"python3 -m pip install[^\n]*", joined)]
    assert len(commands) == 2, commands
    lock, harness = commands
    assert "--require-hashes" in lock and "--no-deps" in lock and '-r "$lock"' in lock
    assert f"lock={LOCK_REL}" in text
    assert "--no-deps" in harness and "--no-build-isolation" in harness and "-e ." in harness
    assert "python3 -m harness.tested_set --check" in text  # an install that left another set fails


def test_ci_and_the_readme_install_through_install_sh():
    assert "scripts/test.sh" in (ROOT / ".ci/run").read_text()
    test_sh = (ROOT / "scripts/test.sh").read_text()
    assert "bash scripts/install.sh --all" in test_sh
    assert "pip install" not in test_sh
    readme = (ROOT / "README.md").read_text()
    assert "bash scripts/install.sh && python3 -m pytest suites" in readme


def test_the_docker_image_installs_the_lock():
    text = (ROOT / "compose/harness.Dockerfile").read_text()
    assert f"COPY compose/harness_image.py {LOCK_REL}" in text
    assert re.search(r"pip install [^\n]*--require-hashes --no-deps -r /opt/build/requirements\.txt", text)
    assert "bash scripts/install.sh --all" in text
    assert "pyproject.toml" not in re.sub(r"(?m)^#.*$", "", text), "the image resolves pyproject.toml again"


def test_every_tox_environment_but_latest_installs_the_lock():
    config = configparser.ConfigParser(interpolation=None)
    config.read(ROOT / "tox.ini")
    base = config["testenv"]
    assert base["deps"].strip() == "-r{toxinidir}/" + LOCK_REL
    assert base["skip_install"].strip() == "true"
    install = config["base"]["install"]
    assert "--no-deps" in install and "--no-build-isolation" in install
    for name in config.sections():
        if not name.startswith("testenv:") or name == "testenv:latest":
            continue
        env = config[name]
        deps = env.get("deps", base["deps"]).strip()
        pre = env.get("commands_pre", base["commands_pre"])
        if env.get("skip_install", "").strip() == "true" and deps == "" and "share-harness" not in env.get("commands",
                                                                                                            ""):
            continue  # installs nothing of Python's (docker-only: everything happens in the image)
        assert deps == "-r{toxinidir}/" + LOCK_REL, f"[{name}] installs other deps: {deps!r}"
        assert "{[base]install}" in pre, f"[{name}] does not install the harness without resolving again"


def test_the_gate_recipe_and_ci_examples_install_the_shipped_lock():
    for path in ("docs/gate-your-implementation.md", "docs/ci-examples/github-actions.yml",
                 "docs/ci-examples/gitlab-ci.yml"):
        text = (ROOT / path).read_text()
        installs = re.findall(r"pip install[^\n`]*kafka-share-harness[^\n`]*", text)
        assert installs, f"{path} shows no install of the harness"
        assert all("--no-deps" in line for line in installs), f"{path} resolves the harness's dependencies: {installs}"
        assert "share-harness setup --print-constraints" in text and "--require-hashes" in text, path


def test_the_lock_ships_in_the_package():
    data = _pyproject()["tool"]["setuptools"]["package-data"]["harness"]
    assert "lock/requirements.txt" in data
    assert "harness/lock/requirements.txt" in (ROOT / "MANIFEST.in").read_text()


def test_print_constraints_prints_the_lock(capsys):
    assert cli_main(["setup", "--print-constraints"]) == 0
    assert capsys.readouterr().out == tested_set.LOCK.read_text()


def test_version_prints_the_harness_then_the_tested_set(capsys):
    with pytest.raises(SystemExit) as exited:
        cli_main(["--version"])
    assert exited.value.code == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("share-harness ")
    assert any(line.startswith("kafka releases: default ") for line in out)
    assert any(line.startswith("go github.com/twmb/franz-go: v") for line in out)
    assert any(line.startswith("python confluent-kafka: ") for line in out)


def test_record_names_what_differs_from_the_lock(tmp_path, monkeypatch):
    lock = tmp_path / "requirements.txt"
    lock.write_text("pytest==0.0.1 \\\n    --hash=sha256:00\nnot-installed-anywhere==1.0 \\\n    --hash=sha256:00\n"
                    "only-on-windows==1.0 ; sys_platform == 'win32' \\\n    --hash=sha256:00\n")
    drift = tested_set.python_drift(lock)
    assert [(n, p) for n, p, _ in drift] == [("not-installed-anywhere", "1.0"), ("pytest", "0.0.1")]
    assert [h for n, _, h in drift if n == "not-installed-anywhere"] == [None]


def test_a_missing_or_empty_lock_is_one_line_naming_the_fix(tmp_path):
    with pytest.raises(HarnessError, match="cannot be read.*restore the file"):
        tested_set.locked_python(tmp_path / "nope.txt")
    empty = tmp_path / "empty.txt"
    empty.write_text("# nothing\n")
    with pytest.raises(HarnessError, match="pins no package"):
        tested_set.locked_python(empty)


def test_check_exits_2_with_one_line_when_the_environment_is_not_the_lock(monkeypatch, capsys):
    monkeypatch.setattr(tested_set, "python_drift", lambda lock=None: [("pytest", "0.0.1", "9.0")])
    assert tested_set.main(["--check"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "pytest 9.0 (locked 0.0.1)" in err[0] and "bash scripts/install.sh" in err[0]
    monkeypatch.setattr(tested_set, "python_drift", lambda lock=None: [])
    assert tested_set.main(["--check"]) == 0


def test_the_librdkafka_of_the_lock_is_what_the_locked_confluent_kafka_bundles():
    confluent_kafka = pytest.importorskip("confluent_kafka")
    from importlib.metadata import version
    if version("confluent-kafka") != tested_set.locked_python()["confluent-kafka"]:
        pytest.skip(f"confluent-kafka {version('confluent-kafka')} installed, not the locked one")
    assert confluent_kafka.libversion()[0] == tested_set.LIBRDKAFKA_OF_LOCK


def test_the_tested_versions_name_every_table():
    versions = tested_set.tested_versions()
    assert set(versions) == {"confluent", "java", "apache", "franz", "kfake", "librdkafka-mock"}
    assert all(versions.values())


def test_the_module_runs_as_a_script():
    proc = subprocess.run([sys.executable, "-m", "harness.tested_set", "--bogus"], capture_output=True, text=True,
                          cwd=ROOT)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1


def test_the_pages_say_in_one_sentence_whether_the_set_was_the_locks():
    assert tested_set.summary({}) == "The tested set was not recorded."
    assert "exactly the lock's" in tested_set.summary({"python_drift": []})
    said = tested_set.summary({"python_drift": [{"package": "confluent-kafka", "locked": "2.16.2", "installed": "2.17.0"},
                                                {"package": "rich", "locked": "15.0.0", "installed": None}]})
    assert said == "Python packages NOT the lock's: confluent-kafka 2.17.0 (locked 2.16.2), rich missing (locked 15.0.0)."


def test_every_verdict_writer_records_the_tested_set():
    """The JSON every verdict, certificate, conformance report and matrix page is written from carries it."""
    for path in ("harness/run/context.py", "harness/certify/certificate.py", "harness/conformance/report.py",
                 "harness/certify/matrix.py"):
        text = (ROOT / path).read_text()
        assert '"tested_set": tested_set_record()' in text, path


def test_the_fresh_install_benchmark_times_readme_command_1_as_written():
    import importlib.util
    spec = importlib.util.spec_from_file_location("fresh_install", ROOT / "benchmarks" / "fresh_install.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    command = " ".join(bench.INSTALL) + " && " + " ".join(bench.TEST)
    assert f"    {command}\n" in (ROOT / "README.md").read_text(), command
