"""Exclusive acquisition: a record is never delivered again while an earlier
acquisition lock on it is live and was not released (RELEASE sent, owner's
session ended, or a SIGKILL sent to it), and an acknowledgement from a consumer that lost the record
to another never succeeds. The lock counts as live for `lock_duration_ms -
lock_tolerance_ms` (config operation; tolerance default 2000 ms, RunSpec
`lock_tolerance_ms`) from the earliest moment the acquisition could have
happened: a client may fetch (acquire) records before the poll that hands
them over, so from its previous poll of that share-partition in the same
session (`Evidence.fetched_from`, kept as `Rec.fetched`; issue 46, item 8), else from the poll
that handed it over. Anomalies: `acquired-while-locked`, `ack-from-non-owner`.
Allowance: `acquired-lost-on-leader-change`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.checkers.ledger import MS
from harness.checkers.judge import POLLS, Judge

if TYPE_CHECKING:
    from harness.checkers.view import ReplayView

NAME = "exclusive-acquisition"


def judge_delivery(r: ReplayView, rec, index: int, time: int, process: str, tp: tuple, offset: int) -> bool:
    """A new acquisition of `rec` by `process`: the previous owner's lock must be over, released, or its
    session ended. Returns whether the previous owner's session ended since its acquisition."""
    if rec.owner is None:
        return False
    session_ended = r.evidence.session_end.get(rec.owner, -1) >= rec.acq_time or rec.owner in r.evidence.being_killed
    live_until = rec.lock_end - r.tol_ns
    if time < live_until and time < rec.release_from and not session_ended:
        # (asked only here, off the hot path) the owner may have acquired it before the poll that handed it
        # over, from its previous poll of tp on: its lock may have ended that much earlier (item 8). A lock a
        # RENEW extended runs from the RENEW
        fetched = rec.fetched if rec.lock_end == rec.acq_time + r.lock_ns else None
        if fetched is not None and fetched < rec.acq_time:
            live_until = fetched + r.lock_ns - r.tol_ns
        if time < live_until:
            r.evidence.excuse(NAME, "acquired-lost-on-leader-change", rec.acq_time, time, tp, "acquired-while-locked",
                              f"{tp[0]}-{tp[1]}@{offset} delivered to {process} while {rec.owner}'s acquisition "
                              f"lock was live ({(live_until + r.tol_ns - time) / MS:.0f} ms left, not released)",
                              (rec.last_index, index), owner=rec.owner, offset=offset)
    return session_ended


def judge_settled(r: ReplayView, rec, process: str, ack, key: tuple, index: int, time: int) -> None:
    """`process`'s ACCEPT/REJECT (op `ack.index`) succeeded: no other consumer may have acquired the
    record after it was acknowledged (the acknowledging consumer had lost it)."""
    if rec.owner is not None and rec.owner != process and rec.last_index < ack.index:
        r.evidence.excuse(NAME, "acquired-lost-on-leader-change", rec.acq_time, time, (key[0], key[1]),
                          "ack-from-non-owner",
                          f"{process}'s {ack.type} of {key[0]}-{key[1]}@{key[2]} succeeded although "
                          f"{rec.owner} acquired the record after it was acknowledged",
                          (ack.index, rec.last_index, index))


class Exclusive(Judge):
    """Judged by the replay's model (`judge_delivery`, `judge_settled`)."""

    NAME = NAME
    SENTENCE = ("KIP-932 \u00a7Client programming interface: poll \"returns a set of in-flight records acquired for "
                "this consumer for the duration of the acquisition lock timeout\": no other consumer holds them then")
    NEEDS, NEEDS_CONFIG = POLLS, True

    @staticmethod
    def stats(n, config, found):
        return {"deliveries": n["deliveries"], "lock_duration_ms": int(config.get("lock_duration_ms", 30000)),
                "tolerance_ms": int(config.get("lock_tolerance_ms", 2000))}
