"""The drift table, docs/drift.md (pure): what ran and what did not, what moved, the rows' statuses on the newest
set, what newly fails, the certificates against the published ones, and the commands to make the move.

The page says what was run, never more: a part not resolved is "not resolved (why)", a row no run exercised is
"not exercised (why)", and with no run at all there is no "nothing newly fails".
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Sequence

from harness.drift.certs import CertDrift
from harness.drift.outcomes import BOTH, NEW, NO_VERDICT, Failure, Run, RowStatus
from harness.drift.versions import Moved

#: the lock's command with --upgrade: what the reviewed commit that takes the newest Python set runs
LOCK_UPDATE = ("uv pip compile pyproject.toml harness/lock/build.in --all-extras --universal --python-version 3.10 "
               "--generate-hashes --no-header --upgrade -o harness/lock/requirements.txt")
_STATE_WORDS = {"moved": "**moved**", "new": "**new**", "same": "same", "unresolved": "**not resolved**"}


@dataclass(frozen=True)
class Page:
    """Everything the page shows. `ran`: one line per run made; `not_run`: what was asked of a nightly run and not
    made here, and why."""

    date: str
    command: str
    took: str
    moved: Sequence[Moved]
    runs: Sequence[Run] = ()
    not_run: Sequence[str] = ()
    rows: Sequence[RowStatus] = ()
    failures: Sequence[Failure] = ()
    certs: Sequence[CertDrift] = ()
    notes: Sequence[str] = field(default_factory=tuple)


def cell(text: str) -> str:
    """`text` as one markdown table cell: no newline, no bare pipe."""
    return " ".join(str(text).split()).replace("|", "\\|")


def counts(run: Run) -> str:
    """"120 passed, 2 failed, 3 xfailed, 9 skipped"."""
    seen = Counter(t.outcome for t in run.outcomes)
    order = ("passed", "failed", "error", "xfailed", "skipped")
    return ", ".join(f"{seen[word]} {word}" for word in order if seen[word]) or "no test reported"


def render(page: Page) -> str:
    """The whole page, markdown."""
    lines = ["# Drift: the newest releases against the tested set", "",
             "`tox -e latest` (nightly) writes this page with `scripts/drift.py` (`harness/drift`): it resolves the "
             "newest release of every part of the tested set (`harness/tested_set.py`), runs the conformance suite "
             "and certifies the clients on them in a throw-away virtual environment, and compares. A new release is "
             "news, not a red gate: taking it is one reviewed commit (the last section).", "",
             f"Written {page.date} (took {page.took}) by:", "", f"    {page.command}", ""]
    for section in (_ran, _moved, _rows, _failures, _certs, _update, _reading):
        lines += section(page) + [""]
    return "\n".join(lines).rstrip() + "\n"


def _ran(page: Page) -> list[str]:
    lines = ["## What ran", ""]
    for run in page.runs:
        tail = f" **incomplete: {cell(run.why)}**" if run.why else ""
        what = "nothing it uses moved: a run of the tested set" if run.moved == () else \
            f"moved under it: {'; '.join(run.moved)}" if run.moved else "what moved under it is not known"
        lines.append(f"- conformance with {run.label} ({cell(what)}): {counts(run)}{tail}")
        if run.baseline is not None:
            again = Counter(t.outcome for t in run.baseline)
            lines.append(f"  - its failures no row explains, run again: {cell(run.baseline_note)}: "
                         + (", ".join(f"{n} {word}" for word, n in sorted(again.items())) or "no test reported"))
        elif run.baseline_note:
            lines.append(f"  - its failures no row explains: {cell(run.baseline_note)}")
    lines += [f"- certify {c.client}: {cell(c.newest)}" for c in page.certs if not c.newest.startswith("not certified")]
    lines += [f"- not run: {cell(why)}" for why in page.not_run]
    lines += [f"- {cell(note)}" for note in page.notes]
    return lines if len(lines) > 2 else lines + ["- nothing was run"]


def _moved(page: Page) -> list[str]:
    lines = ["## What moved", "", "| component | tested | newest | |", "|---|---|---|---|"]
    for m in page.moved:
        newest = m.newest if m.newest is not None else f"not resolved: {m.why}"
        lines.append(f"| {cell(m.component)} | {cell(m.tested)} | {cell(newest)} | {_STATE_WORDS[m.state]} |")
    return lines


def _rows(page: Page) -> list[str]:
    lines = ["## Deviation and known-bug rows on the newest set", "",
             "Judged only on the runs above: a row whose implementation, client or tests no run used is not exercised.",
             "", "| row | table | known (as the table says) | on the newest set | evidence |", "|---|---|---|---|---|"]
    for s in page.rows:
        shown = list(s.evidence[:2]) + [e for e in s.evidence[2:] if e.startswith("but ")][:4]  # the contrary kept
        more = len(s.evidence) - len(shown)
        evidence = "; ".join(shown) + (f"; and {more} more" if more else "")
        word = s.status if s.status == "not exercised" else f"**{s.status}**"
        lines.append(f"| {cell(s.row.name)} ({cell(s.row.of)}) | {s.row.table} | {cell(s.row.known)} | {word} | "
                     f"{cell(evidence)} |")
    return lines


def _failures(page: Page) -> list[str]:
    lines = ["## What newly fails", ""]
    if not page.runs:
        return lines + ["Nothing was run, so nothing is known to fail."]
    for kind, title in ((NEW, "Newly fails"), (NO_VERDICT, "No verdict (inconclusive, or the pytest worker died)"),
                        (BOTH, "Fails on the tested set too (not drift)")):
        found = [f for f in page.failures if f.kind == kind]
        lines += [f"{title}:", ""] + [f"- `{f.nodeid}` ({cell(f.run)}): {cell(f.line)}" +
                                      (f" ({cell(f.note)})" if f.note else "") for f in found] + [""] if found else []
    newly = [f"- certify {c.client}: rule `{rule}` fails on the newest set" for c in page.certs for rule in c.newly_failed]
    lines += ["Certification:", ""] + newly + [""] if newly else []
    if not any(f.kind == NEW for f in page.failures) and not newly:
        lines.append("No test that ran newly fails" + (" (some runs are incomplete: see What ran)."
                                                       if any(r.why for r in page.runs) else "."))
    return lines


def _certs(page: Page) -> list[str]:
    lines = ["## Certification against the published certificates", ""]
    if not page.certs:
        return lines + ["No client was certified."]
    lines += ["| client | tested (docs/certificates) | newest | rules whose result changed |", "|---|---|---|---|"]
    for c in page.certs:
        changed = "; ".join(f"{rule}: {was} -> {now}" for rule, was, now in c.changed) or \
            ("none" if c.decided else "undecided")
        lines.append(f"| {c.client} | {cell(c.tested)} | {cell(c.newest)} | {cell(changed)} |")
    return lines


def _update(page: Page) -> list[str]:
    return ["## Taking the newest set", "",
            "One reviewed commit: the Python lock (`" + LOCK_UPDATE + "`), a Kafka release the harness does not know "
            "added to `KNOWN_VERSIONS` (harness/kafka/versions.py), franz-go in harness/go/franzdriver/go.mod "
            "(`go get github.com/twmb/franz-go@<version>`, then `go mod tidy`), spring-kafka in "
            "harness/kafka/spring_jars.py; every row above that no longer reproduces, or reproduces on a version its "
            "table does not list yet, updated in its table with the run that shows it."]


def _reading(page: Page) -> list[str]:
    return ["## Reading this page", "",
            "- **What moved**: *moved* when a registry has a newer final release than the tested set pins (milestones, "
            "release candidates and pre-releases never count), *new* for a release line or package the tested set has "
            "none of, *not resolved* when the registry could not be read or answered nothing usable (then nothing is "
            "run and the job exits 2).",
            "- **Rows**: *still reproduces* when a run showed it: the test's expected failure names the row, or the "
            "test failed with the row's own evidence on a version the row does not list yet; *no longer reproduces* "
            "when the plugin said so (a strict unexpected pass, or the summary line of a version not yet confirmed) or "
            "the row's test passed with the row's client and implementation; *undecided* when its test failed "
            "otherwise, xfailed for another reason, or passed where the row shows only sometimes (intermittent); "
            "*not exercised* when no run could show it (another implementation or client, a release it is not "
            "expected on, its tests not run). A known bug names no tests: one judged by the conformance suite is "
            "read from the suite file its evidence names; one the checkers excuse by an allowance shows only in "
            "chaos runs, which this job does not make.",
            "- **Newly fails**: a failure no row explains, that did not fail on the tested set: the job runs such "
            "tests again with the tested set (the client's pinned version, the newest release the harness knows of "
            "the same Kafka line, the job's own interpreter: in `tox -e latest` the lock's packages) and lists the "
            "ones that fail there too apart, as not drift; a run nothing of which moved is its own baseline. "
            "`--baseline CLIENT=JUNIT` with `--no-baseline-reruns` compares with a JUnit XML of one's own instead; "
            "without any baseline every such failure is listed, saying so.",
            "- Exit: 0 the page was written and nothing newly fails; 1 something newly fails (a test, or a "
            "certificate's rule); 2 bad input or a registry not read; 3 a run or a certification without a verdict; "
            "130 interrupted."]
