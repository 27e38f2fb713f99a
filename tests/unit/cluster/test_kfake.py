"""Fast tests of the kfake backend's pure parts: its version pin and checks, the spec and CLI options, the
matrix's kfake columns, the launcher's build identity, the faults it can host, and the deviations table
applied as strict expected failures (the plugin, through pytester)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.errors import HarnessError
from harness.kafka.implementations import (KFAKE_KAFKA_LEVEL, KFAKE_VERSION, KFAKE_VERSIONS, check_kfake_version,
                                           default_kafka_version, implementation)
from harness.settings import backend_args, reproduce_command
from harness.spec import RunSpec

pytest_plugins = ["pytester"]
FAST = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-p", "no:allure_pytest")


def test_the_pinned_version_is_the_launchers_go_mod_pin():
    from harness.cluster.kfake import SOURCE
    assert f"github.com/twmb/franz-go/pkg/kfake {KFAKE_VERSION}" in (SOURCE / "go.mod").read_text()
    assert KFAKE_VERSION == KFAKE_VERSIONS[0]


@pytest.mark.parametrize("bad", ["", "latest", "0.0.0", "v1", "v0.0.0-x y", "v0.0.0-2026;rm"])
def test_a_bad_kfake_version_is_one_line_naming_a_good_one(bad):
    with pytest.raises(HarnessError, match=f"invalid kfake-version .*e.g. {KFAKE_VERSION}"):
        check_kfake_version(bad)
    assert check_kfake_version(KFAKE_VERSIONS[1]) == KFAKE_VERSIONS[1]


def test_kfake_runs_at_the_kafka_api_level_it_serves():
    assert default_kafka_version("kfake") == KFAKE_KAFKA_LEVEL
    assert default_kafka_version("local") != KFAKE_KAFKA_LEVEL or KFAKE_KAFKA_LEVEL == "4.4.0"
    assert implementation("kfake", KFAKE_VERSIONS[1]) == ("kfake", KFAKE_VERSIONS[1])
    assert implementation("docker") == ("apache", None)


def test_the_spec_takes_kfake_and_refuses_what_does_not_fit_it():
    spec = RunSpec(backend="kfake", kafka_version=KFAKE_KAFKA_LEVEL, kfake_version=KFAKE_VERSIONS[1]).validate()
    assert backend_args(spec) == ["--backend", "kfake", "--kfake-version", KFAKE_VERSIONS[1]]
    assert "--backend kfake" in reproduce_command(spec) and "--kfake-version" in reproduce_command(spec)
    assert backend_args(RunSpec(backend="kfake")) == ["--backend", "kfake"]
    with pytest.raises(HarnessError, match="needs the kfake backend"):
        RunSpec(kfake_version=KFAKE_VERSIONS[1]).validate()
    with pytest.raises(HarnessError, match="backend kfake starts its own cluster"):
        RunSpec(backend="kfake", bootstrap_servers="localhost:9092").validate()
    with pytest.raises(HarnessError, match="invalid kfake-version"):
        RunSpec(backend="kfake", kfake_version="newest").validate()
    with pytest.raises(HarnessError, match="fault leader-kill needs Killable, which the kfake backend has not"):
        RunSpec(backend="kfake", faults=("leader-kill",)).validate()
    with pytest.raises(HarnessError, match="only the kfake and mock backends have: on the local backend use leader-stop"):
        RunSpec(faults=("leader-shuffle",)).validate()
    RunSpec(backend="kfake", faults=("leader-move", "consumer-kill")).validate()
    RunSpec(bootstrap_servers="localhost:9092", faults=("leader-kill",)).validate()  # external: skipped per test


def test_the_cli_defaults_to_kfakes_api_level_and_names_kfake_in_reproduce():
    from harness.cli.parser import build_parser
    from harness.cli.run import spec_from_args
    spec = spec_from_args(build_parser().parse_args(["run", "--backend", "kfake"]))
    assert spec.kafka_version == KFAKE_KAFKA_LEVEL and spec.kfake_version == KFAKE_VERSION
    spec = spec_from_args(build_parser().parse_args(["run"]))
    assert spec.kafka_version == default_kafka_version("local")


def test_the_matrix_takes_kfake_columns(tmp_path):
    from harness.sys.suites import Suites
    from harness.certify.matrix import Cell, cell_command, check_matrix_args, kfake_column, normalize_column, render
    assert normalize_column("kfake") == f"kfake@{KFAKE_VERSION}"
    assert kfake_column("4.3.1") is None
    check_matrix_args(["kfake", f"kfake@{KFAKE_VERSIONS[1]}"], ["franz"])
    with pytest.raises(HarnessError, match="invalid kfake-version"):
        check_matrix_args(["kfake@newest"], ["franz"])
    cmd = cell_command(Suites(tmp_path / "suites", tmp_path, installed=False), f"kfake@{KFAKE_VERSIONS[1]}", "java", tmp_path / "o", 3, None)
    assert cmd[cmd.index("--kafka-version") + 1] == KFAKE_KAFKA_LEVEL
    assert cmd[cmd.index("--kfake-version") + 1] == KFAKE_VERSIONS[1] and "--backend" in cmd
    assert str(tmp_path / "suites/chaos/test_chaos_moves.py") in cmd
    assert not any("test_chaos_leader" in arg for arg in cmd)  # kfake has no broker to stop
    page = render([Cell(f"kfake@{KFAKE_VERSION}", "franz", tmp_path, areas={"chaos": "PASS"})])
    assert f"franz-go kfake {KFAKE_VERSION} (not Apache Kafka" in page and "leaders moved" in page


def test_the_launcher_build_is_named_by_its_pins(tmp_path):
    from harness.cluster.kfake import SOURCE
    from harness.sys.gobuild import digest
    assert digest(SOURCE) != digest(SOURCE, ["github.com/twmb/franz-go/pkg/kfake@" + KFAKE_VERSIONS[1]])
    assert digest(SOURCE) == digest(SOURCE, [])


def test_leader_moves_are_taken_only_by_name_and_need_the_capability():
    from harness.cluster.kfake import KfakeCluster, LeaderMoves
    from harness.faults import CATALOGUE, parse_faults
    assert "leader-move" not in parse_faults("all") and "leader-shuffle" not in parse_faults("leader")
    assert parse_faults("leader-move,leader-shuffle") == ("leader-move", "leader-shuffle")
    assert CATALOGUE["leader-move"].needs == (LeaderMoves,)
    cluster = KfakeCluster(Path("/nonexistent"))
    from harness.cluster.base import Killable, Partitionable, implementation_of
    assert isinstance(cluster, LeaderMoves) and not isinstance(cluster, (Killable, Partitionable))
    assert implementation_of(cluster) == "kfake"


def test_deviations_name_their_tests_and_sentences():
    from harness.conformance.deviations import DEVIATIONS, deviation_of, deviations_for
    repo = Path(__file__).resolve().parents[3]
    from harness.kafka.implementations import MOCK
    for d in DEVIATIONS:
        known = KFAKE_VERSIONS if d.implementation == "kfake" else ("2.16.0",) if d.implementation == MOCK else ()
        assert {d.known.since, d.known.confirmed} <= set(known) and d.rule and d.seen, d
        for test in d.tests:
            path, _, name = test.rstrip("*").partition("::")
            assert (repo / path).is_file() and f"def {name.split('[')[0]}(" in (repo / path).read_text(), test
        assert deviation_of(d.tests[0], deviations_for(d.implementation, d.known.confirmed)) == d
    assert deviations_for("apache", None) == []
    moves = "suites/chaos/test_chaos_moves.py::test_leader_moves_with_every_broker_up"
    met = deviations_for("kfake", KFAKE_VERSION, "confluent")
    assert deviation_of(f"{moves}[leader-move-mix-s1]", met).name == "share-fetch-null-records"
    assert deviation_of(f"{moves}[leader-shuffle-mix-s1]", met) is None
    assert deviation_of(f"{moves}[leader-move-mix-s1]", deviations_for("kfake", KFAKE_VERSION, "franz")) is None
    # a version older than the one the harness met them on: run plainly; a newer one keeps them (not strict)
    assert deviations_for("kfake", KFAKE_VERSIONS[1]) == [] and KFAKE_VERSIONS[1] < KFAKE_VERSION
    assert deviations_for("kfake", "v9.9.9") == [d for d in DEVIATIONS if d.implementation == "kfake"]
    assert deviations_for("kfake", "not a version") == []  # nothing is assumed of what is not a version


STRICT = """
import pytest

