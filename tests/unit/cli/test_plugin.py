"""Fast tests of the pytest plugin (fixtures/plugin.py) through pytester, in subprocesses.

The inner test files request no cluster fixture, so nothing is started.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

# Unrelated plugins are kept out of the inner runs so each takes a fraction of a second;
# share_harness itself is still loaded through its pytest11 entry point, as installed.
FAST = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-p", "no:allure_pytest")

INNER = """
import pytest

@pytest.mark.local_only
def test_needs_local():
    pass

def test_plain():
    pass
"""


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    pytester.makepyfile(test_inner=INNER)
    return pytester.runpytest_subprocess(*FAST, *args, timeout=60)


def _usage_error_text(result: pytest.RunResult) -> str:
    assert result.ret == pytest.ExitCode.USAGE_ERROR, (result.ret, result.stdout.str(), result.stderr.str())
    text = result.stderr.str()
    assert "Traceback" not in text
    return text


def test_plugin_is_loaded(pytester):
    result = _run(pytester, "--help")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*Kafka share-group harness*", "*--ksh-profile*", "*--kafka-version*"])


def test_bogus_profile_is_usage_error_listing_valid_profiles(pytester):
    text = _usage_error_text(_run(pytester, "--ksh-profile=bogus"))
    assert "--ksh-profile" in text and "'bogus'" in text
    assert "ci" in text and "nightly" in text


def test_bogus_profile_from_ini_is_usage_error(pytester):
    pytester.makeini("[pytest]\nksh_profile = weekly\n")
    text = _usage_error_text(_run(pytester))
    assert "'weekly'" in text and "ci, nightly" in text


@pytest.mark.parametrize("version", ["9.9.9", "abc"])
def test_bad_kafka_version_is_usage_error(pytester, version):
    text = _usage_error_text(_run(pytester, f"--kafka-version={version}"))
    assert "--kafka-version" in text and version in text


def test_bad_seed_is_usage_error(pytester):
    text = _usage_error_text(_run(pytester, "--ksh-seed=x1"))
    assert "--ksh-seed" in text


def test_valid_options_run_plain_tests(pytester):
    result = _run(pytester, "--ksh-profile=nightly", "--kafka-version=4.3.1", "--ksh-seed=-3", "-rs")
    result.assert_outcomes(passed=2)


def test_local_only_is_skipped_with_reason_on_external_cluster(pytester):
    result = _run(pytester, "--bootstrap-servers=127.0.0.1:1", "-rs")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["SKIPPED*test_inner.py*external cluster*"])


def test_ksh_spec_fixture_reflects_options(pytester):
    # ksh_spec is a pure fixture (no cluster): it only combines options into a RunSpec
    pytester.makepyfile(test_spec="""
def test_spec(ksh_spec):
    assert ksh_spec.profile == "nightly"
    assert ksh_spec.records == 20000
    assert ksh_spec.seed == 7
    assert ksh_spec.kafka_version == "4.2.1"
    assert ksh_spec.bootstrap_servers is None
""")
    result = pytester.runpytest_subprocess(*FAST, "test_spec.py", "--ksh-profile=nightly",
                                           "--ksh-seed=7", "--kafka-version=4.2.1", timeout=60)
    result.assert_outcomes(passed=1)


@pytest.mark.parametrize("option, word", [("--faults=leader,meteor", "'meteor'"), ("--fault-seed=x", "'x'"),
                                          ("--fault-interval=-3", "'-3'")])
def test_bad_fault_options_are_usage_errors(pytester, option, word):
    text = _usage_error_text(_run(pytester, option))
    assert option.split("=")[0] in text and word in text


def test_fault_options_reach_the_spec(pytester):
    pytester.makepyfile(test_spec="""
from harness.settings import reproduce_command

def test_spec(ksh_spec):
    assert ksh_spec.faults == ("leader-stop", "leader-kill", "leader-pause", "isolate-node", "disk-fail")
    assert ksh_spec.fault_seed == 5 and ksh_spec.fault_interval == 2.5
    assert ("--faults leader-stop,leader-kill,leader-pause,isolate-node,disk-fail --fault-seed 5"
            in reproduce_command(ksh_spec))
