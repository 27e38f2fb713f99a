"""One meaning per exit code, for every command of `share-harness` (and `run --suite`, `certify`).

| code | meaning                                                                          |
|------|----------------------------------------------------------------------------------|
| 0    | pass: everything asked for was checked and held                                  |
| 1    | violation: a check failed (a checker's anomaly, a failed test, a rule broken)    |
| 2    | bad input: an option, version, path, address or history the harness refuses     |
| 3    | unknown or incomplete: something asked for was not checked (no history, no test  |
|      | passed, a fault not applied or not healed, a crashed run, a checker that crashed)|
| 130  | interrupted (Ctrl-C, SIGTERM): everything started was stopped                    |

A violation outranks unknown: a run that found an anomaly AND missed a fault exits 1.
The pytest plugin keeps pytest's own codes (0 passed, 1 failed, 2 interrupted, 3 internal
error, 4 usage error, 5 no test ran); `run --suite` and `certify` translate them with
`from_pytest` so their callers see this table.
"""

from __future__ import annotations

from typing import Any

PASS = 0
VIOLATION = 1
BAD_INPUT = 2
UNKNOWN = 3
INTERRUPTED = 130

#: pytest's exit status -> this table's.
_PYTEST = {0: PASS, 1: VIOLATION, 2: INTERRUPTED, 3: UNKNOWN, 4: BAD_INPUT, 5: UNKNOWN}


def for_verdict(valid: Any) -> int:
    """True -> 0, False -> 1, anything else (None, "unknown") -> 3."""
    if valid is True:
        return PASS
    if valid is False:
        return VIOLATION
    return UNKNOWN


def from_pytest(rc: int) -> int:
    """pytest's exit status in this table (an unexpected one is unknown, never pass)."""
    return _PYTEST.get(rc, UNKNOWN)


def word(code: int) -> str:
    return {PASS: "pass", VIOLATION: "violation", BAD_INPUT: "bad input", UNKNOWN: "unknown",
            INTERRUPTED: "interrupted"}.get(code, "unknown")
