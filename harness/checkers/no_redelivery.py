"""No redelivery after acknowledgement: a record whose ACCEPT or REJECT commit
succeeded is never delivered again, unless an admin reset of the group's
offsets (`reset-offsets`) recorded in the history moved the start back over
it. KIP-932 makes successful acknowledgements durable; one allowance,
`redelivered-from-lost-leader`: a copy acquired from a leader that then failed
over, handed over late (issue 46 item 9). Anomaly: `redelivered-after-ack`.
"""

from __future__ import annotations

from typing import Any

from harness.checkers.findings import ANOMALY_CAP, NEVER
from harness.checkers.ledger import ACCEPTED, REJECTED
from harness.checkers.judge import POLLS, Judge

NAME = "no-redelivery-after-ack"
#: records that left the ledger settled, acquired last within a lock duration after a disruption began, kept
#: (the latest, per replay) for a stale copy of them handed over later (`AfterTerminal.lost_leader`)
LEFT_KEPT = 100_000


class AfterTerminal:
    """A record the history proves accepted or rejected is delivered again (or its count restarts). A copy
    acquired from a leader that then failed over, handed over late, is KIP-932's (`lost_leader`). On a
    release whose share coordinator may move a start offset back (`state-start-offset-regressed`), the
    state topic read after the drain decides whether that bug explains it (`resolve`); else an anomaly."""

    def __init__(self, findings, profile, ledger, state_topic, evidence=None) -> None:
        self.findings, self.profile, self.ledger, self.state_topic = findings, profile, ledger, state_topic
        self.evidence = evidence  # the disruption windows (`harness.checkers.evidence`); None: none known
        #: (tp, offset, property, kind, message, evidence, settled by, redelivered at), decided after the state read
        self.pending: list[tuple] = []
        #: (tp, offset) -> (acquired, delivery count, owner, acknowledgement's index) of the delivery a
        #: settled record had last: of records that left the ledger (`_left`) or were handed over again
        self.settled_copy: dict[tuple, tuple[int, int, Any, int]] = {}
        self.watching = False

    def watch(self) -> None:
        """From now on keep what records leaving the ledger had (`_left`): the replay calls it at the first
        disruption window, so a history without one pays nothing per record (`_left` would return at once)."""
        if not self.watching and self.ledger is not None and self.evidence is not None:
            self.watching = True
            self.ledger.on_leave.append(self._left)

    def _left(self, tp: tuple, offset: int, rec) -> None:
        """A record left the ledger: if a disruption of its partition may have erased an earlier copy's
        acquisition (`lost_leader`), keep its last delivery for a stale copy handed over later."""
        if not self.evidence.windows or rec.status not in (ACCEPTED, REJECTED) or rec.count < 1:
            return
        if self.evidence.disruption(rec.acq_time - self.evidence.lock_ns, rec.acq_time, tp) is None:
            return
        kept = self.settled_copy  # (one noted when a copy was handed over in the ledger stays: the settled one)
        kept.setdefault((tp, offset), (rec.acq_time, rec.count, rec.owner, rec.status_index))
        if len(kept) > LEFT_KEPT:
            del kept[next(iter(kept))]

    def lost_leader(self, tp: tuple, offset: int, process: str, evidence: tuple[int, ...], time: int | None,
                    count: int | None, rec=None) -> bool:
        """Whether this delivery after the acknowledgement is a copy acquired from a leader that then failed
        over (issue 46 item 9), KIP-932's "In the unlikely event of a share-partition leader crash, memory of
        the in-flight delivery will be lost": counted as `redelivered-from-lost-leader`, with the fault's op
        index as evidence. It is handed to another consumer than the one whose delivery was settled, within a
        lock duration (and the tolerance) of that delivery, whatever its count (a leader that lost the record
        counted on its own); and a disruption of THAT partition (leader change, coordinator loss) overlaps the
        time from when the copy could have been acquired to that delivery: no earlier than one lock duration
        before the delivery (a copy whose lock had run out by then was free to go to another consumer without
        any failover: the client's stale record, rule no-stale-records, not the leader's), nor than the
        consumer's previous poll of the partition in its session (`Evidence.fetched_from`: a client hands over
        what it fetched at its next poll). Else False: `redelivered-after-ack`."""
        if self.evidence is None or time is None or count is None or count < 1:
            return False
        key = (tp, offset)
        if rec is not None:  # the ledger still holds it: its delivery before the first one after the ACK
            if rec.count < 1:
                return False
            copy = self.settled_copy.setdefault(key, (rec.acq_time, rec.count, rec.owner, rec.status_index))
        else:
            copy = self.settled_copy.get(key)
        if copy is None:
            return False
        acquired, _, owner, _ = copy
        lock = self.evidence.lock_ns
        if process == owner or time > acquired + lock + self.ledger.tol_ns:
            return False
        # (the copy's count does not bound when it was acquired: the new leader counts from what was persisted,
        # lower than the old leader's count of an acquisition it never knew; seen in CI: a leader paused with
        # the record acquired, resumed after the heal, re-acquired it (lock expired) for a fetch that had waited
        # in its socket, count 2, after the new leader's count-1 delivery was accepted)
        fetched = self.evidence.fetched_from  # (of the poll being replayed: this delivery's, the last evidence)
        since = acquired - lock if fetched is None else max(acquired - lock, fetched)
        window = self.evidence.disruption(since, acquired, tp) if since <= acquired else None
        if window is None:
            return False
        self.findings.allow(NAME, "redelivered-from-lost-leader", (window, copy[3], *evidence))
        return True

    def report(self, tp: tuple, offset: int, prop: str, kind: str, message: str, evidence: tuple[int, ...],
               settled: int = NEVER, until: int = NEVER) -> None:
        if self.profile.ever("state-start-offset-regressed") and tp not in self.ledger.reset_tps \
                and len(self.pending) < ANOMALY_CAP:
            self.pending.append((tp, offset, prop, kind, message, evidence, settled, until))
        else:
            self.findings.anomaly(prop, kind, message, evidence, offset=offset)

    def redelivered(self, tp: tuple, offset: int, process: str, evidence: tuple[int, ...], how: str = "",
                    time: int | None = None, count: int | None = None, rec=None) -> None:
        """`process` was handed `tp`@`offset` (count `count`, at `time`) after its acknowledgement's commit
        succeeded; `rec`: the ledger's record, if it still holds it (else it left the ledger, settled)."""
        if self.lost_leader(tp, offset, process, evidence, time, count, rec):
            return
        settled = rec.status_time if rec is not None else NEVER
        self.report(tp, offset, NAME, "redelivered-after-ack",
                    f"{tp[0]}-{tp[1]}@{offset} delivered to {process} after its {how or 'acknowledgement'} was "
                    f"committed", evidence, settled, NEVER if time is None else time)

    def resolve(self) -> None:
        for tp, o, prop, kind, message, evidence, settled, until in self.pending:
            how = self.state_topic.start_went_back_over(tp, o)
            if how is None:
                self.findings.anomaly(prop, kind, message, evidence, offset=o)
                continue
            if settled == NEVER:  # it had left the ledger: when it was settled, as noted then
                settled = self.state_topic.settled_by(tp, o)
            excused = self.state_topic.regression_excused(tp, o, settled, until)
            if excused is None:
                self.findings.obs.unknown.setdefault(prop, self.state_topic.regression_unknown(tp))
                continue
            if not excused:  # the start went back in a phase whose releases do not have the bug
                self.findings.anomaly(prop, kind, f"{message}; in __share_group_state the {how}, written while "
                                      f"no release with that known bug ran", evidence, offset=o)
                continue
            # a known bug of this release (of the phase that wrote it)
            self.findings.allow("durable-state", "state-start-offset-regressed",
                                (*evidence, self.state_topic.final_state[tp][2]))
            self.findings.known_bug(f"{message}; in __share_group_state the {how}: {tp[0]}-{tp[1]}@{o} lost its "
                                    f"state")


class NoRedelivery(Judge):
    """Judged by the replay's model (`AfterTerminal`)."""

    NAME = "no-redelivery-after-ack"
    SENTENCE = ("KIP-932 \u00a7In-flight records: an Acknowledged or Archived record is in a terminal state: it is "
                "not delivered again")
    NEEDS = POLLS

    @staticmethod
    def stats(n, config, found):
        return {"deliveries": n["deliveries"], "offset_resets": n["offset-resets"]}
