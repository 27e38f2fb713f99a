"""The version matrix: the conformance suite and a short chaos set over releases x clients, on one page.

`share-harness matrix` (nightly: `tox -e matrix`) runs, for every release (default: the newest of
each supported line) and every client (default: confluent, java, franz), one pytest child with
`suites/conformance` and the short chaos set (`CHAOS_SUITES`: leader failover, fast bounce, rolling
restart, consumer-lane latency, disk failure and a rolling upgrade from that release to the newest, the
ci profile's subsets) on a fresh local cluster of that release, then writes `matrix.md` and `matrix.json`:
KIP area x (release, client), each cell one of

- PASS: every applicable test of the area passed;
- FAIL: a test failed (its evidence, the failure's last line and run directory, listed under the table);
- KNOWN BUG: a known deviation of that release was met (an expected failure with its evidence);
- NOT SUPPORTED: every test of the area was skipped, with the reasons (a release without the feature,
  a client without it);
- UNKNOWN: the cell's pytest did not finish cleanly or wrote no report (never a pass).

Each cell has a word of its own too (`cell_word`): FAIL if an area failed; UNKNOWN if an area is
unknown, an area ran nothing without a -k selection, its pytest said no test passed (exit 5), or no
area passed at all (only NOT SUPPORTED, KNOWN BUG or NOT RUN: nothing was checked that held); NOT
SUPPORTED if the client cannot talk to the release at all (no pytest ran: a result about that pair);
else PASS. The matrix (`overall`) is FAIL if a cell failed, UNKNOWN if a cell is unknown or no cell
passed (nothing was checked: never a pass), else PASS. A matrix that asks only for pairs whose client
cannot talk to the release is refused up front (`check_matrix_args`, exit 2), naming why.
Every file read back (the cell's conformance.json and junit.xml, a resumed matrix.json) is read with
`harness.sys.files`: a fifo, a device or an oversized file there is an UNKNOWN cell or one line, never a hang.

Each cell keeps its own conformance report, JUnit XML and log under `<out>/<release>/<client>/`, and
the page gives the command that reproduces a cell. The work of a cell is `certify`'s (a pytest child
torn down on Ctrl-C: `harness.sys.pytest_child`); the areas and their results are the conformance
report's (`harness.conformance.report`).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from harness.tested_set import record as tested_set_record
from harness.tested_set import summary as tested_set_summary
from harness.version import VERSION
from harness.clients.registry import driver_info, unsupported_release
from harness.conformance.report import AREAS
from harness.errors import HarnessError
from harness.kafka.implementations import (KFAKE_KAFKA_LEVEL, KFAKE_VERSION, MOCK_KAFKA_LEVEL, check_kfake_version,
                                          mock_version)
from harness.kafka.versions import SUPPORTED_LINES, UNCHECKABLE_LINES, check_supported, newest_known
from harness.report.html import write_html_twin
from harness.report.rundir import new_stamped_dir, reports_root
from harness.settings import to_argv
from harness.spec import RunSpec
from harness.sys import pytest_child, suites
from harness.sys.suites import Suites
from harness.sys.files import BadFile, read_json_object, read_text

CLIENTS = ("confluent", "java", "franz")
#: the chaos row: one line of the page for the short chaos set
CHAOS_AREA, CHAOS_TITLE = "chaos", ("Chaos: leader failover under every workload, fast bounce, rolling restart, "
                                     "consumer-lane latency, disk failure, a rolling upgrade from the release "
                                     "(short set)")
#: (paths below the suites' root: `harness.sys.suites`)
CHAOS_SUITES = ("chaos/test_chaos_leader.py", "chaos/test_chaos_bounce.py", "chaos/test_chaos_client.py",
                "chaos/test_chaos_disk.py", "chaos/test_chaos_upgrade.py")
#: On kfake (a column `kfake@<version>`): the chaos scenarios kfake can host (leaders moved with every broker
#: up, consumers killed with commits pending); the others need process or link control it has not.
KFAKE_CHAOS_SUITES = ("chaos/test_chaos_moves.py", "chaos/test_chaos_client.py")
KFAKE_CHAOS_TITLE = "Chaos: leaders moved with every broker up under three workloads, a consumer killed with commits pending"
#: A matrix column of kfake: `kfake` (the pinned version) or `kfake@<Go module version>`.
KFAKE_COLUMN = "kfake@"
#: The matrix column of librdkafka's mock cluster (the librdkafka confluent-kafka loads: one version), with the
#: chaos it can host (as kfake: leaders and coordinators moved with every broker up, consumers killed).
MOCK_COLUMN = "mock"
MOCK_CHAOS_SUITES = KFAKE_CHAOS_SUITES
#: conformance report area result -> the matrix's word
_WORDS = {"PASS": "PASS", "FAIL": "FAIL", "KNOWN DEVIATION": "KNOWN BUG", "SKIPPED": "NOT SUPPORTED",
          "NOT RUN": "NOT RUN"}  # (INCONCLUSIVE, a set-up that did not hold, is the matrix's UNKNOWN)


def default_versions() -> list[str]:
    """The newest known release of every supported line, oldest first."""
    return [newest_known(line) for line in SUPPORTED_LINES]


def kfake_column(version: str) -> str | None:
    """The kfake version a matrix column names (`kfake` is the pinned one), or None for a Kafka release."""
    if version == "kfake":
        return KFAKE_VERSION
    if version.startswith(KFAKE_COLUMN):
        return check_kfake_version(version[len(KFAKE_COLUMN):])
    return None


def normalize_column(version: str) -> str:
    """`kfake` -> `kfake@<pinned version>`; a Kafka release as given."""
    kfake = kfake_column(version)
    return version if kfake is None else KFAKE_COLUMN + kfake


def hosted(version: str) -> bool:
    """Whether the column is an implementation the harness starts other than Apache Kafka (kfake, the mock)."""
    return version == MOCK_COLUMN or kfake_column(version) is not None


def unsupported_pair(version: str, client: str) -> str:
    """Why `client` cannot talk to the release (or kfake or mock column) `version` at all ("" if it can): such a
    cell runs no pytest and is NOT SUPPORTED everywhere."""
    level = MOCK_KAFKA_LEVEL if version == MOCK_COLUMN else KFAKE_KAFKA_LEVEL if kfake_column(version) else version
    return unsupported_release(client, level)


def check_matrix_args(versions: list[str], clients: list[str]) -> None:
    """Bad input is one line, before any cluster starts: every release supported (or a kfake column), every
    client known, and at least one (release, client) pair that can run anything (a matrix of pairs whose
    client cannot talk to the release would check nothing)."""
    if not versions or not clients:
        raise HarnessError("the matrix needs at least one release and one client (--versions, --clients)")
    for version in versions:
        if not hosted(version):
            check_supported(version)
    for client in clients:
        driver_info(client)
    why = {(version, client): unsupported_pair(version, client) for version in versions for client in clients}
    if all(why.values()):
        (version, client), reason = next(iter(why.items()))
        pairs = "every pair asked for" if len(why) > 1 else f"{client} on {version}"
        raise HarnessError(f"the matrix would check nothing: {pairs} cannot run ({client} on {version}: {reason}); "
                           "add a client or a release that can (--clients, --versions)")


@dataclass
class Cell:
    """One (release, client) of the matrix: its areas' words, the evidence of what failed, its files."""

    version: str
    client: str
    out: Path
    rc: int | None = None
    areas: dict[str, str] = field(default_factory=dict)  # area -> matrix word
    evidence: list[str] = field(default_factory=list)  # one line per failed or known-bug test
    select: str | None = None  # the pytest -k expression the cell ran with, if any
    reproduce: str = ""
    seed: int | None = 1  # None: not recorded (a page from before seeds were): never matches a resume

    def to_json(self) -> dict[str, Any]:
        return {"version": self.version, "client": self.client, "out": str(self.out), "rc": self.rc,
                "areas": self.areas, "evidence": self.evidence, "reproduce": self.reproduce, "seed": self.seed,
                "select": self.select}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Cell:
        return cls(d["version"], d["client"], Path(d["out"]), d.get("rc"), dict(d.get("areas") or {}),
                   list(d.get("evidence") or []), d.get("select"), d.get("reproduce", ""),
                   int(d["seed"]) if "seed" in d else None)

    def finished(self) -> bool:
        """Whether the cell decided what it was asked (its word is not UNKNOWN: no area unknown, without a -k
        selection none NOT RUN, and something passed or the pair cannot run at all): a resumed matrix keeps
        it as it is. A failed cell with an undecided area is not finished either."""
        undecided = {"UNKNOWN"} if self.select else {"UNKNOWN", "NOT RUN"}
        return not undecided & set(self.areas.values()) and cell_word(self) != "UNKNOWN"

    def refused(self) -> bool:
        """Whether the cell is a pair whose client cannot talk to the release: no pytest ran (`run_cell`)."""
        return self.rc is None and bool(self.areas) and set(self.areas.values()) == {"NOT SUPPORTED"}

    def kept_off(self) -> bool:
        """Whether the cell is a pair whose client an implementation's deviation keeps from connecting at all,
        shown when the cell ran (`run_cell`: the mock's ApiVersions answer): no pytest ran, every area KNOWN BUG."""
        return self.rc is None and bool(self.areas) and set(self.areas.values()) == {"KNOWN BUG"}


