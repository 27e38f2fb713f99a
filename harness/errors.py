"""Errors the harness shows to users: one line that names the fix, no traceback."""


class HarnessError(Exception):
    """A user-facing error with a one-line message that names the fix."""


class Inconclusive(HarnessError):
    """A setup that did not hold once the run had started (a broker that never became ready, a
    condition that timed out): nothing was decided, so the verdict is unknown (exit 3), not bad
    input (2) and not a violation (1). One line, like every HarnessError."""
