"""Certificates against the published ones, the page, and the job's option checks and exit code."""

import json

import pytest

from harness import exitcodes
from harness.drift import main as drift
from harness.drift.certs import CertDrift, compare, published
from harness.drift.outcomes import NEW, NOT_EXERCISED, REPRODUCES, Failure, Row, RowStatus, Run, TestOutcome
from harness.drift.render import Page, cell, render
from harness.drift.versions import Moved
from harness.errors import HarnessError


def _cert(verdict, **rules):
    return {"verdict": verdict, "client": "confluent-kafka", "client_version": "2.16.2", "kafka_version": "4.4.0",
            "rules": [{"rule": r, "result": v} for r, v in rules.items()]}


def test_compare_lists_changed_rules_and_those_newly_failing():
    got = compare("confluent", _cert("NOT CERTIFIED", a="pass", b="fail", c="pass"),
                  _cert("NOT CERTIFIED", a="fail", b="fail", c="not-supported", d="pass"))
    assert got.changed == (("a", "pass", "fail"), ("c", "pass", "not-supported"), ("d", "-", "pass"))
    assert got.newly_failed == ("a",) and got.decided
    assert got.tested == "NOT CERTIFIED (confluent-kafka 2.16.2 on Kafka 4.4.0)"


def test_a_certification_without_a_verdict_decides_nothing():
    assert not compare("java", None, _cert("UNKNOWN")).decided
    missing = compare("java", _cert("CERTIFIED"), None, "certify exit 2")
    assert not missing.decided and missing.newest == "not certified: certify exit 2" and missing.changed == ()


def test_published_takes_the_newest_certificate_of_the_client_without_options(tmp_path):
    for name, verdict in (("20261128-100000-confluent", "OLD"), ("20261129-100000-confluent", "NEW"),
                          ("20261130-100000-confluent-max.poll.records-1", "OPTION"), ("20261130-100000-java", "J")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "certificate.json").write_text(json.dumps({"verdict": verdict}))
    assert published(tmp_path, "confluent")[0] == {"verdict": "NEW"}
    assert published(tmp_path, "spring")[0] is None
    (tmp_path / "20261201-100000-spring").mkdir()
    (tmp_path / "20261201-100000-spring" / "certificate.json").write_text("{")
    assert published(tmp_path, "spring")[0] is None and "cannot be read" in published(tmp_path, "spring")[1]


def _page(**parts):
    return Page("2026-12-01 00:00 UTC", "python scripts/drift.py --clients confluent", "9 min",
                [Moved("Kafka 4.3", "4.3.1", "4.3.2"), Moved("Kafka 4.4", "4.4.0", "4.4.0"),
                 Moved("franz-go", "v1.22.2", None, "the Go module proxy could not be asked")], **parts)


