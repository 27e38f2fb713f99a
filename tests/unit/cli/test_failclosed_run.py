"""Issue 47, `share-harness run`, `run --suite`, `certify` and `setup`: a setting the run would not honour, and
every value the release or the harness cannot take, is refused before anything starts (no cluster, no
download, no pytest, no driver of a run), in one line naming the fix, exit 2, no traceback; a failed
certify leaves no empty directory behind.

Nothing here starts a cluster: every test runs with guards that stop the process (or raise) the moment a
run, a pytest session, a download or a build would begin, so a refusal that came too late fails the test
instead of starting anything. The tests that could hang or fill memory on a harness without the refusal
(a fifo manifest, a link to /dev/zero, 10^18 seeds, a 1e-300 s fault interval) run in a child process
with a time and a memory limit.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from harness.cli import main
from harness.errors import HarnessError
from harness.settings import reproduce_command

ROOT = Path(__file__).resolve().parents[3]


class Started(BaseException):
    """Something began that a refusal should have prevented (not an Exception: main() must not catch it)."""


@pytest.fixture(autouse=True)
def nothing_starts(monkeypatch, tmp_path):
    """Every way a command starts real work raises `Started`; reports go under tmp_path."""
    import harness.kafka.jars
    import harness.run
    import harness.sys.pytest_child

    def started(what):
        def guard(*args, **kwargs):
            raise Started(what)
        return guard
    monkeypatch.setattr(harness.run, "run", started("a run"))
    monkeypatch.setattr(harness.sys.pytest_child, "run_pytest", started("a pytest session"))
    monkeypatch.setattr(harness.kafka.jars, "resolve", started("a jar resolution"))
    monkeypatch.setattr(harness.kafka.jars, "_download", started("a download"))
    import harness.clients.franz
    import harness.cluster.kfake
    import harness.cluster.local
    import harness.proxy.server
    monkeypatch.setattr(harness.cluster.local.LocalCluster, "start", started("a local cluster"))
    monkeypatch.setattr(harness.cluster.kfake, "build_kfake_launcher", started("a kfake build"))
    monkeypatch.setattr(harness.proxy.server, "find_or_build_toxiproxy", started("a toxiproxy build"))
    monkeypatch.setattr(harness.clients.franz, "build_franz_driver", started("a franz-go build"))
    monkeypatch.setenv("KSH_REPORTS_DIR", str(tmp_path / "reports"))
    monkeypatch.chdir(tmp_path)


def _refused(capsys, *argv: str) -> str:
    """`share-harness ARGV` exits 2 with one line on stderr and no traceback; that line."""
    try:
        rc = main(list(argv))
    except SystemExit as exc:  # argparse's usage error
        rc = exc.code
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert rc == 2 and len(lines) == 1 and "Traceback" not in err, (rc, err)
    return lines[0]


def _nothing_left(tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    left = sorted(str(p.relative_to(reports)) for p in reports.rglob("*")) if reports.exists() else []
    assert not left, f"a refused command left {left}"


_GUARD = textwrap.dedent("""
    import os, sys
    def started(what):
        def guard(*args, **kwargs):
            sys.stderr.write(f"STARTED {what}\\n"); sys.stderr.flush(); os._exit(99)
        return guard
    import harness.run, harness.sys.pytest_child, harness.kafka.jars
    harness.run.run = started("a run")
    harness.sys.pytest_child.run_pytest = started("a pytest session")
    harness.kafka.jars.resolve = started("a jar resolution")
    from harness.cli import main
    sys.exit(main(sys.argv[1:]))
""")


def _limited() -> None:  # a child that would build a huge list fails with MemoryError, not the machine
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))


def _child(tmp_path: Path, *argv: str, code: str = _GUARD, timeout: float = 60) -> tuple[int, str]:
    """`share-harness ARGV` in a child process with the guards, a memory limit and a timeout: (rc, stderr)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KSH_")}
    env["KSH_REPORTS_DIR"] = str(tmp_path / "reports")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    try:
        proc = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, cwd=tmp_path,
                              env=env, timeout=timeout, preexec_fn=_limited)
    except subprocess.TimeoutExpired:
        pytest.fail(f"share-harness {' '.join(argv)} did not answer within {timeout} s (it hung)")
    return proc.returncode, proc.stderr