""")
    result = pytester.runpytest_subprocess(*FAST, "--faults=leader,isolate-node", "--fault-seed=5",
                                           "--fault-interval=2.5", "test_spec.py", timeout=60)
    assert result.ret == 0, result.stdout.str()


SEEDED = """
def test_seeded(scenario_seed):
    assert isinstance(scenario_seed, int)
"""


def test_ksh_seeds_runs_a_seeded_scenario_once_per_seed(pytester):
    pytester.makepyfile(test_seeded=SEEDED)
    result = pytester.runpytest_subprocess(*FAST, "--ksh-seed=7", "--ksh-seeds=3", "-v", timeout=60)
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*test_seeded[[]s7[]] PASSED*", "*test_seeded[[]s8[]] PASSED*",
                                 "*test_seeded[[]s9[]] PASSED*"])
    text = _usage_error_text(pytester.runpytest_subprocess(*FAST, "--ksh-seeds=0", timeout=60))
    assert "--ksh-seeds" in text and "'0'" in text


KNOWN_BUG_TEST = """
from types import SimpleNamespace
from pathlib import Path

from harness.checkers import Result
from harness.spec import RunSpec
from ksh_fixtures.plugin import _OUTCOMES


def _outcome(allowances, version):
    result = Result("durable-state", True, (), {"known_bug_evidence": ["t-0@3 was accepted, but ..."]}, "", allowances)
    return SimpleNamespace(results=(result,), spec=RunSpec(kafka_version=version), run_dir=Path("/runs/x"),
                           valid=True, overall=True)


def test_met_a_known_bug(request):
    request.config.stash.setdefault(_OUTCOMES, []).append(
        (request.node.nodeid, _outcome({"state-start-offset-regressed": 2}, "4.3.1")))


def test_only_kip_allowances(request):
    request.config.stash.setdefault(_OUTCOMES, []).append(
        (request.node.nodeid, _outcome({"delivery-count-lag": 1}, "4.3.1")))
"""


def test_chaos_scenario_meeting_a_known_bug_is_an_expected_failure_with_evidence(pytester):
    """suites/chaos/conftest.py: a pass that needed a known-bug allowance is recorded as xfail."""
    chaos_conftest = Path(__file__).resolve().parents[3] / "suites" / "chaos" / "conftest.py"
    pytester.makeconftest(f"""
import importlib.util
spec = importlib.util.spec_from_file_location("chaos_conftest", r"{chaos_conftest}")
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
pytest_runtest_makereport = module.pytest_runtest_makereport
""")
    pytester.makepyfile(test_bugs=KNOWN_BUG_TEST)
    result = pytester.runpytest_subprocess(*FAST, "-rxX", timeout=60)
    result.assert_outcomes(passed=1, xfailed=1)
    result.stdout.fnmatch_lines(["*XFAIL*test_met_a_known_bug*known Kafka bug met 2 times by durable-state on 4.3.1"
                                 "*state-start-offset-regressed*Evidence: t-0@3 was accepted*"])


@pytest.mark.parametrize("option, word", [("--ksh-engine=quantum", "'quantum'"), ("--ksh-client=nope", "nope"),
                                          ("--ksh-rules=ack-accept,bogus-rule", "bogus-rule"),
                                          ("--ksh-rules=,", "no rule named"),
                                          ("--ksh-spark-threshold=-3", "-3")])
def test_bad_engine_client_and_rules_are_usage_errors_naming_the_option(pytester, option, word):
    text = _usage_error_text(_run(pytester, option))
    assert option.split("=")[0] in text and word in text


def test_client_engine_and_certification_options_are_spec_fields(pytester):
    """The spec is the only carrier: what the options say is in `ksh_spec`, and no environment
    variable is set for another module to read."""
    pytester.makepyfile(test_spec="""
import os

def test_spec(ksh_spec):
    assert ksh_spec.client == "java" and ksh_spec.check_engine == "spark" and ksh_spec.spark_threshold == 7
    assert ksh_spec.rules == ("ack-accept", "ack-reject") and ksh_spec.conformance_out == "out/conf"
    assert not any(k in os.environ for k in ("KSH_CHECK_ENGINE", "KSH_SPARK_THRESHOLD", "KSH_RULES"))
