"""What the drift job's pytest runs showed, per test and per row of the deviation and known-bug tables (pure).

A run's JUnit XML (xunit1, as the project writes it) gives each test's outcome: passed, failed, error, skipped or
xfailed (an expected failure, with its reason). The plugin words a deviation row it expected so (`ksh_fixtures.
plugin`): an xfail whose reason begins "<implementation> deviation <name>", a strict unexpected pass as a failure
saying the row "no longer reproduces" (formerly "no longer shows the deviation <name>"), and, where the version is
newer than the row confirmed, a line of the session's summary ("deviation <name> (<implementation>) no longer
reproduces on <version>" or "... reproduces on <version>, not yet confirmed there"), read from pytest's output.

A row is judged only on runs that can show it (`exercised`): its implementation and client, its tests run, and for
a known bug a release it is expected on. A row no run exercised is "not exercised", never "still reproduces".
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from typing import Callable, Sequence

from harness.conformance.outcomes import is_inconclusive

REPRODUCES, GONE, UNDECIDED, NOT_EXERCISED = "still reproduces", "no longer reproduces", "undecided", "not exercised"
#: the order in which a row's evidence from several tests and runs wins: one reproduction is enough; a failure of
#: another kind leaves it undecided; "no longer" needs every test that showed anything to say so
_RANK = {REPRODUCES: 3, UNDECIDED: 2, GONE: 1, NOT_EXERCISED: 0}
#: xdist's words for a test whose worker process died: no verdict at all
_WORKER_CRASHED = re.compile(r"worker '[^']+' crashed while running")


@dataclass(frozen=True)
class TestOutcome:
    """One test of a run: `outcome` is passed, failed, error, skipped or xfailed; `message` the failure's,
    skip's or expected failure's message, `text` the failure's body."""

    __test__ = False  # (not a pytest test class)
    nodeid: str
    outcome: str
    message: str = ""
    text: str = ""


def parse_junit(xml_text: str) -> list[TestOutcome]:
    """Every testcase of a JUnit XML document; a ValueError if it is not one."""
    try:
        root = ET.fromstring(xml_text)
    except ET.ParseError as exc:
        raise ValueError(f"not XML ({exc})") from None
    if root.tag not in ("testsuites", "testsuite"):
        raise ValueError(f"not a JUnit report (its root is <{root.tag}>)")
    return [_outcome(case) for case in root.iter("testcase")]


def _outcome(case: ET.Element) -> TestOutcome:
    nodeid = _nodeid(case)
    for tag, word in (("failure", "failed"), ("error", "error")):
        found = case.find(tag)
        if found is not None:
            return TestOutcome(nodeid, word, found.get("message") or "", found.text or "")
    skipped = case.find("skipped")
    if skipped is not None:
        word = "xfailed" if (skipped.get("type") or "").endswith("xfail") else "skipped"
        return TestOutcome(nodeid, word, skipped.get("message") or "", skipped.text or "")
    return TestOutcome(nodeid, "passed")


def _nodeid(case: ET.Element) -> str:
    """path::name as pytest names the test (xunit1 keeps the file; without it the class name is turned back)."""
    classname, name = case.get("classname") or "", case.get("name") or ""
    file = case.get("file")
    if not file:
        return f"{classname.replace('.', '/')}.py::{name}"
    module = file[:-3].replace("/", ".") if file.endswith(".py") else file
    inner = classname[len(module) + 1:] if classname.startswith(module + ".") else ""
    return "::".join(part for part in (file, inner, name) if part)


def covers(pattern: str, nodeid: str) -> bool:
    """Whether a row's test `pattern` (path::name, path::name[params], a prefix ending in `*`, or a whole file
    path) names `nodeid`, as `harness.conformance.deviations.deviation_of` matches them."""
    if pattern.endswith("*"):
        return nodeid.startswith(pattern[:-1])
    if "::" not in pattern:
        return nodeid.split("::", 1)[0] == pattern
    return pattern in (nodeid, nodeid.split("[", 1)[0])


