"""`scripts/install.sh` fails as a new user needs it to (issue 73): a lock that cannot be satisfied, a package
index that cannot be reached and a download whose hash is not the lock's each end in one line naming the fix,
exit 2, and leave an environment that `python3 -m harness.tested_set --check` (the end of every install, and the
plugin's header) does not take for the tested set.

Real pip, in a fresh virtual environment of its own, against indexes made here on loopback or on disk: no
registry is reached, and the machine's own packages are never touched."""

from __future__ import annotations

import hashlib
import os
import shutil
import socket
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> Path:
    where = tmp_path_factory.mktemp("venv") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True, timeout=120)
    return where


def _tiny_wheel(folder: Path) -> Path:
    """A real wheel of a one-module project, ksh-tiny 1.0."""
    wheel = folder / "ksh_tiny-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("ksh_tiny/__init__.py", "")
        archive.writestr("ksh_tiny-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: ksh-tiny\nVersion: 1.0\n")
        archive.writestr("ksh_tiny-1.0.dist-info/WHEEL",
                         "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        archive.writestr("ksh_tiny-1.0.dist-info/RECORD", "")
    return wheel


def _install(tmp_path: Path, venv: Path, lock: str, **env: str) -> subprocess.CompletedProcess[str]:
    """install.sh from a copy of the harness whose lock is `lock`, run with the venv's python3 first on PATH."""
    copy = tmp_path / "clone"
    (copy / "scripts").mkdir(parents=True)
    shutil.copy(ROOT / "scripts" / "install.sh", copy / "scripts" / "install.sh")
    shutil.copytree(ROOT / "harness", copy / "harness", ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "harness" / "lock" / "requirements.txt").write_text(lock)
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "VIRTUAL_ENV", "PYTHON"))}
    environ.update(PATH=f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}", PIP_NO_CACHE_DIR="1",
                   PIP_CONFIG_FILE=os.devnull, **env)
    return subprocess.run(["bash", str(copy / "scripts" / "install.sh")], cwd=tmp_path, env=environ,
                          capture_output=True, text=True, timeout=300)


def _one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("install.sh: error: ")
    return lines[0]


def _not_the_lock(venv: Path, lock_text: str, tmp_path: Path) -> None:
    lock = tmp_path / "the-lock.txt"
    lock.write_text(lock_text)
    code = (f"import sys; from pathlib import Path; from harness import tested_set; "
            f"sys.exit(0 if tested_set.python_drift(Path({str(lock)!r})) else 1)")
    proc = subprocess.run([venv / "bin" / "python", "-c", code], cwd=ROOT, capture_output=True, text=True)
    # (packaging, which the check reads markers with, is not installed in this venv: the check runs on this
    # interpreter's instead, with the venv's site-packages read through importlib.metadata's path)
    if "No module named 'packaging'" in proc.stderr:
        proc = subprocess.run([sys.executable, "-c", code.replace(
            "from harness import tested_set;", "import importlib.metadata as md, harness.tested_set as tested_set; "
            f"tested_set.installed_version = lambda n: md.version(n) if False else "
            f"next(iter(md.distributions(name=n, path=[{str(next((venv / 'lib').glob('python*/site-packages')))!r}]))"
            ").version;")], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, f"the failed install reads as the tested set: {proc.stdout} {proc.stderr}"


def test_an_unreachable_index_is_one_line_naming_the_fix(tmp_path, venv):
    with socket.socket() as closed:  # a loopback port nothing listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    lock = "ksh-tiny==1.0 \\\n    --hash=sha256:" + "0" * 64 + "\n"
    line = _one_error_line(_install(tmp_path, venv, lock, PIP_INDEX_URL=f"http://127.0.0.1:{port}/simple"))
    assert "the package index cannot be reached" in line and "PIP_INDEX_URL" in line


def test_a_lock_that_cannot_be_satisfied_is_one_line_naming_the_fix(tmp_path, venv):
    index = tmp_path / "index"
    index.mkdir()
    lock = "no-such-package-of-ksh==1.0 \\\n    --hash=sha256:" + "0" * 64 + "\n"
    line = _one_error_line(_install(tmp_path, venv, lock, PIP_NO_INDEX="1", PIP_FIND_LINKS=str(index)))
    assert "the lock cannot be satisfied here" in line and "regenerate" in line


def test_a_download_that_is_not_the_locks_is_one_line_and_nothing_is_installed(tmp_path, venv):
    index = tmp_path / "index"
    index.mkdir()
    wheel = _tiny_wheel(index)
    real = hashlib.sha256(wheel.read_bytes()).hexdigest()
    wrong = ("f" if real[0] != "f" else "e") + real[1:]
    lock = f"ksh-tiny==1.0 \\\n    --hash=sha256:{wrong}\n"
    line = _one_error_line(_install(tmp_path, venv, lock, PIP_NO_INDEX="1", PIP_FIND_LINKS=str(index)))
    assert "does not match the lock's hash" in line
    assert not list(venv.glob("lib/python*/site-packages/ksh_tiny*")), "a package whose hash failed was installed"
    _not_the_lock(venv, lock.replace(wrong, real), tmp_path)
