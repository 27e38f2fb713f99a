"""JUnit XML into the rows' statuses and the new failures: a row is "still reproduces" only on a run that shows it
(its xfail, or a failure with its own evidence), "no longer reproduces" on the plugin's words or a plain pass of its
test, and "not exercised" whenever no run could show it."""

import pytest

from harness.drift.outcomes import (BOTH, GONE, NEW, NO_VERDICT, NOT_EXERCISED, REPRODUCES, UNDECIDED, Row, Run,
                                    TestOutcome, covers, failures, parse_junit, row_status)

C = "suites/conformance/"
INVALID = f"{C}test_client_contract.py::test_a_consumer_subscribed_to_an_invalid_topic_name_is_told_at_poll"

JUNIT = f"""<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">
<testcase classname="suites.conformance.test_a" name="test_ok" file="{C}test_a.py" time="0.1" />
<testcase classname="suites.conformance.test_a" name="test_fail" file="{C}test_a.py"><failure message="AssertionError: boom&#10;assert 0">E   AssertionError: boom</failure></testcase>
<testcase classname="suites.conformance.test_a" name="test_x" file="{C}test_a.py"><skipped type="pytest.xfail" message="confluent deviation invalid-topic-unreported (known in 2.16.1): seen" /></testcase>
<testcase classname="suites.conformance.test_a" name="test_p[a]" file="{C}test_a.py"><skipped type="pytest.skip" message="nope">why</skipped></testcase>
<testcase classname="suites.conformance.test_a.TestK" name="test_m" file="{C}test_a.py" />
<testcase classname="suites.conformance.test_a" name="test_e" file="{C}test_a.py"><error message="fixture broke" /></testcase>
<testcase classname="suites.test_share_basic" name="test_b" />
</testsuite></testsuites>"""


def test_parse_junit_reads_every_outcome_and_names_tests_as_pytest_does():
    got = {t.nodeid: t for t in parse_junit(JUNIT)}
    assert got[f"{C}test_a.py::test_ok"].outcome == "passed"
    assert (got[f"{C}test_a.py::test_fail"].outcome, got[f"{C}test_a.py::test_fail"].message) == \
        ("failed", "AssertionError: boom\nassert 0")
    assert got[f"{C}test_a.py::test_x"].outcome == "xfailed"
    assert got[f"{C}test_a.py::test_x"].message.startswith("confluent deviation invalid-topic-unreported")
    assert got[f"{C}test_a.py::test_p[a]"].outcome == "skipped"
    assert got[f"{C}test_a.py::TestK::test_m"].outcome == "passed"
    assert got[f"{C}test_a.py::test_e"].outcome == "error"
    assert got["suites/test_share_basic.py::test_b"].outcome == "passed"  # no file attribute: from the class name


@pytest.mark.parametrize("text", ["not xml <", "<html><body/></html>"])
def test_parse_junit_refuses_what_is_not_a_junit_report(text):
    with pytest.raises(ValueError):
        parse_junit(text)


def test_covers_matches_as_the_deviation_table_does():
    assert covers(f"{C}t.py::test_a", f"{C}t.py::test_a[x]")
    assert covers(f"{C}t.py::test_a[x]", f"{C}t.py::test_a[x]") and not covers(f"{C}t.py::test_a[x]", f"{C}t.py::test_a[y]")
    assert covers("suites/chaos/m.py::test_l[leader-move-*", "suites/chaos/m.py::test_l[leader-move-3]")
    assert covers(f"{C}t.py", f"{C}t.py::test_b") and not covers(f"{C}t.py", f"{C}t2.py::test_b")
    assert not covers(f"{C}t.py::test_a", f"{C}t.py::test_ab")


def _client_row(**fields) -> Row:
    return Row("CLIENT_DEVIATIONS", "invalid-topic-unreported", "confluent", (INVALID,),
               explains=lambda text: "to be refused with INVALID_TOPIC_EXCEPTION" in text, **fields)


def _run(*tests: TestOutcome, client="confluent", log="", kafka="4.4.0") -> Run:
    return Run(client, "2.16.3", kafka, tests, log)


def test_an_xfail_naming_the_row_is_still_reproduces_with_its_run_and_test():
    row = _client_row()
    run = _run(TestOutcome(INVALID, "xfailed", "confluent deviation invalid-topic-unreported (known in 2.16.1 to "
                                               "2.16.2, not yet confirmed on 2.16.3): seen"))
    status = row_status(row, [run])
    assert status.status == REPRODUCES
    assert status.evidence == (f"confluent 2.16.3 on Kafka 4.4.0: {INVALID} xfailed",)
    assert failures([run], [row]) == []


