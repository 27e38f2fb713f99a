"""Shrinking a failing schedule: delta debugging over its steps, then its setup.

`ddmin` is Zeller and Hildebrandt's minimizing delta debugging ("Simplifying and Isolating
Failure-Inducing Input", 2002): split the steps into n chunks, keep a chunk or a complement that still
fails, else split finer; ends 1-minimal (removing any one step makes the failure go away) unless the
budget runs out first, when it returns the smallest failing schedule found so far. `still_fails` runs
a candidate on the live cluster and says whether it fails with the same anomaly signature; one run of a
real cluster is not deterministic, so a candidate that passes once is dropped (it may fail another
time: the shrink is then less small, never wrong: every schedule it returns failed when it was run).

Why not Hypothesis's shrinker: each test of a candidate is a real run of 20-90 s, and Hypothesis
shrinks by hundreds of calls with no wall-clock budget; it also treats a failure that does not
reproduce as an error of the test (Flaky), where a live cluster's nondeterminism is expected. ddmin
needs O(n log n) runs for n steps in the usual case, stops at a budget, and its input (a JSON
schedule) is exactly what `explore --replay` runs.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable, Sequence, TypeVar

from harness.explore.schedule import PLAIN_SETUP, Schedule

T = TypeVar("T")


class OutOfBudget(Exception):
    """The shrink's budget (runs or time) ran out."""


def ddmin(items: Sequence[T], fails: Callable[[list[T]], bool], can_test: Callable[[], bool] = lambda: True) -> list[T]:
    """The smallest sub-list of `items` (order kept) found for which `fails` holds; `items` itself is
    taken to fail. `can_test()` False stops the search (the budget): the best so far is returned."""
    current = list(items)
    n = 2
    try:
        while len(current) >= 2:
            chunks = _split(current, n)
            reduced = False
            for i, chunk in enumerate(chunks):  # a chunk alone
                if _test(chunk, fails, can_test):
                    current, n, reduced = chunk, 2, True
                    break
            if not reduced:
                for i in range(len(chunks)):  # a complement
                    complement = [x for j, c in enumerate(chunks) if j != i for x in c]
                    if _test(complement, fails, can_test):
                        current, n, reduced = complement, max(n - 1, 2), True
                        break
            if not reduced:
                if n >= len(current):
                    break
                n = min(len(current), 2 * n)
    except OutOfBudget:
        pass
    return current


def _test(candidate: list, fails, can_test) -> bool:
    if not candidate:
        return False
    if not can_test():
        raise OutOfBudget
    return bool(fails(candidate))


def _split(items: list[T], n: int) -> list[list[T]]:
    size, extra = divmod(len(items), n)
    out, start = [], 0
    for i in range(n):
        end = start + size + (1 if i < extra else 0)
        if end > start:
            out.append(items[start:end])
        start = end
    return out


def shrink(schedule: Schedule, fails: Callable[[Schedule], bool], can_test: Callable[[], bool] = lambda: True,
           skipped: Sequence[int] = (), last_step: int | None = None) -> Schedule:
    """The smallest schedule found that still `fails`: first cut after `last_step` (a failure of step checks
    only: what comes later cannot matter), then without the steps that were skipped when it failed (they did
    nothing; one run confirms each cut), then ddmin over the steps, then each setting of the setup back to its
    plain value (`PLAIN_SETUP`) where the failure stays."""
    best = schedule
    if last_step is not None and last_step + 1 < len(best.steps):
        candidate = best.with_steps(best.steps[:last_step + 1])
        if can_test() and fails(candidate):
            best = candidate
    if skipped:
        candidate = best.with_steps(s for i, s in enumerate(best.steps) if i not in set(skipped))
        if candidate.steps and can_test() and fails(candidate):
            best = candidate
    steps = ddmin(best.steps, lambda sub: fails(best.with_steps(sub)), can_test)
    best = best.with_steps(steps)
    for key, plain in PLAIN_SETUP.items():
        if getattr(best.setup, key) == plain or not can_test():
            continue
        candidate = replace(best, setup=replace(best.setup, **{key: plain}))
        if fails(candidate):
            best = candidate
    return best
