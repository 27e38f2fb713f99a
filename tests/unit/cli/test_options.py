"""Issue 20, "a gate never passes what it did not check": the plugin's session verdict and option
validation (through pytester, in subprocesses, as tests/unit/cli/test_plugin.py), and RunSpec.validate.

No cluster is started: the inner test files request no cluster fixture.
"""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from harness.errors import HarnessError
from harness.settings import reproduce_command
from harness.spec import RunSpec, local_ports_needed

pytest_plugins = ["pytester"]

FAST = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-p", "no:allure_pytest")

MIXED = """
import pytest

@pytest.mark.local_only
def test_needs_local():
    pass

def test_plain():
    pass
"""

LOCAL_ONLY = """
import pytest

pytestmark = pytest.mark.local_only

def test_kill():
    pass

def test_partition():
    pass
"""

SKIPPED = """
import pytest

@pytest.mark.skip(reason="not here")
def test_a():
    pass

def test_b():
    pytest.skip("nor here")
"""

EMPTY_LINE = "share-harness: no test passed: *, 0 passed; nothing was checked (use --ksh-allow-empty to accept)"


def _run(pytester: pytest.Pytester, *args: str, files: dict[str, str] | None = None) -> pytest.RunResult:
    pytester.makepyfile(**(files or {"test_inner": MIXED}))
    return pytester.runpytest_subprocess(*FAST, *args, timeout=60)


def _one_line(result: pytest.RunResult, *fnmatch: str) -> None:
    """Exactly one share-harness line, matching `fnmatch`, and no traceback anywhere."""
    out = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in out and "INTERNALERROR" not in out, out
    lines = [line for line in out.splitlines() if line.startswith("share-harness:")]
    assert len(lines) == 1, out
    result.stdout.fnmatch_lines(list(fnmatch))


def _usage_error(result: pytest.RunResult, *words: str) -> str:
    assert result.ret == pytest.ExitCode.USAGE_ERROR, (result.ret, result.stdout.str(), result.stderr.str())
    text = result.stderr.str()
    assert "Traceback" not in text + result.stdout.str() and "INTERNALERROR" not in text, text
    errors = [line for line in text.splitlines() if line.startswith("ERROR:")]
    assert len(errors) == 1, text
    for word in words:
        assert word in errors[0], errors[0]
    return errors[0]


# ------------------------------------------------------------------ a session that checked nothing


def test_a_session_where_every_test_skipped_ends_with_no_tests_ran(pytester):
    # (a session of the harness: it uses the plugin, here by an option; a foreign project's session keeps
    # pytest's own status: tests/unit/cli/test_failclosed_verdicts.py)
    result = _run(pytester, "--ksh-profile=ci", files={"test_skipped": SKIPPED})
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    _one_line(result, "share-harness: no test passed: 2 skipped, 0 passed; nothing was checked "
                      "(use --ksh-allow-empty to accept)")


def test_ksh_allow_empty_accepts_it_on_the_command_line_or_in_the_ini(pytester):
    result = _run(pytester, "--ksh-allow-empty", files={"test_skipped": SKIPPED})
    assert result.ret == pytest.ExitCode.OK
    _one_line(result, "share-harness: no test passed: 2 skipped, 0 passed; accepted (--ksh-allow-empty)")
    pytester.makeini("[pytest]\nksh_allow_empty = true\n")
    assert pytester.runpytest_subprocess(*FAST, timeout=60).ret == pytest.ExitCode.OK


@pytest.mark.parametrize("select", [("-k", "nothing_matches"), ("-m", "chaos")])
def test_a_session_where_every_test_was_deselected_ends_with_no_tests_ran(pytester, select):
    result = _run(pytester, *select)
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    _one_line(result, "share-harness: no test passed: 2 deselected, 0 passed; nothing was checked*")


def test_a_session_that_collected_nothing_says_so(pytester):
    result = _run(pytester, "--ksh-profile=ci", files={"test_nothing": "X = 1\n"})
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    _one_line(result, "share-harness: no test passed: 0 collected, 0 passed; nothing was checked*")
    assert pytester.runpytest_subprocess(*FAST, "--ksh-allow-empty", timeout=60).ret == pytest.ExitCode.OK


def test_a_module_skipped_whole_counts_as_skipped(pytester):
    result = _run(pytester, "--ksh-profile=ci",
                  files={"test_mod": "import pytest\npytest.skip('no', allow_module_level=True)\n"})
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    _one_line(result, "share-harness: no test passed: 1 skipped, 0 passed*")


def test_one_pass_among_skips_and_deselects_is_a_pass(pytester):
    """The repo's own `pytest tests -m "not real"` is such a run: it must stay 0."""
    pytester.makepyfile(test_skipped=SKIPPED)
    result = _run(pytester, "-m", "not local_only")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.assert_outcomes(passed=1, skipped=2, deselected=1)
    assert "share-harness:" not in result.stdout.str()


