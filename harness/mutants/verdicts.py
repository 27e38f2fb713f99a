"""Judging mutants: every checker's verdict on a history, whether a mutant was killed, a one-line
summary of the verdicts, and the known deviations of Kafka for which an unmutated history fails on
purpose.
"""

from __future__ import annotations

from typing import Any, Sequence

from harness.checkers import check_safe
from harness.checkers.registry import OWN
from harness.history.events import EventTable
from harness.history.schema import Op
from harness.errors import HarnessError
from harness.model.profiles import KNOWN_BUGS
from harness.mutants.registry import Mutant


def check_table(table: Any) -> dict[str, Any]:
    """Every checker's Result for an EventTable (the seven checkers share one replay of it)."""
    return {name: check_safe(name, checker, table) for name, checker in OWN.items()}


def check_all(ops: Sequence[Op]) -> dict[str, Any]:
    """Every checker's Result for `ops` (flattened once, replayed once)."""
    return check_table(EventTable.from_ops(ops))


def _anomaly_keys(result: Any) -> set[tuple[str, str]]:
    return {(a.kind, a.message) for a in result.anomalies}


def judge(m: Mutant, results: dict[str, Any], baseline: dict[str, Any] | None = None) -> str:
    """"killed": `m.prop` failed with one of `m.kinds`; "killed-other": some property failed otherwise;
    "survived": nothing failed. With `baseline` (the unmutated history's results) only anomalies the
    unmutated history did not have count (a history may fail on purpose: a known deviation)."""
    def new(prop: str) -> list[Any]:
        seen = _anomaly_keys(baseline[prop]) if baseline is not None and prop in baseline else set()
        return [a for a in results[prop].anomalies if (a.kind, a.message) not in seen]
    target = results[m.prop]
    if target.valid is False and any(a.kind in m.kinds for a in new(m.prop)):
        return "killed"
    if any(r.valid is False and new(name) for name, r in results.items()):
        return "killed-other"
    return "survived"


def verdict_line(results: dict[str, Any]) -> str:
    """One line: each property's verdict and anomaly kinds, e.g. `no-loss=FAIL(lost x2) ...`."""
    parts = []
    for name, r in results.items():
        word = {True: "PASS", False: "FAIL"}.get(r.valid, "UNKNOWN")  # type: ignore[arg-type]
        kinds: dict[str, int] = {}
        for a in r.anomalies:
            kinds[a.kind] = kinds.get(a.kind, 0) + 1
        detail = ", ".join(f"{k} x{n}" if n > 1 else k for k, n in kinds.items())
        parts.append(f"{name}={word}" + (f"({detail})" if detail else ""))
    return " ".join(parts)


#: Runs whose unmutated history fails on purpose: a documented deviation of Kafka from KIP-932 that the
#: oracle rightly reports (the conformance test xfails on exactly that verdict). (a marker in the config's
#: group, {property: the only anomaly kinds it may report}, why, the known bug of `KNOWN_BUGS` it is: expected
#: only of a release in its range, issue 73). Any other failure is a false alarm.
KNOWN_DEVIATIONS: tuple[tuple[str, dict[str, tuple[str, ...]], str, str], ...] = (
    ("test_new_partitions_are_consumed_from_offset_zero-latest", {"no-loss": ("lost",)},
     "Kafka 4.2/4.3 initialize a partition added to the topic at latest (start offset -1, then "
     "share.auto.offset.reset): records produced to it before its first share fetch are skipped "
     "(suites/conformance/test_partitions_added.py, LATEST_DEVIATION)", "added-partitions-start-at-latest"),
)


def _has_bug(bug: str, version: object) -> bool:
    """Whether the release a history ran on is in `bug`'s range (known there, or newer than confirmed and not
    fixed); a history naming no release, or one not spelled as a release, has none."""
    try:
        return isinstance(version, str) and KNOWN_BUGS[bug].affects(version)
    except HarnessError:
        return False


def known_deviation(ops: Sequence[Op], results: dict[str, Any]) -> str | None:
    """Why the unmutated history `ops` fails as it does, if that is a known deviation (every property
    passes but those the deviation names, which fail with its kinds only); None otherwise."""
    config = next((op.value for op in ops if op.f == "config" and isinstance(op.value, dict)), {})
    group = str(config.get("group") or "")
    version = config.get("kafka_version")
    for marker, allowed, why, bug in KNOWN_DEVIATIONS:
        if marker in group and _has_bug(bug, version) and all(
                r.valid is True or (r.valid is False and name in allowed
                                    and all(a.kind in allowed[name] for a in r.anomalies))
                for name, r in results.items()):
            return why
    return None