@dataclass(frozen=True)
class Row:
    """A row of the deviation tables (DEVIATIONS, CLIENT_DEVIATIONS) or of KNOWN_BUGS, as much as the drift job
    needs: `of` is the implementation ("kfake", "apache" for a known bug) or, in CLIENT_DEVIATIONS, the client;
    `tests` its tests (a known bug lists none: the suite file its evidence names, `by_file`); `clients` the clients
    that meet it (empty: any); `expected(version)` whether a known bug is expected on a Kafka release; `explains`
    whether a failure's text is the row's own evidence (a deviation on a version its row does not yet expect)."""

    table: str
    name: str
    of: str
    tests: tuple[str, ...] = ()
    clients: tuple[str, ...] = ()
    expected: Callable[[str], bool] | None = None
    explains: Callable[[str], bool] | None = None
    intermittent: bool = False
    by_file: bool = False
    #: why no conformance run can show it (a known bug the checkers' allowances excuse in chaos runs), if so
    unexercisable: str = ""
    #: the versions it is known on, as its table says
    known: str = ""


@dataclass(frozen=True)
class Run:
    """One conformance session of the drift job: its client at its version, the implementation and Kafka release,
    each test's outcome, pytest's output (for the summary's row lines) and whether pytest finished (`why` not)."""

    client: str
    client_version: str
    kafka_version: str
    outcomes: tuple[TestOutcome, ...]
    log: str = ""
    implementation: str = "apache"
    why: str = ""  #: why the run is incomplete ("" if pytest finished and its XML was read)
    #: what the run uses that moved from the tested set; () nothing: a run of the tested set, whose failures are not
    #: drift; None not known (taken as moved)
    moved: tuple[str, ...] | None = None
    #: the outcomes of the tests it failed, run again on the tested set (`harness.drift.baseline`), and how
    baseline: tuple[TestOutcome, ...] | None = None
    baseline_note: str = ""

    @property
    def label(self) -> str:
        return f"{self.client} {self.client_version} on Kafka {self.kafka_version}"


@dataclass(frozen=True)
class RowStatus:
    row: Row
    status: str
    evidence: tuple[str, ...] = field(default_factory=tuple)


def exercised(row: Row, run: Run) -> str:
    """"" if `run` can show `row`; else why not."""
    if row.unexercisable:
        return row.unexercisable
    if row.table == "CLIENT_DEVIATIONS":
        if run.client != row.of:
            return f"a deviation of the {row.of} client; no run used it"
    elif run.implementation != row.of:
        return f"a deviation of {row.of}; the drift job runs Apache Kafka"
    elif row.clients and run.client not in row.clients:
        return f"met with {', '.join(row.clients)} only"
    if row.expected is not None and not row.expected(run.kafka_version):
        return f"not expected on Kafka {run.kafka_version} (before it or fixed there)"
    return ""


def judge(row: Row, run: Run, test: TestOutcome) -> str | None:
    """What one of the row's tests says of it in `run`: REPRODUCES, GONE, UNDECIDED, or None (skipped: nothing)."""
    said = f"{test.message}\n{test.text}"
    if test.outcome == "xfailed":
        if _names(row, test.message) or (row.by_file and not _named_elsewhere(test.message)):
            return REPRODUCES
        return UNDECIDED  # expected for another reason: the row was not what stopped it
    if test.outcome == "passed":
        return UNDECIDED if row.intermittent else GONE
    if test.outcome in ("failed", "error"):
        if _no_longer(row.name, said):
            return GONE
        if test.outcome == "failed" and row.explains is not None and row.explains(said):
            return REPRODUCES  # its own evidence, on a version the row does not expect it of yet
        return UNDECIDED
    return None


def _names(row: Row, reason: str) -> bool:
    return re.match(rf"\s*{re.escape(row.of)} deviation {re.escape(row.name)}\b", reason) is not None or \
        f"({row.name})" in reason


def _named_elsewhere(reason: str) -> bool:
    """An expected failure that names a deviation row (any): not a known bug's."""
    return re.match(r"\s*\S+ deviation [\w.-]+", reason) is not None


def _no_longer(name: str, text: str) -> bool:
    return re.search(rf"no longer shows the deviation {re.escape(name)}\b|deviation {re.escape(name)} \([^)]*\) "
                     r"no longer reproduces on", text) is not None


def _summary_lines(name: str, log: str) -> list[tuple[str, str]]:
    """The session summary's lines about row `name`: (status, the line)."""
    found = []
    for line in log.splitlines():
        if re.search(rf"deviation {re.escape(name)} \([^)]*\) no longer reproduces on", line):
            found.append((GONE, line.strip()))
        elif re.search(rf"deviation {re.escape(name)} \([^)]*\) reproduces on", line):
            found.append((REPRODUCES, line.strip()))
    return found