def cell_word(cell: Cell, selected: bool = False) -> str:
    """The cell's own word (the module docstring's rules): FAIL, UNKNOWN, NOT SUPPORTED, KNOWN BUG (the client
    kept off the implementation by a deviation shown when the cell ran: nothing else was checked) or PASS.
    `selected`: judged as run with a -k selection even if the cell recorded none."""
    words = set(cell.areas.values())
    if "FAIL" in words:
        return "FAIL"
    if cell.kept_off():
        return "KNOWN BUG"
    if not words or "UNKNOWN" in words or ("NOT RUN" in words and not (selected or cell.select)):
        return "UNKNOWN"
    if cell.refused():
        return "NOT SUPPORTED"
    if cell.rc == 5 or "PASS" not in words:  # pytest said no test passed; or no area passed: nothing held
        return "UNKNOWN"
    return "PASS"


def cell_command(found: Suites, version: str, client: str, out: Path, seed: int, select: str | None,
                 workers: int = 1) -> list[str]:
    """The cell's pytest; `workers` > 1 runs it on that many xdist workers (each with its own cluster of the
    release; whole files per worker, as CI runs), whose conformance rows the controller gathers into one
    report (`ksh_fixtures.plugin.pytest_sessionfinish`)."""
    kfake = kfake_column(version)
    if kfake is not None:  # kfake at its Kafka API level, with the chaos it can host
        chaos, spec = KFAKE_CHAOS_SUITES, RunSpec(kafka_version=KFAKE_KAFKA_LEVEL, backend="kfake", kfake_version=kfake)
    elif version == MOCK_COLUMN:  # the mock likewise
        chaos, spec = MOCK_CHAOS_SUITES, RunSpec(kafka_version=MOCK_KAFKA_LEVEL, backend="mock")
    else:
        chaos, spec = CHAOS_SUITES, RunSpec(kafka_version=version)
    spec = replace(spec, client=client, seed=seed, profile="ci", conformance_out=str(out / "conformance"))
    cmd = [sys.executable, "-m", "pytest", str(found.root / "conformance"),
           *(str(found.root / suite) for suite in chaos), "-q", "-rfEsx", "-p", "no:cacheprovider",
           *to_argv(spec, "pytest"), "--junitxml", str(out / "junit.xml"),
           # C-level writes to stderr pass uncaptured into the cell's log: the one line a native abort
           # leaves (an assertion of librdkafka or glibc) is never lost with the process's capture file
           "--capture=sys", *found.pytest_args()]
    if workers > 1:  # a worker that dies is not replaced (as in CI); its test's row and scenario stay unknown
        cmd += ["-n", str(workers), "--dist", "loadfile", "--max-worker-restart=0"]
    return cmd + (["-k", select] if select else [])


