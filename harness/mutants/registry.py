"""What a mutant is, the registry of mutant classes, and the constants every family shares.

A mutant class is a function `(ops, rng) -> Mutant | None` registered under its name with
`@mutant_class(name)`; `MUTANTS` keeps them in the order they are registered (the order the family
modules are imported by `harness.mutants`), which is the order the tests and the benchmark run them.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Callable

from harness.history.schema import Op

MS = 1_000_000
NEVER = 1 << 62
DISRUPTING = ("leader-change", "coordinator-loss")
FINAL = ("ACCEPT", "REJECT")
LOSS_KINDS = ("lost", "not-accepted", "skipped")
#: a fresh client session, as a restart writes it
RESTART = {"client": "test", "client_version": "1"}

Key = tuple  # (topic, partition, offset)


@dataclass(frozen=True)
class Mutant:
    """One mutated history: `ops` must fail property `prop` (a checker NAME) with one of `kinds`."""

    cls: str
    ops: list[Op]
    prop: str
    kinds: tuple[str, ...]
    where: str  # the spot: op index (of the unmutated history), record


MutantClass = Callable[[list[Op], random.Random], "Mutant | None"]
#: mutant class name -> the class, in the order they are defined
MUTANTS: dict[str, MutantClass] = {}


def mutant_class(name: str) -> Callable[[MutantClass], MutantClass]:
    """Register the decorated function as the mutant class `name`."""
    def register(fn: MutantClass) -> MutantClass:
        MUTANTS[name] = fn
        return fn
    return register