def test_the_page_says_what_ran_moved_and_was_not_resolved():
    run = Run("confluent", "2.16.2", "4.4.0", (TestOutcome("t::a", "passed"), TestOutcome("t::b", "xfailed")),
              moved=("Kafka 4.4.1, a release the harness does not know",))
    tested = Run("java", "4.4.0", "4.4.0", (TestOutcome("t::a", "passed"),), moved=())
    rerun = Run("franz", "v9", "4.4.0", (TestOutcome("t::a", "failed"),), moved=("franz v1 -> v9",),
                baseline=(TestOutcome("t::a", "passed"),), baseline_note="the same tests on the tested set: franz v1")
    row = Row("CLIENT_DEVIATIONS", "invalid-topic-unreported", "confluent", known="known in 2.16.1")
    text = render(_page(runs=[run, tested, rerun], rows=[RowStatus(row, REPRODUCES, ("confluent 2.16.2 on Kafka 4.4.0: t::b xfailed",)),
                                          RowStatus(Row("KNOWN_BUGS", "k", "apache"), NOT_EXERCISED, ("why",))],
                        not_run=["the clients java (--clients confluent)"],
                        certs=[CertDrift("confluent", "NOT CERTIFIED (x)", "NOT CERTIFIED (y)", (("a", "pass", "fail"),),
                                         ("a",), True)]))
    assert "    python scripts/drift.py --clients confluent" in text and "2026-12-01 00:00 UTC" in text
    assert ("- conformance with confluent 2.16.2 on Kafka 4.4.0 (moved under it: Kafka 4.4.1, a release the harness "
            "does not know): 1 passed, 1 xfailed") in text
    assert "- conformance with java 4.4.0 on Kafka 4.4.0 (nothing it uses moved: a run of the tested set): 1 passed" in text
    assert "  - its failures no row explains, run again: the same tests on the tested set: franz v1: 1 passed" in text
    assert "| Kafka 4.3 | 4.3.1 | 4.3.2 | **moved** |" in text and "| Kafka 4.4 | 4.4.0 | 4.4.0 | same |" in text
    assert "not resolved: the Go module proxy could not be asked | **not resolved** |" in text
    assert "| invalid-topic-unreported (confluent) | CLIENT_DEVIATIONS | known in 2.16.1 | **still reproduces** |" in text
    assert "| k (apache) | KNOWN_BUGS |  | not exercised | why |" in text
    assert "- not run: the clients java (--clients confluent)" in text
    assert "- certify confluent: rule `a` fails on the newest set" in text and "a: pass -> fail" in text


def test_the_page_never_says_nothing_fails_of_what_did_not_run():
    assert "Nothing was run, so nothing is known to fail." in render(_page())
    assert "No test that ran" not in render(_page())
    incomplete = Run("confluent", "2.16.2", "4.4.0", (), why="pytest exit 3")
    assert "some runs are incomplete" in render(_page(runs=[incomplete]))
    failing = render(_page(runs=[incomplete], failures=[Failure("r", "t::a", "boom | bang", NEW, "tested set: passed")]))
    assert "Newly fails:" in failing and "- `t::a` (r): boom \\| bang (tested set: passed)" in failing
    assert "No test that ran newly fails" not in failing


def test_cell_is_one_line_without_bare_pipes():
    assert cell("a |b\n c") == "a \\|b c"


@pytest.mark.parametrize("argv, says", [
    (["--clients", "confluent,kafka-python"], "kafka-python is not a built-in client"),
    (["--clients", ","], "(none) is not a built-in client"),
    (["--lines", "3.9"], "give supported Kafka lines"),
    (["--workers", "-1"], "--workers -1"),
    (["--tests", "'unclosed"], "cannot be split"),
    (["--tests", ""], "--tests is empty"),
    (["--baseline", "confluent"], "give CLIENT=JUNIT_XML"),
    (["--clients", "java", "--baseline", "confluent=x.xml"], "give CLIENT=JUNIT_XML"),
])
def test_bad_options_are_one_line_naming_the_fix(argv, says):
    with pytest.raises(HarnessError, match=None) as raised:
        drift.checked(drift.parse_args(argv))
    assert says in str(raised.value) and "\n" not in str(raised.value)


def test_a_baseline_that_is_not_junit_is_refused(tmp_path):
    bad = tmp_path / "b.xml"
    bad.write_text("<html/>")
    with pytest.raises(HarnessError, match="not a JUnit report"):
        drift.checked(drift.parse_args(["--baseline", f"confluent={bad}"]))
    with pytest.raises(HarnessError, match="does not exist"):
        drift.checked(drift.parse_args(["--baseline", f"confluent={tmp_path / 'none.xml'}"]))


