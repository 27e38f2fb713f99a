"""A deadline for a test's body: it fails (instead of hanging the suite, or filling the memory) when the body
runs too long."""

from __future__ import annotations

import signal
from contextlib import contextmanager


class Expired(BaseException):
    """Not an Exception: `check_safe` (which makes a crashing checker unknown) must not catch it."""


@contextmanager
def deadline(seconds: float):
    """Fail (instead of hanging the suite, or filling the memory) if the body runs longer than `seconds`."""
    def expired(*_):
        raise Expired(f"took longer than {seconds} s")
    old = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
