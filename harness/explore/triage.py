"""What a generated run found: its anomaly signature, its outcome, and the triage of a finding.

A run's signature is the sorted set of what went wrong, each part `<checker>:<anomaly kind>` (a
property the oracle found broken), `step:<check>` (a step whose result was definite and wrong, e.g. an
alter of a non-empty group's offsets that succeeded), `known:<bug>` (a known bug of the release that
the checkers excused by its allowance, with its evidence) or `harness:<what>` (the harness itself
broke: a step raised, a checker crashed). Two runs with the same signature are one finding; the
shrinker keeps a candidate only if it fails with the same signature.

The triage names who a finding is about, from the signature and the history: a known bug of the
release (`harness.model.profiles.KNOWN_BUGS`, by id, when every part is one the release is known to
have), a harness bug, a deviation of the backend (an implementation other than Apache Kafka), a
client bug (only the client's side of the contract is broken: results of acknowledgements, the order
in a batch) or a broker bug. Apart from the known bugs, whose evidence is checked, a triage is a
suspicion for a person to confirm, and `report.md` says so.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any, Sequence

from harness.model.allowances import ALLOWANCES
from harness.model.profiles import KNOWN_BUGS

OUTCOMES = ("pass", "known", "fail", "unknown")
#: checkers whose anomalies are the client's side of the contract
CLIENT_SIDE = ("ack-results", "batch-order")


@dataclass(frozen=True)
class StepCheck:
    """A step whose result is definite: what was expected (and the sentence that says so) and what came."""

    name: str
    step: int  # index of the step in the schedule
    message: str
    sentence: str


@dataclass
class RunFinding:
    """What one run of a schedule came to."""

    parts: tuple[str, ...]
    outcome: str  # pass | known | fail | unknown
    reasons: list[str] = field(default_factory=list)  # what each part is, one line each
    unknown: list[str] = field(default_factory=list)  # properties not decided, and why
    evidence: list[int] = field(default_factory=list)  # history op indexes the anomalies name (the first few)
    #: when every part is a step check: the index of the last step one names (the steps after it cannot matter)
    last_step: int | None = None
    #: the history index of the produce of each record no-loss found lost (its anomalies' first evidence)
    lost_produces: tuple[int, ...] = ()

    @property
    def signature(self) -> str:
        return "+".join(self.parts)

    @property
    def interesting(self) -> bool:
        """A finding to keep: something failed, or a known bug was met."""
        return self.outcome in ("fail", "known")


def assess(results: Sequence[Any], step_checks: Sequence[StepCheck], harness_errors: Sequence[str]) -> RunFinding:
    """The run's parts and outcome from its checkers' results, its step checks and its harness errors."""
    parts: set[str] = set()
    reasons: list[str] = []
    unknown: list[str] = []
    evidence: list[int] = []
    lost: list[int] = []
    for r in results:
        if r.checker == "no-loss" and r.valid is False:
            lost += [a.evidence[0] if a.evidence else -1 for a in r.anomalies if a.kind == "lost"]
        if r.valid is False:
            for a in r.anomalies:
                if f"{r.checker}:{a.kind}" not in parts:
                    reasons.append(f"{r.checker} {a.kind}: {a.message}")
                    evidence += list(a.evidence)[:6]
                parts.add(f"{r.checker}:{a.kind}")
        elif r.valid != True:  # noqa: E712
            if str(r.reason).startswith("checker crashed"):
                parts.add(f"harness:checker-crashed-{r.checker}")
                reasons.append(f"{r.checker}: {r.reason}")
            else:
                unknown.append(f"{r.checker}: {r.reason}")
        for name in r.allowances:
            if name in ALLOWANCES and ALLOWANCES[name].known_bug and f"known:{name}" not in parts:
                parts.add(f"known:{name}")
                evidence += [i for uses in r.allowance_evidence.get(name, [])[:2] for i in uses][:8]
                kept = "; ".join(r.stats.get("known_bug_evidence", [])[:1])
                reasons.append(f"{r.checker} excused {name} (a known bug of the release)" + (f": {kept}" if kept else ""))
    for check in step_checks:
        parts.add(f"step:{check.name}")
        reasons.append(f"step {check.step + 1}: {check.message} ({check.sentence})")
    for error in harness_errors:
        parts.add(f"harness:{_slug(error.split(':', 1)[0])}")
        reasons.append(f"harness: {error}")
    broken = [p for p in parts if not p.startswith("known:")]
    outcome = "fail" if broken else "known" if parts else "unknown" if unknown else "pass"
    last = max(c.step for c in step_checks) if step_checks and all(p.startswith("step:") for p in parts) else None
    return RunFinding(tuple(sorted(parts)), outcome, reasons, unknown, evidence, last, tuple(lost))


def dir_name(signature: str) -> str:
    """A finding's directory: the signature in file-name letters, cut, with a hash of the whole."""
    digest = hashlib.sha256(signature.encode()).hexdigest()[:8]
    return f"{_slug(signature)[:80]}-{digest}"


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9.]+", "-", text.lower()).strip("-") or "x"


