"""Where a test's seconds go (issue 53): the main thread's time split into a few kinds, each second counted
once, by the innermost span open when it passed.

    with spent("client"):   # a driver command: the client and the brokers serving it
        ...

Kinds (`KINDS`): `cluster` (starting, stopping and restarting Kafka nodes, readiness included: Kafka's own
work), `client` (a command to a client driver until its reply: Kafka serving the client, and the client),
`workload` (a run's producer and consumers at work, its faults on their schedule: Kafka's work under the
scenario), `wait` (our waits on a condition between its checks: settlement, lock expiries, session timeouts, a fault's
effect), `check` (the checkers and the durable-state read-back). What no span covers is the rest: pytest,
process starts, our own code between spans, and idle. The pytest plugin records each test's totals as JUnit
properties (`time_<kind>`); `benchmarks/ci_times.py --tests` prints them per test.

Only the main thread counts (a background thread's span would count seconds twice against the test's wall
time); a span inside a `cluster` span that waits (a node's readiness) stays `cluster`.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from typing import Iterator

KINDS = ("cluster", "client", "workload", "wait", "check")

_totals: dict[str, float] = dict.fromkeys(KINDS, 0.0)
_stack: list[list] = []  # [kind, since] of the open spans, innermost last


def _main() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextmanager
def spent(kind: str, *, unless_in: tuple[str, ...] = ()) -> Iterator[None]:
    """Count the time inside the block as `kind` (nested spans take their own time out of it). With
    `unless_in`, a span opened inside one of those kinds counts as that kind instead (no new span)."""
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}: one of {', '.join(KINDS)}")
    if not _main() or (unless_in and any(k in unless_in for k, _ in _stack)):
        yield
        return
    now = time.monotonic()
    if _stack:
        _totals[_stack[-1][0]] += now - _stack[-1][1]
    _stack.append([kind, now])
    try:
        yield
    finally:
        now = time.monotonic()
        top = _stack.pop()
        _totals[top[0]] += now - top[1]
        if _stack:
            _stack[-1][1] = now


def add(kind: str, seconds: float) -> None:
    """Count `seconds` of `kind` spent elsewhere (a child process that measured its own)."""
    if kind in KINDS and seconds > 0:
        _totals[kind] += seconds


def take() -> dict[str, float]:
    """The totals since the last `take` (the open spans' time so far included), and start again from zero."""
    if _stack:  # only the innermost open span is counting
        now = time.monotonic()
        _totals[_stack[-1][0]] += now - _stack[-1][1]
        _stack[-1][1] = now
    taken = dict(_totals)
    for kind in KINDS:
        _totals[kind] = 0.0
    return taken


def timed(kind: str, *, unless_in: tuple[str, ...] = ()):
    """A decorator: the function's calls are spans of `kind`."""
    def wrap(fn):
        import functools

        @functools.wraps(fn)
        def inner(*args, **kwargs):
            with spent(kind, unless_in=unless_in):
                return fn(*args, **kwargs)
        return inner
    return wrap


def add_junit(path) -> None:
    """Count the `time_<kind>` properties of every test in a child pytest's JUnit XML (a certification's)."""
    import xml.etree.ElementTree as ET
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):  # no child report: its time stays the rest's
        return
    for prop in root.iter("property"):
        name = prop.get("name") or ""
        if name.startswith("time_"):
            try:
                add(name[len("time_"):], float(prop.get("value") or 0))
            except ValueError:
                pass