def run_cell(version: str, client: str, out: Path, seed: int = 1, select: str | None = None,
             workers: int = 1) -> Cell:
    """Run one cell's pytest child (its output to `out/pytest.log`) and read what it decided."""
    out.mkdir(parents=True, exist_ok=True)
    found = suites.locate()
    cmd = cell_command(found, version, client, out, seed, select, workers)
    cell = Cell(version, client, out, select=select, seed=seed, reproduce=shlex.join(["share-harness", "matrix", "--versions", version,
                                                            "--clients", client, "--seed", str(seed)]
                                                           + (["-k", select] if select else [])))
    why = unsupported_pair(version, client)
    if why:  # the client cannot talk to the release: no child; every area says so, with the reason
        cell.areas = {area: "NOT SUPPORTED" for area in (*AREAS, CHAOS_AREA)}
        cell.evidence = [f"{client} on {version}: {why}"]
        return cell
    if version == MOCK_COLUMN and client in UNREACHABLE_ON_MOCK:
        try:
            met = unreachable_on_mock(out)
        except (HarnessError, OSError, ValueError) as exc:  # the question unanswered: the cell decides nothing
            _unknown_cell(cell, f"the mock's ApiVersions probe failed ({exc})")
            return cell
        if met:  # the client cannot connect: the mock's deviation, shown on a mock started for the question
            cell.areas = {area: "KNOWN BUG" for area in (*AREAS, CHAOS_AREA)}
            cell.evidence = [f"{client} on the mock: deviation {MOCK_APIVERSIONS_DEVIATION}: {UNREACHABLE_ON_MOCK[client]}; "
                             f"the mock now: {met} (docs/implementations/librdkafka-mock.md)"]
            return cell
    for stale in (out / "conformance", out / "junit.xml"):  # an earlier attempt's (a resumed matrix): never read
        if stale.is_dir():
            shutil.rmtree(stale)
        else:
            stale.unlink(missing_ok=True)
    with open(out / "pytest.log", "w") as log:
        cell.rc = pytest_child.run_pytest(cmd, cwd=found.cwd, stdout=log)
    read_cell(cell)
    return cell


