"""Issue 47, verdicts that pass on nothing: the matrix, `tally`, and the pytest plugin's session verdict;
and the plugin in sessions that are not the harness's (it is a global pytest entry point).

No cluster is started: matrix cells are read from files written here, tally reads run directories
written here, and the plugin runs in pytest subprocesses (pytester, or `python3 -m pytest` in a
foreign project's directory) whose tests request no cluster.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cli import main
from harness.errors import HarnessError
from tests.unit.cli.test_exitcodes import _run  # noqa: E402

pytest_plugins = ["pytester"]

FAST = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-p", "no:allure_pytest")


# ------------------------------------------------------------------ the plugin in a foreign project

FOREIGN_OK = """
import signal


def test_ok():
    assert True


def test_sigterm_is_left_alone():  # the plugin installs its SIGTERM handler only in the harness's sessions
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
"""


def _foreign_env() -> dict[str, str]:
    """The environment of a user's shell: no setting of the harness or of pytest's own."""
    return {k: v for k, v in os.environ.items()
            if not k.startswith(("KSH_", "PYTEST_"))}


def _pytest_in(project: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest", *args], cwd=project, env=_foreign_env(),
                          capture_output=True, text=True, timeout=120)


def _normalized(text: str) -> str:
    """pytest's output without what differs from run to run (timings, the plugin list, the rootdir)."""
    text = re.sub(r"\d+\.\d+s( \([0-9:]+\))?", "Ts", text)
    text = re.sub(r"=+ (.*?) =+", r"= \1 =", text)  # (pytest centres the summary line: its width varies)
    return "\n".join(line for line in text.splitlines() if not line.startswith(("plugins:", "rootdir:")))


def test_a_foreign_project_gets_nothing_from_the_plugin(tmp_path):
    """An unrelated project's `pytest` (no conftest, no option of ours): exit 0, no reports directory, no
    output of the plugin, no signal handler; the same output as with the plugin disabled."""
    (tmp_path / "test_ok.py").write_text(FOREIGN_OK)
    result = _pytest_in(tmp_path)
    out = result.stdout + result.stderr
    assert result.returncode == 0, out
    assert re.search(r"^plugins:.*kafka-share-harness", result.stdout, re.M), "the plugin was not even loaded"
    assert not (tmp_path / "reports").exists(), sorted(p.name for p in tmp_path.iterdir())
    assert "share-harness" not in _normalized(out) and "junit" not in out.lower()
    without = _pytest_in(tmp_path, "-p", "no:share_harness")
    assert _normalized(result.stdout) == _normalized(without.stdout)


SWALLOWED = """
import os
import signal
import time


def test_interrupted_inside_a_library():
    try:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(5)
    except KeyboardInterrupt as exc:
        raise RuntimeError("the library's own error") from exc


def test_after():
    pass
"""


@pytest.mark.parametrize("files, args", [
    ({"test_s.py": "import pytest\n\n\ndef test_s():\n    pytest.skip('not here')\n"}, ()),
    ({"test_x.py": "import pytest\n\n\ndef test_x():\n    pytest.xfail('known')\n"}, ()),
    ({"test_nothing.py": "X = 1\n"}, ()),
    ({"test_n.py": "import pytest\n\n\n@pytest.mark.nightly\ndef test_n():\n    pass\n",
      "pytest.ini": "[pytest]\nmarkers =\n    nightly: this project's own nightly tests\n"}, ()),
    ({"test_ok.py": FOREIGN_OK}, ("-p", "no:junitxml")),
    ({"test_w.py": SWALLOWED}, ()),
], ids=["skipped-only", "xfail-only", "nothing-collected", "own-nightly-marker", "no-junitxml", "wrapped-ctrl-c"])
def test_a_foreign_session_ends_as_it_would_without_the_plugin(tmp_path, files, args):
    """pytest's own exit status and summary, whatever the session's outcomes: the plugin's session verdict,
    deselection and interrupt handling are the harness's, not every project's."""
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    result = _pytest_in(tmp_path, *args)
    without = _pytest_in(tmp_path, *args, "-p", "no:share_harness")
    out = result.stdout + result.stderr
    assert "INTERNALERROR" not in out and "share-harness" not in _normalized(out), out
    assert result.returncode == without.returncode, (out, without.stdout)
    assert result.stdout.splitlines()[-1:] and _normalized(result.stdout.splitlines()[-1]) == \
        _normalized(without.stdout.splitlines()[-1])
    assert not (tmp_path / "reports").exists()


