"""benchmarks/ci_times.py: per test file totals from a JUnit XML, with a baseline beside them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[3] / "benchmarks" / "ci_times.py"

XML = """<?xml version="1.0"?><testsuites><testsuite>
<testcase classname="tests.test_a" name="t1" time="10.5"/>
<testcase classname="tests.test_a" name="t2" time="4.5"/>
<testcase classname="suites.chaos.test_b" name="t3" time="60"><properties>
<property name="time_cluster" value="20"/><property name="time_client" value="10"/>
<property name="time_wait" value="15"/><property name="time_check" value="5"/></properties></testcase>
</testsuite></testsuites>"""


def test_totals_per_file_slowest_first_with_the_ratio_to_a_baseline(tmp_path):
    now, before = tmp_path / "now.xml", tmp_path / "before.xml"
    now.write_text(XML)
    before.write_text(XML.replace('time="60"', 'time="120"'))
    out = subprocess.run([sys.executable, str(SCRIPT), str(now), "--baseline", str(before)],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    assert "suites/chaos/test_b.py" in out[0] and "60.0 s" in out[0] and "ratio 0.50" in out[0]
    assert "tests/test_a.py" in out[1] and "15.0 s" in out[1] and "2 tests" in out[1]
    assert "total: 1.2 min" in out[2] and "ratio 0.08" in out[2]  # no wall time recorded: the tests' total (goal 15 min)


def test_the_ratio_is_of_the_sessions_wall_time_when_recorded(tmp_path):
    """With pytest-xdist workers the tests' total exceeds the wall time, which is what CI waits for."""
    now = tmp_path / "now.xml"
    now.write_text(XML.replace("<testsuite>", '<testsuite time="36">'))
    out = subprocess.run([sys.executable, str(SCRIPT), str(now)], capture_output=True, text=True,
                         check=True).stdout.splitlines()
    assert "total: 1.2 min of tests, 3 tests, in 0.6 min of pytest" in out[2] and "ratio 0.04" in out[2]


def test_a_per_test_table_of_the_files_named(tmp_path):
    """--tests chaos: each test of a file whose module path holds the word, slowest first (issue 53)."""
    now = tmp_path / "now.xml"
    now.write_text(XML)
    out = subprocess.run([sys.executable, str(SCRIPT), str(now), "--tests", "chaos"], capture_output=True,
                         text=True, check=True).stdout.splitlines()
    at = next(i for i, line in enumerate(out) if line.startswith("per test (chaos): 1 tests"))
    assert out[at + 1].split() == ["seconds", "cluster", "client", "workload", "wait", "check", "rest",
                                "test"]
    assert out[at + 2].split() == ["60.0", "s", "20.0", "10.0", "0.0", "15.0", "5.0", "10.0",
                                "suites.chaos.test_b::t3"]
    assert "cluster 33%, client 17%, workload 0%, wait 25%, check 8%, rest 17%" in out[at + 3] and len(out) == at + 4


def test_a_test_without_kinds_shows_dashes(tmp_path):
    now = tmp_path / "now.xml"
    now.write_text(XML)
    out = subprocess.run([sys.executable, str(SCRIPT), str(now), "--tests", "test_a"], capture_output=True,
                         text=True, check=True).stdout.splitlines()
    at = next(i for i, line in enumerate(out) if line.startswith("per test (test_a): 2 tests"))
    assert out[at + 2].split()[:8] == ["10.5", "s", "-", "-", "-", "-", "-", "-"] and len(out) == at + 4


def test_a_missing_xml_is_one_line_naming_the_fix(tmp_path):
    proc = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path / "none.xml")], capture_output=True, text=True)
    assert proc.returncode == 2 and "run .ci/run first" in proc.stderr and "Traceback" not in proc.stderr
