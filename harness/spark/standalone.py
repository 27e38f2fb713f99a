"""A Spark standalone cluster on loopback, started from the pyspark package's own launcher.

`standalone_cluster` starts one master and N workers with `bin/spark-class` from the installed
pyspark package (no Spark download), everything bound to 127.0.0.1 on ports from the harness's port
registry (`harness.sys.ports`), daemon heaps bounded (`DAEMON_MEMORY`), logs and work directories in
the caller's directory (or a temporary one, removed). The daemons are managed processes
(`harness.sys.procs`): stopped on exit and Ctrl-C, killed with their executors if this process dies.
Readiness is awaited on the master's own status (its web UI's `/json/`: ALIVE, with N ALIVE workers).

A driver in this process stays on loopback only if its JVM starts with `DRIVER_ENV` in the
environment. The executors run the harness's Python functions, so each worker host needs the
harness installed as the README says (`pip install -e .` in a checkout, with the same Python):
here every worker is on this host and runs this interpreter (`PYSPARK_PYTHON`), which imports it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import sys
import tempfile
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from harness.errors import HarnessError
from harness.spark.session import stop
from harness.sys import ports as port_registry
from harness.sys.procs import REAPER, ManagedProcess, spawn
from harness.sys.wait import wait_until

HOST = "127.0.0.1"
#: Heap of the master and of each worker daemon (not of the executors, which the application sizes).
DAEMON_MEMORY = "256m"
#: What a driver's JVM needs in its environment to bind and advertise loopback only.
DRIVER_ENV = {"SPARK_LOCAL_IP": HOST}
_MEMORY = re.compile(r"^[1-9][0-9]*[mMgG]$")
#: The caller's variables a daemon must not inherit: they would point it at another Spark or host.
_INHERITED_NOT = ("PYTHONPATH", "SPARK_HOME", "SPARK_CONF_DIR", "SPARK_MASTER", "SPARK_MASTER_HOST",
                  "SPARK_MASTER_PORT", "SPARK_LOCAL_IP", "SPARK_LOCAL_DIRS", "SPARK_PUBLIC_DNS", "SPARK_WORKER_DIR",
                  "SPARK_DAEMON_MEMORY", "SPARK_DAEMON_JAVA_OPTS", "SPARK_MASTER_OPTS", "SPARK_WORKER_OPTS",
                  "SPARK_WORKER_CORES", "SPARK_WORKER_MEMORY", "PYSPARK_SUBMIT_ARGS")


@dataclass(frozen=True)
class StandaloneCluster:
    """A running cluster: its master URL (`spark://127.0.0.1:<port>`), status page and directory."""

    url: str
    ui_port: int
    work_dir: Path

    def status(self, timeout: float = 5.0) -> dict:
        """The master's status (its web UI's `/json/`): workers, active and completed applications."""
        return master_status(self.ui_port, timeout)


def spark_home() -> Path:
    """The installed pyspark package, which holds Spark's jars and `bin/spark-class`."""
    try:
        import pyspark
    except ImportError:
        raise HarnessError("pyspark is not installed: pip install 'pyspark>=4.0'") from None
    home = Path(pyspark.__file__).resolve().parent
    if not (home / "bin" / "spark-class").is_file() or not (home / "jars").is_dir():
        raise HarnessError(f"the pyspark package at {home} has no bin/spark-class or jars/: reinstall it "
                           "(pip install --force-reinstall 'pyspark>=4.0')")
    return home