def _child_refused(tmp_path: Path, *argv: str, **kwargs) -> str:
    rc, err = _child(tmp_path, *argv, **kwargs)
    lines = [line for line in err.splitlines() if line.strip()]
    assert rc == 2 and len(lines) == 1 and "Traceback" not in err, (rc, err)
    return lines[0]


# --- run: a setting the run will not honour -------------------------------------------------------------

def test_run_refuses_an_empty_faults_list(capsys, tmp_path):
    for argv in (["run", "--faults", ""], ["run", "--faults", " "], ["run", "--suite", "conformance", "--faults", ""]):
        line = _refused(capsys, *argv)
        assert "empty --faults" in line and "leave --faults out" in line, line
    _nothing_left(tmp_path)


@pytest.mark.parametrize("option", [["--fault-interval", "3"], ["--fault-mode", "once"], ["--fault-seed", "4"]])
def test_run_refuses_fault_options_without_faults(capsys, tmp_path, option):
    line = _refused(capsys, "run", *option)
    assert f"{option[0]} " in line and "needs --faults" in line, line
    _nothing_left(tmp_path)


def test_fault_interval_and_seed_apply_to_a_workloads_consumer_events():
    from harness.cli.parser import build_parser
    from harness.cli.run import spec_from_args
    spec = spec_from_args(build_parser().parse_args(["run", "--workload", "crash", "--fault-interval", "3",
                                                     "--fault-seed", "2"]))
    assert spec.workload_events and spec.fault_interval == 3 and spec.fault_seed == 2


@pytest.mark.parametrize("argv, option", [
    (["--workload", "wide", "--consumers", "1", "--partitions", "7"], "--consumers 1"),
    (["--workload", "wide", "--partitions", "7"], "--partitions 7"),
    (["--workload", "mix", "--behaviour", "poison"], "--behaviour poison"),
])
def test_run_refuses_settings_a_workload_overrides(capsys, tmp_path, argv, option):
    line = _refused(capsys, "run", *argv)
    assert option in line and "--workload" in line, line
    _nothing_left(tmp_path)


def test_a_workload_with_its_own_settings_repeated_is_taken():
    from harness.cli.parser import build_parser
    from harness.cli.run import spec_from_args
    spec = spec_from_args(build_parser().parse_args(["run", "--workload", "wide", "--consumers", "5",
                                                     "--partitions", "2"]))
    assert (spec.consumers, spec.topic_partitions) == (5, 2)


def test_run_refuses_a_delivery_count_limit_the_release_has_no_group_config_for(capsys, tmp_path):
    line = _refused(capsys, "run", "--kafka-version", "4.2.2", "--delivery-count-limit", "4")
    assert "--delivery-count-limit" in line and "4.3" in line and "4.2.2" in line, line
    _nothing_left(tmp_path)


@pytest.mark.parametrize("option", [["--brokers", "5"], ["--log-dirs", "3"], ["--base-port", "20000"]])
def test_run_refuses_cluster_shape_options_with_an_external_cluster(capsys, tmp_path, option):
    line = _refused(capsys, "run", "--bootstrap-servers", "127.0.0.1:1", *option)
    assert option[0] in line and "--bootstrap-servers" in line, line
    _nothing_left(tmp_path)


def test_run_refuses_log_dirs_on_kfake(capsys, tmp_path):
    line = _refused(capsys, "run", "--backend", "kfake", "--log-dirs", "3")
    assert "--log-dirs" in line and "kfake" in line, line


# --- fault interval: a minimum the schedule can apply -------------------------------------------------------

@pytest.mark.parametrize("interval", ["1e-300", "0.001", "1.4"])
def test_a_fault_interval_below_what_the_schedule_can_apply_is_refused(capsys, tmp_path, interval):
    line = _refused(capsys, "run", "--faults", "leader", "--fault-interval", interval)
    assert "fault-interval" in line and "1.5 <= interval <= 15" in line, line
    _nothing_left(tmp_path)


