"""The drift job's runs: a throw-away virtual environment holding the newest Python set and the harness (installed
without its dependencies, editable: the suites and drivers are the checkout's), and in it the pytest and certify
children on the newest Kafka release and client versions.

Every child is a `harness.sys.pytest_child` child: Ctrl-C or SIGTERM reaches it once and it tears its clusters
down before the job goes on to stop; the virtual environment lives in the job's temp directory, which the caller
removes on success, failure and interrupt (`Workspace`), and the reaper removes if the job is killed.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from harness.drift.outcomes import Run, parse_junit
from harness.errors import HarnessError
from harness.kafka import jars
from harness.kafka.versions import KNOWN_VERSIONS
from harness.sys import procs
from harness.sys.pytest_child import run_pytest

#: seconds the virtual environment's installs may take (pyspark alone is 400 MB when the uv cache is cold)
INSTALL_TIMEOUT_S = 1800
#: what pytest's exit statuses other than 0 and 1 mean (none is a verdict on every test selected)
_PYTEST_WORDS = {2: ": interrupted", 3: ": internal error", 4: ": usage error", 5: ": no test passed"}
#: what tells the drivers to run another release than the pinned one (harness.clients.franz, .driver)
FRANZ_ENV, SPRING_ENV = "KSH_FRANZ_GO_VERSION", "KSH_SPRING_KAFKA_VERSION"


class Workspace:
    """The job's temp directory (the newest lock, the virtual environment), removed however the job ends."""

    def __init__(self) -> None:
        self.path = Path(tempfile.mkdtemp(prefix="ksh-drift-"))
        procs.REAPER.register_dir(self.path)  # removed even if the job is killed

    def __enter__(self) -> "Workspace":
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        shutil.rmtree(self.path, ignore_errors=True)
        procs.REAPER.forget_dir(self.path)


def build_venv(where: Path, lock: Path, repo: Path) -> Path:
    """A virtual environment at `where` with exactly `lock`'s packages (hashes required) and the harness from
    `repo` without its dependencies; its python. A failed install is one line naming the step."""
    uv = shutil.which("uv")
    if uv is None:
        raise HarnessError("`uv` not found on PATH: pip install uv (tox -e latest installs it)")
    python = where / "bin" / "python"
    steps = (("create the virtual environment", [uv, "venv", "--quiet", "--python", sys.executable, str(where)]),
             ("install the newest Python set", [uv, "pip", "install", "--quiet", "--python", str(python),
                                                "--require-hashes", "-r", str(lock)]),
             ("install the harness into it", [uv, "pip", "install", "--quiet", "--python", str(python), "--no-deps",
                                              "--no-build-isolation", "-e", str(repo)]))
    for what, cmd in steps:
        procs.run_checked("uv", cmd, INSTALL_TIMEOUT_S, f"uv could not {what}", cwd=repo, last_line=True)
    return python


@dataclass(frozen=True)
class Target:
    """What one run is made on: the Kafka release (`kafka_args` picks it: a release the harness knows, or the jars
    of a newer one), the client and its version, and the environment that makes the drivers run those versions."""

    client: str
    client_version: str
    kafka_version: str
    kafka_args: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()
    #: what the run uses that moved from the tested set (() nothing)
    moved: tuple[str, ...] = ()


def kafka_args(version: str, cache: Path) -> tuple[str, ...]:
    """The pytest/certify options that run Kafka `version`: --kafka-version for a release the harness knows, else
    its jars resolved from Maven Central into the cache and --kafka-home (the harness refuses an unknown release
    by name: `harness.kafka.versions.check_released`)."""
    if version in KNOWN_VERSIONS:
        return ("--kafka-version", version)
    return ("--kafka-home", str(jars.resolve(version, cache).libs.parent))


def child_env(target: Target, reports: Path) -> dict[str, str]:
    """The environment of a child: ours, the drivers' versions, and its run directories under `reports`."""
    return {**os.environ, **dict(target.env), "KSH_REPORTS_DIR": str(reports)}


def run_name(client: str, kafka_version: str, suffix: str = "") -> str:
    """The stem of a run's files in the job's directory: <client>-kafka-<version>[-suffix].{junit.xml,log,rc}."""
    return f"{client}-kafka-{kafka_version}{suffix}"


def conformance(python: Path, target: Target, tests: tuple[str, ...], workers: int, out: Path, repo: Path,
                suffix: str = "") -> Run:
    """The pytest selection `tests` (the conformance suite) on `target`, with `python` (the virtual environment's);
    its Run (with `why` set if pytest did not finish with a verdict, or its JUnit XML could not be read)."""
    name = run_name(target.client, target.kafka_version, suffix)
    junit, log = out / f"{name}.junit.xml", out / f"{name}.log"
    cmd = [str(python), "-m", "pytest", *tests, "-q", "-rfEsx", "--ksh-client", target.client, *target.kafka_args,
           "--junitxml", str(junit)]
    if workers > 0:
        cmd += ["-n", str(workers), "--dist", "loadfile"]
    with open(log, "w") as stream:
        stream.write(f"$ {shlex.join(cmd)}\n")
        stream.flush()
        rc = run_pytest(cmd, cwd=repo, env=child_env(target, out / "reports"), stdout=stream)
    (out / f"{name}.rc").write_text(f"{rc}\n")
    return stored_run(target, out, name)


