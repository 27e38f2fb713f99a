"""Deviations from KIP-932 that the harness found in an implementation other than Apache Kafka.

A deviation found is a result of the harness, kept as an expected failure of the implementation and the
versions it was met on: the tests that meet it are marked `xfail(strict=True)` when the session runs that
implementation and version (`apply_deviations`), so a fix shows up as an unexpected pass (a failure of the
session) and the deviation is taken off here. On a version not listed the test runs plainly: a deviation
is never assumed of a version the harness has not met it on. Each entry names the sentence it breaks, what
the harness saw and, where one can be pointed to, the implementation's source line; the page of each
implementation (`docs/implementations/<name>.md`) shows the evidence and a reproduce command.

Apache Kafka's own known bugs are not here: they are facts of a release line, fixed in a later one
(`harness.model.profiles.KNOWN_BUGS`), and a test meets them only with their evidence.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.kafka.implementations import KFAKE_VERSIONS


@dataclass(frozen=True)
class Deviation:
    name: str
    implementation: str
    versions: tuple[str, ...]  # the implementation's versions the harness met it on
    tests: tuple[str, ...]  # node ids (path::name, or path::name[params] for one parameter set)
    rule: str  # the sentence (KIP-932, a follow-up KIP, or the Kafka API contract) it breaks
    seen: str  # what the harness saw
    source: str = ""  # where in the implementation's sources it comes from

    @property
    def reason(self) -> str:
        where = f" ({self.source})" if self.source else ""
        return f"{self.implementation} deviation {self.name}: {self.seen}; breaks: {self.rule}{where}"


_NEWEST = KFAKE_VERSIONS[:1]
_BOTH = KFAKE_VERSIONS

DEVIATIONS: tuple[Deviation, ...] = (
)


def deviations_for(implementation: str, version: str | None) -> list[Deviation]:
    """The deviations met on `implementation` at `version` (none for Apache Kafka: `implementation` "apache")."""
    return [d for d in DEVIATIONS if d.implementation == implementation and version in d.versions]


def deviation_of(nodeid: str, deviations: list[Deviation]) -> Deviation | None:
    """The deviation a test (its node id, with or without parameters) meets, if any."""
    base = nodeid.split("[", 1)[0]
    for deviation in deviations:
        if nodeid in deviation.tests or base in deviation.tests:
            return deviation
    return None
