"""Exclusive acquisition: a record is never delivered again while an earlier
acquisition lock on it is live and was not released (RELEASE sent, owner's
session ended, or a SIGKILL sent to it), and an acknowledgement from a consumer that lost the record
to another never succeeds. The lock counts as live for `lock_duration_ms -
lock_tolerance_ms` after the poll (config operation; tolerance default
2000 ms, RunSpec `lock_tolerance_ms`). Anomalies: `acquired-while-locked`,
`ack-from-non-owner`. Allowance: `acquired-lost-on-leader-change`.
"""

from __future__ import annotations

from typing import Any

from harness.checkers import Result, property_result
from harness.checkers.ledger import MS

NAME = "exclusive-acquisition"


def check(history: Any) -> Result:
    return property_result(NAME, history)


def judge_delivery(r, rec, index: int, time: int, process: str, tp: tuple, offset: int) -> bool:
    """A new acquisition of `rec` by `process`: the previous owner's lock must be over, released, or its
    session ended. Returns whether the previous owner's session ended since its acquisition."""
    if rec.owner is None:
        return False
    session_ended = r.evidence.session_end.get(rec.owner, -1) >= rec.acq_time or rec.owner in r.evidence.being_killed
    if time < rec.lock_end - r.tol_ns and time < rec.release_from and not session_ended:
        r.evidence.excuse(NAME, "acquired-lost-on-leader-change", rec.acq_time, time, tp, "acquired-while-locked",
                          f"{tp[0]}-{tp[1]}@{offset} delivered to {process} while {rec.owner}'s acquisition lock "
                          f"was live ({(rec.lock_end - time) / MS:.0f} ms left, not released)",
                          (rec.last_index, index), owner=rec.owner, offset=offset)
    return session_ended


def judge_settled(r, rec, process: str, ack, key: tuple, index: int, time: int) -> None:
    """`process`'s ACCEPT/REJECT (op `ack.index`) succeeded: no other consumer may have acquired the
    record after it was acknowledged (the acknowledging consumer had lost it)."""
    if rec.owner is not None and rec.owner != process and rec.last_index < ack.index:
        r.evidence.excuse(NAME, "acquired-lost-on-leader-change", rec.acq_time, time, (key[0], key[1]),
                          "ack-from-non-owner",
                          f"{process}'s {ack.type} of {key[0]}-{key[1]}@{key[2]} succeeded although "
                          f"{rec.owner} acquired the record after it was acknowledged",
                          (ack.index, rec.last_index, index))
