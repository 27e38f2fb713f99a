"""The pure parts of `harness.spark.standalone`, without a JVM: the daemons' command lines and
environment, reading the master's status, and bad input refused in one line before anything starts."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from harness.errors import HarnessError
from harness.spark import standalone
from harness.spark.standalone import (alive_workers, applications, daemon_env, master_command, ready, spark_home,
                                      standalone_cluster, validate, worker_command)

HOME = Path("/opt/pyspark")

#: The master's /json/ as Spark 4.x answers it (abridged): one worker ALIVE, one DEAD.
STATUS = {
    "url": "spark://127.0.0.1:23680", "status": "ALIVE", "aliveworkers": 1, "cores": 1,
    "workers": [{"id": "worker-1", "host": "127.0.0.1", "port": 23682, "cores": 1, "coresused": 1, "state": "ALIVE"},
                {"id": "worker-2", "host": "127.0.0.1", "port": 23684, "cores": 1, "coresused": 0, "state": "DEAD"}],
    "activeapps": [{"id": "app-2", "name": "share-harness-check", "cores": 1, "state": "RUNNING"}],
    "completedapps": [{"id": "app-1", "name": "share-harness-check", "cores": 2, "state": "FINISHED"}],
}


def test_the_master_binds_loopback_on_the_given_ports():
    assert master_command(HOME, 20001, 20002) == [
        "/opt/pyspark/bin/spark-class", "org.apache.spark.deploy.master.Master",
        "--host", "127.0.0.1", "--port", "20001", "--webui-port", "20002"]


def test_a_worker_binds_loopback_with_its_resources_directory_and_master():
    argv = worker_command(HOME, "spark://127.0.0.1:20001", 20003, 20004, 1, "1g", Path("/w/worker-0"))
    assert argv[:2] == ["/opt/pyspark/bin/spark-class", "org.apache.spark.deploy.worker.Worker"]
    assert argv[2:] == ["--host", "127.0.0.1", "--port", "20003", "--webui-port", "20004", "--cores", "1",
                        "--memory", "1g", "--work-dir", "/w/worker-0", "spark://127.0.0.1:20001"]


def test_the_daemons_environment_is_loopback_bounded_and_ignores_the_callers_spark():
    caller = {"PATH": "/usr/bin", "PYTHONPATH": "/elsewhere", "SPARK_HOME": "/other/spark",
              "SPARK_LOCAL_IP": "10.0.0.5", "SPARK_CONF_DIR": "/etc/spark", "SPARK_WORKER_CORES": "64",
              "PYSPARK_SUBMIT_ARGS": "--master yarn"}
    env = daemon_env(caller, HOME, Path("/w/conf"))
    assert env["PATH"] == "/usr/bin"
    assert env["SPARK_HOME"] == "/opt/pyspark" and env["SPARK_CONF_DIR"] == "/w/conf"
    assert env["SPARK_LOCAL_IP"] == env["SPARK_MASTER_HOST"] == "127.0.0.1"
    assert env["SPARK_DAEMON_MEMORY"] == standalone.DAEMON_MEMORY == "256m"
    assert env["PYSPARK_PYTHON"] == sys.executable
    assert "-Dspark.master.rest.enabled=false" in env["SPARK_MASTER_OPTS"]  # no fixed port 6066
    for gone in ("PYTHONPATH", "SPARK_WORKER_CORES", "PYSPARK_SUBMIT_ARGS"):
        assert gone not in env
    assert caller["SPARK_HOME"] == "/other/spark"  # the caller's mapping is not changed


def test_the_masters_status_is_read_for_alive_workers_and_applications():
    assert [w["id"] for w in alive_workers(STATUS)] == ["worker-1"]
    assert ready(STATUS, 1) and not ready(STATUS, 2)
    assert not ready({**STATUS, "status": "STANDBY"}, 1)
    assert not ready({}, 1) and alive_workers({"workers": None}) == []
    assert [a["id"] for a in applications(STATUS)] == ["app-1"]
    assert [a["id"] for a in applications(STATUS, "activeapps")] == ["app-2"]
    assert applications({}) == []


def test_the_launcher_is_the_installed_pyspark_packages_own():
    import pyspark
    home = spark_home()
    assert home == Path(pyspark.__file__).resolve().parent
    assert (home / "bin" / "spark-class").is_file() and (home / "jars").is_dir()


@pytest.mark.parametrize("workers, cores, memory, fix", [
    (0, 1, "1g", "invalid workers 0"), (2, 0, "1g", "invalid cores_per_worker 0"),
    (True, 1, "1g", "invalid workers True"), (2, 1.5, "1g", "invalid cores_per_worker 1.5"),
    (2, 1, "lots", "invalid worker memory 'lots'"), (2, 1, "0g", "invalid worker memory '0g'"),
    (2, 1, 1024, "invalid worker memory 1024"),
])
def test_bad_input_is_one_line_before_anything_starts(monkeypatch, workers, cores, memory, fix):
    started = []
    monkeypatch.setattr(standalone, "spawn", lambda *a, **k: started.append(a))
    with pytest.raises(HarnessError, match=fix) as refused:
        with standalone_cluster(workers=workers, cores_per_worker=cores, memory=memory):
            pass
    assert "\n" not in str(refused.value) and started == []
    validate(1, 1, "512m")
    validate(3, 2, "2G")


def test_a_daemon_that_exits_ends_the_wait_at_once_with_its_log_and_frees_everything(monkeypatch, tmp_path):
    """A master that dies on start (a stand-in that prints and exits: no JVM) is named with its exit
    code and its log's last lines; its ports go back to the registry and a temporary directory is removed."""
    from harness.sys import ports
    from harness.sys.wait import WaitTimeout
    dies = ["sh", "-c", "echo no such option >&2; exit 3"]
    monkeypatch.setattr(standalone, "master_command", lambda home, port, ui: dies)
    held = ports.held_ports()
    monkeypatch.setattr(standalone.tempfile, "mkdtemp", lambda prefix: str(tmp_path / "cluster"))
    (tmp_path / "cluster").mkdir()
    with pytest.raises(WaitTimeout, match="spark master exited with code 3") as died:
        with standalone_cluster(timeout=60):
            pass
    assert "no such option" in str(died.value) and "master.log" in str(died.value)
    assert ports.held_ports() == held and not (tmp_path / "cluster").exists()


def test_a_work_dir_that_cannot_be_one_is_a_one_line_error(tmp_path):
    occupied = tmp_path / "a-file"
    occupied.write_text("")
    with pytest.raises(HarnessError, match=f"cannot use {occupied} as the Spark cluster's directory") as refused:
        with standalone_cluster(work_dir=occupied):
            pass
    assert "\n" not in str(refused.value)