def test_an_expected_failure_alone_is_not_a_pass(pytester):
    result = _run(pytester, "--ksh-profile=ci",
                  files={"test_x": "import pytest\ndef test_x():\n    pytest.xfail('known, with evidence')\n"})
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    _one_line(result, "share-harness: no test passed: 1 xfailed, 0 passed; an expected failure is not a pass*")


def test_failures_keep_exit_1(pytester):
    result = _run(pytester, files={"test_f": "import pytest\ndef test_f():\n    assert False\n"
                                             "@pytest.mark.skip\ndef test_s():\n    pass\n"})
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert "share-harness:" not in result.stdout.str()


def test_collect_only_is_not_judged(pytester):
    result = _run(pytester, "--collect-only", files={"test_skipped": SKIPPED})
    assert result.ret == pytest.ExitCode.OK
    assert "share-harness:" not in result.stdout.str()


def test_only_local_only_tests_on_an_external_cluster_are_refused_up_front(pytester):
    result = _run(pytester, "--bootstrap-servers=127.0.0.1:1", files={"test_local": LOCAL_ONLY})
    _usage_error(result, "--bootstrap-servers", "process and link control",
                 "run them on the local backend (no --bootstrap-servers)")


def test_local_only_tests_deselected_leave_the_rest_to_run_on_an_external_cluster(pytester):
    pytester.makepyfile(test_local=LOCAL_ONLY)
    result = _run(pytester, "--bootstrap-servers=127.0.0.1:1", "-m", "not local_only")
    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(passed=1, deselected=3)  # the 2 local_only and test_inner's one


def test_every_selected_test_local_only_after_k_is_refused(pytester):
    result = _run(pytester, "--bootstrap-servers=127.0.0.1:1", "-k", "needs_local")
    _usage_error(result, "--bootstrap-servers", "local backend")


# ------------------------------------------------------------------ options validated once, at configure time


@pytest.mark.parametrize("option, words", [
    ("--ksh-seed=--5", ("--ksh-seed", "'--5'", "whole number")),
    ("--ksh-seed=²", ("--ksh-seed", "'²'", "whole number")),
    ("--ksh-seeds=²", ("--ksh-seeds", "'²'", "from 1 to 1,000")),
    ("--fault-seed=--3", ("--fault-seed", "'--3'", "whole number")),
    ("--fault-seed=٣", ("--fault-seed", "'٣'")),
    ("--ksh-spark-threshold=lots", ("--ksh-spark-threshold", "'lots'", "0 or more")),
    ("--ksh-spark-threshold=-5", ("--ksh-spark-threshold", "'-5'")),
    ("--kafka-version=", ("--kafka-version", "empty value")),
    ("--bootstrap-servers=", ("--bootstrap-servers", "empty value")),
    ("--kafka-version=4.0.0", ("--kafka-version", "4.0.0", "not supported", "4.4.0")),
    ("--kafka-version=9.9.9", ("--kafka-version", "9.9.9", "supported release lines")),
    ("--kafka-version=4.3.1.0", ("--kafka-version", "MAJOR.MINOR.PATCH")),
    ("--kafka-version=٤.٣.١", ("--kafka-version", "MAJOR.MINOR.PATCH")),
    ("--fault-interval=nan", ("--fault-interval", "'nan'", "positive number of seconds")),
    ("--fault-interval=inf", ("--fault-interval", "'inf'")),
    ("--fault-interval=1_0", ("--fault-interval", "'1_0'")),
    ("--fault-interval=0", ("--fault-interval", "positive")),
    ("--fault-interval=20", ("--fault-interval", "ci profile", "0 < interval <= 15", "nightly")),
    ("--bootstrap-servers=localhost", ("--bootstrap-servers", "'localhost'", "HOST:PORT")),
    ("--bootstrap-servers=a:1, b:2", ("--bootstrap-servers", "' b:2'", "without spaces")),
    ("--bootstrap-servers=a:1,,b:2", ("--bootstrap-servers", "''")),
    ("--bootstrap-servers=a:0", ("--bootstrap-servers", "1..65535")),
    ("--bootstrap-servers=a:70000", ("--bootstrap-servers", "1..65535")),
])
def test_bad_option_values_are_one_usage_error_line(pytester, option, words):
    _usage_error(_run(pytester, option), *words)


def test_nightly_profile_bounds_the_fault_interval_by_its_own_phase(pytester):
    assert _run(pytester, "--ksh-profile=nightly", "--fault-interval=20").ret == pytest.ExitCode.OK
    _usage_error(_run(pytester, "--ksh-profile=nightly", "--fault-interval=301"), "--fault-interval", "<= 300")


