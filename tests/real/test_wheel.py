"""`pip install kafka-share-harness` gates an implementation (issue 51): the sdist and the wheel are built, the
wheel installed in a fresh virtual environment outside the repository, and from there, in a directory that is
not the repository, the basic suite runs against a real cluster it starts and `certify --rules ack-accept` certifies a
client on the session's cluster (given as an external one: a second cluster start would prove nothing the first
did not, issue 53). A file missing from the package (a suite's conftest, a driver's source) fails here, not on a user's
machine."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

from harness.version import VERSION

ROOT = Path(__file__).resolve().parents[2]


def _run(cmd: list, *, cwd: Path, env: dict | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    done = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{' '.join(map(str, cmd))} exited {done.returncode}:\n{done.stdout[-3000:]}\n" \
                                 f"{done.stderr[-3000:]}"
    return done


def _build(dist: Path) -> tuple[Path, Path]:
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--disable-pip-version-check", "-q", "-w", dist, ROOT],
         cwd=ROOT)
    _run([sys.executable, "-c", "import sys, setuptools.build_meta as m; m.build_sdist(sys.argv[1])", dist], cwd=ROOT)
    (wheel,), (sdist,) = dist.glob("*.whl"), dist.glob("*.tar.gz")
    return wheel, sdist


def _repo_files(folder: str, *patterns: str) -> set[str]:
    return {str(p.relative_to(ROOT)) for pattern in patterns for p in (ROOT / folder).rglob(pattern)
            if "__pycache__" not in p.parts}


def _check_contents(wheel: Path, sdist: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    suites = {"ksh_suites/" + name.removeprefix("suites/") for name in _repo_files("suites", "*.py")}
    drivers = _repo_files("harness/java", "*.java", "*.properties") | _repo_files("harness/go", "*.go", "go.mod",
                                                                                  "go.sum")
    missing = sorted((suites | drivers | {"ksh_fixtures/plugin.py", "harness/sys/suites.py",
                                          "harness/lock/requirements.txt"}) - names)
    assert missing == [], f"the wheel lacks {missing}"
    meta = zipfile.ZipFile(wheel).read(f"kafka_share_harness-{VERSION}.dist-info/METADATA").decode()
    for field in ("License-Expression: Apache-2.0", "Requires-Python: >=3.10", "Classifier: Framework :: Pytest",
                  "Project-URL: ", "Requires-Dist: confluent-kafka"):
        assert field in meta, f"the wheel's metadata lacks {field!r}"
    held = set(tarfile.open(sdist).getnames())
    top = min(held).split("/")[0] + "/"  # (kafka-share-harness-V or kafka_share_harness-V, by setuptools' age)
    wanted = {"compose/harness.Dockerfile", "LICENSE", "docs/gate-your-implementation.md",
              "docs/ci-examples/github-actions.yml", "docs/ci-examples/gitlab-ci.yml", "scripts/install.sh",
              "suites/conformance/conftest.py", "harness/java/ShareDriver.java", "harness/go/franzdriver/go.mod",
              "harness/lock/requirements.txt"}
    assert sorted(top + name for name in wanted if top + name not in held) == []


def test_the_wheel_gates_a_real_cluster_from_a_fresh_venv_outside_the_repository(tmp_path, kafka_cluster):
    wheel, sdist = _build(tmp_path / "dist")
    _check_contents(wheel, sdist)
    # the venv inside a project of the caller's whose pytest settings and conftest must not reach the suites
    project, work = tmp_path / "project", tmp_path / "work"
    venv = project / ".venv"
    project.mkdir()
    work.mkdir()
    (project / "pytest.ini").write_text("[pytest]\naddopts = --an-option-of-the-callers-project\n")
    (project / "conftest.py").write_text("raise SystemExit('the caller project\\'s conftest reached the suites')\n")
    try:
        _run([sys.executable, "-m", "venv", venv], cwd=tmp_path)
        # the documented recipe (docs/gate-your-implementation.md): the harness alone, then the lock it ships
        _run([venv / "bin" / "python", "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps",
              wheel], cwd=tmp_path, timeout=900)
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "KSH_REPORTS_DIR", "VIRTUAL_ENV")}
        env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
        lock = _run([venv / "bin" / "share-harness", "setup", "--print-constraints"], cwd=work, env=env).stdout
        assert lock == (ROOT / "harness" / "lock" / "requirements.txt").read_text()
        (tmp_path / "ksh-lock.txt").write_text(lock)
        _run([venv / "bin" / "python", "-m", "pip", "install", "-q", "--disable-pip-version-check", "--require-hashes",
              "--no-deps", "-r", tmp_path / "ksh-lock.txt"], cwd=tmp_path, timeout=900)
        where = _run([venv / "bin" / "python", "-c", "import json, sys, harness, ksh_suites, ksh_fixtures; "
                      "print(json.dumps([m.__file__ for m in (harness, ksh_suites, ksh_fixtures)] + sys.path))"],
                     cwd=work, env=env)
        paths = json.loads(where.stdout)
        assert all(p.startswith(str(venv)) for p in paths[:3]), paths[:3]
        assert not any(p.startswith(str(ROOT)) for p in paths if p), "the repository is on the venv's path"
        said = _run([venv / "bin" / "share-harness", "--version"], cwd=work, env=env).stdout.splitlines()
        assert said[0] == f"share-harness {VERSION}" and "python packages: exactly the lock" in said, said

        _run([venv / "bin" / "share-harness", "run", "--suite", "basic"], cwd=work, env=env, timeout=900)
        (junit,) = (work / "reports" / "suites").glob("*-basic/junit.xml")
        text = junit.read_text()
        assert 'tests="3"' in text and 'failures="0"' in text and 'skipped="0"' in text, text[:500]
        assert str(ROOT) not in text, "the suite ran from the repository"
        assert 'classname="ksh_suites.test_share_basic"' in text, "the suite did not run from the package"
        verdicts = list((work / "reports" / "runs").glob("*/verdict.json"))
        assert verdicts and all(json.loads(v.read_text())["harness_version"] == VERSION for v in verdicts)
        assert all(json.loads(v.read_text())["tested_set"]["python_drift"] == [] for v in verdicts)

        _run([venv / "bin" / "share-harness", "certify", "--client", "confluent", "--rules", "ack-accept",
              "--kafka-version", kafka_cluster.version, "--bootstrap-servers", kafka_cluster.bootstrap_servers],
             cwd=work, env=env, timeout=900)
        (certificate,) = (work / "reports" / "certificates").glob("*/certificate.json")
        cert = json.loads(certificate.read_text())
        assert cert["harness_version"] == VERSION
        assert [(r["rule"], r["result"]) for r in cert["rules"]] == [("ack-accept", "pass")], cert["rules"]
    finally:
        shutil.rmtree(venv, ignore_errors=True)  # (a venv with PySpark is about 1 GB)
