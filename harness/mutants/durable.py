"""Mutant classes of durable state and the log: the state topic forgets acknowledged records, a
truncation of a delivered record is recorded as a clean one.

Properties: durable-state, no-loss.
"""

from __future__ import annotations

import copy
import random

from harness.history.schema import Op
from harness.mutants.edit import replace_value, where
from harness.mutants.facts import facts
from harness.mutants.registry import FINAL, Mutant, mutant_class


@mutant_class("state-not-terminal")
def state_not_terminal(ops: list[Op], rng: random.Random) -> Mutant | None:
    """In the last __share_group_state read, a share-partition's start offset is 0 again and its history
    of starts is gone (max_start_offset 0, writes []): records accepted below the old start are not
    terminal in the state topic. Models a share coordinator that loses acknowledged state. No
    allowance: `state-start-offset-regressed` (known bug up to 4.3) needs the writes or the highest
    start ever held to show the start going back over the record; here they show no start above 0."""
    f = facts(ops)
    spots = []
    for tp, (pos, part) in sorted(f.state_entries.items()):
        if tp in f.excluded_tps or part["start_offset"] <= 0:
            continue
        below = [a for a in f.ack_list if a.key[:2] == tp and a.key[2] < part["start_offset"] and a.type in FINAL
                 and a.result == "ok" and f.record_id(a.key) not in f.excluded_ids]
        if below:
            spots.append((pos, tp))
    if not spots:
        return None
    pos, tp = rng.choice(spots)
    v = copy.deepcopy(f.ops[pos].value)
    for part in v["partitions"]:
        if (part["topic"], part["partition"]) == tp:
            old = part["start_offset"]
            part["start_offset"], part["max_start_offset"], part["writes"] = 0, 0, []
    return Mutant("state-not-terminal", replace_value(f.ops, pos, v), "durable-state",
                  ("state-topic-not-terminal", "state-start-offset-regressed"),
                  where(f, pos, None, f"{tp[0]}-{tp[1]} start offset {old} -> 0, writes dropped"))


@mutant_class("unclean-flag-dropped")
def unclean_flag_dropped(ops: list[Op], rng: random.Random) -> Mutant | None:
    """A truncation that an unclean leader election caused, of a record that was delivered, is recorded
    as a clean one. Models a log that truncates a record a share fetch had already returned (a fetch
    past the high watermark). Boundary of the `lost-to-unclean-election` allowance: only an unclean
    election may take back a delivered record."""
    f = facts(ops)
    spots = []
    for pos, op in enumerate(f.ops):
        if op.f == "truncated" and op.type == "ok" and isinstance(op.value, dict) and op.value.get("unclean"):
            hit = [r for r in op.value.get("records") or () if r["id"] in f.delivered_ids]
            if hit:
                spots.append((pos, hit[0]["id"]))
    if not spots:
        return None
    pos, rid = rng.choice(spots)
    out = replace_value(f.ops, pos, dict(copy.deepcopy(f.ops[pos].value), unclean=False))
    v = f.ops[pos].value
    return Mutant("unclean-flag-dropped", out, "no-loss", ("truncated-delivered",),
                  where(f, pos, None, f"{v.get('topic')}-{v.get('partition')} truncation marked clean "
                                      f"(delivered id {rid})"))
