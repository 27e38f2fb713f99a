"""Editing a history without touching the original: new lists of ops, renumbered (index = position,
times never step back), whose changed values are new objects; and `where`, the text naming a spot.
"""

from __future__ import annotations

from typing import Any, Sequence

from harness.history.schema import Op
from harness.mutants.facts import Facts
from harness.mutants.registry import Key


def renumber(ops: Sequence[Op]) -> list[Op]:
    """index = position; times never step back."""
    out: list[Op] = []
    last = None
    for i, op in enumerate(ops):
        time = op.time if last is None or op.time >= last else last
        last = time
        out.append(op if op.index == i and op.time == time else Op(i, time, op.process, op.type, op.f, op.value))
    return out


def with_value(op: Op, value: Any) -> Op:
    return Op(op.index, op.time, op.process, op.type, op.f, value)


def insert(ops: Sequence[Op], after: int, new: list[tuple[str, str, str, Any]], dt: int = 0) -> list[Op]:
    """`ops` with `new` (process, type, f, value) inserted after position `after` (-1: at the start), at
    the time of the op before them plus `dt` (capped at the next op's time)."""
    base = ops[after].time if after >= 0 else (ops[0].time if ops else 0)
    time = base + dt
    if after + 1 < len(ops):
        time = min(time, ops[after + 1].time)
    added = [Op(0, max(time, base), p, t, f, v) for p, t, f, v in new]
    return renumber(list(ops[:after + 1]) + added + list(ops[after + 1:]))


def replace_value(ops: Sequence[Op], pos: int, value: Any) -> list[Op]:
    """`ops` with the op at `pos` holding `value` instead (same index and time)."""
    out = list(ops)
    out[pos] = with_value(ops[pos], value)
    return out


def where(f: Facts, pos: int, key: Key | None = None, extra: str = "") -> str:
    """A mutant's spot: the op at `pos` of the unmutated history, the record `key`, and `extra`."""
    op = f.ops[pos]
    text = f"op {op.index} ({op.f} {op.type} by {op.process})"
    if key is not None:
        text += f": {key[0]}-{key[1]}@{key[2]}"
        rid = f.record_id(key)
        if rid is not None:
            text += f" id {rid}"
    return text + (f"; {extra}" if extra else "")