#: The deviation that keeps clients off the mock altogether (`harness.conformance.deviations`), and what each
#: client does when it meets it (seen in its own log on the gate's first run).
MOCK_APIVERSIONS_DEVIATION = "apiversions-unsupported-answer-malformed"
UNREACHABLE_ON_MOCK = {
    "java": "KafkaShareConsumer 4.3.1 opens with ApiVersions v4, cannot read the answer, retries with v0, lists the "
            "mock's APIs and then sends nothing more (\"Give up sending metadata request since no node is "
            "available\"; FindCoordinator timed out after 30 s): it never joins",
    "franz": "franz-go: \"unable to request api versions ... response did not contain enough data to be valid\" "
             "on every broker, for as long as it runs: it never joins",
}


def unreachable_on_mock(out: Path) -> str | None:
    """The ApiVersions deviation's evidence on a mock started now (its log in `out`), or None if it is gone."""
    from harness.cluster.mock import LibrdkafkaMock, apiversions_answer_deviation  # (deferred: loads confluent_kafka)
    with LibrdkafkaMock(out / "mock-probe", brokers=1) as mock:
        return apiversions_answer_deviation(mock.bootstrap_servers)


def _unknown_cell(cell: Cell, why: str) -> None:
    cell.areas = {area: "UNKNOWN" for area in (*AREAS, CHAOS_AREA)}
    cell.evidence = [f"{why}: see {shown(cell.out / 'pytest.log', cell.out.parents[1])}"]


def read_cell(cell: Cell) -> None:
    """Fill `cell`'s areas and evidence from its conformance report and JUnit XML. A pytest that did not
    finish cleanly (exit other than 0, 1 or 5) or wrote no report, or a report that cannot be read, leaves
    every area UNKNOWN. Exit 5 (no test passed: every test skipped, deselected or an expected failure) keeps
    the areas' words (why each was skipped) but the cell is UNKNOWN (`cell_word`): nothing was checked."""
    report = cell.out / "conformance" / "conformance.json"
    if cell.rc not in (0, 1, 5) or not os.path.lexists(report):
        _unknown_cell(cell, f"pytest exit {cell.rc}" if cell.rc not in (0, 1, 5) else "no conformance report")
        return
    try:
        conformance = read_json_object(report, "conformance report")
        areas = {str(area): _WORDS.get(word, "UNKNOWN") for area, word in (conformance.get("areas") or {}).items()}
        evidence = []
        for test in conformance.get("tests") or ():
            if test["result"] in ("fail", "error", "xfail", "unknown", "inconclusive"):
                kind = "known bug" if test["result"] == "xfail" else test["result"]
                where = f" ({shown(Path(test['run_dir']), cell.out.parents[1])})" if test.get("run_dir") else ""
                evidence.append(f"{kind}: `{test['test']}`: {test.get('reason') or '?'}{where}")
    except BadFile as exc:
        _unknown_cell(cell, f"unreadable conformance report ({exc})")
        return
    except (KeyError, TypeError, AttributeError) as exc:
        _unknown_cell(cell, f"malformed conformance report {report} ({exc!r})")
        return
    cell.areas, cell.evidence = areas, evidence
    cell.areas[CHAOS_AREA], chaos_evidence = chaos_result(cell.out / "junit.xml", selected=bool(cell.select))
    cell.evidence += chaos_evidence
    died = worker_died(cell.out / "junit.xml")
    if died:  # the tests that worker had not reached never ran: no area it may have held is decided
        cell.areas = {area: word if word == "FAIL" else "UNKNOWN" for area, word in cell.areas.items()}
        cell.evidence.append(f"unknown: a pytest worker died ({died}); the tests it had not reached never ran, "
                             "so no area but a failed one is decided")
    if cell.rc == 5:
        cell.evidence.append(f"unknown: no test passed (pytest exit 5): the cell checked nothing that held; see "
                             f"{shown(cell.out / 'pytest.log', cell.out.parents[1])}")