# ------------------------------------------------------------------ the harness's own sessions


@pytest.fixture
def reports(tmp_path, monkeypatch) -> Path:
    """Where the inner harness sessions write their reports (never the outer session's reports/)."""
    monkeypatch.setenv("KSH_REPORTS_DIR", str(tmp_path / "ksh-reports"))
    return tmp_path / "ksh-reports"


def _harness(pytester: pytest.Pytester, *args: str, **files: str) -> pytest.RunResult:
    pytester.makepyfile(**files)
    return pytester.runpytest_subprocess(*FAST, *args, timeout=120)


def _no_test_passed(result: pytest.RunResult, *counts: str) -> None:
    out = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED, out
    assert "Traceback" not in out and "INTERNALERROR" not in out, out
    [line] = [line for line in out.splitlines() if line.startswith("share-harness:")]
    assert line.startswith("share-harness: no test passed: ") and "(use --ksh-allow-empty to accept)" in line, line
    for count in counts:
        assert count in line, line


XFAIL_FIRST = "import pytest\n\n\ndef test_x():\n    pytest.xfail('the thing is known to be broken')\n"
XFAIL_MARKED = "import pytest\n\n\n@pytest.mark.xfail(reason='known')\ndef test_x():\n    assert False\n"


@pytest.mark.parametrize("args, files", [
    (("--ksh-profile=ci",), {"test_x": XFAIL_FIRST}),  # pytest.xfail() before anything was checked
    (("--ksh-profile=ci",), {"test_x": XFAIL_MARKED}),
    ((), {"test_x": "import pytest\n\n\ndef test_x(ksh_spec):\n    pytest.xfail('known')\n"}),  # by a fixture
    ((), {"test_x": "import pytest\n\n\n@pytest.mark.local_only\ndef test_x():\n    pytest.xfail('known')\n"}),
    (("-n", "1"), {"test_x": "import pytest\n\n\ndef test_x(ksh_spec):\n    pytest.xfail('known')\n"}),  # xdist
], ids=["option-xfail-call", "option-xfail-mark", "fixture", "marker", "xdist-fixture"])
def test_a_harness_session_of_expected_failures_only_is_not_a_pass(pytester, reports, args, files):
    """An expected failure is not a pass: a session whose only outcomes are xfails checked nothing that held
    (exit 5, one line), however the session uses the plugin (an option, a fixture, a marker, on xdist)."""
    _no_test_passed(_harness(pytester, *args, **files), "1 xfailed, 0 passed", "an expected failure is not a pass")


def test_an_expected_failure_beside_a_pass_is_a_pass_and_allow_empty_accepts_xfails_only(pytester, reports):
    result = _harness(pytester, "--ksh-profile=ci", test_x=XFAIL_FIRST, test_ok="def test_ok():\n    pass\n")
    assert result.ret == pytest.ExitCode.OK and "share-harness:" not in result.stdout.str()
    (pytester.path / "test_ok.py").unlink()
    result = pytester.runpytest_subprocess(*FAST, "--ksh-allow-empty", timeout=120)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["share-harness: no test passed: 1 xfailed, 0 passed; accepted (--ksh-allow-empty)"])