@pytest.fixture
def broken():
    pytest.fail("the cluster did not start")

def test_deviates():
    assert 1 == 2, "the behaviour broke: EVIDENCE"

def test_fixed():
    print("what the test printed, a wall of text in a real run")

def test_other_assertion():
    assert 1 == 2, "something else broke"  # EVIDENCE in the source shown is not in the message

def test_setup_broke(broken):
    assert 1 == 2, "EVIDENCE"

def test_plain():
    pass
"""

CONFTEST = """
import harness.conformance.deviations as d
from harness.known_range import KnownRange
KNOWN = KnownRange(d.KFAKE_VERSIONS[0], d.KFAKE_VERSIONS[0])  # the version run: known there, strict
d.DEVIATIONS = tuple(d.Deviation("demo", "kfake", KNOWN, ("test_strict.py::" + name,),
                     "the sentence", "what was seen", evidence="EVIDENCE")
                     for name in ("test_deviates", "test_fixed", "test_other_assertion", "test_setup_broke"))
"""


def test_a_deviation_is_a_strict_expected_failure_of_kfake_only(pytester):
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_strict=STRICT)
    result = pytester.runpytest_subprocess(*FAST, "--backend", "kfake", "-rxXfE", timeout=60)
    # the deviation met with its evidence: xfailed; fixed: a failure naming the deviation to take off; another
    # assertion: a failure; a set-up that did not hold: an error, never the deviation
    result.assert_outcomes(xfailed=1, failed=2, errors=1, passed=1)
    out = result.stdout.str()
    assert f"kfake deviation demo (known in {KFAKE_VERSION}): what was seen" in out
    # the unexpected pass: one line naming the row to update, not what the passing test printed
    assert (f"[XPASS(strict)] deviation demo (kfake) no longer reproduces on {KFAKE_VERSION}, where it is known in "
            f"{KFAKE_VERSION}: update its row in harness/conformance/deviations.py") in out
    assert "a wall of text" not in out and "not yet confirmed" not in out
    result = pytester.runpytest_subprocess(*FAST, "--backend", "kfake", f"--kfake-version={KFAKE_VERSIONS[1]}",
                                           timeout=60)
    result.assert_outcomes(failed=2, errors=1, passed=2)  # not met on that version: every test runs plainly
    result = pytester.runpytest_subprocess(*FAST, timeout=60)
    result.assert_outcomes(failed=2, errors=1, passed=2)  # Apache Kafka: no kfake deviation applies


UNCONFIRMED_CONFTEST = CONFTEST.replace("KnownRange(d.KFAKE_VERSIONS[0], d.KFAKE_VERSIONS[0])",
                                        "KnownRange(d.KFAKE_VERSIONS[1], d.KFAKE_VERSIONS[1])")
FIXED_CONFTEST = CONFTEST.replace("KnownRange(d.KFAKE_VERSIONS[0], d.KFAKE_VERSIONS[0])",
                                  "KnownRange(d.KFAKE_VERSIONS[1], d.KFAKE_VERSIONS[1], d.KFAKE_VERSIONS[0])")


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one-process", "xdist"])
def test_a_deviation_on_a_version_newer_than_confirmed_is_expected_but_not_strict(pytester, workers):
    """Issue 73: a version newer than the row's confirmed one (a release after the table) keeps the expectation and
    says so; a pass there passes, and the summary names the row to update (on xdist, from the workers' reports).
    Any other failure stays one."""
    pytester.makeconftest(UNCONFIRMED_CONFTEST)
    pytester.makepyfile(test_strict=STRICT)
    result = pytester.runpytest_subprocess(*FAST, *workers, "--backend", "kfake", "-rxXfE", timeout=60)
    # the deviation met with its evidence: xfailed, saying where it is known; the pass: a pass; another assertion:
    # a failure; a set-up that did not hold: an error, never the deviation
    result.assert_outcomes(xfailed=1, failed=1, errors=1, passed=2)
    out = result.stdout.str()
    older, run = KFAKE_VERSIONS[1], KFAKE_VERSION
    assert f"kfake deviation demo (known in {older}, not yet confirmed on {run}): what was seen" in out
    summary = out[out.index("share-harness verdicts"):]
    assert (f"deviation demo (kfake) no longer reproduces on {run} (known in {older}, not yet confirmed on {run}): "
            f"update its row in harness/conformance/deviations.py (fixed_in {run}") in summary
    assert (f"deviation demo (kfake) reproduces on {run}, not yet confirmed there: move its confirmed to {run} in "
            "harness/conformance/deviations.py") in summary
    assert "XPASS" not in out


def test_a_deviation_fixed_before_the_version_run_is_not_expected(pytester):
    pytester.makeconftest(FIXED_CONFTEST)
    pytester.makepyfile(test_strict=STRICT)
    result = pytester.runpytest_subprocess(*FAST, "--backend", "kfake", timeout=60)
    result.assert_outcomes(failed=2, errors=1, passed=2)  # fixed on the version run: every test runs plainly
    assert "share-harness verdicts" not in result.stdout.str()


def test_a_deviation_explains_only_its_own_evidence():
    from harness.conformance.deviations import DEVIATIONS
    moves = next(d for d in DEVIATIONS if d.name == "share-fetch-null-records")
    # (a no-loss FAIL alone is not it: the run's history must hold the parse error too, issue 46 item 4;
    # tests/unit/checkers/test_oracle_excuses.py shows it met with one)
    assert not moves.explains("verdict: FAIL\n  no-loss: FAIL {...}\n  delivery-count: PASS {}")
    assert not moves.explains("verdict: FAIL\n  no-loss: FAIL {...}\n  exclusive-acquisition: FAIL {}")
    assert not moves.explains("faults not applied: leader-move-1")
    assert all(d.evidence for d in DEVIATIONS)  # none can excuse any failure at all


CLIENT_STRICT = """
import pytest

@pytest.mark.rule("ack-accept")
def test_client_deviates():
    assert 1 == 2, "the client never said so: EVIDENCE"
"""

CLIENT_CONFTEST = """
import harness.conformance.deviations as d
from harness.known_range import KnownRange
d.CLIENT_DEVIATIONS = (d.Deviation("demo-client", "confluent", KnownRange(d.client_version("confluent", None),
                                                                          d.client_version("confluent", None)),
                                   ("test_client_strict.py::test_client_deviates",), "the sentence", "what was seen",
                                   evidence="EVIDENCE"),)
"""


def test_a_clients_deviation_is_expected_by_the_suite_and_failed_by_a_certification(pytester):
    """The suite gates a broker with the client as its instrument: the client's known deviation is an expected
    failure there. A certification (a session given rules) judges the client: there the rule fails."""
    pytester.makeconftest(CLIENT_CONFTEST)
    pytester.makepyfile(test_client_strict=CLIENT_STRICT)
    result = pytester.runpytest_subprocess(*FAST, "--ksh-client", "confluent", "-rxX", timeout=60)
    result.assert_outcomes(xfailed=1)
    assert "confluent deviation demo-client" in result.stdout.str()
    result = pytester.runpytest_subprocess(*FAST, "--ksh-client", "confluent", "--ksh-rules", "ack-accept", timeout=60)
    result.assert_outcomes(failed=1)
    result = pytester.runpytest_subprocess(*FAST, "--ksh-client", "java", timeout=60)
    result.assert_outcomes(failed=1)  # another client: not its deviation


def test_client_deviations_name_their_tests_clients_and_evidence():
    from harness.certify.rules import CLIENT_RULES
    from harness.conformance.deviations import CLIENT_DEVIATIONS, client_deviations_for, deviation_of
    repo = Path(__file__).resolve().parents[3]
    for dev in CLIENT_DEVIATIONS:
        assert dev.implementation in ("confluent", "java", "franz") and dev.evidence and dev.seen, dev
        assert any(f"(rule {rule})" in dev.rule for rule in CLIENT_RULES), dev.rule  # the rule it breaks, by id
        for test in dev.tests:
            path, _, name = test.partition("::")
            assert (repo / path).is_file() and f"def {name}(" in (repo / path).read_text(), test
        assert deviation_of(dev.tests[0], client_deviations_for(dev.implementation, dev.known.since, False)) == dev
        assert client_deviations_for(dev.implementation, dev.known.since, True) == []  # certifying: the rule FAILs
        assert client_deviations_for(dev.implementation, None, False) == []  # an unknown version: nothing assumed
        assert dev.page == "docs/client-contract.md" and dev.name in (repo / dev.page).read_text()
