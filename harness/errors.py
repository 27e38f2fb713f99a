"""Errors the harness shows to users: one line that names the fix, no traceback."""


def first_line(exc: BaseException, limit: int = 300) -> str:
    """The first line of `exc`'s message (its type's name if it has none), cut at `limit` characters:
    what a one-line error quotes of an exception it did not expect."""
    text = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return text if len(text) <= limit else text[:limit] + "..."


class HarnessError(Exception):
    """A user-facing error with a one-line message that names the fix."""


class Inconclusive(HarnessError):
    """A setup that did not hold once the run had started (a broker that never became ready, a
    condition that timed out): nothing was decided, so the verdict is unknown (exit 3), not bad
    input (2) and not a violation (1). One line, like every HarnessError."""


def raise_if_interrupted(exc: BaseException) -> None:
    """Raise KeyboardInterrupt if Ctrl-C (or SIGTERM, which the CLI and the pytest plugin turn into one) is
    behind `exc`: a library may turn the interrupt into its own error (a C extension's call, e.g.
    confluent-kafka's Admin client, raises its exception from the KeyboardInterrupt). Such an error must
    stop what is running, not be retried or counted as a test's failure."""
    pending, seen = [exc], set()
    while pending:
        cause = pending.pop()
        if cause is None or id(cause) in seen:
            continue
        seen.add(id(cause))
        if isinstance(cause, KeyboardInterrupt):
            raise KeyboardInterrupt(f"interrupted (Ctrl-C or SIGTERM), seen as {type(exc).__name__}: {exc}") from exc
        pending += [cause.__cause__, cause.__context__, *getattr(cause, "exceptions", ())]
