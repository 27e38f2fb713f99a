"""Mutant classes of durable state and the log: the state topic forgets acknowledged records, a
truncation of a delivered record is recorded as a clean one, the dead-letter queue loses a rejected
record or holds an accepted one (KIP-1191).

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


def _last_dead_letters(f) -> int | None:
    """The position of the history's last successful `dead-letters` read (the one the checker judges)."""
    found = [pos for pos, op in enumerate(f.ops) if op.f == "dead-letters" and op.type == "ok"
             and isinstance(op.value, dict) and isinstance(op.value.get("records"), list)]
    return found[-1] if found else None


def _settled_by(f, key, kind: str) -> bool:
    """Whether the history settles `key` by `kind` alone: an acknowledgement of that kind succeeded, none
    of the other final kind did, and its id is not another allowance's (truncated, aborted)."""
    other = "ACCEPT" if kind == "REJECT" else "REJECT"
    acks = f.acks.get(key, ())
    return (any(a.type == kind and a.result == "ok" for a in acks)
            and not any(a.type == other and a.result in ("ok", "unknown", "lost") for a in acks)
            and f.record_id(key) not in f.excluded_ids and key[:2] not in f.excluded_tps)


def _archived_at_limit(f, key) -> bool:
    """Whether the history shows `key` delivered at the limit and never settled by an acknowledgement
    (none ACCEPT or REJECT succeeded or has an unknown outcome): the broker archived it."""
    return (any(d.count >= f.limit for d in f.deliveries.get(key, ()))
            and not any(a.type in FINAL and a.result in ("ok", "unknown", "lost") for a in f.acks.get(key, ()))
            and f.record_id(key) not in f.excluded_ids and key[:2] not in f.excluded_tps)


@mutant_class("dead-letter-dropped")
def dead_letter_dropped(ops: list[Op], rng: random.Random) -> Mutant | None:
    """In the last read of the group's dead-letter queue, every DLQ record of one REJECTed record, or of
    one archived at the delivery-count limit, is gone. Models a broker whose DLQ write failed and that
    archived the record anyway (4.4 logs "Failed to write to DLQ, proceeding to ARCHIVED regardless"):
    the record is lost. No allowance."""
    f = facts(ops)
    pos = _last_dead_letters(f)
    if pos is None:
        return None
    records = f.ops[pos].value["records"]
    keys = sorted({(r["topic"], r["partition"], r["offset"]) for r in records if r.get("offset") is not None})
    spots = [key for key in keys if _settled_by(f, key, "REJECT") or _archived_at_limit(f, key)]
    if not spots:
        return None
    key = rng.choice(spots)
    v = dict(copy.deepcopy(f.ops[pos].value))
    v["records"] = [r for r in v["records"] if (r["topic"], r["partition"], r["offset"]) != key]
    return Mutant("dead-letter-dropped", replace_value(f.ops, pos, v), "no-loss", ("dlq-missing",),
                  where(f, pos, key, "its dead-letter records dropped"))


@mutant_class("accepted-dead-lettered")
def accepted_dead_lettered(ops: list[Op], rng: random.Random) -> Mutant | None:
    """The last read of the group's dead-letter queue also holds a record the history shows ACCEPTed.
    Models a broker that dead-letters a record after a client accepted it. No allowance."""
    f = facts(ops)
    pos = _last_dead_letters(f)
    if pos is None:
        return None
    spots = sorted(key for key in f.acks if _settled_by(f, key, "ACCEPT"))
    if not spots:
        return None
    key = rng.choice(spots)
    v = dict(copy.deepcopy(f.ops[pos].value))
    v["records"] = [*v["records"], {"topic": key[0], "partition": key[1], "offset": key[2],
                                    "group": f.config.get("group"), "delivery_count": 1,
                                    "message": "Offset rejected by client.", "key": None, "value": None,
                                    "dlq_partition": key[1], "dlq_offset": len(v["records"])}]
    return Mutant("accepted-dead-lettered", replace_value(f.ops, pos, v), "no-loss", ("dlq-accepted",),
                  where(f, pos, key, "added to the dead-letter queue"))
