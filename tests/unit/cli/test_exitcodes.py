"""One meaning per exit code (harness.exitcodes), for every command: each row of the README's table,
and the gate paths that used to end in 0 having checked nothing (issue 20)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from harness import exitcodes
from harness.cli import main

ROOT = Path(__file__).resolve().parents[3]


def _cli(*args: str, cwd: Path | None = None, env: dict | None = None, timeout: float = 60):
    """The real command in a child process: (exit code, stdout, stderr)."""
    proc = subprocess.run([sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True,
                          cwd=cwd or ROOT, env=env, timeout=timeout)
    return proc.returncode, proc.stdout, proc.stderr


def _one_line_error(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    return lines[0]


def test_the_table():
    assert (exitcodes.PASS, exitcodes.VIOLATION, exitcodes.BAD_INPUT, exitcodes.UNKNOWN) == (0, 1, 2, 3)
    assert [exitcodes.for_verdict(v) for v in (True, False, None, "unknown")] == [0, 1, 3, 3]
    assert [exitcodes.from_pytest(rc) for rc in (0, 1, 2, 3, 4, 5, 77)] == [0, 1, 130, 3, 2, 3, 3]


def test_readme_has_the_table():
    readme = (ROOT / "README.md").read_text()
    for code, meaning in ((0, "pass"), (1, "violation"), (2, "bad input"), (3, "unknown"), (130, "interrupted")):
        assert re.search(rf"\|\s*{code}\s*\|[^\n]*{meaning}", readme, re.I), f"README's exit-code table lacks {code}"


# --- run --suite: a suite that cannot run on the chosen backend is refused before anything starts ---

def test_chaos_suite_on_an_external_cluster_is_refused_up_front(tmp_path):
    rc, out, err = _cli("run", "--suite", "chaos", "--bootstrap-servers", "127.0.0.1:1",
                        env={**_env(), "KSH_REPORTS_DIR": str(tmp_path)})
    line = _one_line_error(err)
    assert rc == 2 and "chaos" in line and "local" in line and "--bootstrap-servers" in line
    assert not (tmp_path / "suites").exists(), "nothing is written before the refusal"


def _env():
    import os
    return {k: v for k, v in os.environ.items() if not k.startswith("KSH_")}


# --- certify: validated before anything is written ---

@pytest.mark.parametrize("version", ["banana", "4.0.0", "9.9.9", ""])
def test_certify_refuses_a_bad_version_before_writing_anything(tmp_path, capsys, version):
    out = tmp_path / "certs"
    rc = main(["certify", "--client", "confluent", "--kafka-version", version, "--out", str(out)])
    line = _one_line_error(capsys.readouterr().err)
    assert rc == 2 and "version" in line.lower()
    assert not out.exists(), "no certificate and no comparison page for a refused version"


def test_comparison_page_leaves_out_unknown_certificates(tmp_path):
    from harness.certify.certificate import RULES, write_comparison
    for name, verdict in (("20260101-000000-a", "CERTIFIED"), ("20260102-000000-a", "UNKNOWN")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "certificate.json").write_text(json.dumps(
            {"driver": "a", "kafka_version": "4.3.1", "verdict": verdict, "complete": True,
             "rules": [{"rule": r, "result": "pass"} for r in RULES]}))
    page = write_comparison(tmp_path).read_text()
    assert "**CERTIFIED**" in page and "UNKNOWN" not in page


# --- tally: crashed runs are visible, faults not applied are not a pass ---

def _run(root: Path, name: str, seed: int, verdict: dict | None):
    run = root / f"r-{name}-{seed}"
    run.mkdir(parents=True)
    (run / "spec.json").write_text(json.dumps({"spec": {"name": name, "seed": seed}}))
    if verdict is not None:
        (run / "verdict.json").write_text(json.dumps(verdict))
    return run


def _verdict(valid, faults=()):
    return {"valid": valid, "faults": list(faults), "results": [{"checker": "no-loss", "valid": valid}]}


def test_tally_counts_a_crashed_run_as_unknown(tmp_path, capsys):
    _run(tmp_path, "t", 1, _verdict(True))
    _run(tmp_path, "t", 2, None)  # crashed: spec.json, no verdict.json
    assert main(["tally", str(tmp_path)]) == 3
    assert "no verdict.json" in capsys.readouterr().out


def test_tally_counts_a_fault_not_applied_as_unknown(tmp_path):
    _run(tmp_path, "t", 1, _verdict(True, [{"applied": True, "healed_ok": True}]))
    _run(tmp_path, "t", 2, _verdict(True, [{"applied": False, "healed_ok": False}]))
    assert main(["tally", str(tmp_path)]) == 3
    _run(tmp_path, "t", 3, _verdict(True, [{"applied": True, "healed_ok": False}]))  # heal failed
    from harness.report.tally import tally
    assert tally([tmp_path])["t"]["unknown"] == 2


def test_tally_exit_codes(tmp_path):
    _run(tmp_path / "a", "t", 1, _verdict(True, [{"applied": True, "healed_ok": True}]))
    assert main(["tally", str(tmp_path / "a")]) == 0
    _run(tmp_path / "a", "t", 2, _verdict(False))
    assert main(["tally", str(tmp_path / "a")]) == 1
    (tmp_path / "empty").mkdir()
    assert main(["tally", str(tmp_path / "empty")]) == 3  # no run: nothing was checked
    assert main(["tally", str(tmp_path / "missing")]) == 2


def test_tally_does_not_count_the_latest_link_twice(tmp_path):
    run = _run(tmp_path, "t", 1, _verdict(True))
    (tmp_path / "latest").symlink_to(run.name)
    from harness.report.tally import tally
    assert tally([tmp_path])["t"]["runs"] == 1


# --- run: chaos that was asked for and did not happen is unknown ---

def _outcome(valid, faults, spec_faults=("leader-kill",)):
    from harness.faults.nemesis import FaultRecord
    from harness.run import RunOutcome
    from harness.spec import RunSpec
    return RunOutcome(replace(RunSpec(), faults=spec_faults), valid, (), Path("."),
                      tuple(FaultRecord(id=f"f{i}", fault="leader-kill", group="leader", pick=0, applied=a,
                                        healed_ok=h, reason="why") for i, (a, h) in enumerate(faults)))


def test_run_with_faults_that_did_not_happen_is_unknown():
    assert _outcome(True, [(True, True)]).overall is True
    assert _outcome(True, []).overall == "unknown"  # asked for faults, the schedule came out empty
    assert _outcome(True, [(True, True), (False, False)]).overall == "unknown"  # one not applied
    assert _outcome(True, [(True, False)]).overall == "unknown"  # heal failed
    assert _outcome(False, [(False, False)]).overall is False  # a violation stays a violation
    assert _outcome(True, [], spec_faults=()).overall is True  # no chaos asked: none missing
    assert "NOT APPLIED" in _outcome(True, [(False, False)]).summary()


def test_run_exit_code_follows_the_gate_verdict(monkeypatch, capsys):
    import harness.run
    for outcome, code in ((_outcome(True, [(True, True)]), 0), (_outcome(True, [(False, False)]), 3),
                          (_outcome(False, [(True, True)]), 1), (_outcome(None, [(True, True)]), 3)):
        monkeypatch.setattr(harness.run, "run", lambda spec, progress=False, _o=outcome: _o)
        assert main(["run", "--faults", "leader"]) == code
    capsys.readouterr()


# --- clean: a retention rule ---

def test_clean_keeps_the_newest_and_every_failure(tmp_path, capsys):
    import os
    runs = tmp_path / "runs"
    for i in range(5):
        _run(runs, f"{i}", i, _verdict(i != 1))  # r-1-1 failed
    _run(runs, "9", 9, None)  # unfinished
    old = 1_000_000_000
    for p in runs.iterdir():
        os.utime(p, (old, old))
    assert main(["clean", "--root", str(tmp_path), "--keep", "2"]) == 0
    left = sorted(p.name for p in runs.iterdir())
    assert left == ["r-1-1", "r-4-4", "r-9-9"], left  # the newest 2 by name (9, 4) and the failure (1)
    assert main(["clean", "--root", str(tmp_path), "--keep", "0", "--all", "--dry-run"]) == 0
    assert len(list(runs.iterdir())) == 3 and "would delete" in capsys.readouterr().out
    assert main(["clean", "--root", str(tmp_path / "nothing-here")]) == 2


# --- the compose file publishes on loopback only ---

def test_compose_uses_the_host_network_and_its_bridge_variant_publishes_on_loopback_only():
    host = (ROOT / "compose" / "docker-compose.yml").read_text()
    assert "network_mode: host" in host and not re.search(r"^\s*ports:", host, re.M)
    assert "HOST: 127.0.0.1" in host  # every listener bound on loopback
    bridge = (ROOT / "compose" / "docker-compose.bridge.yml").read_text()
    published = re.findall(r'ports:\s*\[([^\]]*)\]', bridge)
    assert len(published) == 3 and all(p.strip().strip('"').startswith("127.0.0.1:") for p in published), published


# --- run directories: two runs of one name in one second ---

def test_run_directories_of_one_name_in_one_second_are_distinct(tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    from harness.report.rundir import new_run_dir
    with ThreadPoolExecutor(8) as pool:
        dirs = list(pool.map(lambda _: new_run_dir("same", tmp_path), range(16)))
    assert len(set(dirs)) == 16 and all((d / "logs").is_dir() for d in dirs)


# --- run --suite / certify: a signal is forwarded to the pytest child, which tears down ---

_CHILD = """
import signal, sys, time, pathlib
out = pathlib.Path(sys.argv[1])
(out / "started").write_text("x")
try:
    time.sleep(60)