def _testcases(junit: Path) -> list[ET.Element] | str:
    """The testcases of a JUnit XML, read with `harness.sys.files`; why not, if it cannot be read or parsed."""
    try:
        return list(ET.fromstring(read_text(junit, "JUnit XML")).iter("testcase"))
    except BadFile as exc:
        return str(exc)
    except ET.ParseError as exc:
        return f"JUnit XML {junit} is not XML ({exc})"


def worker_died(junit: Path) -> str:
    """xdist's words for a worker that died while running a test ("" if none did, or the XML is unreadable:
    `chaos_result` says so)."""
    cases = _testcases(junit) if os.path.lexists(junit) else []
    for case in cases if isinstance(cases, list) else ():
        for bad in (case.find("failure"), case.find("error")):
            found = _WORKER_CRASHED.search(bad.get("message") or "") if bad is not None else None
            if found:
                return found.group(0)
    return ""


#: how xdist's controller words the failure of a test whose worker process died
_WORKER_CRASHED = re.compile(r"worker '[^']+' crashed while running")


_CHECKER_LINE = re.compile(r"^(\s*)([\w.-]+): (FAIL|UNKNOWN)\b(.*)$")
#: the verdict's own line in its summary ("verdict: FAIL  (name, seed)"): not a checker
_NOT_CHECKERS = ("verdict",)


def failing_checkers(text: str, per_checker: int = 2) -> list[str]:
    """From a chaos test's failure text (the verdict's summary, pytest's `E` prefixes and all): each checker
    that did not pass, with the first `per_checker` anomalies it listed below itself."""
    out: list[str] = []
    depth, checker, shown = None, "", 0  # depth: the indentation of the checker line being read, if any
    for raw in text.splitlines():
        line = raw[1:] if raw.startswith("E") else raw
        m = _CHECKER_LINE.match(line)
        if m and m.group(2) in _NOT_CHECKERS:
            depth = None
        elif m:
            depth, checker, shown = len(m.group(1)), m.group(2), 0
            reason = m.group(4).partition(" - ")[2].strip()  # after the stats: why (UNKNOWN, chaos missing)
            out.append(f"{checker}: {m.group(3)}" + (f" - {reason[:300]}" if reason else ""))
        elif depth is not None and line.strip() and len(line) - len(line.lstrip()) > depth:
            if shown < per_checker and re.match(r"\s*[\w.-]+: ", line):
                out.append(f"{checker}: {line.strip()[:300]}")
                shown += 1
        else:
            depth = None
    return out


