"""The dead-letter queue's accounting (KIP-1191), judged under no-loss: nothing archived is lost.

A group with a DLQ topic (the `config` op's `dead_letter_topic`) has every record a client REJECTed
and every record archived at the delivery-count limit written to that topic, one DLQ record per offset
carrying the source's topic, partition, offset, group, delivery count and the cause
(`harness.kafka.dead_letter`). The history's `dead-letters` reads (the DLQ read to its end, after the
consumers closed) are checked against what the history proves:
- `dlq-missing`: a record rejected (its REJECT's result was success) or archived at the limit before
  the read is not in the DLQ (Kafka 4.4 logs a failed DLQ write and archives the record anyway),
  unless the share coordinator still held it ARCHIVING when the read was made (its write under way:
  counted as pending, not judged);
- `dlq-accepted`: a record the history proves ACCEPTed is in the DLQ; except (allowance
  `dead-lettered-by-lost-leader`) one delivered at the limit whose DLQ records all say "exceeded",
  where a leader change on its partition overlaps its life up to its last delivery: the old leader
  archived it at the limit while the new one, which lost that acquisition, had it delivered again and
  accepted (seen in CI under a cold restart). Its life starts at its produce's invoke (`Rec.avail_time`,
  also for a record delivered before its produce returned, produced at an unreported offset, or brought
  back by an offset reset: then from the reset), as the windows of `Evidence.unseen_acquisitions`; where
  that time is unknown (NEVER: a second copy of a produced id) there is no window and no excuse (issue
  46, item 2);
- `dlq-wrong-context`: a DLQ record whose headers do not name its source, this group, a delivery count
  within 1..limit, or the cause its record had (a rejected record below the limit is "rejected by
  client"; one archived at the limit without a REJECT "delivery count exceeded").
Duplicates are allowed (the DLQ write is at least once: a failover while a record is ARCHIVING writes
it again) and counted. A group with a DLQ topic and no successful read is unknown for no-loss, never a
pass. Memory: only rejected records' offsets are kept beyond the ledger (when the group has a DLQ).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from collections import defaultdict

from harness.checkers.ledger import ACCEPT_SENT, ACCEPTED, MAYBE, NEVER, REJECTED
from harness.kafka.dead_letter import MESSAGE_LIMIT, MESSAGE_REJECTED

if TYPE_CHECKING:
    from harness.checkers.view import ReplayView

NAME = "no-loss"
_CAUSE = {MESSAGE_REJECTED: "rejected", MESSAGE_LIMIT: "limit"}


class DeadLetters:
    """What the history holds of the group's DLQ: its reads and the records rejected (see the module)."""

    def __init__(self, r: ReplayView, config: dict) -> None:
        self.r = r
        self.topic: str | None = config.get("dead_letter_topic") or None
        self.group: str | None = config.get("group")
        self.read_index = -1  # the last successful read
        self.failed: str | None = None  # why the last read failed, if none succeeded
        self.malformed = 0  # DLQ records without the source headers
        #: share-partition -> offset -> [(delivery count, message, group)] of the last read
        self.found: dict[tuple, dict[int, list]] = defaultdict(lambda: defaultdict(list))
        #: share-partition -> [first, last] ranges the share coordinator still held ARCHIVING at the read
        self.archiving: dict[tuple, list] = defaultdict(list)
        #: share-partition -> offset -> (index of the REJECT's result, count of the delivery it rejected)
        self.rejected: dict[tuple, dict[int, tuple[int, int]]] = defaultdict(dict)
        #: share-partition -> offsets archived at the limit after a REJECT of unknown outcome was sent
        #: (the DLQ may name either cause)
        self.maybe_rejected: dict[tuple, set] = defaultdict(set)
        #: share-partition -> offsets that left the ledger archived at the limit while an ACCEPT sent for them
        #: had no outcome yet: accepted or archived, the DLQ may hold them or not (neither expected nor refused;
        #: the explorer's 4.4.0 dlq-missing: an implicit ACCEPT whose success came 30 s later, under disk-fail)
        self.maybe_accepted: dict[tuple, set] = defaultdict(set)
        #: share-partition -> offset -> (avail time, last acquisition time, its index) of records accepted
        #: after a delivery at the limit (the `dead-lettered-by-lost-leader` allowance needs their life)
        self.accepted_at_limit: dict[tuple, dict[int, tuple[int, int, int]]] = defaultdict(dict)
        if self.topic is not None:
            r.ledger.on_leave.append(self.record_left)

    def record_left(self, tp: tuple, offset: int, rec) -> None:
        if rec.status == REJECTED:
            self.rejected[tp][offset] = (rec.status_index, rec.count)
        elif rec.status < ACCEPTED and rec.ack_seen & ACCEPT_SENT:
            self.maybe_accepted[tp].add(offset)
        elif rec.status < ACCEPTED and rec.ack_seen:
            self.maybe_rejected[tp].add(offset)
        elif rec.status == ACCEPTED and rec.count >= self.r.limit:
            self.accepted_at_limit[tp][offset] = (rec.avail_time, rec.acq_time, rec.last_index)

    def row(self, index: int, type_: str, tp: tuple | None, v: dict) -> None:
        """A row of a `dead-letters` read: the read's own (tp None), or one share-partition's entries."""
        if type_ == "fail":
            self.failed = str(v.get("error") or "the read failed")
            return
        if type_ != "ok":
            return
        if tp is None:
            if index != self.read_index:  # a new read: it replaces what an earlier one found
                self.read_index, self.failed = index, None
                self.found.clear()
                self.archiving.clear()
                self.malformed = int(v.get("malformed") or 0)
            return
        for offset, count, message, group in v.get("entries", ()):
            self.found[tp][offset].append((count, message, group))
        self.archiving[tp].extend(v.get("archiving", ()))

    def judge_end(self) -> None:
        r = self.r
        findings = r.findings
        if self.topic is None:
            return
        if self.read_index < 0:
            why = f" ({self.failed})" if self.failed else ""
            findings.obs.unknown.setdefault(NAME, f"the group has a dead-letter queue ({self.topic}) but the "
                                                  f"history holds no successful read of it{why}: the KIP-1191 "
                                                  f"accounting of archived records was not done")
            return
        if self.malformed:  # (every replay slot sees the read's own row: listed once in the merge)
            findings.anomaly(NAME, "dlq-wrong-context",
                             f"{self.malformed} records of the dead-letter queue {self.topic} lack the headers that "
                             f"name their source record (__dlq.errors.topic, .partition, .offset)", (self.read_index,))
        ledger = r.ledger
        for tp in set(ledger.watermark) | set(self.found) | set(ledger.recs):
            self._judge(tp, ledger)

    def _judge(self, tp: tuple, ledger) -> None:
        r, findings, n = self.r, self.r.findings, self.r.findings.n
        found, rejected, archived = self.found.get(tp, {}), self.rejected.get(tp, {}), ledger.archived.get(tp, {})
        recs, watermark = ledger.recs.get(tp, {}), ledger.watermark.get(tp, 0)
        where = f"{tp[0]}-{tp[1]}"
        expected: dict[int, str] = {}  # offset -> the cause the history proves
        for offset, (index, _count) in rejected.items():
            if index < self.read_index:
                expected[offset] = "rejected"
        either, maybe_accepted = self.maybe_rejected.get(tp, ()), self.maybe_accepted.get(tp, ())
        for offset in archived:
            if offset not in expected and offset not in maybe_accepted:
                expected[offset] = "either" if offset in either else "limit"
        for offset, rec in recs.items():  # still in the ledger at the end: rejected, or at the limit
            if rec.produce_index < 0:
                continue
            if rec.status == REJECTED and 0 <= rec.status_index < self.read_index:
                expected[offset] = "rejected"
            elif rec.status < ACCEPTED and rec.status != MAYBE and rec.count >= r.limit \
                    and not rec.ack_seen & ACCEPT_SENT:  # (an ACCEPT of no outcome yet may have landed)
                expected[offset] = "either" if rec.ack_seen else "limit"
        pending = self.archiving.get(tp, ())
        for offset, cause in sorted(expected.items()):
            entries = found.get(offset)
            if not entries and any(first <= offset <= last for first, last in pending):
                n["dead-letters-pending"] += 1  # its DLQ write was still under way at the read: not judged
                continue
            if not entries:
                what = "rejected" if cause == "rejected" else f"archived at the delivery-count limit {r.limit}"
                findings.anomaly(NAME, "dlq-missing",
                                 f"{where}@{offset} was {what}, but the dead-letter queue {self.topic} holds no "
                                 f"record of it: KIP-1191 writes every record a group rejects or archives at the "
                                 f"limit to the group's DLQ topic", (self.read_index,), offset=offset)
                continue
            n["dead-letters-accounted"] += 1
            n["dead-letter-duplicates"] += len(entries) - 1
            self._judge_context(tp, offset, cause, entries)
        gone = ledger.gone.get(tp, ()), ledger.truncated_at.get(tp, ())
        for offset, entries in sorted(found.items()):
            if offset in expected or offset in gone[0] or offset in gone[1]:
                continue
            rec = recs.get(offset)
            # (a record rejected after the read, or with a REJECT of unknown outcome, is no accepted one)
            accepted = rec.status == ACCEPTED if rec is not None else \
                offset < watermark and offset not in rejected and offset not in either and offset not in maybe_accepted
            if accepted:
                message = (f"{where}@{offset} is in the dead-letter queue {self.topic}, but the history shows it "
                           f"accepted: only rejected records and records archived at the delivery-count limit "
                           f"go to a share group's DLQ (KIP-1191)")
                life = (rec.avail_time, rec.acq_time, rec.last_index) if rec is not None and rec.count >= r.limit \
                    else self.accepted_at_limit.get(tp, {}).get(offset)
                if life is not None and life[0] < NEVER and all(_CAUSE.get(m) == "limit" for _, m, _ in entries):
                    # delivered at the limit: a leader that lost it (leader change) may have archived it to
                    # the DLQ while the new leader, which never saw that acquisition end, had it accepted
                    r.evidence.excuse(NAME, "dead-lettered-by-lost-leader", life[0], life[1], tp,
                                      "dlq-accepted", message, (life[2], self.read_index), offset=offset)
                else:
                    findings.anomaly(NAME, "dlq-accepted", message, (self.read_index,), offset=offset)
            else:  # not settled in the history (an acknowledgement of unknown outcome, acquisitions unseen)
                n["dead-letters-unsettled"] += 1
                self._judge_context(tp, offset, None, entries)

    def _judge_context(self, tp: tuple, offset: int, cause: str | None, entries: list) -> None:
        """`cause`: what the history proves ("rejected", "limit"), or None / "either" (not proven)."""
        r, group = self.r, self.group
        for count, message, entry_group in entries:
            wrong = []
            if group is not None and entry_group != group:
                wrong.append(f"group {entry_group!r}, not {group!r}")
            if count is None or not 1 <= count <= r.limit:
                wrong.append(f"delivery count {count}, outside 1..{r.limit}")
            said = _CAUSE.get(message)
            if said is None:
                wrong.append(f"message {message!r}, neither {MESSAGE_REJECTED!r} nor {MESSAGE_LIMIT!r}")
            elif cause == "limit" and said == "rejected":
                wrong.append(f"message {message!r} for a record archived at the limit that no client rejected")
            elif cause == "rejected" and said == "limit" and (count or 0) < r.limit:
                wrong.append(f"message {message!r} for a record rejected below the limit")
            if wrong:
                r.findings.anomaly(NAME, "dlq-wrong-context",
                                   f"the dead-letter record of {tp[0]}-{tp[1]}@{offset} in {self.topic} carries "
                                   f"{'; '.join(wrong)} (KIP-1191's context headers)", (self.read_index,),
                                   offset=offset)
                return