def test_a_harness_session_by_ini_key_or_by_this_projects_rootdir_uses_the_plugin(pytester, monkeypatch):
    """An ini key of the plugin, or a rootdir that is this project (suites/conftest.py, fixtures/plugin.py,
    harness/exitcodes.py), makes a session the harness's before anything is collected: the verdict on it,
    and its default JUnit XML under reports/."""
    reports = pytester.path / "out"
    monkeypatch.setenv("KSH_REPORTS_DIR", str(reports))
    pytester.makeini("[pytest]\nksh_profile = ci\n")
    _no_test_passed(_harness(pytester, test_x=XFAIL_FIRST), "1 xfailed")
    assert len(list(reports.glob("suites/*-pytest*/junit.xml"))) == 1
    (pytester.path / "tox.ini").unlink()
    for name in ("suites/conftest.py", "fixtures/plugin.py", "harness/exitcodes.py"):  # this project's shape
        (pytester.path / name).parent.mkdir(exist_ok=True)
        (pytester.path / name).write_text("# this project's layout\n")
    _no_test_passed(pytester.runpytest_subprocess(*FAST, "test_x.py", timeout=120), "1 xfailed")
    assert len(list(reports.glob("suites/*-pytest*/junit.xml"))) == 2


def test_the_repositorys_own_tests_use_the_plugin(tmp_path):
    """`pytest tests ...` in this project, no option given: the plugin is active (its JUnit XML is written)."""
    root = Path(__file__).resolve().parents[3]
    env = {**_foreign_env(), "KSH_REPORTS_DIR": str(tmp_path)}
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", *FAST, "tests/unit/cli/test_progress.py"], cwd=root,
                            env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert len(list(tmp_path.glob("suites/*-pytest*/junit.xml"))) == 1


def test_junitxml_disabled_is_not_an_internal_error(pytester, reports):
    """`pytest -p no:junitxml` has no --junitxml option at all: the plugin writes no XML, and no INTERNALERROR."""
    result = _harness(pytester, "-p", "no:junitxml", "--ksh-profile=ci", test_ok="def test_ok():\n    pass\n")
    out = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.OK and "INTERNALERROR" not in out, out
    assert not list(reports.glob("suites/*/junit.xml"))


def test_every_fixture_of_the_plugin_counts_as_using_it():
    import ksh_fixtures.plugin as plugin
    defined = {name for name, obj in vars(plugin).items()
               if getattr(obj, "_fixture_function_marker", None) or getattr(obj, "_pytestfixturefunction", None)}
    assert defined and defined <= set(plugin.FIXTURES)


# ------------------------------------------------------------------ the matrix


def _cell(tmp_path: Path, rc: int | None, areas: dict, chaos: str = "", select: str | None = None):
    from harness.certify.matrix import Cell, read_cell
    c = Cell("4.4.0", "java", tmp_path / "4.4.0" / "java", rc=rc, select=select)
    (c.out / "conformance").mkdir(parents=True)
    (c.out / "conformance" / "conformance.json").write_text(json.dumps({"areas": areas, "tests": []}))
    (c.out / "junit.xml").write_text(f"<testsuites><testsuite>{chaos}</testsuite></testsuites>")
    read_cell(c)
    return c


CHAOS_SKIPPED = ('<testcase classname="suites.chaos.test_chaos_leader" name="s1">'
                 '<skipped type="pytest.skip" message="not here"/></testcase>')
CHAOS_PASSED = '<testcase classname="suites.chaos.test_chaos_leader" name="s1"/>'