def chaos_result(junit: Path, selected: bool = False) -> tuple[str, list[str]]:
    """The short chaos set's word from the cell's JUnit XML: FAIL if a scenario failed or errored, UNKNOWN
    if the worker running one died (xdist reports that as a failure: it is no verdict) or if its fault
    was not applied and no checker failed (the setup did not hold: inconclusive), KNOWN
    BUG if one passed only by a release's known bug (xfail), PASS if at least one passed, NOT SUPPORTED
    if all were skipped, UNKNOWN without a readable XML or without a scenario (NOT RUN, with a -k
    selection: `selected`)."""
    if not os.path.lexists(junit):
        return "UNKNOWN", [f"chaos: no JUnit XML at {junit}"]
    cases = _testcases(junit)
    if isinstance(cases, str):
        return "UNKNOWN", [f"unknown: chaos: {cases}"]
    results, evidence = [], []
    for case in cases:
        if "suites.chaos" not in (case.get("classname") or ""):
            continue
        name = case.get("name")
        failed = case.find("failure") if case.find("failure") is not None else case.find("error")
        skipped = case.find("skipped")
        message = (failed.get("message") or "") if failed is not None else ""
        if failed is not None and _WORKER_CRASHED.search(message):  # its process died: no verdict at all
            results.append("unknown")
            evidence.append(f"unknown: chaos `{name}`: the pytest worker running it died ({message[:200]}); "
                            "its scenario has no verdict")
        elif failed is not None:
            lines = failing_checkers(failed.text or message)
            # the chaos asked for did not happen and no checker failed: inconclusive, not a failure
            word = "unknown" if lines and all(": UNKNOWN" in line.split(" - ")[0] for line in lines) and \
                any(line.startswith("chaos: UNKNOWN") for line in lines) else "fail"
            results.append(word)
            evidence.append(f"{word}: chaos `{name}`: {(message.splitlines() or [''])[0][:200]}")
            evidence += [f"{word}: chaos `{name}`: {line}" for line in lines]
        elif skipped is not None and (skipped.get("type") or "").endswith("xfail"):
            results.append("xfail")
            evidence.append(f"known bug: chaos `{name}`: {(skipped.get('message') or '')[:200]}")
        elif skipped is not None:
            results.append("skipped")
        else:
            results.append("pass")
    if not results:
        return ("NOT RUN", []) if selected else ("UNKNOWN", ["chaos: no scenario ran"])
    word = ("FAIL" if "fail" in results else "UNKNOWN" if "unknown" in results else
            "KNOWN BUG" if "xfail" in results else
            "PASS" if "pass" in results else "NOT SUPPORTED")
    return word, evidence


def shown(path: Path, page_dir: Path) -> str:
    """`path` as the matrix page (in `page_dir`) names it: relative to the page's directory when inside it (the
    cells' reports and logs), else relative to the reports root (a run's directory, `reports/runs/...`), so the
    page names no directory of the machine that wrote it and stays right when the matrix directory is copied."""
    path = Path(path)
    for base, prefix in ((page_dir, ""), (reports_root(), "reports/")):
        try:
            return prefix + str(path.resolve().relative_to(Path(base).resolve()))
        except ValueError:
            continue
    return str(path)


def render(cells: list[Cell]) -> str:
    """The page: KIP area x (release, client), then each cell's evidence and reproduce command."""
    kfake = [hosted(c.version) for c in cells]
    kfake_only = bool(cells) and all(kfake)
    chaos = KFAKE_CHAOS_TITLE if kfake_only else CHAOS_TITLE if not any(kfake) else (
        f"{CHAOS_TITLE}; in the kfake and mock columns: {KFAKE_CHAOS_TITLE.removeprefix('Chaos: ')}")
    titles = {**AREAS, CHAOS_AREA: chaos}
    heads = [f"{c.version} / {c.client}" for c in cells]
    lines = ["# Version matrix: KIP-932 conformance and chaos by release and client", "",
             "PASS, FAIL (evidence below), KNOWN BUG (a known deviation of the release, evidence below), "
             "NOT SUPPORTED (every test skipped: the release or client lacks the feature), NOT RUN (no test "
             "of the area selected), UNKNOWN (the cell did not finish: never a pass).", "",
             f"Checked by kafka-share-harness {VERSION}. {tested_set_summary()}", "",
             "| Area | " + " | ".join(heads) + " |", "|---|" + "---|" * len(cells)]
    for area, title in titles.items():
        lines.append(f"| {title} | " + " | ".join(c.areas.get(area, "UNKNOWN") for c in cells) + " |")
    lines.append("| **The cell** (UNKNOWN when nothing in it passed) | "
                 + " | ".join(f"**{cell_word(c)}**" for c in cells) + " |")
    if UNCHECKABLE_LINES and not kfake_only:  # releases with share groups no cell can check: said, never absent
        lines += ["", "Release lines with share groups that the harness cannot check (no cell runs them):", ""]
        lines += [f"- Kafka {line}.x: {why}" for line, why in sorted(UNCHECKABLE_LINES.items())]
    for c in cells:
        lines += ["", f"## {_implementation(c.version)}, client {c.client}: {cell_word(c)}", "",
                  f"Report: `{shown(c.out / 'conformance' / 'conformance.md', c.out.parents[1])}`; "
                  f"log: `{shown(c.out / 'pytest.log', c.out.parents[1])}`; "
                  f"reproduce: `{c.reproduce}`", ""]
        lines += [f"- {e}" for e in c.evidence] or ["- nothing failed"]
    return "\n".join(lines) + "\n"


