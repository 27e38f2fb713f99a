"""The certification part of a run's spec (`harness.spec.RunSpec.certification`): which client rules a
certification's pytest session runs and where its conformance report goes; validated here, by the room
that certifies.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.certify.rules import RULES
from harness.errors import HarnessError


@dataclass(frozen=True)
class CertifyPlan:
    rules: tuple[str, ...] = ()  # the client rules to run (all when empty)
    conformance_out: str | None = None  # default: reports/conformance/<time>

    def validate(self) -> "CertifyPlan":
        unknown = [r for r in self.rules if r not in RULES]
        if unknown:
            raise HarnessError(f"unknown rules {', '.join(unknown)}; valid: {', '.join(RULES)}")
        return self
