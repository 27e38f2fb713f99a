"""The Spark engine on a real Spark standalone cluster: the same verdicts as the in-process engine.

A master and two workers (1 core, 1g each) started from the pyspark package's own launcher on
loopback (`harness.spark.standalone`); the committed real histories (tests/histories) and seeded
model histories, some mutated so they fail, checked on it with `spark://127.0.0.1:<port>` (from this
process, both layouts, and by `share-harness check --spark-master` in its own process) and by the
in-process engine: identical results. The master's own status proves the jobs ran on the cluster's
executors. The executors import the harness from this checkout: installed as the README says
(`pip install -e .`), which the test does first if this interpreter lacks it. Nightly profile only.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sys
from pathlib import Path

import pytest

from harness.history.events import EventTable
from harness.spark.standalone import DRIVER_ENV, alive_workers, applications, standalone_cluster
from harness.sys import procs
from harness.sys.wait import wait_until

pytestmark = [pytest.mark.real, pytest.mark.spark, pytest.mark.nightly]

REPO = Path(__file__).resolve().parents[2]
COMMITTED = sorted((Path(__file__).resolve().parents[1] / "histories").glob("*.jsonl.gz"))


def _imported_harness(cwd: Path) -> str:
    """The `harness` this interpreter imports as an executor's Python worker would: from a worker's
    directory, without this process's PYTHONPATH."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = procs.run("import-harness", [sys.executable, "-c", "import harness; print(harness.__file__)"], 60,
                     env=env, cwd=cwd)
    return done.stdout.strip() if done.returncode == 0 else ""


@pytest.fixture(scope="module")
def harness_installed(tmp_path_factory) -> str:
    """The harness importable by the workers' Python: installed the README's way if it is not."""
    here = str(REPO / "harness" / "__init__.py")
    neutral = tmp_path_factory.mktemp("neutral")
    if _imported_harness(neutral) != here:
        done = procs.run("pip-install", [sys.executable, "-m", "pip", "install", "--quiet", "-e", str(REPO)], 900)
        assert done.returncode == 0, done.stderr[-2000:]
    assert _imported_harness(neutral) == here
    return here


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, harness_installed):
    """Two workers of 1 core and 1g; this process's driver on loopback with a 1g heap."""
    from harness.spark.session import stop
    stop()  # a session another module left: the driver below must be a new one, on the cluster
    with pytest.MonkeyPatch.context() as env:
        for name, value in {**DRIVER_ENV, "KSH_SPARK_MEMORY": "1g", "PYSPARK_PYTHON": sys.executable}.items():
            env.setenv(name, value)
        with standalone_cluster(workers=2, cores_per_worker=1, memory="1g",
                                work_dir=tmp_path_factory.mktemp("cluster")) as running:
            yield running
            stop()


@pytest.fixture(scope="module")
def histories(tmp_path_factory) -> list[Path]:
    """One run directory per history: the committed ones, and model ones with mutations."""
    from harness.model.simulate import SimConfig, simulate
    from harness.mutants import MUTANTS
    from harness.mutants.histories import read_ops
    root = tmp_path_factory.mktemp("runs")
    files = []

    def write(ops, name: str) -> None:
        (root / name).mkdir()
        files.append(EventTable.from_ops(ops).write_parquet(root / name / "history.parquet"))

    for path in COMMITTED:
        write(read_ops(path), path.name.removesuffix(".jsonl.gz"))
    rng = random.Random(932)
    for n, kind in enumerate(("drop-delivery", "duplicate-acquisition", "count-past-limit", "swap-in-batch",
                              "redeliver-accepted", "drop-ack-result")):
        ops = simulate(SimConfig(seed=rng.randrange(10**6), partitions=rng.randint(1, 4), consumers=rng.randint(1, 3),
                                 records=rng.randint(40, 120), leader_changes=rng.randint(0, 2),
                                 p_crash=rng.choice([0.0, 0.03])))
        write(ops, f"model-{n}")
        mutant = MUTANTS[kind](ops, random.Random(rng.randrange(2**32)))
        if mutant is not None:
            write(mutant.ops, f"mutated-{n}-{kind}")
    return files