@pytest.mark.parametrize("ini, words", [
    ("ksh_seed = --5", ("--ksh-seed", "'--5'")),
    ("ksh_kafka_version = 4.0.0", ("--kafka-version", "not supported")),
    ("ksh_bootstrap_servers = broker-1", ("--bootstrap-servers", "HOST:PORT")),
    ("ksh_fault_interval = nan", ("--fault-interval", "'nan'")),
])
def test_bad_ini_values_are_the_same_usage_errors(pytester, ini, words):
    pytester.makeini(f"[pytest]\n{ini}\n")
    _usage_error(_run(pytester), *words)


VERSION_SPEC = """
def test_spec(ksh_spec):
    assert ksh_spec.kafka_version == "{version}", repr(ksh_spec.kafka_version)
"""


@pytest.mark.parametrize("given, version", [(" 4.3.1", "4.3.1"), ("4.2.1 ", "4.2.1"), ("\t4.4.0\t", "4.4.0")])
def test_kafka_version_is_stored_stripped(pytester, given, version):
    pytester.makepyfile(test_spec=VERSION_SPEC.format(version=version))
    result = pytester.runpytest_subprocess(*FAST, f"--kafka-version={given}", timeout=60)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()


def test_kafka_home_lifts_the_supported_line_check_but_not_the_syntax(pytester, tmp_path):
    pytester.makepyfile(test_spec=VERSION_SPEC.format(version="4.0.0"))
    ok = pytester.runpytest_subprocess(*FAST, f"--kafka-home={tmp_path}", "--kafka-version=4.0.0", timeout=60)
    assert ok.ret == pytest.ExitCode.OK, ok.stdout.str()
    bad = pytester.runpytest_subprocess(*FAST, f"--kafka-home={tmp_path}", "--kafka-version=four", timeout=60)
    _usage_error(bad, "--kafka-version", "'four'")


# ------------------------------------------------------------------ RunSpec.validate, directly


def test_runspec_stores_the_version_stripped_in_every_builder():
    assert RunSpec(kafka_version=" 4.3.1").kafka_version == "4.3.1"
    assert replace(RunSpec(), kafka_version="4.2.1 ").kafka_version == "4.2.1"
    args = reproduce_command(RunSpec(kafka_version="4.3.1 ").validate()).split()
    assert args.count("--kafka-version") == 1 and args[args.index("--kafka-version") + 1] == "4.3.1"


@pytest.mark.parametrize("servers", ["localhost:9092", "a:1,b:65535", "10.0.0.1:9092,10.0.0.2:9093",
                                     "[::1]:9092", "kafka_1.internal:29092"])
def test_runspec_accepts_bootstrap_servers(servers):
    RunSpec(bootstrap_servers=servers).validate()


@pytest.mark.parametrize("servers", ["", "localhost", "a:1,", ",a:1", "a:1, b:2", " a:1", "a:0", "a:65536",
                                     "a:-1", "a:1:2", "a:²", "http://a:1"])
def test_runspec_rejects_bootstrap_servers_in_one_line(servers):
    with pytest.raises(HarnessError, match="bootstrap-servers") as err:
        RunSpec(bootstrap_servers=servers).validate()
    assert "\n" not in str(err.value) and "HOST:PORT" in str(err.value)


def test_runspec_base_port_leaves_room_for_the_cluster():
    need = local_ports_needed(3, 0)
    assert need == 49  # Toxiproxy 1 + listeners 3*(1+3+3)+3 + links 3*4+3*2+3*2
    RunSpec(base_port=1024).validate()
    RunSpec(base_port=65536 - need).validate()
    for bad in (0, 80, 1023, 65536 - need + 1, 65535, 70000):
        with pytest.raises(HarnessError, match=rf"invalid base-port {bad}: .* use 1024\.\.{65536 - need}"):
            RunSpec(base_port=bad).validate()
    small = local_ports_needed(1, 0)
    RunSpec(brokers=1, replication_factor=1, min_insync_replicas=1, base_port=65536 - small).validate()


@pytest.mark.parametrize("interval", [math.nan, math.inf, -math.inf, 0.0, -1.0, 15.5, 1e9])
def test_runspec_rejects_fault_intervals_that_schedule_nothing(interval):
    with pytest.raises(HarnessError, match="fault-interval"):
        RunSpec(faults=("leader-kill",), fault_interval=interval).validate()


def test_runspec_fault_interval_up_to_the_phase_schedules_at_least_one_fault():
    from harness.faults.schedule import TIMINGS, generate
    for profile, phase in (("ci", TIMINGS["ci"].phase), ("nightly", TIMINGS["nightly"].phase)):
        spec = RunSpec(profile=profile, faults=("leader-kill",), fault_interval=phase).validate()
        for seed in range(20):
            assert generate(spec.faults, seed, TIMINGS[profile], spec.fault_interval), (profile, seed)


@pytest.mark.parametrize("field, value", [("seed", 1.5), ("seed", "1"), ("seed", True), ("fault_seed", 2.0),
                                          ("fault_seed", "3")])
def test_runspec_seeds_must_be_whole_numbers(field, value):
    with pytest.raises(HarnessError, match="whole number"):
        replace(RunSpec(), **{field: value}).validate()