""")
    pytester.makeini("[pytest]\nksh_rules = ack-accept, ack-reject\n")
    result = pytester.runpytest_subprocess(*FAST, "--ksh-client=java", "--ksh-engine=spark",
                                           "--ksh-spark-threshold=7", "--ksh-conformance-out=out/conf", timeout=60)
    assert result.ret == 0, result.stdout.str()


def test_the_ci_profile_covers_every_value_of_every_axis_and_nightly_runs_the_product():
    from ksh_fixtures.chaos import covering
    faults, workloads = ["a", "b", "c"], ["w1", "w2", "w3", "w4", "w5"]
    combos = covering({"fault": faults, "workload": workloads})
    assert len(combos) == 5 and {f for f, _ in combos} == set(faults) and [w for _, w in combos] == workloads
    assert covering({"x": [1]}) == [(1,)]


def test_ci_leaves_out_of_leader_failover_only_workloads_another_ci_scenario_runs():
    """The leader scenarios' `ci` narrowing (issue 53) holds: each workload CI leaves out there is named, as a
    string, on a line of the file said to run it that no `nightly` mark deselects; every leader fault still runs."""
    import re

    from harness.workloads import WORKLOADS
    from ksh_fixtures.chaos import covering
    from suites.chaos import test_chaos_leader as leader
    chaos = Path(leader.__file__).parent
    for workload, name in leader.RUN_ELSEWHERE_IN_CI.items():
        # (a line's nightly parameters taken out first: what is left must still name the workload, unmarked)
        kept = [re.sub(r"pytest\.param\([^)]*nightly\)", "", ln) for ln in (chaos / name).read_text().splitlines()]
        assert any(f'"{workload}"' in ln and "nightly" not in ln for ln in kept), f"{name} does not run {workload} in CI"
    mark = leader.test_leader_failover.pytestmark[0]
    ci = mark.kwargs["ci"]["workload"]
    combos = covering({"fault": mark.kwargs["fault"], "workload": ci})
    assert {f for f, _ in combos} == set(mark.kwargs["fault"])
    assert set(ci) | set(leader.RUN_ELSEWHERE_IN_CI) == set(WORKLOADS)
    assert set(ci).isdisjoint(leader.RUN_ELSEWHERE_IN_CI) and len(ci) == len(set(ci))
    assert ("leader-pause", "churn") not in combos  # churn's leaving close() blocks for a whole pause (CI_WORKLOADS)


NIGHTLY = """
import pytest

@pytest.mark.nightly
def test_long():
    pass

def test_short():
    pass
"""


@pytest.mark.parametrize("args, ran, deselected", [((), ["test_short"], 1),
                                                   (("--ksh-profile=nightly",), ["test_long", "test_short"], 0),
                                                   (("--ksh-rules=ack-accept",), ["test_long", "test_short"], 0)])
def test_nightly_tests_are_deselected_in_the_ci_profile_only(pytester, args, ran, deselected):
    """`pytest.mark.nightly` tests run in the nightly profile and in certificates (which name their
    rules); the ci profile deselects them: reported as deselected, never as passed."""
    pytester.makepyfile(test_inner=NIGHTLY)
    result = pytester.runpytest_subprocess(*FAST, "-v", *args, timeout=60)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    passed = sorted(line.split("::")[1].split()[0] for line in result.stdout.lines if " PASSED" in line)
    assert passed == ran
    outcomes = result.parseoutcomes()
    assert outcomes.get("deselected", 0) == deselected and outcomes["passed"] == len(ran)


def test_a_session_of_nightly_tests_only_is_not_a_pass_in_ci(pytester):
    """Every test deselected as nightly checked nothing: "no tests ran", not 0."""
    pytester.makepyfile(test_inner="import pytest\n\n@pytest.mark.nightly\ndef test_long():\n    pass\n")
    result = pytester.runpytest_subprocess(*FAST, timeout=60)
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED, result.stdout.str()


ROWS_CONFTEST = """
import dataclasses
import pytest
from ksh_fixtures.plugin import CONFORMANCE_ROW_ATTR


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):  # as suites/conformance/conftest.py attaches a row
    report = (yield).get_result()
    from harness.conformance.report import Row, report_row
    settled = report_row(report)
    if settled is not None:
        setattr(report, CONFORMANCE_ROW_ATTR, list(dataclasses.astuple(Row("ordering", item.nodeid, item.name,
                                                                            *settled))))
