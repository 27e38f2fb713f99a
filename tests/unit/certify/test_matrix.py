"""The version matrix's page from its cells (harness.certify.matrix), without a cluster: each cell's words from
its conformance report and JUnit XML, UNKNOWN for a cell that did not finish, bad input in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.certify.matrix import (CHAOS_AREA, Cell, check_matrix_args, default_versions, failing_checkers, overall,
                                    read_cell, render)
from harness.errors import HarnessError

JUNIT = """<?xml version="1.0"?><testsuites><testsuite>
<testcase classname="suites.chaos.test_chaos_leader" name="test_leader_failover[leader-kill-poison-s1]"/>
{extra}
<testcase classname="suites.conformance.test_locks" name="test_x"/>
</testsuite></testsuites>"""


def cell(tmp_path: Path, rc: int, areas: dict | None, tests: list | None = None, extra: str = "") -> Cell:
    c = Cell("4.4.0", "confluent", tmp_path / "4.4.0" / "confluent", rc=rc)
    (c.out / "conformance").mkdir(parents=True)
    if areas is not None:
        (c.out / "conformance" / "conformance.json").write_text(json.dumps({"areas": areas, "tests": tests or []}))
    (c.out / "junit.xml").write_text(JUNIT.format(extra=extra))
    read_cell(c)
    return c


def test_a_cell_reads_its_areas_and_the_evidence_of_what_failed(tmp_path):
    tests = [{"test": "suites/conformance/test_locks.py::test_a", "result": "fail", "reason": "lock held 3 s",
              "run_dir": "reports/runs/x"},
             {"test": "suites/conformance/test_partitions_added.py::test_b", "result": "xfail", "reason": "latest"}]
    c = cell(tmp_path, 1, {"locks": "FAIL", "partitions-added": "KNOWN DEVIATION", "dead-letter": "SKIPPED",
                           "ordering": "PASS"}, tests)
    assert c.areas["locks"] == "FAIL" and c.areas["partitions-added"] == "KNOWN BUG"
    assert c.areas["dead-letter"] == "NOT SUPPORTED" and c.areas["ordering"] == "PASS"
    assert c.areas[CHAOS_AREA] == "PASS"
    assert any("lock held 3 s" in e and "reports/runs/x" in e for e in c.evidence)
    assert any(e.startswith("known bug") for e in c.evidence)
    page = render([c])
    assert "| 4.4.0 / confluent |" in page and "| Acquisition locks | FAIL |" in page and "lock held 3 s" in page
    assert "- Kafka 4.0.x: 4.0 is early access" in page  # a line no cell can check is named, with its reason
    assert overall([c]) == "FAIL"


def test_a_failed_or_known_bug_chaos_scenario_is_its_row(tmp_path):
    failed = '<testcase classname="suites.chaos.test_chaos_leader" name="s2"><failure message="lost 3"/></testcase>'
    assert cell(tmp_path / "a", 1, {"ordering": "PASS"}, extra=failed).areas[CHAOS_AREA] == "FAIL"
    xfail = ('<testcase classname="suites.chaos.test_chaos_leader" name="s3">'
             '<skipped type="pytest.xfail" message="start offset regressed"/></testcase>')
    c = cell(tmp_path / "b", 0, {"ordering": "PASS"}, extra=xfail)
    assert c.areas[CHAOS_AREA] == "KNOWN BUG" and overall([c]) == "PASS"


def test_a_failed_chaos_scenario_names_its_failing_checkers_and_their_first_anomalies(tmp_path):
    text = ("AssertionError: verdict: FAIL  (s2, seed 1)\n"
            "E         no-loss: PASS {'produced_ok': 300}\n"
            "E         ack-results: FAIL {'acks': 389}\n"
            "E           ack-result-missing: consumer-0's ACCEPT of t-0@5 got no result\n"
            "E           ack-result-missing: consumer-0's ACCEPT of t-0@6 got no result\n"
            "E           ack-result-missing: consumer-0's ACCEPT of t-0@7 got no result\n"
            "E         durable-state: UNKNOWN {} - the state topic could not be read\n"
            "E         group.offsets: FAIL {}\n"
            "E         history of t-0@5:\n"
            "E           #38 +4.767s producer-0 ok produce: {}\n")
    failed = ('<testcase classname="suites.chaos.test_chaos_bounce" name="s2"><failure message="verdict: FAIL">'
              f'{text}</failure></testcase>')
    c = cell(tmp_path, 1, {"ordering": "PASS"}, extra=failed)
    chaos = [e for e in c.evidence if e.startswith("fail: chaos `s2`")]
    assert chaos == ["fail: chaos `s2`: verdict: FAIL",
                     "fail: chaos `s2`: ack-results: FAIL",
                     "fail: chaos `s2`: ack-results: ack-result-missing: consumer-0's ACCEPT of t-0@5 got no result",
                     "fail: chaos `s2`: ack-results: ack-result-missing: consumer-0's ACCEPT of t-0@6 got no result",
                     "fail: chaos `s2`: durable-state: UNKNOWN - the state topic could not be read",
                     "fail: chaos `s2`: group.offsets: FAIL"]
    missing = ("faults not applied:\nverdict: UNKNOWN  (s3, seed 1)\n  chaos: UNKNOWN - leader-kill-1 NOT APPLIED: "
               "no leader\n  no-loss: PASS {}\n    lost: not a line of a failing checker\n")
    assert failing_checkers(missing) == ["chaos: UNKNOWN - leader-kill-1 NOT APPLIED: no leader"]
    not_applied = ('<testcase classname="suites.chaos.test_chaos_leader" name="s3"><failure message="faults not '
                   f'applied:">{missing}</failure></testcase>')
    c = cell(tmp_path / "u", 1, {"ordering": "PASS"}, extra=not_applied)
    assert c.areas[CHAOS_AREA] == "UNKNOWN" and overall([c]) == "UNKNOWN"
    assert "unknown: chaos `s3`: chaos: UNKNOWN - leader-kill-1 NOT APPLIED: no leader" in c.evidence
    c = cell(tmp_path / "f", 1, {"ordering": "PASS"}, extra=not_applied + failed)  # a real failure beside it
    assert c.areas[CHAOS_AREA] == "FAIL"


def test_a_scenario_whose_worker_died_is_unknown_not_a_failure(tmp_path):
    died = ('<testcase classname="suites.chaos.test_chaos_bounce" name="s4"><error message="failed on setup with '
            '&quot;worker \'gw0\' crashed while running \'suites/chaos/test_chaos_bounce.py::s4\'&quot;"/>'
            '</testcase>')  # as xdist and junitxml write it
    c = cell(tmp_path / "a", 1, {"ordering": "PASS", "locks": "FAIL"}, extra=died)
    assert c.areas[CHAOS_AREA] == "UNKNOWN" and overall([c]) == "FAIL"
    assert c.areas["ordering"] == "UNKNOWN" and c.areas["locks"] == "FAIL"  # the rest of the cell never ran
    assert any("a pytest worker died (worker 'gw0' crashed while running)" in e for e in c.evidence)
    c = cell(tmp_path / "c", 1, {"ordering": "PASS"}, extra=died)
    assert overall([c]) == "UNKNOWN" and not c.finished()
    assert any(e.startswith("unknown: chaos `s4`: the pytest worker running it died") for e in c.evidence)
    failed = '<testcase classname="suites.chaos.test_chaos_leader" name="s2"><failure message="lost 3"/></testcase>'
    assert cell(tmp_path / "b", 1, {"ordering": "PASS"}, extra=died + failed).areas[CHAOS_AREA] == "FAIL"


@pytest.mark.parametrize("rc, areas", [(2, {"ordering": "PASS"}), (0, None), (-9, {"ordering": "PASS"})])
def test_a_cell_that_did_not_finish_is_unknown_never_a_pass(tmp_path, rc, areas):
    c = cell(tmp_path, rc, areas)
    assert set(c.areas.values()) == {"UNKNOWN"} and overall([c]) == "UNKNOWN"
    assert overall([]) == "UNKNOWN"


def test_bad_input_is_one_line_before_anything_starts():
    with pytest.raises(HarnessError, match="3.9.0"):
        check_matrix_args(["3.9.0"], ["confluent"])
    with pytest.raises(HarnessError, match="unknown client"):
        check_matrix_args(["4.4.0"], ["nope"])
    with pytest.raises(HarnessError, match="at least one"):
        check_matrix_args([], ["confluent"])
    assert default_versions() == ["4.1.2", "4.2.2", "4.3.1", "4.4.0"]


def test_a_client_that_cannot_talk_to_a_release_is_not_supported_there_with_the_reason(tmp_path):
    from harness.sys.suites import Suites
    from harness.certify.matrix import run_cell
    c = run_cell("4.1.2", "confluent", tmp_path / "cell")  # no pytest child: nothing to start
    assert set(c.areas.values()) == {"NOT SUPPORTED"} and c.rc is None
    assert "not supported on 4.1" in c.evidence[0] and "--client java" in c.evidence[0]


def test_an_area_that_ran_nothing_is_unknown_unless_tests_were_selected(tmp_path):
    c = cell(tmp_path, 0, {"ordering": "PASS", "locks": "NOT RUN"})
    assert c.areas["locks"] == "NOT RUN"
    assert overall([c]) == "UNKNOWN" and overall([c], selected=True) == "PASS"


def test_a_resumed_matrix_keeps_its_finished_cells_and_runs_the_rest(tmp_path, monkeypatch):
    from harness.certify import matrix
    done = Cell("4.3.1", "java", tmp_path / "4.3.1" / "java", rc=0, areas={"ordering": "PASS", CHAOS_AREA: "PASS"})
    unfinished = Cell("4.4.0", "java", tmp_path / "4.4.0" / "java", rc=-9, areas={"ordering": "UNKNOWN"})
    other_seed = Cell("4.2.2", "java", tmp_path / "4.2.2" / "java", rc=0, areas={"ordering": "PASS"}, seed=2)
    matrix.write_matrix([done, unfinished, other_seed], tmp_path)
    ran = []

    def fake_run(version, client, out, seed, select, workers):
        ran.append((version, client, workers))
        return Cell(version, client, out, rc=0, areas={"ordering": "PASS", CHAOS_AREA: "PASS"}, seed=seed)
    monkeypatch.setattr(matrix, "run_cell", fake_run)
    cells, page = matrix.run_matrix(["4.2.2", "4.3.1", "4.4.0"], ["java"], resume=tmp_path, workers=2)
    assert ran == [("4.2.2", "java", 2), ("4.4.0", "java", 2)]  # another seed's cell and the unknown one again
    assert [c.version for c in cells] == ["4.2.2", "4.3.1", "4.4.0"] and page == tmp_path / "matrix.md"
    assert json.loads((tmp_path / "matrix.json").read_text())["overall"] == "PASS"


def test_resume_and_workers_bad_input_is_one_line(tmp_path):
    from harness.certify import matrix
    with pytest.raises(HarnessError, match="no matrix.json there"):
        matrix.run_matrix(["4.4.0"], ["java"], resume=tmp_path)
    (tmp_path / "matrix.json").write_text("{}")
    with pytest.raises(HarnessError, match="not a matrix's"):
        matrix.run_matrix(["4.4.0"], ["java"], resume=tmp_path)
    with pytest.raises(HarnessError, match="invalid --workers 0"):
        matrix.run_matrix(["4.4.0"], ["java"], workers=0)


def test_a_cell_on_workers_runs_whole_files_per_worker(tmp_path):
    from harness.sys.suites import Suites
    from harness.certify.matrix import cell_command
    cmd = cell_command(Suites(tmp_path / "suites", tmp_path, installed=False), "4.4.0", "java", tmp_path / "out", 1, None, workers=2)
    assert cmd[cmd.index("-n") + 1] == "2" and cmd[cmd.index("--dist") + 1] == "loadfile"
    assert "-n" not in cell_command(Suites(tmp_path / "suites", tmp_path, installed=False), "4.4.0", "java", tmp_path / "out", 1, None)


def test_a_cell_with_an_area_not_run_is_not_finished_without_a_selection(tmp_path):
    assert not Cell("4.4.0", "java", tmp_path, areas={"ordering": "NOT RUN", "locks": "PASS"}).finished()
    assert Cell("4.4.0", "java", tmp_path, areas={"ordering": "NOT RUN", "locks": "PASS"}, select="locks").finished()
    # a selection that ran nothing passed nothing: unknown, run again on --resume
    assert not Cell("4.4.0", "java", tmp_path, areas={"ordering": "NOT RUN"}, select="ordering").finished()
    assert not Cell.from_json({"version": "4.4.0", "client": "java", "out": str(tmp_path)}).seed  # none recorded


def test_the_page_names_no_directory_of_the_machine_that_wrote_it(tmp_path, monkeypatch):
    """A matrix page is published (docs/matrix/): a cell's report and log are named relative to the page's
    directory, a run's directory relative to the reports root; never the writer's absolute paths."""
    monkeypatch.setenv("KSH_REPORTS_DIR", str(tmp_path / "reports"))
    run = tmp_path / "reports" / "runs" / "20261129-test_a"
    run.mkdir(parents=True)
    tests = [{"test": "suites/conformance/test_locks.py::test_a", "result": "fail", "reason": "lock held 3 s",
              "run_dir": str(run)}]
    page = render([cell(tmp_path / "reports" / "matrix" / "m", 1, {"locks": "FAIL"}, tests)])
    assert str(tmp_path) not in page, page
    assert "(reports/runs/20261129-test_a)" in page and "log: `4.4.0/confluent/pytest.log`" in page
