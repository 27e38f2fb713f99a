"""The rows the drift job reports on, read from the harness's own tables: `harness.conformance.deviations`
(DEVIATIONS, CLIENT_DEVIATIONS) and `harness.model.profiles` (KNOWN_BUGS).

The coupling is kept to what a row is called, what it is of, its tests and whether a failure is its evidence; how
a row says which versions it is known on is shown as the table writes it (`known`), and decided by the table's own
`affects` for a known bug. A known bug names no tests: a conformance one is attributed to the suite file its
evidence names (`Row.by_file`); one the checkers excuse by an allowance shows only in chaos runs, which the drift
job does not make.
"""

from __future__ import annotations

import re
from typing import Any, Callable

from harness.drift.outcomes import Row
from harness.errors import HarnessError


def table_rows() -> list[Row]:
    """Every row of DEVIATIONS, CLIENT_DEVIATIONS and KNOWN_BUGS, in the tables' order."""
    # (deferred: the deviation tables load the history store and its Arrow; the pure modules' tests need neither)
    from harness.conformance.deviations import CLIENT_DEVIATIONS, DEVIATIONS
    # (deferred: as above)
    from harness.model.profiles import KNOWN_BUGS
    rows = [deviation_row("DEVIATIONS", d) for d in DEVIATIONS]
    rows += [deviation_row("CLIENT_DEVIATIONS", d) for d in CLIENT_DEVIATIONS]
    return rows + [known_bug_row(b) for b in KNOWN_BUGS.values()]


def deviation_row(table: str, deviation: Any) -> Row:
    """A deviation's row: its implementation (or client), tests, clients and evidence."""
    return Row(table, deviation.name, deviation.implementation, tuple(deviation.tests),
               clients=tuple(getattr(deviation, "clients", ())), explains=deviation.explains,
               intermittent=bool(getattr(deviation, "intermittent", False)), known=_known(deviation))


def known_bug_row(bug: Any) -> Row:
    """A known bug's row: of Apache Kafka, expected on the releases its table says (`affects`), its tests the
    suite files its evidence names; one judged by an allowance is not exercised by the conformance suite."""
    files = tuple(sorted(set(re.findall(r"suites/[\w/]+\.py", bug.evidence))))
    judged = getattr(bug, "judged_by", "allowance")
    why = "" if judged == "conformance" else \
        "the checkers excuse it by an allowance in chaos runs; the drift job runs the conformance suite"
    return Row("KNOWN_BUGS", bug.name, "apache", files, expected=_safe(bug.affects), by_file=True,
               unexercisable=why, known=_known(bug))


def _safe(affects: Callable[[str], bool]) -> Callable[[str], bool]:
    """`affects`, with a version its table cannot place taken as not expected (the row is then not exercised)."""
    def expected(version: str) -> bool:
        try:
            return bool(affects(version))
        except HarnessError:
            return False
    return expected


def _known(row: Any) -> str:
    """Where the row is known, as its table says it ("known in 2.16.1 to 2.16.2, no fix known", or the older
    spellings: a tuple of versions, or releases and fixed_in)."""
    known = getattr(row, "known", None)
    if known is not None:
        return str(known)
    versions = getattr(row, "versions", None)
    if versions:
        return "met on " + ", ".join(versions)
    releases, fixed = getattr(row, "releases", ""), getattr(row, "fixed_in", "")
    return f"releases {releases}, fixed in {fixed}" if releases else ""