def test_the_shortest_fault_interval_is_taken_and_schedules():
    from harness.faults.schedule import TIMINGS, generate, shortest_interval
    from harness.spec import RunSpec
    for profile, timing in TIMINGS.items():
        least = shortest_interval(timing)
        spec = RunSpec(profile=profile, faults=("leader-kill",), fault_interval=least).validate()
        assert generate(spec.faults, 1, timing, spec.fault_interval, events=("consumer-kill",))
        with pytest.raises(HarnessError, match="fault-interval"):
            RunSpec(profile=profile, faults=("leader-kill",), fault_interval=least / 2).validate()


def test_schedule_generation_refuses_a_tiny_interval_at_once(tmp_path):
    """Without the bound, a workload's events with an interval of 1e-300 s never finish generating (the
    clock does not advance), after the cluster and the consumers started."""
    code = ("import sys\nfrom harness.faults.schedule import TIMINGS, generate\nfrom harness.errors import HarnessError\n"
            "try:\n    generate((), 1, TIMINGS['ci'], 1e-300, events=('consumer-kill',))\n"
            "except HarnessError as exc:\n    print(exc, file=sys.stderr); sys.exit(2)\nsys.exit(0)\n")
    line = _child_refused(tmp_path, code=code, timeout=30)
    assert "fault interval" in line and "1.5" in line, line


# --- certify: the seeds cap, refused before anything, nothing left --------------------------------------------

def test_certify_caps_the_seeds_as_the_plugin_does(tmp_path):
    line = _child_refused(tmp_path, "certify", "--client", "confluent", "--seeds", "999999999999999999")
    assert "--seeds" in line and "1,000" in line, line
    _nothing_left(tmp_path)


def test_certify_function_caps_the_seeds(tmp_path):
    """`harness.certify.certificate.certify` itself (what the CLI calls), in a child: without the cap it builds the list."""
    code = ("import sys\nimport harness.sys.pytest_child\nharness.sys.pytest_child.run_pytest = lambda *a, **k: sys.exit(99)\n"
            "from pathlib import Path\nfrom harness.certify.certificate import Certification, certify\n"
            "from harness.errors import HarnessError\nfrom harness.spec import RunSpec\n"
            f"try:\n    certify(Certification(RunSpec(client='confluent', kafka_version='4.4.0'), seeds=10**18, "
            f"out_root=Path('{tmp_path / 'certs'}')))\n"
            "except HarnessError as exc:\n    print(exc, file=sys.stderr); sys.exit(2)\n")
    line = _child_refused(tmp_path, code=code)
    assert "seeds" in line and "1000" in line, line
    assert not (tmp_path / "certs").exists()


def test_one_seed_cap_for_certify_and_the_plugin():
    from harness.spec import MAX_SEEDS
    assert MAX_SEEDS == 1000
    from harness.cli.parser import build_parser
    assert build_parser().parse_args(["certify", "--client", "confluent", "--seeds", "1000"]).seeds == 1000


def test_certify_refuses_confluent_on_a_release_it_cannot_drive(capsys, tmp_path):
    line = _refused(capsys, "certify", "--client", "confluent", "--kafka-version", "4.1.2")
    assert "confluent" in line and "4.2+" in line and "--client java" in line, line
    _nothing_left(tmp_path)


@pytest.mark.parametrize("command", [["run"], ["certify", "--client", "confluent"], ["run", "--suite", "basic"]])
def test_a_release_that_does_not_exist_is_refused(capsys, tmp_path, command):
    line = _refused(capsys, *command, "--kafka-version", "4.4.99")
    assert "4.4.99" in line and "not a release" in line and "4.4.0" in line, line
    _nothing_left(tmp_path)


@pytest.mark.parametrize("command", [["run"], ["certify", "--client", "confluent"]])
def test_a_kafka_home_that_does_not_exist_is_refused(capsys, tmp_path, command):
    line = _refused(capsys, *command, "--kafka-home", str(tmp_path / "nonexistent"))
    assert "kafka-home" in line and "not a directory" in line, line
    _nothing_left(tmp_path)


