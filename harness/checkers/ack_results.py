"""Acknowledgement results: every acknowledgement gets a result (a commit's
per-partition result, a commit that failed or raised, or an acknowledgement
commit callback listing its offset), none gets two callbacks, and no callback
reports an offset its consumer never acknowledged. Anomalies:
`ack-result-missing`, `ack-result-duplicate`, `ack-result-unsolicited`, and `ack-undelivered`
(an acknowledgement of an offset no poll handed to any consumer: a client acknowledges only records
it handed to the application).
Allowance: `ack-lost-with-consumer` (the consumer was killed first).

An ACCEPT or REJECT whose result is a definitive refusal (`definitive`: a broker's error such as
INVALID_RECORD_STATE, not a transport error or an unknown outcome) settled nothing: the record no longer
counts as acknowledged (`Rec.ack_seen` drops it), so it must be delivered again, archived at the limit
with evidence, or it is lost. Where a disruption of its partition or an end of its consumer's connections
lies between the acknowledgement and the refusal, a retry may have hidden one that landed: allowance
`refusal-may-mask-landing`, with that event as evidence.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import bisect
from collections import defaultdict

from harness.checkers import exclusive
from harness.checkers.ledger import ACCEPT_SENT, ACCEPTED, MAYBE, OPEN, REJECT_SENT, REJECTED, Ack, Rec
from harness.checkers.judge import Judge

if TYPE_CHECKING:
    from harness.checkers.view import ReplayView

NAME = "ack-results"

#: the Kafka errors by which a share-partition leader refuses an acknowledgement, applying nothing, as any
#: library spells them (codes without their underscores, upper case: INVALID_RECORD_STATE,
#: InvalidRecordStateException), and franz-go's own refusal of an acknowledgement it never sends
REFUSALS = ("INVALIDRECORDSTATE", "THE RECORD STATE IS INVALID", "NOTLEADERORFOLLOWER", "UNKNOWNTOPICORPART",
            "SHARESESSIONNOTFOUND", "INVALIDSHARESESSIONEPOCH", "WILL NOT BE DELIVERED")


def definitive(error) -> bool:
    """Whether a failed acknowledgement's error says the broker refused it (it settled nothing): one of
    `REFUSALS`. Any other error (a transport error, a timeout, a client-side error, an error Kafka gives
    when a write's outcome is unknown, a text the harness does not know) leaves its outcome unknown: an
    allow-list, so an unknown text never turns into a refusal that fails the record."""
    if error is None:
        return False
    text = str(error).strip().upper()
    if not text or text.startswith("_") or "TRANSPORT" in text or "TIMED OUT" in text or "TIMEOUT" in text:
        return False
    flat = text.replace("_", "")
    return any(code in flat or code in text for code in REFUSALS)


class AckBook:
    """Every acknowledgement and the results it gets (a callback, a commit's per-partition result, a
    commit that failed or raised), per consumer; and whether the consumer was handed what it acknowledges
    (per delivery: `Rec.holders`; after the record left the ledger: `Ledger.orphans`)."""

    def __init__(self, r: ReplayView) -> None:
        self.r = r
        self.findings, self.ledger = r.findings, r.ledger
        self.acks: dict[str, dict[tuple, Ack]] = defaultdict(dict)  # process -> (topic, partition, offset) -> Ack
        self.unresolved: dict[str, dict[tuple, Ack]] = defaultdict(dict)  # acks awaiting any result
        #: finished records' acks, for the process's current and previous commit round
        self.retired: dict[str, tuple[dict, dict]] = defaultdict(lambda: ({}, {}))
        #: process -> acks its last commit carried (those answered since among them: `unresolved` tells)
        self.commit_scope: dict[str, list[tuple[tuple, Ack]]] = {}
        #: process -> acks made since its last commit's invoke: what its next commit carries
        self.since_commit: dict[str, list[tuple[tuple, Ack]]] = defaultdict(list)
        self.commit_done: dict[str, bool] = {}  # process -> its last commit returned
        #: process -> share-partition -> its pending acks, grouped at the first per-partition result of a
        #: commit (a commit returns one row per partition: grouping once keeps each row's cost to its own)
        self.commit_groups: dict[str, dict[tuple, list]] = {}
        self.max_acked: dict[tuple, int] = {}  # (process, share-partition) -> highest offset it acknowledged
        #: process -> share-partitions it acknowledged a record of, in its current session
        self.acked_tps: dict[str, set] = defaultdict(set)
        #: successful commit results for a share-partition the process never acknowledged a record of:
        #: anomalies, unless the log has gaps (transaction markers, compaction) a client acknowledges itself
        self.unsolicited: list[tuple[str, str, int, int]] = []
        #: (process, tp, offset, index) of callback results for offsets no record was produced at, past what the
        #: process acknowledged: gaps the client acknowledged itself, if the log has gaps there (`end`)
        self.gap_results: list[tuple[str, tuple, int, int, int]] = []
        self.gaps_possible = False
        self.ledger.on_leave.append(self.record_left)

    def record_left(self, tp: tuple, offset: int, rec) -> None:
        ackers = rec.ackers
        if not ackers:
            return
        key = (tp[0], tp[1], offset)
        acks, retired = self.acks, self.retired
        for process in ackers:
            a = acks[process].pop(key, None)
            if a is not None:  # kept a little longer, to catch a late duplicate result
                retired[process][0][key] = a

    def acknowledge(self, index: int, time: int, process: str, tp: tuple, offset: int, ack: str) -> None:
        self.findings.n["acks"] += 1
        mine = (process, tp)
        if offset > self.max_acked.get(mine, -1):
            self.max_acked[mine] = offset
        key = (tp[0], tp[1], offset)
        self.acked_tps[process].add(tp)
        ledger = self.ledger
        rec = ledger.rec_for(tp, offset)
        if rec is None:
            excused = offset in ledger.truncated_at[tp] or tp in ledger.reset_tps
            # acknowledging a record already terminal: the process must have been handed it (and not have
            # acknowledged that delivery already); the broker answers it (an error), so it needs a result
            if self.ledger.orphans.pop((process, *key), None) is None and not excused and ack != "RENEW":
                self.not_held(index, process, tp, offset, ack, "it was settled before and ")
            settled = Rec()  # detached: its result changes nothing the ledger holds
            settled.status = ACCEPTED
            self.track(process, key, Ack(ack, index, time, settled, detached=True), index, tp, offset)
            return
        holders = rec.holders
        handed = holders.get(process) if holders else None
        if handed is not None and (handed >= 0 or ack == "RENEW"):
            pass  # (the common case: acknowledging its current delivery)
        elif offset in ledger.truncated_at[tp] or tp in ledger.reset_tps:
            pass  # excused: the log or the group's start moved under it
        elif handed is None:
            self.not_held(index, process, tp, offset, ack, "another consumer holds it and " if rec.given else "")
        else:
            self.findings.anomaly(NAME, "ack-undelivered",
                                  f"{process} acknowledged {tp[0]}-{tp[1]}@{offset} ({ack}) again, with no delivery "
                                  f"since its acknowledgement at index {-handed - 2}: a client acknowledges each "
                                  f"delivery once", (-handed - 2, index), offset=offset, process=process)
        if handed is not None and ack != "RENEW":
            holders[process] = -index - 2  # acknowledged: a new delivery must come first
        self.track(process, key, Ack(ack, index, time, rec), index, tp, offset)
        ackers = rec.ackers
        if ackers is None:
            rec.ackers = [process]
        elif process not in ackers:
            ackers.append(process)
        if ack in ("ACCEPT", "REJECT"):
            rec.ack_seen |= ACCEPT_SENT if ack == "ACCEPT" else REJECT_SENT
        elif ack == "RELEASE" and rec.owner == process:
            rec.release_from = min(rec.release_from, time)  # it may go out with the next request
        elif ack == "RENEW" and rec.owner == process:
            rec.renewed = True

    def track(self, process: str, key: tuple, a: Ack, index: int, tp: tuple, offset: int) -> None:
        """`a` awaits its result (a callback, or its commit's result for the partition)."""
        unresolved = self.unresolved[process]
        old = unresolved.pop(key, None)
        if old is not None:
            self.findings.anomaly(NAME, "ack-result-missing",
                                  f"{process}'s {old.type} of {tp[0]}-{tp[1]}@{offset} got no result before it "
                                  f"acknowledged the record again", (old.index, index))
        self.acks[process][key] = a
        unresolved[key] = a
        made = self.since_commit[process]
        made.append((key, a))
        if len(made) >= 4096 and len(made) > 2 * len(unresolved):  # a consumer that never commits: keep it small
            made[:] = [(k, x) for k, x in made if unresolved.get(k) is x]
        if self.commit_groups:
            self.commit_groups.pop(process, None)

    def not_held(self, index: int, process: str, tp: tuple, offset: int, ack: str, how: str) -> None:
        self.findings.anomaly(NAME, "ack-undelivered",
                              f"{process} acknowledged {tp[0]}-{tp[1]}@{offset} ({ack}), but {how}no poll handed it "
                              f"to {process}: a client acknowledges only records it handed to the application",
                              (index,), offset=offset, process=process)

    def resolve(self, process: str, tp: tuple, key: tuple, a: Ack, ok: bool | None, index: int, time: int,
                via: str, error=None) -> None:
        """`a` (of the record at `key`, in share-partition `tp`) got a result: `ok`, failed with `error`, or
        unknown (None)."""
        if via == "callback":
            a.callbacks += 1
            # (a record gone from the log is acknowledged again by the client itself, as a GAP)
            if a.callbacks > 1 and not a.detached:
                self.findings.anomaly(NAME, "ack-result-duplicate",
                                      f"{process}'s {a.type} of {key[0]}-{key[1]}@{key[2]} got {a.callbacks} "
                                      f"callback results", (a.index, index))
        first = self.unresolved[process].pop(key, None) is a
        rec = a.rec
        if a.detached:  # the record had left the ledger: judged on its first result, then done with
            if self.acks[process].get(key) is a:
                self.retired[process][0][key] = self.acks[process].pop(key)
            if not first:
                return
            if ok and a.type in ("ACCEPT", "REJECT", "RELEASE") and key[2] not in self.ledger.gone[tp] \
                    and key[2] not in self.ledger.archived[tp]:
                # another consumer's acknowledgement settled it before this one: the broker must refuse it
                # (a record deleted, compacted or archived is acknowledged without error)
                self.r.evidence.excuse("exclusive-acquisition", "acquired-lost-on-leader-change", a.time, time,
                                       tp, "ack-from-non-owner",
                                       f"{process}'s {a.type} of {key[0]}-{key[1]}@{key[2]} succeeded although "
                                       f"the record was settled before it was acknowledged", (a.index, index))
            elif not ok:  # refused (or unknown): the client may send that acknowledgement again
                self.ledger.orphans[(process, *key)] = a.index
            return
        if not ok:  # it may not have landed: the client may acknowledge that delivery again
            if ok is False and a.type in ("ACCEPT", "REJECT") and rec.status < ACCEPTED and definitive(error):
                self.refused(process, tp, key, a, index, time)
            if rec.holders and rec.holders.get(process, 0) < 0:
                rec.holders[process] = a.index
            if self.ledger.rec_for(tp, key[2]) is not rec:  # the record left the ledger
                self.ledger.orphans[(process, *key)] = a.index
            if ok is None and a.type in ("ACCEPT", "REJECT") and rec.status == OPEN:
                rec.status = MAYBE
            return
        kind = a.type
        if kind == "ACCEPT" or kind == "REJECT":
            if rec.status < ACCEPTED:
                if rec.owner != process:  # (the common case, its owner's, has nothing to judge: no call)
                    exclusive.judge_settled(self.r, rec, process, a, key, index, time)
                rec.status = ACCEPTED if kind == "ACCEPT" else REJECTED
                rec.status_index, rec.status_time = index, time
                self.ledger.advance(tp, time)
        elif kind == "RELEASE" and rec.owner == process:
            rec.release_from = min(rec.release_from, a.time)
        elif kind == "RENEW" and rec.owner == process:
            rec.lock_end = max(rec.lock_end, a.time + self.r.lock_ns)

    def refused(self, process: str, tp: tuple, key: tuple, a: Ack, index: int, time: int) -> None:
        """`a`, an ACCEPT or REJECT, was refused (`definitive`): it no longer counts as sent, unless a
        retry may have hidden one that landed (`refusal-may-mask-landing`)."""
        masked = self.r.evidence.disruption(a.time, time, tp)
        if masked is None:
            masked = self.connection_end(process, a.time, time)
        if masked is not None:
            self.findings.allow(NAME, "refusal-may-mask-landing", (a.index, masked, index))
            return
        self.findings.n["acks-refused"] += 1
        a.refused = True
        rec, seen = a.rec, 0
        for acker in rec.ackers or ():  # what the other acknowledgements of the record still say
            other = self.acks[acker].get(key)
            if other is not None and other.rec is rec and not other.refused:
                seen |= ACCEPT_SENT if other.type == "ACCEPT" else REJECT_SENT if other.type == "REJECT" else 0
        rec.ack_seen = seen

    def connection_end(self, process: str, t0: int, t1: int) -> int | None:
        """The op index of an end of `process`'s connections in [t0, t1] (a fault cutting them, a client
        error: `Evidence.ends`), if any."""
        ev = self.r.evidence
        for t, index, who, key, _ in ev.ends[bisect.bisect_left(ev.end_times, t0):bisect.bisect_right(ev.end_times, t1)]:
            if who == process and key[0] in ("fault", "error"):
                return index
        return None

    def callback(self, index: int, time: int, process: str, tp: tuple, offset: int, error) -> None:
        key = (tp[0], tp[1], offset)
        a = self.acks[process].get(key)
        if a is None:
            recent, older = self.retired[process]
            a = recent.get(key) or older.get(key)
        if a is None:
            held = self.ledger.recs[tp].get(offset)
            top = self.max_acked.get((process, tp))
            if offset >= self.ledger.watermark[tp] and (held is None or held.produce_index < 0) \
                    and top is not None and self._gap_after(tp, top, offset):
                # no record was produced at this offset (a transaction marker, a compacted gap) and it lies
                # within what the process acknowledged, or right after it past records of aborted transactions
                # only (a read_committed fetch skips them; the marker follows): the client acknowledges gaps
                # itself (KIP-932's GAP acknowledgement type)
                self.findings.n["gap-results"] += 1
            elif offset >= self.ledger.watermark[tp] and (held is None or held.produce_index < 0):
                # no record was produced there: a gap (a transaction marker) the client found in a batch it fetched
                # and acknowledged itself ("it may find gaps and it reports these using the ShareAcknowledge API",
                # KIP-932), whatever the application acknowledged; judged at the end, when the log's gaps are known
                self.gap_results.append((process, tp, offset, index, self._log_end(tp)))
            elif offset >= self.ledger.watermark[tp]:
                self.findings.anomaly(NAME, "ack-result-unsolicited",
                                      f"{process} got a callback result for {tp[0]}-{tp[1]}@{offset} it never "
                                      f"acknowledged", (index,))
            return
        self.resolve(process, tp, key, a, error is None, index, time, "callback", error)

    def _log_end(self, tp: tuple) -> int:
        """The highest offset a record was produced at that the replay knows of (settled records leave the
        ledger: the settled watermark stands for them)."""
        return max(max((o for o, rec in self.ledger.recs[tp].items() if rec.produce_index >= 0), default=-1),
                   self.ledger.watermark[tp] - 1)

    def _gap_after(self, tp: tuple, top: int, offset: int) -> bool:
        """Whether `offset` is at most one past `top` (what the process acknowledged), counting the offsets of
        aborted transactions' records and offsets no record was produced at as part of the gap (the explorer met
        it on 4.1.2: an aborted transaction's two records, then its marker acknowledged as a GAP)."""
        if offset <= top + 1:
            return True
        if offset - top > 10_000:
            return False
        aborted = self.ledger.aborted.get(tp, ())
        recs = self.ledger.recs[tp]
        end = max((o for o, rec in recs.items() if rec.produce_index >= 0), default=-1)
        return all(o in aborted or (o < end and (o not in recs or recs[o].produce_index < 0))
                   for o in range(top + 1, offset))

    def commit(self, index: int, time: int, process: str, type_: str, tp: tuple, error,
               asynchronous: bool = False) -> None:
        """A commit's invoke (`asynchronous`: commitAsync, whose results come by callback), or one of its
        results: per share-partition `tp` (an `ok` row), or its failure (`fail`, `info`: `tp` is (None, ...))."""
        pending = self.unresolved[process]
        if type_ == "invoke":
            if self.commit_groups:
                self.commit_groups.pop(process, None)
            self.retired[process] = ({}, self.retired[process][0])
            # A commit carries the acks made since the previous commit's invoke, and its per-partition results
            # answer only those. An ack a commit did not answer stays pending: a poll may have sent it first
            # (KafkaShareConsumer's poll sends the acknowledgements made so far and commitSync only
            # `acknowledgementsToSend()`, those not sent yet; the others' results come by callback: the 4.3.1 Java
            # exploration met that callback after the next commit's invoke, under share-coordinator-kill), and
            # commitAsync's come by callback too. A later callback, a crash, the close or the end judges it.
            if self.commit_done.get(process):
                for key, a in self.commit_scope.get(process, ()):
                    if pending.get(key) is a:
                        a.unanswered = True  # (a crash before a callback brings it makes it missing)
            # (what it carried, as made: each use of the scope asks whether an ack still awaits its result)
            self.commit_scope[process] = self.since_commit.pop(process, ())
            self.commit_done[process] = False
            return
        if self.commit_done.get(process) is not False and self.since_commit.get(process):
            # a result with no invoke open (a history that lacks the invoke): it carried the acks made since
            self.commit_scope[process] = self.since_commit.pop(process)
            self.commit_groups.pop(process, None)
        self.commit_done[process] = True
        if type_ == "ok" and tp[0] is not None:
            if error is None and tp not in self.acked_tps[process]:
                self.unsolicited.append((process, tp[0], tp[1], index))
            if not pending:
                return
            groups = self.commit_groups.get(process)
            if groups is None:
                groups = self.commit_groups[process] = defaultdict(list)
                for key, a in self.commit_scope.get(process, ()):
                    groups[(key[0], key[1])].append((key, a))
            for key, a in groups.pop(tp, ()):
                if pending.get(key) is a:  # (not resolved by a callback since)
                    self.resolve(process, tp, key, a, error is None, index, time, "commit", error)
            return
        self.commit_groups.pop(process, None)
        if type_ == "ok":
            return
        for key, a in self.commit_scope.get(process, ()):  # fail / info: the outcome of what it carried is unknown
            if pending.get(key) is a:
                self.resolve(process, (key[0], key[1]), key, a, None, index, time, "commit")

    def crashed(self, process: str, index: int) -> None:
        """`process` died (or its close did not finish): its acknowledgements still awaiting a result lost
        it with the consumer (`ack-lost-with-consumer`), unless their commit had already returned."""
        returned = {id(a) for _, a in self.commit_scope.get(process, ())} if self.commit_done.get(process) else set()
        for key, a in list(self.unresolved[process].items()):
            self.unresolved[process].pop(key)
            if id(a) in returned or a.unanswered:  # its commit had returned without a result for it: not the crash's
                self.findings.anomaly(NAME, "ack-result-missing",
                                      f"{process}'s {a.type} of {key[0]}-{key[1]}@{key[2]} got no result from the "
                                      f"commit that carried it", (a.index,), process=process)
            else:
                self.findings.allow(NAME, "ack-lost-with-consumer", (a.index, index))
            if a.type in ("ACCEPT", "REJECT") and a.rec.status == OPEN:
                a.rec.status = MAYBE

    def session_ended(self, process: str) -> None:
        self.acked_tps.pop(process, None)

    def end(self) -> None:
        for process, tp, offset, index, seen_end in self.gap_results:
            if self.gaps_possible and offset <= max(seen_end, self._log_end(tp)) + 1:
                self.findings.n["gap-results"] += 1
            else:
                self.findings.anomaly(NAME, "ack-result-unsolicited",
                                      f"{process} got a callback result for {tp[0]}-{tp[1]}@{offset} it never "
                                      f"acknowledged (no record was written there, and the log has no gap there)",
                                      (index,))
        for process, topic, partition, index in self.unsolicited:
            if self.gaps_possible:  # e.g. only a transaction marker was fetched: the client acknowledged a GAP
                self.findings.n["gap-results"] += 1
            else:
                self.findings.anomaly(NAME, "ack-result-unsolicited",
                                      f"{process}'s commit returned a success for {topic}-{partition}, where it "
                                      f"never acknowledged a record (and the log has no gaps to acknowledge)",
                                      (index,), process=process)
        for process, pending in self.unresolved.items():
            for key, a in pending.items():
                self.findings.anomaly(NAME, "ack-result-missing",
                                      f"{process}'s {a.type} of {key[0]}-{key[1]}@{key[2]} never got a result",
                                      (a.index,), process=process)


class AckResults(Judge):
    """Judged by the replay's model (`AckBook`)."""

    NAME = NAME
    SENTENCE = ("KafkaShareConsumer's contract: each acknowledgement's result reaches the application (commitSync's "
                "return, the acknowledgement commit callback) once, and an error only for an acknowledgement that "
                "did not land")

    NEEDS = ("acks", "no acknowledgement in the history")

    @staticmethod
    def stats(n, config, found):
        return {"acks": n["acks"]}
