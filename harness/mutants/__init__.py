"""Mutants of a history, for mutation testing of the oracle (the checkers).

A mutant class is a function `(ops, rng) -> Mutant | None` that makes ONE seeded random change to a
history, a change that models one broker or client bug, and returns the mutated history with the
property that must then fail (a checker `NAME`), the anomaly kinds that report it and where it is.
None: the history holds no spot for that change.

Every class picks its spot OUTSIDE the situation of every allowance (`harness.model.allowances`,
boundaries as the replay in `harness.checkers.replay` draws them), so the mutated history must fail
that property, always: a mutant that passes is a hole in the oracle. The spot rules mirror the
allowances' definitions (session ends, disruption windows, lock durations, the state topic's start
offset), computed from the history independently of the replay.

The original ops are never changed: a mutated history is a new list (renumbered: index = position,
times non-decreasing) whose changed values are deep copies.

    from harness.mutants import MUTANTS, check_all, judge
    m = MUTANTS["drop-delivery"](ops, random.Random(7))
    if m is not None:
        print(judge(m, check_all(m.ops), check_all(ops)))  # "killed", "killed-other" or "survived"

The modules, in the order a reader meets them:

- `registry`: `Mutant`, the `MUTANTS` registry and `@mutant_class`, shared constants;
- `scan`: the one pass over a history that reads what the allowances look at;
- `facts`: `Facts`, those tables and the questions spot rules ask of them (`facts(ops)`, cached);
- `edit`: editing a history without touching the original (`insert`, `renumber`...), `where`;
- the families of mutant classes, registered in this order: `vanish` (a record that vanishes),
  `counts` (acquisitions and delivery counts), `acks` (acknowledgements), `durable` (the state topic
  and the log), `records` (a refused acceptance, a second copy of an id, an id no produce invoked);
- `verdicts`: running the checkers and judging a mutant (`check_all`, `judge`, `known_deviation`);
- `histories`: reading a history file or run directory (`read_ops`).
"""

from __future__ import annotations

# isort: off
# the families register their classes in MUTANTS as they are imported: this order is MUTANTS' order
from harness.mutants import vanish
from harness.mutants import counts
from harness.mutants import acks
from harness.mutants import durable
from harness.mutants import records
from harness.mutants import causes
# isort: on
from harness.mutants.edit import insert, renumber, where, with_value
from harness.mutants.facts import Facts, facts
from harness.mutants.histories import read_ops
from harness.mutants.registry import MUTANTS, Mutant, MutantClass, mutant_class
from harness.mutants.scan import AckInfo, Delivery, End
from harness.mutants.verdicts import KNOWN_DEVIATIONS, check_all, check_table, judge, known_deviation, verdict_line

#: the families of mutant classes, in the order they register theirs (imported above in this order)
FAMILIES = (vanish, counts, acks, durable, records, causes)

__all__ = [
    "FAMILIES", "KNOWN_DEVIATIONS", "MUTANTS", "AckInfo", "Delivery", "End", "Facts", "Mutant", "MutantClass",
    "check_all", "check_table", "facts", "insert", "judge", "known_deviation", "mutant_class", "read_ops",
    "renumber", "verdict_line", "where", "with_value",
]