# --- group settings: within what the release accepts ---------------------------------------------------------

@pytest.mark.parametrize("argv, words", [
    (["--lock-duration-ms", "1"], ("lock-duration-ms", "1000..60,000")),
    (["--lock-duration-ms", "999"], ("lock-duration-ms", "1000")),
    (["--lock-duration-ms", "60001"], ("lock-duration-ms", "60,000")),
    (["--lock-duration-ms", "1", "--bootstrap-servers", "127.0.0.1:1"], ("lock-duration-ms", "1000..3,600,000")),
    (["--delivery-count-limit", "999999999999999999"], ("delivery-count-limit", "2..10")),
    (["--delivery-count-limit", "1"], ("delivery-count-limit", "2..10")),
    (["--delivery-count-limit", "26", "--bootstrap-servers", "127.0.0.1:1"], ("delivery-count-limit", "2..25")),
])
def test_group_limits_outside_the_release_bounds_are_refused(capsys, tmp_path, argv, words):
    line = _refused(capsys, "run", *argv)
    assert all(w in line for w in words), line
    _nothing_left(tmp_path)


@pytest.mark.parametrize("argv, words", [
    (["--group-config", "k=banana"], ("unknown group config 'k'", "share.isolation.level")),
    (["--group-config", "share.isolation.level=banana"], ("share.isolation.level", "read_committed")),
    (["--group-config", "share.auto.offset.reset=banana"], ("share.auto.offset.reset", "by_duration")),
    (["--group-config", "share.session.timeout.ms=-1"], ("share.session.timeout.ms", "6000..60,000")),
    (["--group-config", "share.renew.acknowledge.enable=yes"], ("share.renew.acknowledge.enable", "true or false")),
    (["--kafka-version", "4.2.2", "--group-config", "share.partition.max.record.locks=200"],
     ("share.partition.max.record.locks", "4.3+")),
    (["--group-config", "share.record.lock.duration.ms=5000"], ("--lock-duration-ms",)),
    (["--group-config", "share.delivery.count.limit=3"], ("--delivery-count-limit",)),
    (["--group-config", "errors.deadletterqueue.topic.name=dlq"], ("--dead-letter",)),
])
def test_group_configs_unknown_or_of_a_bad_value_are_refused(capsys, tmp_path, argv, words):
    line = _refused(capsys, "run", *argv)
    assert all(w in line for w in words), line
    _nothing_left(tmp_path)


def test_group_configs_the_suites_set_are_taken():
    from harness.spec import RunSpec
    for configs in ({"share.auto.offset.reset": "by_duration:PT10M"}, {"share.auto.offset.reset": "latest"},
                    {"share.isolation.level": "read_committed"}, {"share.renew.acknowledge.enable": "false"},
                    {"share.partition.max.record.locks": "100", "share.assignment.interval.ms": "0"}):
        RunSpec(group_configs=configs).validate()
    RunSpec(lock_duration_ms=60000, delivery_count_limit=10).validate()
    RunSpec(lock_duration_ms=3_600_000, delivery_count_limit=25, bootstrap_servers="127.0.0.1:1").validate()


def test_the_group_config_table_covers_every_release_lines_group_configs():
    from harness.kafka.group_configs import names_of
    from harness.kafka.versions import RELEASE_LINES
    for line, profile in RELEASE_LINES.items():
        assert set(profile.group_configs.values()) <= set(names_of(line)), line


# --- external clusters: only the faults they can host -----------------------------------------------------------

@pytest.mark.parametrize("faults", ["leader", "latency", "consumer-cut", "all"])
def test_an_external_cluster_with_faults_needing_process_control_is_refused(capsys, tmp_path, faults):
    line = _refused(capsys, "run", "--bootstrap-servers", "127.0.0.1:1", "--faults", faults)
    assert "external cluster" in line and "consumer-kill" in line, line
    _nothing_left(tmp_path)


