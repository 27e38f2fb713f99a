"""Readiness as a strategy, not a sleep: poll a real condition until a deadline.

Modelled on testcontainers' wait strategies: a timeout, a poll interval, and a
message that says what was awaited; on timeout the last transient error and
any diagnostics (e.g. the tail of a process log) go into the exception.
"""

from __future__ import annotations

import time
from typing import Callable, TypeVar

from harness.errors import Inconclusive, raise_if_interrupted
from harness.timing import spent

T = TypeVar("T")


class WaitTimeout(Inconclusive):
    """A condition did not hold before its deadline."""


def wait_until(
    condition: Callable[[], T | None],
    *,
    timeout: float,
    what: str,
    interval: float = 0.1,
    fatal: Callable[[], str | None] | None = None,
    diagnostics: Callable[[], str] | None = None,
) -> T:
    """Call `condition` until it returns a truthy value, and return that value.

    Exceptions raised by `condition` count as "not yet" (transient) and the
    last one is reported on timeout. `fatal` is checked each round: a non-None
    string aborts at once (e.g. "broker 2 exited with code 1"). Must not sleep
    past the deadline and must never return a falsy value as success.
    """
    with spent("wait", unless_in=("cluster",)):  # a node's readiness is Kafka's starting work
        return _wait_until(condition, timeout, what, interval, fatal, diagnostics)


def _wait_until(condition, timeout: float, what: str, interval: float, fatal, diagnostics):
    deadline = time.monotonic() + timeout
    last_error: BaseException | None = None
    while True:
        if fatal is not None:
            reason = fatal()
            if reason:
                raise WaitTimeout(f"while waiting for {what}: {reason}" + _diag(diagnostics))
        try:
            value = condition()
            if value:
                return value
        except Exception as exc:  # transient by contract, unless Ctrl-C is behind it
            raise_if_interrupted(exc)
            last_error = exc
        now = time.monotonic()
        if now >= deadline:
            detail = f" (last error: {last_error})" if last_error else ""
            raise WaitTimeout(f"timed out after {timeout:.0f}s waiting for {what}{detail}" + _diag(diagnostics))
        time.sleep(min(interval, max(0.0, deadline - now)))


def _diag(diagnostics: Callable[[], str] | None) -> str:
    if diagnostics is None:
        return ""
    try:
        text = diagnostics().strip()
    except Exception:
        return ""
    return f"\n{text}" if text else ""