def validate(workers: int, cores_per_worker: int, memory: str) -> None:
    """A one-line error for a cluster that cannot be asked for."""
    for name, value in (("workers", workers), ("cores_per_worker", cores_per_worker)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise HarnessError(f"invalid {name} {value!r}: pass a whole number of at least 1")
    if not isinstance(memory, str) or not _MEMORY.match(memory):
        raise HarnessError(f"invalid worker memory {memory!r}: pass megabytes or gigabytes, e.g. 512m or 1g")


def master_command(home: Path, port: int, ui_port: int) -> list[str]:
    """The master's command line (loopback, the given ports)."""
    return [str(home / "bin" / "spark-class"), "org.apache.spark.deploy.master.Master",
            "--host", HOST, "--port", str(port), "--webui-port", str(ui_port)]


def worker_command(home: Path, master_url: str, port: int, ui_port: int, cores: int, memory: str,
                   work_dir: Path) -> list[str]:
    """A worker's command line: its resources, its directory for executors, the master it joins."""
    return [str(home / "bin" / "spark-class"), "org.apache.spark.deploy.worker.Worker",
            "--host", HOST, "--port", str(port), "--webui-port", str(ui_port), "--cores", str(cores),
            "--memory", memory, "--work-dir", str(work_dir), master_url]


def daemon_env(base: dict[str, str], home: Path, conf_dir: Path) -> dict[str, str]:
    """The daemons' environment: the caller's, less what points elsewhere, plus loopback, bounded
    daemon heaps, this pyspark's Spark, an empty conf dir (no stray spark-env.sh), this Python, and
    no REST submission server (it would listen on a fixed port, 6066)."""
    env = {k: v for k, v in base.items() if k not in _INHERITED_NOT}
    env.update(SPARK_HOME=str(home), SPARK_CONF_DIR=str(conf_dir), SPARK_LOCAL_IP=HOST, SPARK_MASTER_HOST=HOST,
               SPARK_DAEMON_MEMORY=DAEMON_MEMORY, PYSPARK_PYTHON=sys.executable,
               SPARK_MASTER_OPTS="-Dspark.master.rest.enabled=false")  # its REST port would be a fixed 6066
    return env


def alive_workers(status: dict) -> list[dict]:
    """The workers the master's status lists as ALIVE."""
    return [w for w in status.get("workers") or [] if w.get("state") == "ALIVE"]


def ready(status: dict, workers: int) -> bool:
    """The master is ALIVE and has `workers` ALIVE workers."""
    return status.get("status") == "ALIVE" and len(alive_workers(status)) >= workers


def applications(status: dict, which: str = "completedapps") -> list[dict]:
    """The master's applications, `activeapps` or `completedapps`."""
    return list(status.get(which) or [])


def master_status(ui_port: int, timeout: float = 5.0) -> dict:
    """GET the master's `/json/` on loopback."""
    with urllib.request.urlopen(f"http://{HOST}:{ui_port}/json/", timeout=timeout) as answer:
        return json.loads(answer.read())


def _accepting(port: int) -> bool:
    with socket.create_connection((HOST, port), timeout=1.0):
        return True


def _tails(logs: list[Path], lines: int = 5) -> str:
    """The last lines of each daemon log, for an error that says why."""
    out = []
    for log in logs:
        try:
            tail = log.read_text(errors="replace").splitlines()[-lines:]
        except OSError:
            continue
        out.append(f"last lines of {log}:\n" + "\n".join(tail))
    return "\n".join(out)


@contextmanager
def standalone_cluster(workers: int = 2, cores_per_worker: int = 1, memory: str = "1g",
                       work_dir: Path | None = None, timeout: float = 120.0) -> Iterator[StandaloneCluster]:
    """A master and `workers` workers of `cores_per_worker` cores and `memory` each, on loopback;
    yields the running cluster (its `url` is the `--spark-master`). Logs and work directories go
    to `work_dir` (else a temporary directory, removed at the end). A daemon that exits, or a cluster
    not ready within `timeout` seconds, is an error naming its log. Everything is stopped on the way out."""
    validate(workers, cores_per_worker, memory)
    home = spark_home()
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        raise HarnessError("Spark needs Java 17+: install a JDK (e.g. apt-get install openjdk-17-jdk-headless)")
    owned = work_dir is None
    root = Path(tempfile.mkdtemp(prefix="ksh-spark-cluster-")) if owned else Path(work_dir)
    if owned:
        REAPER.register_dir(root)
    procs: list[ManagedProcess] = []
    taken: list[int] = []
    try:
        try:
            (root / "conf").mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise HarnessError(f"cannot use {root} as the Spark cluster's directory: {exc.strerror}: "
                               "pass a writable directory") from None
        env = daemon_env(dict(os.environ), home, root / "conf")
        taken = port_registry.allocate(2 + 2 * workers)
        port, ui_port, worker_ports = taken[0], taken[1], taken[2:]
        cluster = StandaloneCluster(f"spark://{HOST}:{port}", ui_port, root)
        logs = [root / "master.log"] + [root / f"worker-{i}.log" for i in range(workers)]

        def died() -> str | None:
            gone = [(p.name, p.exit_code()) for p in procs if not p.alive()]
            return None if not gone else f"spark {gone[0][0]} exited with code {gone[0][1]}"

        procs.append(spawn("master", master_command(home, port, ui_port), log_path=logs[0], env=env, cwd=root))
        wait_until(lambda: ready(cluster.status(), 0) and _accepting(port), timeout=timeout, interval=0.2,
                   fatal=died, what=f"the Spark master at {cluster.url} (log {logs[0]})",
                   diagnostics=lambda: _tails(logs[:1]))
        for i in range(workers):  # all at once: each registers on its own
            own = root / f"worker-{i}"
            own.mkdir(exist_ok=True)
            argv = worker_command(home, cluster.url, worker_ports[2 * i], worker_ports[2 * i + 1], cores_per_worker,
                                  memory, own)
            procs.append(spawn(f"worker-{i}", argv, log_path=logs[1 + i], env=env, cwd=own))
        wait_until(lambda: ready(cluster.status(), workers), timeout=timeout, interval=0.2, fatal=died,
                   what=f"{workers} ALIVE workers at {cluster.url} (logs in {root})", diagnostics=lambda: _tails(logs))
        yield cluster
    finally:
        _stop_session_of(f"spark://{HOST}:{taken[0]}" if taken else None)
        for proc in reversed(procs):  # workers first (each stops its executors), then the master
            proc.stop(timeout=15)
        port_registry.release(taken)
        if owned:
            shutil.rmtree(root, ignore_errors=True)
            REAPER.forget_dir(root)


def _stop_session_of(url: str | None) -> None:
    """Stop this process's Spark session if it is attached to `url`: its driver would otherwise wait
    on a master that is gone."""
    if url is None or "pyspark" not in sys.modules:
        return
    from pyspark.sql import SparkSession
    active = SparkSession.getActiveSession()
    if active is not None and active.sparkContext.master == url:
        stop()