def _implementation(version: str) -> str:
    if version == MOCK_COLUMN:
        return (f"librdkafka {mock_version()}'s mock cluster (not Apache Kafka; the Kafka {MOCK_KAFKA_LEVEL} API and "
                "clients)")
    kfake = kfake_column(version)
    if kfake is None:
        return f"Kafka {version}"
    return f"franz-go kfake {kfake} (not Apache Kafka; the Kafka {KFAKE_KAFKA_LEVEL} API and clients)"


def overall(cells: list[Cell], selected: bool = False) -> str:
    """FAIL if any cell failed; UNKNOWN if any cell is unknown (`cell_word`: an area unknown, or without a -k
    selection an area that ran no test, or nothing in the cell passed), or no cell passed (no cell, or
    only pairs that cannot run: nothing was checked); else PASS (known bugs and features a release or
    client does not have are results, not failures of the matrix, beside what passed). `selected`: the
    matrix ran with a -k selection (each cell also records its own)."""
    words = [cell_word(c, selected) for c in cells]
    if "FAIL" in words:
        return "FAIL"
    return "UNKNOWN" if "UNKNOWN" in words or "PASS" not in words else "PASS"


def write_matrix(cells: list[Cell], out: Path) -> Path:
    selected = any(c.select for c in cells)
    (out / "matrix.json").write_text(json.dumps({"overall": overall(cells, selected), "harness_version": VERSION,
                                                 "tested_set": tested_set_record(),
                                                 "cells": [c.to_json() for c in cells]}, indent=1))
    page = out / "matrix.md"
    page.write_text(render(cells))
    write_html_twin(page, "Version matrix: KIP-932 conformance and chaos by release and client")
    return page


def finished_cells(resume: Path) -> dict[tuple[str, str], Cell]:
    """The cells a matrix directory's `matrix.json` holds as finished, by (release, client); bad input
    (no such directory, no matrix.json, not one a matrix wrote) is one line naming the fix."""
    page = resume / "matrix.json"
    if not os.path.lexists(page):
        raise HarnessError(f"--resume {resume}: no matrix.json there: pass a directory a matrix run wrote "
                           "(reports/matrix/<time>)")
    data = read_json_object(page, "--resume matrix.json")  # a fifo or a device: one line (BadFile), no hang
    try:
        cells = [Cell.from_json(c) for c in data["cells"]]
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise HarnessError(f"--resume {resume}: its matrix.json is not a matrix's ({exc}): start a new matrix "
                           "without --resume") from None
    return {(c.version, c.client): c for c in cells if c.finished()}


def run_matrix(versions: list[str], clients: list[str], out_root: Path | None = None, seed: int = 1,
               select: str | None = None, workers: int = 1,
               resume: Path | None = None) -> tuple[list[Cell], Path]:
    """Every (release, client) cell in turn; the page rewritten after each (a long run shows progress).
    With `resume` (a directory an earlier matrix wrote), its finished cells of the same seed and -k
    selection are kept as they are and only the others run, into that directory."""
    check_matrix_args(versions, clients)
    versions = [normalize_column(v) for v in versions]
    if workers < 1:
        raise HarnessError(f"invalid --workers {workers}: use 1 or more")
    done = finished_cells(resume) if resume is not None else {}
    out = resume if resume is not None else new_stamped_dir(out_root or reports_root() / "matrix", "matrix")
    cells: list[Cell] = []
    wanted = [(version, client) for version in versions for client in clients]
    for version, client in wanted:
        kept = done.get((version, client))
        if kept is not None and kept.seed == seed and kept.select == select:
            print(f"matrix: {_implementation(version)} with {client}: kept from {out}", flush=True)
            cells.append(kept)
            continue
        print(f"matrix: {_implementation(version)} with {client} ...", flush=True)
        cells.append(run_cell(version, client, out / version / client, seed, select, workers))
        # the page after each cell keeps the finished cells still ahead, should this run be interrupted too
        write_matrix(cells + [done[key] for key in wanted[len(cells):] if key in done], out)
    write_matrix(cells, out)
    return cells, out / "matrix.md"