def test_a_matrix_of_pairs_that_cannot_run_is_refused_up_front(tmp_path, capsys):
    """`matrix --versions 4.1.2 --clients confluent` ran nothing and said PASS: it is refused (exit 2, one line
    naming why) before any directory is made."""
    out = tmp_path / "m"
    assert main(["matrix", "--versions", "4.1.2", "--clients", "confluent", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "would check nothing" in err[0] and "not supported on 4.1" in err[0], err
    assert not out.exists()
    from harness.certify.matrix import check_matrix_args
    check_matrix_args(["4.1.2", "4.2.2"], ["confluent"])  # one pair can run: the other is a NOT SUPPORTED cell
    check_matrix_args(["4.1.2"], ["confluent", "java"])


def test_a_cell_or_matrix_in_which_nothing_passed_is_unknown_never_a_pass(tmp_path):
    from harness.certify.matrix import CHAOS_AREA, Cell, cell_word, overall, render
    from harness.conformance.report import AREAS
    refused = Cell("4.1.2", "confluent", tmp_path / "r", areas={a: "NOT SUPPORTED" for a in (*AREAS, CHAOS_AREA)})
    assert cell_word(refused) == "NOT SUPPORTED" and refused.finished()
    assert overall([refused]) == "UNKNOWN"  # every area NOT SUPPORTED, no test ran: nothing checked
    assert not Cell("4.4.0", "java", tmp_path, areas={"ordering": "FAIL", "locks": "UNKNOWN"}).finished()
    passed = _cell(tmp_path / "p", 0, {"ordering": "PASS"}, CHAOS_PASSED)
    assert overall([refused, passed]) == "PASS"  # beside a cell that passed, a pair that cannot run is a result
    # every test skipped: pytest exit 5; the areas keep their reasons, the cell is unknown
    skipped = _cell(tmp_path / "s", 5, {"ordering": "SKIPPED", "locks": "SKIPPED"}, CHAOS_SKIPPED)
    assert set(skipped.areas.values()) == {"NOT SUPPORTED"} and cell_word(skipped) == "UNKNOWN"
    assert overall([skipped]) == "UNKNOWN" and overall([passed, skipped]) == "UNKNOWN" and not skipped.finished()
    assert any("no test passed (pytest exit 5)" in e for e in skipped.evidence)
    # known bugs only: nothing passed
    known = _cell(tmp_path / "k", 5, {"ordering": "KNOWN DEVIATION"}, CHAOS_SKIPPED)
    assert known.areas["ordering"] == "KNOWN BUG" and overall([known]) == "UNKNOWN"
    known.rc = 0
    assert cell_word(known) == "UNKNOWN"
    # a -k selection that matched nothing: every area NOT RUN
    none = _cell(tmp_path / "n", 5, {"ordering": "NOT RUN"}, select="nothing_matches")
    assert none.areas[CHAOS_AREA] == "NOT RUN" and overall([none], selected=True) == "UNKNOWN"
    selected = _cell(tmp_path / "k2", 0, {"ordering": "PASS", "locks": "NOT RUN"}, select="ordering")
    assert overall([selected], selected=True) == "PASS"
    page = render([passed, skipped])
    assert "| **The cell** (UNKNOWN when nothing in it passed) | **PASS** | **UNKNOWN** |" in page


@pytest.mark.timeout(60)
@pytest.mark.parametrize("what", ["junit-dir", "junit-fifo", "junit-not-xml", "report-fifo", "report-not-object"])
def test_a_cells_unreadable_reports_are_unknown_not_a_crash_or_a_hang(tmp_path, what):
    from harness.certify.matrix import Cell, cell_word, read_cell
    c = Cell("4.4.0", "java", tmp_path / "c", rc=0)
    (c.out / "conformance").mkdir(parents=True)
    report, junit = c.out / "conformance" / "conformance.json", c.out / "junit.xml"
    report.write_text(json.dumps({"areas": {"ordering": "PASS"}, "tests": []}))
    junit.write_text(f"<testsuites><testsuite>{CHAOS_PASSED}</testsuite></testsuites>")
    target = junit if what.startswith("junit") else report
    target.unlink()
    if what.endswith("dir"):
        target.mkdir()
    elif what.endswith("fifo"):
        os.mkfifo(target)
    else:
        target.write_text("<testsuites" if what.startswith("junit") else "[1, 2]")
    read_cell(c)
    assert cell_word(c) == "UNKNOWN" and "UNKNOWN" in c.areas.values(), (c.areas, c.evidence)
    assert c.evidence


@pytest.mark.timeout(60)
def test_a_resumed_matrix_json_that_is_a_fifo_is_one_line(tmp_path):
    from harness.certify.matrix import run_matrix
    os.mkfifo(tmp_path / "matrix.json")
    with pytest.raises(HarnessError, match="not a regular file"):
        run_matrix(["4.4.0"], ["java"], resume=tmp_path)


# ------------------------------------------------------------------ tally


def _run_dir(root: Path, name: str, verdict: dict | None, seed: int = 1) -> Path:
    return _run(root, name, seed, verdict)


def _checker(valid, name="no-loss"):
    return {"checker": name, "valid": valid, "allowances": {}}


@pytest.mark.parametrize("verdict, word, code", [
    ({"valid": True, "overall": True, "results": [_checker(True)]}, "pass", 0),
    ({"valid": True, "results": []}, "unknown", 3),  # nothing was checked
    ({"valid": True, "overall": True, "results": []}, "unknown", 3),
    ({"valid": False, "overall": True, "results": [_checker(False)]}, "fail", 1),  # overall never outranks valid
    ({"valid": True, "overall": True, "results": [_checker(True), _checker(False, "durable-state")]}, "fail", 1),
    ({"valid": True, "overall": False, "results": [_checker(True)]}, "fail", 1),
    ({"valid": True, "overall": True, "results": [_checker("unknown")]}, "unknown", 3),
    ({"valid": True, "overall": None, "results": [_checker(True)]}, "unknown", 3),
    ({"valid": 1, "overall": 1, "results": [_checker(True)]}, "unknown", 3),  # not a boolean: not true
    ({"valid": "unknown", "results": [_checker(True)]}, "unknown", 3),
], ids=["pass", "no-results", "no-results-overall", "overall-over-valid", "a-checker-failed", "overall-false",
        "checker-undecided", "overall-null", "valid-one", "valid-unknown"])
def test_tally_never_passes_a_verdict_that_checked_nothing_or_contradicts_itself(tmp_path, verdict, word, code):
    from harness.report.tally import tally
    _run_dir(tmp_path, "t", verdict)
    row = tally([tmp_path])["t"]
    assert row[word] == 1 and row["runs"] == 1, row
    assert main(["tally", str(tmp_path)]) == code


def test_tally_names_why_a_verdict_is_not_a_pass(tmp_path):
    from harness.report.tally import render, tally
    _run_dir(tmp_path, "t", {"valid": True, "results": []}, 1)
    _run_dir(tmp_path, "t", {"valid": False, "overall": True, "results": [_checker(False)]}, 2)
    text = render(tally([tmp_path]))
    assert "no checker results: nothing was checked" in text
    assert "a violation recorded anywhere is a violation" in text


@pytest.mark.parametrize("path", ["", "  "])
def test_tally_refuses_an_empty_path(tmp_path, monkeypatch, path):
    """`tally ""` would tally the current directory: refused, one line."""
    from harness.report.tally import tally
    monkeypatch.chdir(tmp_path)
    _run_dir(tmp_path, "t", {"valid": True, "overall": True, "results": [_checker(True)]})
    with pytest.raises(HarnessError, match="empty path"):
        tally([path])


@pytest.mark.timeout(60)
@pytest.mark.parametrize("name, kind", [("spec.json", "fifo"), ("verdict.json", "fifo"),
                                        ("verdict.json", "dev-zero"), ("spec.json", "dev-zero"),
                                        ("verdict.json", "dir"), ("verdict.json", "big")])
def test_tally_reads_spec_and_verdict_bounded_one_line_never_a_hang(tmp_path, monkeypatch, capsys, name, kind):
    """A fifo (which blocked forever) or a link to /dev/zero (which filled memory) where a run's spec.json or
    verdict.json should be: the command refuses with one line naming the run directory."""
    import harness.report.tally as tally_module
    run = _run_dir(tmp_path, "t", {"valid": True, "overall": True, "results": [_checker(True)]})
    (run / name).unlink()
    if kind == "fifo":
        os.mkfifo(run / name)
    elif kind == "dev-zero":
        (run / name).symlink_to("/dev/zero")
    elif kind == "dir":
        (run / name).mkdir()
    else:
        monkeypatch.setattr(tally_module, "LIMIT", 100)
        (run / name).write_text(json.dumps({"valid": True, "results": [_checker(True)] * 10}))
    with pytest.raises(HarnessError, match=f"malformed run directory {re.escape(str(run))} .*{name}"):
        tally_module.tally([tmp_path])
    assert main(["tally", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(run) in err[0], err