def _same(spark_check, mine) -> None:
    """Field by field, so a difference names itself."""
    from harness.checkers import verdict_word
    for s, i in zip(spark_check.results, mine.results, strict=True):
        where = f"{mine.path} {s.checker}"
        assert (s.checker, verdict_word(s.valid)) == (i.checker, verdict_word(i.valid)), (where, s.reason, i.reason)
        assert [(a.kind, a.message, a.evidence) for a in s.anomalies] == \
               [(a.kind, a.message, a.evidence) for a in i.anomalies], where
        assert (s.allowances, s.allowance_evidence, s.stats, s.reason) == \
               (i.allowances, i.allowance_evidence, i.stats, i.reason), where
    assert (spark_check.events, spark_check.facts) == (mine.events, mine.facts)


def test_the_spark_engine_on_the_cluster_gives_the_in_process_engines_results(cluster, histories):
    """Both layouts (each slot reading its file; rows shuffled between the executors), from a
    driver in this process whose master is the cluster, which granted it both workers' cores."""
    from harness.check.inprocess import check_inprocess
    from harness.checkers import verdict_word
    from harness.spark.engine import check_files
    from harness.spark.session import spark_session, stop
    mine = [check_inprocess(f) for f in histories]
    assert {verdict_word(c.valid) for c in mine} >= {"PASS", "FAIL"}, "the comparison would prove little"
    for layout in ("direct", "shuffle"):
        checks = check_files(histories, cluster.url, layout=layout)
        assert [c.path for c in checks] == histories
        for check, expected in zip(checks, mine):
            _same(check, expected)

    context = spark_session(cluster.url).sparkContext
    assert context.master == cluster.url
    app = context.applicationId
    status = cluster.status()
    [active] = [a for a in applications(status, "activeapps") if a["id"] == app]
    assert active["cores"] == 2 and active["state"] == "RUNNING", active
    assert [w["coresused"] for w in alive_workers(status)] == [1, 1], status["workers"]

    def where(_):  # runs in an executor's Python worker (a nested function: shipped by value)
        import os

        import harness
        return os.getcwd(), harness.__file__
    seen = set(context.parallelize(range(8), 8).map(where).collect())
    workers = {Path(cwd).relative_to(cluster.work_dir).parts[0] for cwd, _ in seen}
    assert workers <= {"worker-0", "worker-1"} and workers, seen
    assert {file for _, file in seen} == {str(REPO / "harness" / "__init__.py")}

    stop()
    wait_until(lambda: app in [a["id"] for a in applications(cluster.status())], timeout=60, interval=0.2,
               what=f"the master to list {app} as completed")


def test_share_harness_check_with_spark_master_gives_the_in_process_verdicts(cluster, histories):
    """`share-harness check --engine spark --spark-master spark://...` in its own process (its own
    driver, as users run it), against `--engine inprocess`: the same exit code and the same results."""
    from harness.spark.session import stop
    stop()  # this process's driver would hold the cluster's cores: the command's application would wait
    command = shutil.which("share-harness")
    assert command, "share-harness is not on PATH: install the harness (pip install -e .)"
    runs = [str(f.parent) for f in histories]
    before = {a["id"] for a in applications(cluster.status())}
    env = {**os.environ, **DRIVER_ENV, "KSH_SPARK_MEMORY": "1g", "PYSPARK_PYTHON": sys.executable}
    on_cluster = procs.run("check-spark", [command, "check", "--json", "--engine", "spark", "--spark-master",
                                           cluster.url, *runs], 900, env=env)
    local = procs.run("check-inprocess", [command, "check", "--json", "--engine", "inprocess", *runs], 900, env=env)
    assert on_cluster.returncode == local.returncode == 1, (on_cluster.stderr[-2000:], local.stderr[-2000:])
    spark_out, local_out = json.loads(on_cluster.stdout), json.loads(local.stdout)
    assert (spark_out["engine"], local_out["engine"]) == ("spark", "inprocess")
    assert spark_out["histories"] == local_out["histories"]
    completed = [a for a in applications(cluster.status()) if a["id"] not in before]
    assert [a["name"] for a in completed] == ["share-harness-check"], completed
