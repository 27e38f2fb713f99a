"""Where the suites are, and how a pytest child runs them the same from a clone and from an installed wheel.

The suites are the package `ksh_suites`: the repository's `suites/` folder, installed under that name (as
`fixtures/` is `ksh_fixtures`; setup.py maps both). In a clone (`pip install -e .`) the package is the folder
itself and a child runs in the repository, under its pyproject.toml's pytest settings. From a wheel the suites
are in site-packages, far from any ini file: the child runs in the caller's directory (its reports/ there) and
reads the same settings from the package's own file (`INSTALLED_INI`, with -c; a unit test holds it equal to
pyproject.toml's), with the rootdir above the package so that node ids read `ksh_suites/...` (`suite_test_id` and `canonical_nodeid`
make both spellings one, `suites/...`, for the tables that name tests).
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

from harness.errors import HarnessError

PACKAGE = "ksh_suites"
#: The suites' pytest settings when installed (pyproject.toml's [tool.pytest.ini_options] in a clone), a file of
#: the package: the per-test timeout, JUnit XML that keeps record_property and each test's file (the matrix reads
#: both), no cache written beside the suites, a known warning of PySpark's silenced.
INSTALLED_INI = "installed.ini"


@dataclass(frozen=True)
class Suites:
    root: Path  # the suites' folder: suites/ of a clone, or the installed package's
    cwd: Path  # where a pytest child of them runs
    installed: bool  # from a wheel (no repository around them)

    def path(self, name: str = "") -> Path:
        """A suite's folder or file below the root (`conformance`, `chaos/test_chaos_leader.py`); `""`: all."""
        target = self.root / name if name else self.root
        if not target.exists():
            raise HarnessError(f"{target} not found: the installed suites lack it; reinstall kafka-share-harness "
                               "(pip install --force-reinstall kafka-share-harness, or pip install -e . in a clone)")
        return target

    def pytest_args(self) -> list[str]:
        """What a child's command line adds for the suites to run as they do in a clone (nothing in one)."""
        if not self.installed:
            return []
        # -c: the package's settings, and no ini file of the caller's (pytest would search upward from the suites,
        # into a project holding the venv); --confcutdir: no conftest above the suites either
        return ["-c", str(self.root / INSTALLED_INI), "--rootdir", str(self.root.parent), "--confcutdir",
                str(self.root)]


def clone_root() -> Path | None:
    """The repository the running harness is imported from (its suites/ and pyproject.toml beside harness/), if it
    is; None for an installed harness."""
    root = Path(__file__).resolve().parents[2]
    return root if (root / "pyproject.toml").is_file() and (root / "suites" / "conftest.py").is_file() else None


def locate() -> Suites:
    """The suites of the running harness: its clone's (whatever other checkout an editable install names), else
    the installed package's; one line naming the fix where none are installed."""
    clone = clone_root()
    if clone is not None:
        return Suites(clone / "suites", clone, installed=False)
    found = importlib.util.find_spec(PACKAGE)
    locations = list(found.submodule_search_locations or ()) if found is not None else []
    if not locations:
        raise HarnessError(f"the suites are not installed (no package {PACKAGE}): pip install kafka-share-harness, "
                           "or pip install -e . in a clone of the repository")
    root = Path(locations[0]).resolve()
    clone = root.name == "suites" and (root.parent / "pyproject.toml").is_file()
    return Suites(root, root.parent if clone else Path.cwd(), installed=not clone)


def canonical_nodeid(nodeid: str) -> str:
    """A test's node id as the repository names it (`suites/conformance/test_x.py::test_y`), whether the suites
    ran from a clone or installed (`ksh_suites/...`, or a path ending so)."""
    at = nodeid.find(PACKAGE + "/")
    return "suites/" + nodeid[at + len(PACKAGE) + 1:] if at >= 0 else nodeid


def suite_test_id(path: Path, nodeid: str) -> str:
    """The repository's name of a test of the suites, `suites/<file below the suites>::<name>`, from its file and
    node id whatever the session's rootdir (`pytest --pyargs ksh_suites` from anywhere); any other test's node id
    as `canonical_nodeid` gives it."""
    path = Path(path).resolve()
    for parent in path.parents:
        if parent.name in ("suites", PACKAGE) and (parent / "__init__.py").is_file() \
                and (parent / "conftest.py").is_file():
            return f"suites/{path.relative_to(parent).as_posix()}::{nodeid.split('::', 1)[-1]}"
    return canonical_nodeid(nodeid)


def runnable_nodeid(nodeid: str, rootdir: Path) -> str:
    """A node id a reproduce line can hand to pytest from anywhere: an installed suite's by its absolute path
    (its rootdir is site-packages, not where the reader is), any other as it is."""
    return str(rootdir / nodeid) if nodeid.startswith(PACKAGE + "/") else nodeid