def row_status(row: Row, runs: Sequence[Run]) -> RowStatus:
    """The row's status over every run: the strongest evidence of any test that showed something (`_RANK`), with
    the evidence kept (which test, which run); NOT_EXERCISED with the reasons when none did."""
    said: list[tuple[str, str]] = []
    why_not: dict[str, list[str]] = {}
    for run in runs:
        why = exercised(row, run)
        if why:
            why_not.setdefault(why, []).append(run.label)
            continue
        before = len(said)
        for test in run.outcomes:
            if any(covers(p, test.nodeid) for p in row.tests):
                word = judge(row, run, test)
                if word is not None:
                    said.append((word, f"{run.label}: {test.nodeid} {test.outcome}"))
        said += [(word, f"{run.label}: {line}") for word, line in _summary_lines(row.name, run.log)]
        if len(said) == before:
            why_not.setdefault("none of its tests ran (or all were skipped)", []).append(run.label)
    if not said:
        # a reason every run shares is said once; another names its runs
        reasons = tuple(why if len(labels) == len(runs) else f"{why} ({', '.join(labels)})"
                        for why, labels in why_not.items())
        return RowStatus(row, NOT_EXERCISED, reasons or ("no conformance run",))
    best = max(_RANK[word] for word, _ in said)
    status = next(word for word, rank in _RANK.items() if rank == best)
    # what says otherwise is kept, named: a row that reproduced in one run and not in another is news of its own
    contrary = tuple(f"but {word}: {text}" for word, text in said if word != status)
    return RowStatus(row, status, tuple(text for word, text in said if word == status) + contrary)


NEW, BOTH, NO_VERDICT = "newly fails", "fails on the tested set too", "no verdict"


@dataclass(frozen=True)
class Failure:
    """A test that failed (or errored) on the newest set and that no row explains: `kind` NEW, BOTH (the baseline,
    the same run on the tested set, failed it too) or NO_VERDICT (inconclusive: its set-up did not hold, so the
    behaviour was not exercised; or its pytest worker died)."""

    run: str
    nodeid: str
    line: str
    kind: str
    note: str = ""


def failures(runs: Sequence[Run], rows: Sequence[Row],
             baselines: dict[str, Sequence[TestOutcome]] | None = None) -> list[Failure]:
    """The failures of `runs` that are not a row's (its evidence met, or its "no longer reproduces"), each
    compared with the baseline of the run's client when one is given (`baselines`: client -> outcomes); a run
    nothing of which moved (`Run.moved` empty) is its own baseline: it ran the tested set."""
    found = []
    for run in runs:
        given = run.baseline if run.baseline is not None else (baselines or {}).get(run.client)
        base = {t.nodeid: t for t in given or ()}
        for test in run.outcomes:
            if test.outcome not in ("failed", "error") or _explained(rows, run, test):
                continue
            line = (test.message or test.text).strip().splitlines()[0][:240] if (test.message or test.text).strip() \
                else test.outcome
            if _WORKER_CRASHED.search(test.message):
                found.append(Failure(run.label, test.nodeid, line, NO_VERDICT, "its pytest worker died"))
            elif is_inconclusive(test.message):
                found.append(Failure(run.label, test.nodeid, line, NO_VERDICT, "its set-up did not hold"))
            elif run.moved == ():
                found.append(Failure(run.label, test.nodeid, line, BOTH, "nothing this run uses moved: it ran the "
                                                                        "tested set"))
            elif given is None:
                found.append(Failure(run.label, test.nodeid, line, NEW,
                                     run.baseline_note or "no baseline run given to compare with"))
            elif test.nodeid in base and base[test.nodeid].outcome in ("failed", "error"):
                found.append(Failure(run.label, test.nodeid, line, BOTH, run.baseline_note))
            else:
                was = base[test.nodeid].outcome if test.nodeid in base else "not in the baseline"
                found.append(Failure(run.label, test.nodeid, line, NEW, f"tested set: {was}" +
                                     (f"; {run.baseline_note}" if run.baseline_note else "")))
    return found


def _explained(rows: Sequence[Row], run: Run, test: TestOutcome) -> bool:
    """Whether a row exercised by `run` judges the failed `test` as its own (reproduced, or no longer shown)."""
    return any(not exercised(row, run) and any(covers(p, test.nodeid) for p in row.tests)
               and judge(row, run, test) in (REPRODUCES, GONE) for row in rows)
