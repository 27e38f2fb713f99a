"""The suites ship as the package `ksh_suites` (issue 51): found the same from a clone and from a wheel, run
by a pytest child under the same settings either way, and named the same in the tables that name tests."""

from __future__ import annotations

import configparser
from pathlib import Path

import pytest

from harness.conformance.deviations import Deviation, deviation_of
from harness.errors import HarnessError
from harness.known_range import KnownRange
from harness.sys import suites
from harness.sys.suites import INSTALLED_INI, Suites, canonical_nodeid, locate, runnable_nodeid, suite_test_id

ROOT = Path(__file__).resolve().parents[3]


def test_in_a_clone_the_suites_are_the_repositorys_folder_and_run_in_the_repository():
    found = locate()
    assert found == Suites(ROOT / "suites", ROOT, installed=False)
    assert found.pytest_args() == []  # pyproject.toml's settings apply there
    assert found.path("conformance") == ROOT / "suites" / "conformance"
    with pytest.raises(HarnessError, match="reinstall kafka-share-harness"):
        found.path("no-such-suite")


def test_installed_suites_run_with_pyprojects_pytest_settings_and_nothing_of_the_callers(tmp_path):
    """The settings file a child of installed suites reads (-c) holds what pyproject.toml gives the suites in a
    clone; no ini file or conftest of the caller's project can reach the child."""
    tomllib = pytest.importorskip("tomllib", reason="Python 3.11+ reads pyproject.toml")
    ini = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    shipped = configparser.ConfigParser()
    shipped.read(ROOT / "suites" / INSTALLED_INI)
    pytest_section = dict(shipped["pytest"])
    assert pytest_section["addopts"] == ini["addopts"]
    assert (pytest_section["timeout"], pytest_section["junit_family"]) == (str(ini["timeout"]), ini["junit_family"])
    assert pytest_section["filterwarnings"].split("\n")[1:] == ini["filterwarnings"]
    root = tmp_path / "site-packages" / "ksh_suites"
    installed = Suites(root, tmp_path / "work", installed=True)
    assert installed.pytest_args() == ["-c", str(root / INSTALLED_INI), "--rootdir", str(root.parent),
                                       "--confcutdir", str(root)]


def test_no_suites_installed_is_one_line_naming_the_fix(monkeypatch):
    monkeypatch.setattr(suites, "clone_root", lambda: None)
    monkeypatch.setattr(suites.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(HarnessError, match="pip install kafka-share-harness"):
        locate()


def test_a_test_is_named_the_same_from_a_clone_and_installed(tmp_path):
    clone = "suites/conformance/test_locks.py::test_x[a]"
    assert canonical_nodeid(clone) == clone
    assert canonical_nodeid("ksh_suites/conformance/test_locks.py::test_x[a]") == clone
    assert canonical_nodeid("../venv/lib/python3.11/site-packages/ksh_suites/conformance/test_locks.py::test_x[a]") \
        == clone
    assert runnable_nodeid("ksh_suites/test_share_basic.py::t", tmp_path) == str(tmp_path / "ksh_suites" /
                                                                               "test_share_basic.py::t")
    assert runnable_nodeid(clone, tmp_path) == clone


def test_a_suites_test_is_named_from_its_file_whatever_the_rootdir(tmp_path):
    """`pytest --pyargs ksh_suites` from a project's own directory: the node id is relative to that rootdir, the
    name the deviation tables use comes from the file below the suites."""
    package = tmp_path / "site-packages" / "ksh_suites"
    (package / "conformance").mkdir(parents=True)
    for name in ("__init__.py", "conftest.py"):
        (package / name).write_text("")
    test = package / "conformance" / "test_locks.py"
    assert suite_test_id(test, "conformance/test_locks.py::test_x[a]") == "suites/conformance/test_locks.py::test_x[a]"
    repo = ROOT / "suites" / "conformance" / "test_locks.py"
    assert suite_test_id(repo, "suites/conformance/test_locks.py::t") == "suites/conformance/test_locks.py::t"
    assert suite_test_id(tmp_path / "elsewhere" / "test_y.py", "test_y.py::t") == "test_y.py::t"
    known = Deviation("d", "kfake", KnownRange("v1.0.0", "v1.0.0"), ("suites/conformance/test_locks.py::test_x[a]",),
                      "a sentence", "seen")
    assert deviation_of(suite_test_id(test, "conformance/test_locks.py::test_x[a]"), [known]) is known
    assert deviation_of(suite_test_id(test, "conformance/test_locks.py::test_y"), [known]) is None