@dataclass(frozen=True)
class Triage:
    kind: str  # known-bug | harness-bug | backend-deviation | client-bug | broker-bug
    known_bug: str | None  # the KNOWN_BUGS id, for a known bug
    why: str


def triage(parts: Sequence[str], version: str, backend: str, ops: Sequence[Any] = (),
           setup: Any = None, lost_produces: Sequence[int] = ()) -> Triage:
    """Who a finding is about (see the module docstring). `ops`: the failing run's history, for the known
    bugs a conformance test recognizes (the partitions were added, which partitions the lost records were
    on); `setup`: its schedule's; `lost_produces`: the finding's (`RunFinding.lost_produces`)."""
    if any(p.startswith("harness:") for p in parts):
        return Triage("harness-bug", None, "the harness broke while running or checking the schedule: "
                      + ", ".join(p for p in parts if p.startswith("harness:")))
    bugs = [b for b in KNOWN_BUGS.values() if b.affects(version)] if backend not in ("kfake", "mock") else []
    explained: dict[str, str] = {}
    for part in parts:
        name = _known_part(part, bugs, ops, setup, lost_produces)
        if name:
            explained[part] = name
    if explained and len(explained) == len(parts):
        names = sorted(set(explained.values()))
        return Triage("known-bug", names[0], f"every part is a known bug of Kafka {version}: "
                      + ", ".join(f"{n} ({KNOWN_BUGS[n].known.on(version)}; fixed in {KNOWN_BUGS[n].fixed})"
                                  for n in names))
    unexplained = [p for p in parts if p not in explained]
    if backend in ("kfake", "mock"):
        return Triage("backend-deviation", None, f"{backend} deviates from Apache Kafka's behaviour: {', '.join(unexplained)} "
                      "(suspected: confirm on Apache Kafka with the same schedule)")
    if all(p.split(":", 1)[0] in CLIENT_SIDE for p in unexplained):
        return Triage("client-bug", None, f"only the client's side of the contract broke: {', '.join(unexplained)} "
                      "(suspected: replay with another client to confirm)")
    return Triage("broker-bug", None, f"the broker's side broke: {', '.join(unexplained)} (suspected: replay with "
                  "another client; a broker bug fails with every client)")


def _known_part(part: str, bugs, ops, setup, lost_produces) -> str | None:
    """The known bug (of `bugs`) that explains `part`, if one does with its evidence."""
    names = {b.name for b in bugs}
    if part.startswith("known:") and part[6:] in names:
        return part[6:]
    if part == "step:alter-offsets-non-empty-accepted" and "alter-offsets-non-empty-accepted" in names:
        return "alter-offsets-non-empty-accepted"
    if part == "no-loss:lost" and "added-partitions-start-at-latest" in names and setup is not None \
            and (setup.auto_offset_reset == "latest" or setup.auto_offset_reset.startswith("by_duration")):
        return "added-partitions-start-at-latest" if _lost_only_on_added_partitions(ops, lost_produces) else None
    return None


def _lost_only_on_added_partitions(ops: Sequence[Any], lost_produces: Sequence[int]) -> bool:
    """Whether every lost record (`lost_produces`: the history index of each one's produce) lies on a partition
    the run added: at or past the partition count before the history's first `partitions-added`."""
    added = [op.value["from"] for op in ops if op.f == "partitions-added" and op.type == "ok"
             and isinstance(op.value, dict) and isinstance(op.value.get("from"), int)]
    if not added or not lost_produces:
        return False
    by_index = {op.index: op for op in ops}
    partitions = []
    for index in lost_produces:
        produce = by_index.get(index)
        if produce is None or produce.f != "produce" or not isinstance(produce.value, dict) \
                or produce.value.get("partition") is None:
            return False
        partitions.append(produce.value["partition"])
    return all(p >= added[0] for p in partitions)