def stored_run(target: Target, out: Path, name: str) -> Run:
    """The Run whose files `name`.{junit.xml,log,rc} are in `out` (just made, or made by an earlier invocation:
    `--from`); a run whose exit status or JUnit XML is missing or unreadable has `why` set."""
    junit, log = out / f"{name}.junit.xml", out / f"{name}.log"
    text = log.read_text(errors="replace") if log.is_file() else ""
    try:
        rc: int | None = int((out / f"{name}.rc").read_text())
    except (OSError, ValueError):
        rc = _rc_from_summary(text)
    why = "" if rc in (0, 1) else f"pytest exit {rc}{_PYTEST_WORDS.get(rc, '')} (see {log})" if rc is not None \
        else f"pytest's exit status was not recorded and its log ends without a summary (see {log})"
    try:
        outcomes = tuple(parse_junit(junit.read_text(errors="replace")))
    except (OSError, ValueError) as exc:
        outcomes, why = (), f"its JUnit XML {junit} could not be read ({exc}); pytest exit {rc}"
    return Run(target.client, target.client_version, target.kafka_version, outcomes, text, why=why,
               moved=target.moved)


def _rc_from_summary(log: str) -> int | None:
    """pytest's exit status from the last line of its -q output ("1 failed, 99 passed in 582.00s (0:09:41)"), for a
    run stored before the status was: 1 with a failure or error, 0 with only passes, skips and xfails (pytest's
    own exit 5, no test passed, is told apart by the plugin's line "share-harness: no test passed"); None without a
    summary line (cut off, interrupted)."""
    lines = [line.strip() for line in log.splitlines() if line.strip()]
    if not lines or not re.fullmatch(r"(\d+ \w+(, )?)+ in [0-9.]+s( \([0-9:]+\))?", lines[-1]) or \
            "Interrupted" in log:
        return None
    if re.search(r"\d+ (failed|errors?)\b", lines[-1]):
        return 1
    return 5 if "share-harness: no test passed" in log else 0


def stored_runs(out: Path) -> list[tuple[str, str]]:
    """(client, Kafka release) of every run whose JUnit XML is in `out`, baselines (`-tested`) apart."""
    found = [re.fullmatch(r"(\w+)-kafka-([0-9.]+)\.junit\.xml", p.name) for p in sorted(out.glob("*.junit.xml"))]
    return [(m.group(1), m.group(2)) for m in found if m]


def stored_selection(out: Path) -> tuple[str, ...] | None:
    """The pytest selection the runs stored in `out` were made with (read back from a log's command line), or None."""
    for client, version in stored_runs(out):
        first = (out / f"{run_name(client, version)}.log").read_text(errors="replace").partition("\n")[0]
        words = shlex.split(first[2:]) if first.startswith("$ ") else []
        if "pytest" in words and "-q" in words[words.index("pytest"):]:
            return tuple(words[words.index("pytest") + 1:words.index("-q", words.index("pytest"))])
    return None


def stored_certificate(out: Path, client: str) -> tuple[dict[str, Any] | None, str]:
    """The newest certificate of `client` under `out`/certificates (an earlier invocation's: `--from`), or why none."""
    made = sorted(p for p in (out / "certificates").glob("*/certificate.json") if p.parent.name.endswith("-" + client))
    if not made:
        return None, f"no certificate of {client} in {out / 'certificates'}"
    try:
        return json.loads(made[-1].read_text()), ""
    except (OSError, ValueError) as exc:
        return None, f"certificate {made[-1]} cannot be read ({exc})"


def certify(python: Path, target: Target, out: Path, repo: Path) -> tuple[dict[str, Any] | None, str]:
    """`share-harness certify --client` on `target`, in the virtual environment: (its certificate, "") or (None,
    why there is none)."""
    root = out / "certificates"
    before = set(root.glob("*/certificate.json"))
    log = out / f"certify-{target.client}-kafka-{target.kafka_version}.log"
    cmd = [str(python), "-m", "harness.cli", "certify", "--client", target.client, *target.kafka_args,
           "--out", str(root)]
    with open(log, "w") as stream:
        stream.write(f"$ {shlex.join(cmd)}\n")
        stream.flush()
        rc = run_pytest(cmd, cwd=repo, env=child_env(target, out / "reports"), stdout=stream)
    made = sorted(set(root.glob("*/certificate.json")) - before)
    if not made:
        said = [line for line in log.read_text(errors="replace").splitlines() if line.strip()]
        return None, f"certify exit {rc}, no certificate ({said[-1][:200] if said else 'no output'}; see {log})"
    try:
        return json.loads(made[-1].read_text()), ""
    except (OSError, ValueError) as exc:
        return None, f"certificate {made[-1]} cannot be read ({exc})"