def test_an_external_cluster_hosts_the_consumer_faults_only():
    from harness.spec import RunSpec
    RunSpec(bootstrap_servers="127.0.0.1:1", faults=("consumer-kill", "consumer-pause")).validate() \
        .check_faults_hostable()
    RunSpec(faults=("leader-kill",)).validate().check_faults_hostable()  # a cluster the harness starts
    with pytest.raises(HarnessError, match="fault leader-pause needs Pausable, which an external cluster"):
        RunSpec(bootstrap_servers="127.0.0.1:1", faults=("leader-pause",)).validate().check_faults_hostable()


# --- setup: refused before any download or build -------------------------------------------------------------

@pytest.mark.parametrize("argv, word", [(["--kfake-version", "garbage"], "kfake-version"),
                                        (["--kafka-version", "4.4.99"], "4.4.99"),
                                        (["--kafka-version", "banana"], "banana")])
def test_setup_refuses_bad_versions_before_any_download(capsys, argv, word):
    line = _refused(capsys, "setup", *argv)
    assert word in line, line


# --- driver manifests: a regular file of bounded size, a contract that is an int ----------------------------------

def _manifest(tmp_path: Path, **fields) -> Path:
    data = {"name": "x", "contract": 1, "command": ["{python}", "d.py"], "features": ["ack:ACCEPT"], **fields}
    path = tmp_path / "m.json"
    path.write_text(json.dumps(data))
    return path


def test_a_manifest_that_is_a_fifo_is_refused_at_once(tmp_path):
    fifo = tmp_path / "driver.json"
    os.mkfifo(fifo)  # read_text() on it blocks until a writer comes: never
    line = _child_refused(tmp_path, "certify", "--client", str(fifo), timeout=30)
    assert "not a regular file" in line, line
    _nothing_left(tmp_path)


def test_a_manifest_linked_to_dev_zero_is_refused_at_once(tmp_path):
    link = tmp_path / "driver.json"
    link.symlink_to("/dev/zero")  # read_text() on it reads until memory runs out
    line = _child_refused(tmp_path, "run", "--client", str(link), timeout=30)
    assert "not a regular file" in line, line


def test_a_manifest_bigger_than_a_manifest_is_refused(tmp_path):
    from harness.clients.registry import MANIFEST_LIMIT, load_manifest
    path = tmp_path / "big.json"
    path.write_text(" " * (MANIFEST_LIMIT + 1))
    with pytest.raises(HarnessError, match="bytes"):
        load_manifest(path)


@pytest.mark.parametrize("contract", [True, 1.0, "1"])
def test_a_manifest_contract_must_be_the_int(tmp_path, contract):
    from harness.clients.registry import load_manifest
    with pytest.raises(HarnessError, match="declares contract"):
        load_manifest(_manifest(tmp_path, contract=contract))


@pytest.mark.parametrize("contract", [True, 1.0, "1"])
def test_a_start_event_contract_must_be_the_int(tmp_path, contract):
    from harness.clients.driver import ConsumerDriver
    driver = ConsumerDriver("c", {}, None, tmp_path)
    driver._check_contract({"client": "fake", "contract": contract})
    assert driver.contract_error and "speaks contract" in driver.contract_error
    driver = ConsumerDriver("c", {}, None, tmp_path)
    driver._check_contract({"client": "fake", "contract": 1})
    assert driver.contract_error is None


# --- certify: a manifest's driver shown to start before anything -------------------------------------------------

def _driver_manifest(tmp_path: Path, kind: str) -> Path:
    if kind == "missing program":
        return _manifest(tmp_path, command=[str(tmp_path / "no-such-driver")])
    if kind == "missing script":
        return _manifest(tmp_path, command=["{python}", "no_such_driver.py"])
    if kind == "exits at once":
        (tmp_path / "d.py").write_text("import sys\nprint('driver: cannot start', file=sys.stderr)\nsys.exit(3)\n")
        return _manifest(tmp_path, command=["{python}", "d.py"])
    (tmp_path / "d.py").write_text("")
    return _manifest(tmp_path, features=[])  # no features