def test_the_plugins_own_xfail_reason_is_recognized():
    """The words the plugin writes (`Deviation.reason_on`, or `reason`), not a copy of them."""
    from harness.conformance.deviations import CLIENT_DEVIATIONS
    from harness.drift.tables import deviation_row
    for deviation in CLIENT_DEVIATIONS:
        row = deviation_row("CLIENT_DEVIATIONS", deviation)
        reason = deviation.reason_on(deviation.known.confirmed) if hasattr(deviation, "reason_on") else deviation.reason
        run = _run(TestOutcome(deviation.tests[0], "xfailed", reason), client=deviation.implementation)
        assert row_status(row, [run]).status == REPRODUCES, deviation.name


@pytest.mark.parametrize("test, log", [
    (TestOutcome(INVALID, "failed", "[XPASS(strict)] deviation invalid-topic-unreported (confluent) no longer "
                                    "reproduces on 2.16.2, where it is known in 2.16.1 to 2.16.2: update its row"), ""),
    (TestOutcome(INVALID, "failed", "[XPASS(strict)] confluent no longer shows the deviation "
                                    "invalid-topic-unreported (listed as expected)"), ""),
    (TestOutcome(INVALID, "passed"), "deviation invalid-topic-unreported (confluent) no longer reproduces on 2.16.3 "
                                     "(known in 2.16.1 to 2.16.2, not yet confirmed on 2.16.3): update its row"),
    (TestOutcome(INVALID, "passed"), ""),  # a plain pass of its test with its client: not there any more
])
def test_the_plugins_words_or_a_plain_pass_are_no_longer_reproduces_and_no_failure(test, log):
    row, run = _client_row(), _run(test, log=log)
    assert row_status(row, [run]).status == GONE
    assert failures([run], [row]) == []


def test_a_failure_with_the_rows_evidence_on_a_version_it_does_not_list_reproduces():
    row = _client_row()
    run = _run(TestOutcome(INVALID, "failed", "AssertionError: to be refused with INVALID_TOPIC_EXCEPTION"))
    assert row_status(row, [run]).status == REPRODUCES
    assert failures([run], [row]) == []


def test_a_failure_of_another_kind_is_undecided_and_newly_fails():
    row = _client_row()
    run = _run(TestOutcome(INVALID, "failed", "AssertionError: the broker never answered"))
    assert row_status(row, [run]).status == UNDECIDED
    [failure] = failures([run], [row])
    assert (failure.kind, failure.nodeid, failure.line) == (NEW, INVALID, "AssertionError: the broker never answered")


def test_an_intermittent_rows_pass_is_no_news():
    assert row_status(_client_row(intermittent=True), [_run(TestOutcome(INVALID, "passed"))]).status == UNDECIDED


def test_one_reproduction_outranks_a_pass_elsewhere():
    row = Row("CLIENT_DEVIATIONS", "r", "confluent", (f"{C}a.py::t1", f"{C}a.py::t2"))
    run = _run(TestOutcome(f"{C}a.py::t1", "passed"), TestOutcome(f"{C}a.py::t2", "xfailed", "confluent deviation r: x"))
    status = row_status(row, [run])
    assert status.status == REPRODUCES
    assert status.evidence == (f"confluent 2.16.3 on Kafka 4.4.0: {C}a.py::t2 xfailed",
                               f"but no longer reproduces: confluent 2.16.3 on Kafka 4.4.0: {C}a.py::t1 passed")


def test_rows_no_run_could_show_are_not_exercised_and_say_why():
    run = _run(TestOutcome(INVALID, "xfailed", "confluent deviation invalid-topic-unreported: x"))
    franz = Row("CLIENT_DEVIATIONS", "authentication-unreported", "franz", (INVALID,))
    kfake = Row("DEVIATIONS", "by-duration-read-as-latest", "kfake", (INVALID,))
    java_only = Row("DEVIATIONS", "x", "apache", (INVALID,), clients=("java",))
    unselected = Row("CLIENT_DEVIATIONS", "other", "confluent", (f"{C}test_other.py::test_o",))
    for row, why in ((franz, "franz client"), (kfake, "runs Apache Kafka"), (java_only, "java only"),
                     (unselected, "none of its tests ran")):
        status = row_status(row, [run])
        assert status.status == NOT_EXERCISED and why in status.evidence[0], (row.name, status)
    assert row_status(_client_row(), []).status == NOT_EXERCISED  # no run at all: never "still reproduces"