except KeyboardInterrupt:
    time.sleep(1.0)  # a tear-down that takes a while: clusters stopped, JUnit XML written
    (out / "junit.xml").write_text("<testsuite/>")
    sys.exit(2)
"""

_PARENT = """
import signal, sys
from pathlib import Path
from harness.cli import _terminate
from harness.sys.pytest_child import run_pytest
signal.signal(signal.SIGTERM, _terminate)
try:
    rc = run_pytest([sys.executable, "-c", sys.argv[1], sys.argv[2]], cwd=Path("."))
except KeyboardInterrupt:  # raised again once the child has torn down, so the caller stops too
    rc = 130
sys.exit(rc)
"""


@pytest.mark.parametrize("sig, background", [("SIGTERM", False), ("SIGINT", False), ("SIGTERM", True)])
def test_a_signal_reaches_the_pytest_child_which_finishes_its_reports(tmp_path, sig, background):
    """`background`: the harness started as a shell without job control starts a background command, with SIGINT
    ignored (which a child inherits): the forwarded SIGINT must still reach the pytest child."""
    import signal
    import time
    ignore_sigint = (lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) if background else None
    parent = subprocess.Popen([sys.executable, "-c", _PARENT, _CHILD, str(tmp_path)], cwd=ROOT,
                              preexec_fn=ignore_sigint)
    deadline = time.monotonic() + 30
    while not (tmp_path / "started").exists():
        assert time.monotonic() < deadline and parent.poll() is None, "the child did not start"
        time.sleep(0.05)
    parent.send_signal(getattr(signal, sig))
    assert parent.wait(30) == 130
    assert (tmp_path / "junit.xml").exists(), "the child was cut off before writing its reports"


# --- anything unexpected is one line and unknown, never a traceback exiting 1 (violation) ---

def test_an_unexpected_exception_is_unknown_not_a_violation(monkeypatch, capsys):
    import harness.report.tally

    def boom(paths):
        raise RuntimeError("a bug\nsecond line")
    monkeypatch.setattr(harness.report.tally, "tally", boom)
    assert main(["tally", "."]) == exitcodes.UNKNOWN
    line = _one_line_error(capsys.readouterr().err)
    assert "internal error" in line and "RuntimeError: a bug" in line and "KSH_DEBUG" in line


def test_a_missing_package_names_the_install_command(monkeypatch, capsys):
    import harness.report.tally

    def missing(paths, name="confluent_kafka"):
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    monkeypatch.setattr(harness.report.tally, "tally", missing)
    assert main(["tally", "."]) == exitcodes.BAD_INPUT
    line = _one_line_error(capsys.readouterr().err)
    assert "'confluent_kafka' is not installed" in line and "scripts/install.sh" in line
    # the harness's own module missing is a bug, not the machine
    monkeypatch.setattr(harness.report.tally, "tally", lambda paths: missing(paths, "harness.nowhere"))
    assert main(["tally", "."]) == exitcodes.UNKNOWN
    assert "internal error" in _one_line_error(capsys.readouterr().err)


def test_an_unwritable_reports_dir_is_bad_input(monkeypatch, capsys):
    monkeypatch.setenv("KSH_REPORTS_DIR", "/proc/ksh-not-here")
    assert main(["run", "--suite", "basic"]) == exitcodes.BAD_INPUT  # before pytest starts
    line = _one_line_error(capsys.readouterr().err)
    assert "/proc/ksh-not-here" in line and "KSH_REPORTS_DIR" in line


def test_certify_with_rules_naming_no_rule_is_bad_input(tmp_path, capsys):
    with pytest.raises(SystemExit) as exited:  # (refused by the parser, as every malformed option is)
        main(["certify", "--client", "confluent", "--rules", " , ", "--out", str(tmp_path / "c")])
    assert exited.value.code == 2
    assert "names no rule" in _one_line_error(capsys.readouterr().err) and not (tmp_path / "c").exists()


def test_a_version_typed_with_spaces_uses_the_one_jar_cache(tmp_path):
    from harness.kafka.jars import resolve
    (tmp_path / "kafka" / "4.3.1" / "libs").mkdir(parents=True)
    (tmp_path / "kafka" / "4.3.1" / ".complete").write_text("4.3.1\n")
    for typed in (" 4.3.1", "4.3.1 ", "\t4.3.1\n"):
        dist = resolve(typed, tmp_path)
        assert dist.version == "4.3.1" and dist.libs == tmp_path / "kafka" / "4.3.1" / "libs"
    assert sorted(p.name for p in (tmp_path / "kafka").iterdir()) == ["4.3.1"]


# --- numbers: one set of rules (harness.parse) for the CLI, the plugin and the environment ---

@pytest.mark.parametrize("text", ["²", "٣", "--5", "1_0", "", " ", "1" * 19, "9" * 5000, "0x10", "1.0"])
def test_whole_numbers_refused(text):
    from harness import parse
    with pytest.raises(ValueError, match="whole number"):
        parse.whole(text)


@pytest.mark.parametrize("text", ["nan", "inf", "-1", "0", "1_0", "²", "1e999", ""])
def test_seconds_refused(text):
    from harness import parse
    with pytest.raises(ValueError, match="positive number of seconds"):
        parse.seconds(text)


def test_numbers_accepted():
    from harness import parse
    assert (parse.whole(" -7 "), parse.count("3", least=1, most=3), parse.seconds("2.5"), parse.seconds(".5")) == \
        (-7, 3, 2.5, 0.5)


@pytest.mark.parametrize("args", [["--fault-interval", "nan"], ["--seed", "²"], ["--brokers", "1" * 30]])
def test_cli_numbers_are_one_line(args, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["run", *args])
    assert exit_.value.code == 2 and _one_line_error(capsys.readouterr().err)


def test_run_suite_refuses_options_it_would_not_apply(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("KSH_REPORTS_DIR", str(tmp_path))
    assert main(["run", "--suite", "basic", "--records", "5", "--workload", "crash"]) == 2
    line = _one_line_error(capsys.readouterr().err)
    assert "--records" in line and "--workload" in line and "--suite" in line
    assert not (tmp_path / "suites").exists()


def test_clean_never_deletes_a_directory_a_live_process_holds(tmp_path):
    """A session's cluster directory (no spec.json, brokers writing inside) stays while its process lives."""
    import os
    child = subprocess.Popen([sys.executable, "-c", "import sys, time; from pathlib import Path; "
                              "from harness.report.rundir import new_run_dir; print(new_run_dir('cluster', "
                              "Path(sys.argv[1])), flush=True); time.sleep(60)", str(tmp_path)],
                             stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        held = Path(child.stdout.readline().strip())
        os.utime(held, (1_000_000_000, 1_000_000_000))
        from harness.report.clean import clean
        kept, deleted, _ = clean(tmp_path, keep=0, keep_failures=False)
        assert held in kept and held.exists() and not deleted
    finally:
        child.kill()
        child.wait()
    (tmp_path / "runs" / "latest").unlink()  # `latest` is never deleted either
    _, deleted, _ = clean(tmp_path, keep=0, keep_failures=False)
    assert deleted == [held] and not held.exists()  # once its process is gone, the rule applies


@pytest.mark.parametrize("option, message", [("bogus", "use KEY=VALUE"),
                                             ("group.id=g", "set by each test"),
                                             ("no.such.option=1", "does not apply client option no.such.option")])
def test_certify_refuses_a_client_option_before_any_test(tmp_path, capsys, option, message):
    import shutil
    if "no.such" in option and shutil.which("go") is None:
        pytest.skip("needs Go to build the franz-go driver (scripts/install.sh installs it)")
    out = tmp_path / "c"
    assert main(["certify", "--client", "franz", "--client-option", option, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err, err
    assert not out.exists()