@pytest.mark.parametrize("kind", ["missing program", "missing script", "exits at once", "no features"])
def test_certify_refuses_a_manifest_driver_that_cannot_run_before_anything(tmp_path, kind):
    path = _driver_manifest(tmp_path, kind)
    line = _child_refused(tmp_path, "certify", "--client", str(path), timeout=90)
    assert str(path) in line, line
    _nothing_left(tmp_path)


@pytest.mark.parametrize("kind", ["missing program", "exits at once"])
def test_run_refuses_a_manifest_driver_that_cannot_run_before_anything(tmp_path, kind):
    path = _driver_manifest(tmp_path, kind)
    line = _child_refused(tmp_path, "run", "--client", str(path), timeout=90)
    assert str(path) in line, line
    _nothing_left(tmp_path)


# --- a failed certify leaves nothing behind ---------------------------------------------------------------------

def test_a_certify_interrupted_before_pytest_wrote_anything_leaves_no_directory(capsys, monkeypatch, tmp_path):
    import harness.sys.pytest_child

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr(harness.sys.pytest_child, "run_pytest", interrupted)
    out = tmp_path / "certs"
    assert main(["certify", "--client", "confluent", "--out", str(out)]) == 130
    assert not out.exists() or not any(out.iterdir()), sorted(out.rglob("*"))


def test_a_certify_whose_pytest_refused_its_options_is_bad_input_and_leaves_nothing(capsys, monkeypatch, tmp_path):
    import harness.sys.pytest_child
    monkeypatch.setattr(harness.sys.pytest_child, "run_pytest", lambda *args, **kwargs: 4)
    out = tmp_path / "certs"
    line = _refused(capsys, "certify", "--client", "confluent", "--out", str(out))
    assert "usage error" in line, line
    assert not out.exists() or not any(out.iterdir()), sorted(out.rglob("*"))


# --- the reproduce command: taken back by the CLI, whole ------------------------------------------------------

def _again(spec):
    import shlex

    from harness.cli.parser import build_parser
    from harness.cli.run import spec_from_args
    return spec_from_args(build_parser().parse_args(shlex.split(reproduce_command(spec))[1:]))


def test_the_reproduce_command_is_taken_back_whole(tmp_path):
    """A reproduce command never carries an option the CLI now refuses as not honoured (--brokers beside
    --bootstrap-servers; a workload's own delivery limit on a release without the group config), and it
    carries what the run used: the seed of a workload's consumer events, the distribution's directory."""
    from dataclasses import replace

    from harness.spec import RunSpec
    from harness.workloads import apply_workload
    spec = replace(apply_workload(RunSpec(kafka_version="4.2.2"), "poison"), seed=3).validate()
    again = _again(spec)
    assert (again.workload, again.delivery_count_limit, again.lock_duration_ms) == ("poison", 3, 5000)
    external = replace(RunSpec(), bootstrap_servers="127.0.0.1:1")
    assert _again(external).bootstrap_servers == "127.0.0.1:1"
    events = replace(apply_workload(RunSpec(), "crash"), fault_seed=7, fault_interval=4.0).validate()
    again = _again(events)
    assert (again.workload_events, again.fault_seed, again.fault_interval) == (("consumer-kill",), 7, 4.0)
    home = replace(RunSpec(kafka_version="4.3.1"), kafka_home=str(tmp_path)).validate()
    assert _again(home).kafka_home == str(tmp_path)


@pytest.mark.parametrize("argv", [["check", ""], ["check", "x", "--nightly", ""], ["nightly-report", ""],
                                  ["page", ""], ["clean", "--root", ""], ["tally", ""], ["matrix", "--out", ""]])
def test_an_empty_path_is_refused_not_taken_as_the_current_directory(argv):
    """`Path("")` is `.`: `check ""` checked (and `clean --root ""` cleaned) the current directory."""
    import os
    import subprocess
    import sys
    from pathlib import Path
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])}
    done = subprocess.run([sys.executable, "-m", "harness.cli", *argv], capture_output=True, text=True, timeout=60,
                          env=env)
    assert done.returncode == 2, done
    assert "empty path" in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
