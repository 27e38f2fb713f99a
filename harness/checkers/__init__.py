"""Checkers: pure functions from a history to a `Result`, failing closed.

`compose` merges results by priority (False beats "unknown" beats True);
`check_safe` turns a crashing checker into "unknown", never into a pass.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Literal, Sequence

from harness.history.schema import Op
from harness.timing import spent

Validity = Literal[True, False, "unknown"]


@dataclass(frozen=True)
class Anomaly:
    """One violation, with the history operations (by index) that show it."""

    kind: str
    message: str
    evidence: tuple[int, ...] = ()
    detail: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "message": self.message, "evidence": list(self.evidence), "detail": self.detail}


@dataclass(frozen=True)
class Result:
    """A checker's verdict. `stats` says what was checked, so an empty check is visible."""

    checker: str
    valid: Validity
    anomalies: tuple[Anomaly, ...] = ()
    stats: dict[str, Any] = field(default_factory=dict)
    reason: str = ""
    allowances: dict[str, int] = field(default_factory=dict)  # named allowance -> times used
    #: named allowance -> its first uses, each the op indexes of the events that justified it
    allowance_evidence: dict[str, list[list[int]]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"checker": self.checker, "valid": self.valid, "reason": self.reason, "stats": self.stats,
                "allowances": self.allowances, "allowance_evidence": self.allowance_evidence,
                "anomalies": [a.to_json() for a in self.anomalies]}


Checker = Callable[[Sequence[Op]], Result]


def check_safe(name: str, checker: Checker, history: Sequence[Op]) -> Result:
    """Run `checker`; an exception becomes valid="unknown" with the error as reason."""
    try:
        with spent("check"):
            result = checker(history)
    except Exception as exc:  # fail closed
        return Result(name, "unknown", reason=crash_reason(exc))
    if not (result.valid is True or result.valid is False or result.valid == "unknown"):
        return Result(name, "unknown", reason=f"checker returned invalid verdict {result.valid!r}")
    return result


def crash_reason(exc: Exception) -> str:
    """"checker crashed: <type>: <message> (<file>:<line> in <function>)", where it was raised."""
    import traceback
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" ({Path(frames[-1].filename).name}:{frames[-1].lineno} in {frames[-1].name})" if frames else ""
    return f"checker crashed: {type(exc).__name__}: {exc}{where}"


def observed_result(prop: str, obs: Any) -> Result:
    """The Result for `prop` from a replay's Observation (whichever engine built it)."""
    anomalies = tuple(obs.anomalies.get(prop, ()))
    allowances = dict(obs.allowances.get(prop, {}))
    evidence = {k: list(v) for k, v in getattr(obs, "allowance_evidence", {}).get(prop, {}).items()}
    stats = dict(obs.stats.get(prop, {}))
    if "*" in obs.unknown:
        return Result(prop, "unknown", (), stats, obs.unknown["*"], allowances, evidence)
    if anomalies:
        return Result(prop, False, anomalies, stats, "", allowances, evidence)
    if prop in obs.unknown:
        return Result(prop, "unknown", (), stats, obs.unknown[prop], allowances, evidence)
    return Result(prop, True, (), stats, "", allowances, evidence)


def compose(results: Sequence[Result]) -> Validity:
    """False if any is False; else "unknown" if any is unknown or there are none; else True."""
    if any(r.valid is False for r in results):
        return False
    if not results or any(r.valid == "unknown" for r in results):
        return "unknown"
    return True


def verdict_word(valid: Validity) -> str:
    return {True: "PASS", False: "FAIL"}.get(valid, "UNKNOWN")  # type: ignore[arg-type]