def test_a_known_bug_is_judged_by_its_file_only_on_a_release_it_is_expected_on():
    bug = Row("KNOWN_BUGS", "added-partitions-start-at-latest", "apache", (f"{C}test_partitions_added.py",),
              expected=lambda v: v.startswith("4.3."), by_file=True)
    test = f"{C}test_partitions_added.py::test_new_partitions_are_consumed_from_offset_zero[latest]"
    xfail = TestOutcome(test, "xfailed", "Kafka 4.1 to 4.3 deviate from KIP-932 here: ...")
    assert row_status(bug, [_run(xfail, kafka="4.4.0")]).status == NOT_EXERCISED
    assert row_status(bug, [_run(xfail, kafka="4.3.2")]).status == REPRODUCES
    passed = TestOutcome(test, "passed")
    assert row_status(bug, [_run(passed, kafka="4.3.2")]).status == GONE
    named = TestOutcome(test, "xfailed", "kfake deviation added-partitions-start-at-latest: x")  # another row's
    assert row_status(bug, [_run(named, kafka="4.3.2")]).status == UNDECIDED
    chaos = Row("KNOWN_BUGS", "state-start-offset-regressed", "apache", unexercisable="chaos runs only")
    assert row_status(chaos, [_run(xfail, kafka="4.3.2")]).evidence[0].endswith("chaos runs only")


def test_failures_against_a_baseline():
    a, b, c, d = (f"{C}a.py::t{i}" for i in range(4))
    run = _run(TestOutcome(a, "failed", "A"), TestOutcome(b, "failed", "B"), TestOutcome(c, "error", "C"),
               TestOutcome(d, "failed", "worker 'gw1' crashed while running 'x'"))
    base = {"confluent": (TestOutcome(a, "failed"), TestOutcome(b, "passed"))}
    got = {f.nodeid: f for f in failures([run], [], base)}
    assert got[a].kind == BOTH and got[b].kind == NEW and got[b].note == "tested set: passed"
    assert got[c].kind == NEW and got[c].note == "tested set: not in the baseline"
    assert got[d].kind == NO_VERDICT
    inconclusive = _run(TestOutcome(a, "failed", "harness.conformance.outcomes.Inconclusive: INCONCLUSIVE (the "
                                                 "behaviour was not exercised): the consumer was handed stale copies"))
    assert [(f.kind, f.note) for f in failures([inconclusive], [], base)] == [(NO_VERDICT, "its set-up did not hold")]
    assert {f.kind for f in failures([run], [], None)} == {NEW, NO_VERDICT}
    assert all(f.note == "no baseline run given to compare with" for f in failures([run], []) if f.kind == NEW)
    other_client = {f.nodeid: f for f in failures([run], [], {"java": ()})}
    assert other_client[a].kind == NEW  # a baseline of another client says nothing of this run
    of_tested_set = Run("confluent", "2.16.2", "4.4.0", run.outcomes, moved=())  # its own baseline
    assert {f.nodeid: f.kind for f in failures([of_tested_set], [])} == {a: BOTH, b: BOTH, c: BOTH, d: NO_VERDICT}


def test_every_row_of_the_live_tables_gets_a_status():
    """The tables as they are now (their wording may change): every row judged without error, none reproducing on
    a run that passed everything."""
    from harness.drift.tables import table_rows
    rows = table_rows()
    assert {r.table for r in rows} == {"DEVIATIONS", "CLIENT_DEVIATIONS", "KNOWN_BUGS"}
    tests = tuple(TestOutcome(t, "passed") for r in rows for t in r.tests if "::" in t and not t.endswith("*"))
    statuses = [row_status(r, [_run(*tests, client=c, kafka="4.4.0") for c in ("confluent", "java")]) for r in rows]
    assert REPRODUCES not in {s.status for s in statuses}


def test_a_reason_every_run_shares_is_said_once_and_another_names_its_runs():
    row = Row("KNOWN_BUGS", "k", "apache", (f"{C}a.py",), expected=lambda v: v == "4.3.2", by_file=True)
    runs = [_run(kafka="4.4.0"), _run(kafka="4.3.2"), _run(client="java", kafka="4.4.0")]
    status = row_status(row, runs)
    assert status.status == NOT_EXERCISED
    assert status.evidence == ("not expected on Kafka 4.4.0 (before it or fixed there) (confluent 2.16.3 on Kafka "
                               "4.4.0, java 2.16.3 on Kafka 4.4.0)",
                               "none of its tests ran (or all were skipped) (confluent 2.16.3 on Kafka 4.3.2)")
    kfake = row_status(Row("DEVIATIONS", "d", "kfake", (f"{C}a.py::t",)), runs)
    assert kfake.evidence == ("a deviation of kfake; the drift job runs Apache Kafka",)