def test_a_malformed_option_exits_2_in_one_line(capsys):
    with pytest.raises(SystemExit) as raised:
        drift.parse_args(["--workers", "two"])
    assert raised.value.code == exitcodes.BAD_INPUT
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_the_exit_code():
    run = Run("confluent", "2.16.2", "4.4.0", ())
    decided = CertDrift("c", "t", "n", decided=True)
    assert drift.verdict([run], [], [decided]) == exitcodes.PASS
    assert drift.verdict([run], [Failure("r", "t", "x", NEW)], []) == exitcodes.VIOLATION
    assert drift.verdict([run], [], [CertDrift("c", "t", "n", newly_failed=("a",), decided=True)]) == exitcodes.VIOLATION
    assert drift.verdict([Run("c", "v", "k", (), why="pytest exit 3")], [], []) == exitcodes.UNKNOWN
    assert drift.verdict([run], [], [CertDrift("c", "t", "not certified: x")]) == exitcodes.UNKNOWN


def test_the_runs_are_on_the_default_line_and_every_line_that_moved():
    moved = [Moved("Kafka 4.3", "4.3.1", "4.3.2"), Moved("Kafka 4.4", "4.4.0", "4.4.0"), Moved("Kafka 4.2", "4.2.2", "4.2.2"),
             Moved("Kafka 4.5 (a line the harness does not support yet)", "-", "4.5.0")]
    from harness.kafka.versions import DEFAULT_VERSION
    assert drift.run_lines(None, moved)[0].startswith(DEFAULT_VERSION.rsplit(".", 1)[0])
    assert "4.3.2" in drift.run_lines(None, moved) and "4.2.2" not in drift.run_lines(None, moved)
    assert drift.run_lines(["4.2"], moved) == ["4.2.2"]


def test_the_franz_and_spring_drivers_take_the_version_the_job_names(monkeypatch, tmp_path):
    """The hook the job runs the newest franz-go with (harness.clients.franz): a pin for `go get` only when it differs
    from go.mod's, and the version the driver reports."""
    from harness.clients import franz
    built = {}
    monkeypatch.setattr(franz, "build_go", lambda *a, **k: built.update(k) or tmp_path / "franzdriver")
    monkeypatch.delenv(franz.VERSION_ENV, raising=False)
    franz.build_franz_driver(tmp_path)
    assert built["pins"] == () and franz.franz_version() == franz.pinned_franz_version()
    monkeypatch.setenv(franz.VERSION_ENV, "v1.99.0")
    franz.build_franz_driver(tmp_path)
    assert built["pins"] == ("github.com/twmb/franz-go@v1.99.0",) and "main.version=v1.99.0" in built["ldflags"]
    assert franz.franz_version() == "v1.99.0"


def test_a_target_says_what_moved_under_it_and_tells_the_drivers():
    """(Kafka releases the harness knows only: another's jars would be fetched.)"""
    from harness.kafka.spring_jars import SPRING_KAFKA_VERSION
    from harness.kafka.versions import DEFAULT_VERSION
    from harness.tested_set import LOCK, go_pins
    lock = LOCK.read_text()
    found = {"franz": ["v1.0.0", "v99.0.0"], "spring": [SPRING_KAFKA_VERSION]}
    java = drift.target("java", DEFAULT_VERSION, found, lock, ())
    assert java.moved == () and java.kafka_args == ("--kafka-version", DEFAULT_VERSION) and java.env == ()
    franz = drift.target("franz", DEFAULT_VERSION, found, lock, ())
    assert franz.moved == (f"franz {go_pins()['github.com/twmb/franz-go']} -> v99.0.0",)
    assert franz.env == (("KSH_FRANZ_GO_VERSION", "v99.0.0"),) and franz.client_version == "v99.0.0"
    spring = drift.target("spring", DEFAULT_VERSION, found, lock, ("Python pytest 9 -> 10",))
    assert spring.moved == ("Python pytest 9 -> 10",) and spring.env == (("KSH_SPRING_KAFKA_VERSION", SPRING_KAFKA_VERSION),)
    import re
    newer = re.sub(r"(?m)^confluent-kafka==\S+", "confluent-kafka==99.0.0", lock)
    confluent = drift.target("confluent", DEFAULT_VERSION, found, newer, ())
    assert confluent.client_version == "99.0.0" and confluent.moved[0].endswith("-> 99.0.0")
