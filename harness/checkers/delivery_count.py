"""Delivery counts (KIP-932: "Every time that a record is acquired by a consumer
in a share group, its delivery count increments by 1").

Counts start at 1 and rise by one per acquisition; no delivery has a count
above `group.share.delivery.count.limit`; a record delivered at the limit and
not accepted is never delivered again. Anomalies: `count-invalid`,
`beyond-limit`, `count-skipped`, `count-regressed`, `delivered-after-limit`.
Known bug of 4.1 (`harness.model.profiles.KNOWN_BUGS`): a record released by a
session end has its count decreased (so the next delivery repeats the count and
the limit does not archive it); on 4.1 that repeat uses the allowance
`session-release-decrement`, which marks the run as meeting the bug (an
expected failure of 4.1), and on every other release it is an anomaly.
Allowances: `unobserved-acquisition`, `delivery-count-lag`.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, TYPE_CHECKING

from harness.checkers.evidence import READ_SLACK_NS
from harness.checkers.ledger import ACCEPTED
from harness.model.profiles import model_profile
from harness.checkers.judge import POLLS, Judge
from harness.model.share_partition import (RELEASE, SESSION, archived_after_release, count_after_release,
                                           next_delivery_count)

if TYPE_CHECKING:
    from harness.checkers.view import ReplayView

NAME = "delivery-count"


def judge_delivery(r: ReplayView, rec, index: int, time: int, process: str, tp: tuple, offset: int, count: int,
                   session_ended: bool) -> bool:
    """A new acquisition of `rec` (its previous delivery's count is `rec.count`) with count `count`. True if
    it was stamped out of order (`stamps-reordered`): it came before the delivery the ledger holds, which
    keeps its count and owner."""
    # (called on every delivery: the message text and the rest are worked out only when needed)
    prev, limit = rec.count, r.limit
    cause = SESSION if session_ended else RELEASE  # how the previous acquisition ended (at the latest)
    if prev and archived_after_release(prev, limit, cause, r.profile) and rec.status < ACCEPTED:
        r.evidence.excuse(NAME, "delivery-count-lag", rec.acq_time, time, tp, "delivered-after-limit",
                          f"{tp[0]}-{tp[1]}@{offset} delivered again (count {count}) after a delivery at the "
                          f"limit {limit}", (rec.last_index, index), offset=offset)
    elif count >= 1 and count != next_delivery_count(prev):
        where = f"{tp[0]}-{tp[1]}@{offset}"
        # the model says what that release did to the count (4.1: a session end takes the acquisition back)
        decreased = count_after_release(prev, cause, r.profile) < prev
        since = rec.acq_time if prev else rec.avail_time  # when the count could have moved
        if count > prev + 1:
            found = r.evidence.unseen_acquisitions(rec, count - prev - 1, time, index, tp=tp)
            if found is not None:
                r.findings.allow(NAME, *found)
            else:  # asked again at the end, when session ends stamped a little after this delivery are known
                r.pending_skips.setdefault((tp, offset), []).append(
                    Skip(copy.copy(rec), set(range(prev + 1, count)), time, index, process, where, count, offset))
        elif count < prev and _fills_a_skip(r, tp, offset, count, time, index, process):
            return True
        elif decreased and count == prev:  # the known bug session-release-decrement (4.1): counted, named
            r.findings.n["session-release-decrements"] += 1
            r.findings.allow(NAME, "session-release-decrement", (rec.last_index, index))
        elif rec.status >= ACCEPTED and not r.evidence.disrupted(since, time, tp):
            r.after_terminal.report(tp, offset, NAME, "count-regressed",
                                    f"{where} delivered with count {count} after count {prev}", (rec.last_index, index))
        else:
            r.evidence.excuse(NAME, "delivery-count-lag", since, time, tp, "count-regressed",
                              f"{where} delivered with count {count} after count {prev}", (rec.last_index, index),
                              offset=offset)
    return False


@dataclass
class Skip:
    """A delivery whose count skipped `missing` with no session end before it (judged at the end)."""

    rec: Any  # the record as the ledger held it before this delivery (a copy)
    missing: set[int]  # the counts it skipped not yet seen delivered to others (`_fills_a_skip`)
    time: int
    index: int
    process: str
    where: str
    count: int
    offset: int
    filled_by: list[int] = field(default_factory=list)  # indexes of the late-stamped deliveries


def _fills_a_skip(r: ReplayView, tp: tuple, offset: int, count: int, time: int, index: int, process: str) -> bool:
    """This delivery (lower count, another consumer, stamped up to `READ_SLACK_NS` after) has a count the
    pending skip of the same record lacked: the two polls were stamped out of order (`stamps-reordered`)."""
    skips = r.pending_skips.get((tp, offset))
    skip = skips[-1] if skips else None
    if skip is None or count not in skip.missing or skip.process == process or time - skip.time > READ_SLACK_NS:
        return False
    skip.missing.discard(count)
    skip.filled_by.append(index)
    return True


def judge_end(r: ReplayView) -> None:
    """The count skips no session end before them explained: a session end stamped up to
    `READ_SLACK_NS` after the delivery (not the receiving consumer's) may have come before it, or the
    skipped counts were delivered to others stamped just after (`stamps-reordered`); else the anomaly."""
    for (tp, _), skip in ((key, skip) for key, skips in r.pending_skips.items() for skip in skips):
        if not skip.missing:
            r.findings.allow(NAME, "stamps-reordered", (skip.index, *skip.filled_by))
            continue
        found = r.evidence.unseen_acquisitions(skip.rec, len(skip.missing), skip.time, skip.index,
                                               late=READ_SLACK_NS, seen_by=skip.process, tp=tp)
        if found is not None:
            r.findings.allow(NAME, *found)
        else:
            r.findings.anomaly(NAME, "count-skipped",
                               f"{skip.where} delivered with count {skip.count} after count {skip.rec.count}, with "
                               f"no acquisition unseen by the history (no session end, no disruption of its partition, "
                               f"and too soon for a lock to elapse)", (skip.rec.last_index, skip.index), offset=skip.offset)
    r.pending_skips.clear()


def judge_count_range(r: ReplayView, index: int, tp: tuple, offset: int, count: int) -> None:
    """Every delivery, whatever the ledger knows of its record (settled, archived, truncated, aborted):
    a count from 1 to the limit (no allowance excuses another)."""
    if count < 1:
        r.findings.anomaly(NAME, "count-invalid", f"{tp[0]}-{tp[1]}@{offset} delivered with delivery count {count}",
                           (index,))
    elif count > r.limit:
        r.findings.anomaly(NAME, "beyond-limit",
                           f"{tp[0]}-{tp[1]}@{offset} delivered with delivery count {count} > limit {r.limit}",
                           (index,))


def judge_after_limit(r: ReplayView, tp: tuple, offset: int, limit_time: int, index: int, time: int, process: str) -> None:
    """A record archived at the limit (its delivery at the limit at `limit_time`, lock over) is delivered
    again: only a disruption between that delivery and this one can explain it."""
    r.evidence.excuse(NAME, "delivery-count-lag", limit_time, time, tp, "delivered-after-limit",
                      f"{tp[0]}-{tp[1]}@{offset} delivered to {process} after it was delivered at the limit "
                      f"{r.limit} and its lock ended", (index,), offset=offset)


class DeliveryCount(Judge):
    """Judged by the replay's model (`judge_delivery`, `judge_count_range`, `judge_after_limit`, `judge_end`)."""

    NAME = NAME
    SENTENCE = ("KIP-932 \u00a7In-flight records: \"the delivery count [...] is incremented each time the record "
                "is delivered\"; records reaching the delivery-count limit are archived")
    NEEDS, NEEDS_CONFIG = POLLS, True

    @staticmethod
    def stats(n, config, found):
        return {"deliveries": n["deliveries"], "limit": int(config.get("delivery_count_limit", 5)),
                "profile": model_profile(config.get("model_profile") or config.get("kafka_version") or "4.3").line,
                "session_release_decrements": n["session-release-decrements"]}