"""


def test_a_conformance_test_whose_worker_dies_is_unknown_in_the_report(pytester, tmp_path):
    """A native abort in an xdist worker (its process gone mid-test) leaves the test's row "unknown" and
    its area UNKNOWN in the one report the controller writes: never a missing row in an area that passes."""
    pytester.makeconftest(ROWS_CONFTEST)
    pytester.makepyfile(test_inner="import os\n\ndef test_fine():\n    pass\n\n"
                                   "def test_dies():\n    os.abort()\n")
    out = tmp_path / "conf"
    result = pytester.runpytest_subprocess(*FAST, "-n", "1", "--max-worker-restart=0",
                                           "--ksh-conformance-out", str(out), timeout=120)
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    import json
    report = json.loads((out / "conformance.json").read_text())
    assert report["areas"]["ordering"] == "UNKNOWN", report
    results = {t["test"].split("::")[-1]: t["result"] for t in report["tests"]}
    assert results == {"test_fine": "pass", "test_dies": "unknown"}


def test_a_harness_session_writes_its_junit_xml_under_reports(pytester, monkeypatch):
    """Without --junitxml the plugin gives a session that uses it (here: by an option) one
    (reports/suites/<time>-pytest/junit.xml); ini ksh_junit=false turns that off; a session that does not
    use the plugin gets none (tests/unit/cli/test_failclosed_verdicts.py)."""
    pytester.makepyfile(test_inner="def test_plain():\n    pass\n")
    env_reports = pytester.path / "reports"
    monkeypatch.setenv("KSH_REPORTS_DIR", str(env_reports))
    result = pytester.runpytest_subprocess(*FAST, "--ksh-profile=ci", timeout=60)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    [xml] = list(env_reports.glob("suites/*-pytest*/junit.xml"))
    assert 'name="test_plain"' in xml.read_text()
    pytester.makeini("[pytest]\nksh_junit = false\n")
    result = pytester.runpytest_subprocess(*FAST, timeout=60)
    assert result.ret == pytest.ExitCode.OK and len(list(env_reports.glob("suites/*/junit.xml"))) == 1


SWALLOWED = """
import os
import signal
import time


def test_interrupted_inside_a_library():
    try:  # a C extension's call (confluent-kafka's Admin client) turns the KeyboardInterrupt into its own error
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(5)
    except KeyboardInterrupt as exc:
        raise RuntimeError("the library's own error") from exc


def test_after_the_interrupt():
    open("ran", "w").write("the session went on")
"""


def test_ctrl_c_stops_the_session_even_when_a_library_wrapped_the_interrupt(pytester):
    pytester.makepyfile(test_swallowed=SWALLOWED)
    result = pytester.runpytest_subprocess(*FAST, "--ksh-allow-empty", timeout=60)
    assert result.ret == pytest.ExitCode.INTERRUPTED, (result.ret, result.stdout.str()[-2000:])
    assert not (pytester.path / "ran").exists(), "the session went on after Ctrl-C"


VERDICTS = """
from types import SimpleNamespace

import pytest

from harness.spec import RunSpec
from ksh_fixtures import plugin


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_makes_a_run(request, n):
    outcome = SimpleNamespace(overall=n != 3, run_dir=f"/runs/run-{n}", spec=RunSpec(seed=n))
    request.config.stash.setdefault(plugin._OUTCOMES, []).append((request.node.nodeid, outcome))
"""


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one-process", "xdist"])
def test_the_summary_prints_every_runs_verdict_also_from_xdist_workers(pytester, workers):
    """The README's main job runs on xdist workers: the summary's verdict lines (one per run: its verdict, test and
    run directory, and the command that reproduces it) come with the tests' reports to the controller, which
    prints them; a worker's own summary is never shown."""
    pytester.makepyfile(test_verdicts=VERDICTS)
    result = pytester.runpytest_subprocess(*FAST, *workers, timeout=60)
    out = result.stdout.str()
    assert "share-harness verdicts" in out, out
    for n in (1, 2, 3, 4):
        word = "FAIL" if n == 3 else "PASS"
        assert f"test_verdicts.py::test_makes_a_run[{n}]  /runs/run-{n}" in out, out
        assert any(line.startswith(word) and f"run-{n}" in line for line in out.splitlines()), out
        assert any("reproduce: python3 -m pytest" in line and f"test_makes_a_run[{n}]" in line and f"--ksh-seed {n}" in line
                   for line in out.splitlines()), out
