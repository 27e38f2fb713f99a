"""One pass of the history through the reference model, observing every property at once.

The checkers (`no_loss`, `delivery_count`, `batch_order`, `exclusive`,
`no_redelivery`, `ack_results`, `durable_state`) each report one property;
they share this replay so a large history is read once (`replay()` caches
the last result per history object). For each share-partition the replay
keeps what the history proves about each in-flight record (the model's
state as far as a client can see it: delivery count, owner and lock
deadline, acknowledged or not) and drops records once every offset below
them is known to be terminal, so memory follows the records in flight,
not the history length.

Times: the harness stamps each operation when it sees it, after the broker
acted. An acquisition lock is treated as live from the poll's time until
`lock_duration_ms - lock_tolerance_ms` later (the tolerance covers records a
client fetched before the application polled them); it may end earlier
only through a RELEASE the broker may have received, a session end (close,
crash) of its owner, or an allowance.
"""

from __future__ import annotations

import bisect
import json
import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Sequence

from harness.checkers import Anomaly
from harness.history.events import EventTable, as_events
from harness.history.schema import KNOWN_F, Op
from harness.model.allowances import ALLOWANCES
from harness.model.profiles import MODEL_PROFILES, model_profile

PROPERTIES = ("no-loss", "delivery-count", "batch-order", "exclusive-acquisition", "no-redelivery-after-ack",
              "ack-results", "durable-state")
MS = 1_000_000
NEVER = 1 << 62
DISRUPTING = ("leader-change", "coordinator-loss")
# record status as far as the history proves it
OPEN, MAYBE, ACCEPTED, REJECTED = 0, 1, 2, 3
GONE = 4  # terminal without an acknowledgement: deleted from the log, or aborted under read_committed


class Rec:
    __slots__ = ("produce_index", "rid", "count", "owner", "acq_time", "lock_end", "release_from",
                 "last_index", "status", "status_index", "ack_seen", "renewed", "given", "avail_time", "holders")

    def __init__(self) -> None:
        self.produce_index = -1
        self.rid: str | None = None
        self.count = 0
        self.owner: str | None = None
        self.acq_time = 0
        self.lock_end = 0
        self.release_from = NEVER
        self.last_index = -1
        self.status = OPEN
        self.status_index = -1
        self.ack_seen = False  # an ACCEPT/REJECT for it was ever sent (it may be terminal)
        self.renewed = False  # its owner sent RENEW: the client hands it back on a later poll (KIP-1222)
        self.given = False  # a poll handed the offset to some consumer (kept when the offset is reused)
        self.avail_time = 0  # when it could first be acquired: its produce's invoke (0 if unknown)
        #: process -> index of the poll that handed it the record (its current delivery), or -1 once that
        #: process acknowledged it: a client acknowledges only what it was handed, once per delivery
        self.holders: dict[str, int] | None = None


class Ack:
    __slots__ = ("type", "index", "time", "callbacks", "rec")

    def __init__(self, type_: str, index: int, time: int, rec: Rec) -> None:
        self.type, self.index, self.time, self.rec = type_, index, time, rec
        self.callbacks = 0


@dataclass
class Observation:
    """Everything the replay found, per property."""

    anomalies: dict[str, list[Anomaly]] = field(default_factory=lambda: {p: [] for p in PROPERTIES})
    allowances: dict[str, dict[str, int]] = field(default_factory=lambda: {p: {} for p in PROPERTIES})
    #: property -> allowance -> the first EVIDENCE_KEPT uses, each the op indexes that justified it
    allowance_evidence: dict[str, dict[str, list[list[int]]]] = field(
        default_factory=lambda: {p: {} for p in PROPERTIES})
    stats: dict[str, dict[str, Any]] = field(default_factory=lambda: {p: {} for p in PROPERTIES})
    unknown: dict[str, str] = field(default_factory=dict)  # property -> why it cannot be decided
    config: dict[str, Any] = field(default_factory=dict)


class _Replay:
    def __init__(self, config: dict[str, Any]) -> None:
        self.obs = Observation(config=config)
        self.limit = int(config.get("delivery_count_limit", 5))
        self.lock_ns = int(config.get("lock_duration_ms", 30000)) * MS
        self.tol_ns = int(config.get("lock_tolerance_ms", 2000)) * MS
        self.settle_ns = int(config.get("settle_ms", 10000)) * MS
        reset = str(config.get("auto_offset_reset") or "")
        # latest and by_duration both initialize a share-partition past what came before (by time or at the end)
        self.latest = reset == "latest" or reset.startswith("by_duration")
        self.read_committed = config.get("isolation_level") == "read_committed"
        self.aborted_ids: set = set()  # read_committed: ids of aborted transactions, never to be delivered
        self.delivered_ids: set = set()  # read_committed only: every id delivered (an abort may come later)
        self.lowest_delivered: dict[tuple, int] = {}  # share-partition -> the lowest offset it delivered
        self.first_start = NEVER  # index of the first consumer start (latest: what was produced before)
        self.first_start_time = NEVER  # its time: no acquisition comes before it
        self.gone: dict[tuple, set] = defaultdict(set)  # share-partition -> offsets deleted from the log
        self.truncated_at: dict[tuple, set] = defaultdict(set)  # share-partition -> offsets a truncation emptied
        self.log_start: dict[tuple, int] = {}  # share-partition -> the log start a records-deleted set
        self.max_acked: dict[tuple, int] = {}  # (process, share-partition) -> highest offset it acknowledged
        self.profile = model_profile(config.get("model_profile") or config.get("kafka_version") or "4.3")
        self.recs: dict[tuple, dict[int, Rec]] = defaultdict(dict)  # (topic, partition) -> offset -> Rec
        self.watermark: dict[tuple, int] = defaultdict(int)  # offsets below are terminal for sure
        #: below the watermark: archived at the limit -> the time of its delivery at the limit
        self.archived: dict[tuple, dict[int, int]] = defaultdict(dict)
        self.pending_ids: dict[str, int] = {}  # produces invoked without an ok yet -> the invoke's time
        self.pending_at: dict[str, tuple[tuple, int]] = {}  # pending id -> where it was delivered
        self.unplaced: dict[str, tuple[int, tuple]] = {}  # acknowledged without an offset, not delivered yet
        self.acks: dict[str, dict[tuple, Ack]] = defaultdict(dict)  # process -> (topic, partition, offset) -> Ack
        self.unresolved: dict[str, dict[tuple, Ack]] = defaultdict(dict)  # acks awaiting any result
        #: finished records' acks, for the process's current and previous commit round
        self.retired: dict[str, tuple[dict, dict]] = defaultdict(lambda: ({}, {}))
        self.commit_scope: dict[str, list[tuple[tuple, Ack]]] = {}  # process -> acks its last commit carried
        self.commit_done: dict[str, bool] = {}  # process -> its last commit returned
        self.session_end: dict[str, int] = {}  # process -> time its last session ended (close invoke, crash)
        #: session ends (close, crash, a fault that may cut sessions, a client error), in history order:
        #: (time, op index, process, what ended: one key per session, post-drain orderly close)
        self.ends: list[tuple[int, int, str, tuple, bool]] = []
        self.end_times: list[int] = []
        self.session_no: dict[str, int] = defaultdict(int)  # process -> its sessions started so far
        self.drain_end = NEVER  # time the drain ended: orderly closes after it follow continuous polling
        #: tp -> [(start offset, time, op index)] of start-offset reads, each start higher than the last
        self.start_reads: dict[tuple, list[tuple[int, int, int]]] = defaultdict(list)
        self.state_seen: dict[tuple, dict] = {}  # tp -> what every __share_group_state write held (if read)
        self.windows: list[list] = []  # [start, end, partitions or None, id, index of the fault start]
        self.offset_reads: dict[str, dict[tuple, int]] = {}  # share-offsets invoke snapshots of watermarks
        self.durable_reads = 0
        self.final_start: dict[tuple, tuple[int, int]] = {}  # tp -> (start offset, index) of the last read
        self.final_state: dict[tuple, tuple[int, StateRanges]] = {}  # tp -> decoded state topic
        self.state_writes: dict[tuple, list[list]] = {}  # tp -> the state-topic writes final_state came from
        self.state_max_start: dict[tuple, int] = {}  # tp -> highest start offset the state topic ever held
        self.reset_tps: set[tuple] = set()  # partitions whose start offset an admin reset moved
        #: (tp, offset, property, kind, message, evidence): a terminal record delivered again, on a release
        #: whose state topic may lose it (`state-start-offset-regressed`): decided after the state read
        self.after_terminal: list[tuple] = []
        self.n = defaultdict(int)
        self.truncated_ids: dict[str, bool] = {}  # record id -> lost to an unclean election
        self.overwritten: dict[tuple, tuple[int, int]] = {}  # (topic, partition, offset, id) -> (produce, count)
        self.session_faults: dict[str, list[str]] = {}  # fault id -> processes whose sessions it may end
        #: (process, topic, partition, offset) -> its delivery's poll index: records that left the ledger
        #: (settled by another consumer) while this process, handed them, had not acknowledged them yet
        self.orphans: dict[tuple, int] = {}
        self.acked_tps: dict[str, set] = defaultdict(set)  # process -> share-partitions it acknowledged

    # -- helpers -----------------------------------------------------------------
    def anomaly(self, prop: str, kind: str, message: str, evidence: tuple[int, ...], **detail: Any) -> None:
        found = self.obs.anomalies[prop]
        if len(found) < 1000:
            found.append(Anomaly(kind, message, tuple(i for i in evidence if i >= 0), detail))
        else:
            self.n[f"{prop}:more"] += 1

    def allow(self, prop: str, name: str, evidence: tuple[int, ...] | list[int] = ()) -> None:
        """Count one use of allowance `name`, keeping its evidence (the op indexes of the events that made
        the excused behaviour possible, then the op that needed it) so a reader can audit it."""
        assert name in ALLOWANCES
        counts = self.obs.allowances[prop]
        counts[name] = counts.get(name, 0) + 1
        kept = self.obs.allowance_evidence[prop].setdefault(name, [])
        if len(kept) < EVIDENCE_KEPT:
            kept.append(sorted({int(i) for i in evidence if i >= 0}))

    def unless_disrupted(self, prop: str, allowance: str, t0: int, t1: int, tp: tuple, kind: str, message: str,
                         evidence: tuple[int, ...], **detail: Any) -> None:
        """Count `allowance` if a disruption window of `tp` overlaps [t0, t1], the interval in which the
        excused behaviour could have happened; else report the anomaly."""
        window = self.disruption(t0, t1, tp)
        if window is not None:
            self.allow(prop, allowance, (window, *evidence))
        else:
            self.anomaly(prop, kind, message, evidence, **detail)

    def disrupted(self, t0: int, t1: int, tp: tuple) -> bool:
        return self.disruption(t0, t1, tp) is not None

    def disruption(self, t0: int, t1: int, tp: tuple) -> int | None:
        """The index of the fault start of a disruption of `tp` overlapping [t0, t1], if any."""
        for start, end, partitions, _, index in self.windows:
            if start <= t1 and end >= t0 and (partitions is None or tp in partitions):
                return index
        return None

    def rec_for(self, tp: tuple, offset: int) -> Rec | None:
        if offset < self.watermark[tp]:
            return None
        recs = self.recs[tp]
        rec = recs.get(offset)
        if rec is None:
            rec = recs[offset] = Rec()
        return rec

    def advance(self, tp: tuple, now: int) -> None:
        """Forget the records below the first one that may still change (memory follows what is in flight).

        A record leaves when its ACCEPT/REJECT commit succeeded, or when it was delivered at the
        limit and its lock is over (archived; remembered in a small set for later deliveries).
        """
        recs, w = self.recs[tp], self.watermark[tp]
        while True:
            rec = recs.get(w)
            if rec is None:
                break
            if rec.status == GONE:
                self.n["gone-passed"] += 1
            elif rec.status < ACCEPTED:
                if rec.count < self.limit or now <= rec.lock_end + self.tol_ns or rec.produce_index < 0:
                    break
                self.archived[tp][w] = rec.acq_time
                self.n["archived"] += 1
            if rec.holders:
                for process, handed in rec.holders.items():
                    if handed >= 0:
                        self.orphans[(process, tp[0], tp[1], w)] = handed
            del recs[w]
            for process, acks in self.acks.items():
                a = acks.pop((tp[0], tp[1], w), None)
                if a is not None:  # kept a little longer, to catch a late duplicate result
                    self.retired[process][0][(tp[0], tp[1], w)] = a
            w += 1
        self.watermark[tp] = w

    # -- events ------------------------------------------------------------------
    def run(self, rows) -> Observation:
        """Replay event rows (tuples in `COLUMNS` order), e.g. `EventTable.rows()` or `stream_parquet()`."""
        return observation([self.run_partial(rows)])

    def run_partial(self, rows) -> "Partial":
        """Replay rows and return the findings unmerged (one share-partition's, in the Spark engine)."""
        last_batch, batch_last = -1, {}
        for (index, time, process, type_, f, topic, partition, offset, rid, dc, ack, error, member,
             value) in rows:
            if f == "poll":
                if type_ != "ok" or topic is None:
                    continue
                if index != last_batch:
                    last_batch, batch_last = index, {}
                    self.n["batches"] += 1
                tp = (topic, partition)
                prev = batch_last.get(tp)
                if prev is not None and offset <= prev:
                    self.anomaly("batch-order", "batch-order",
                                 f"poll by {process}: {topic}-{partition} offset {offset} after {prev} in one batch",
                                 (index,), topic=topic, partition=partition, previous=prev, offset=offset)
                batch_last[tp] = offset
                self.delivery(index, time, process, tp, offset, rid, dc)
            elif f == "acknowledge":
                if type_ == "ok" and topic is not None:
                    self.acknowledge(index, time, process, (topic, partition), offset, ack)
            elif f == "callback":
                if topic is not None:
                    self.callback(index, time, process, (topic, partition), offset, error)
            elif f == "commit":
                self.commit(index, time, process, type_, topic, partition, error)
            elif f == "produce":
                self.produce(index, time, type_, topic, partition, offset, rid)
            elif f == "truncated":
                if type_ == "ok" and topic is not None:
                    self.truncated(index, (topic, partition), offset, rid, value)
            else:
                self.other(index, time, process, type_, f, topic, partition, offset, value)
        return self.partial()

    def produce(self, index, time, type_, topic, partition, offset, rid) -> None:
        if type_ == "invoke":
            self.pending_ids[rid] = time
        elif type_ == "ok":
            invoked = self.pending_ids.pop(rid, time)
            self.n["produced"] += 1
            at = self.pending_at.pop(rid, None)
            if offset is None or offset < 0:  # written, offset not reported: placed by its delivery
                if at is None:
                    self.unplaced[rid] = (index, (topic, partition))
                    return
                offset = at[1]
            rec = self.rec_for((topic, partition), offset)
            if rec is None:
                return
            if rec.produce_index >= 0 and rec.rid != rid:  # the offset was reused: fine only if truncated
                self.overwritten[(topic, partition, offset, rec.rid)] = (rec.produce_index, rec.count)
                rec.count, rec.owner, rec.status, rec.ack_seen = 0, None, OPEN, False
            rec.produce_index, rec.rid, rec.avail_time = index, rid, invoked
            if rec.status >= ACCEPTED:
                self.advance((topic, partition), 0)

    def truncated(self, index, tp, offset, rid, value) -> None:
        """The log lost the record `rid` at `offset` (a truncation fault saw it gone): never committed,
        so never expected; but a consumer must not have received it (an unclean election excepted)."""
        self.n["truncated"] += 1
        unclean = bool(json.loads(value).get("unclean")) if value else False
        self.truncated_ids[rid] = unclean
        self.truncated_at[tp].add(offset)
        rec = self.recs[tp].get(offset)
        before = self.overwritten.pop((tp[0], tp[1], offset, rid), None)
        if rec is not None and rec.rid == rid:
            before = (rec.produce_index, rec.count)
            del self.recs[tp][offset]
        elif before is None and offset < self.watermark[tp]:
            before = (-1, 1)  # already terminal: it was delivered and acknowledged
        if before is not None and before[1] > 0:
            self.lost_delivered(index, tp, offset, rid, unclean, (before[0], index))

    def lost_delivered(self, index, tp, offset, rid, unclean, evidence) -> None:
        if unclean:
            self.allow("no-loss", "lost-to-unclean-election")
        else:
            self.anomaly("no-loss", "truncated-delivered",
                         f"record {rid} at {tp[0]}-{tp[1]}@{offset} was delivered, but the log later truncated it: "
                         f"a share fetch returned a record that was never committed", evidence, offset=offset)

    def delivery(self, index, time, process, tp, offset, rid, count) -> None:
        self.n["deliveries"] += 1
        if self.read_committed:
            self.delivered_ids.add(rid)
        if offset < self.lowest_delivered.get(tp, NEVER):
            self.lowest_delivered[tp] = offset
        known = self.recs[tp].get(offset)
        if known is not None:  # handed over, even if it turns out truncated or aborted below
            known.given = True
        if rid in self.truncated_ids:
            self.lost_delivered(index, tp, offset, rid, self.truncated_ids[rid], (index,))
            return
        if rid in self.aborted_ids:
            self.anomaly("no-loss", "aborted-delivered", f"record {rid} at {tp[0]}-{tp[1]}@{offset} was delivered "
                         f"to {process}, but its transaction aborted and the group reads committed records only",
                         (index,), offset=offset)
            return
        rec = self.rec_for(tp, offset)
        where = f"{tp[0]}-{tp[1]}@{offset}"
        if rec is not None:
            rec.given = True
        if rec is None:  # below the watermark: terminal for sure
            if offset in self.gone[tp]:  # deleted while a client held it prefetched: handed over late
                self.n["delivered-after-delete"] += 1
            elif offset in self.archived[tp]:
                self.unless_disrupted("delivery-count", "delivery-count-lag", self.archived[tp][offset], time, tp,
                                      "delivered-after-limit",
                                      f"{where} delivered to {process} after it was delivered at the limit "
                                      f"{self.limit} and its lock ended", (index,), offset=offset)
            else:
                self.delivered_after_terminal(tp, offset, "no-redelivery-after-ack", "redelivered-after-ack",
                                              f"{where} delivered to {process} after its acknowledgement was "
                                              f"committed", (index,))
            return
        placed = self.unplaced.pop(rid, None) if self.unplaced else None
        if placed is not None:  # acknowledged earlier without an offset: this is where it was written
            if rec.produce_index >= 0 and rec.rid != rid:
                self.overwritten[(tp[0], tp[1], offset, rec.rid)] = (rec.produce_index, rec.count)
                rec.count, rec.owner, rec.status, rec.ack_seen = 0, None, OPEN, False
            rec.produce_index, rec.rid = placed[0], rid
        elif rec.produce_index < 0 and rid in self.pending_ids:
            self.pending_at[rid] = (tp, offset)
        if rec.produce_index >= 0 and rec.rid != rid and rid in self.pending_ids:
            # Its produce is not acknowledged in the history yet and the offset held another record: the
            # offset was reused (a truncation the history records later, else `offset-reused` at the end).
            self.overwritten[(tp[0], tp[1], offset, rec.rid)] = (rec.produce_index, rec.count)
            rec.count, rec.owner, rec.status, rec.ack_seen = 0, None, OPEN, False
            rec.produce_index, rec.rid = -1, None
        if rec.produce_index >= 0:
            if rec.rid != rid:
                self.anomaly("no-loss", "phantom", f"{where} delivered with id {rid!r} but {rec.rid!r} was produced there",
                             (rec.produce_index, index))
        elif rid not in self.pending_ids:
            self.anomaly("no-loss", "phantom", f"{where} delivered id {rid!r} that no produce created", (index,))
        prev = rec.count
        if rec.renewed and rec.owner == process and count == prev and rec.status < ACCEPTED:
            # KIP-1222: a renewed record is handed back to its owner by the next poll, still acquired by
            # it with the same count: not a new acquisition (the lock the RENEW extended still holds)
            rec.renewed = False
            rec.last_index = index
            self.n["renewed-handed-back"] += 1
            return
        rec.renewed = False
        # no-redelivery-after-ack
        if rec.status == GONE:  # deleted while a client held it prefetched: handed over late, not redelivered
            self.n["delivered-after-delete"] += 1
        elif rec.status >= ACCEPTED:
            self.delivered_after_terminal(tp, offset, "no-redelivery-after-ack", "redelivered-after-ack",
                                          f"{where} delivered to {process} after its "
                                          f"{'ACCEPT' if rec.status == ACCEPTED else 'REJECT'} was committed",
                                          (rec.status_index, index))
        # exclusive acquisition
        session_ended = False
        if rec.owner is not None:
            session_ended = self.session_end.get(rec.owner, -1) >= rec.acq_time  # its session ended since
            if time < rec.lock_end - self.tol_ns and time < rec.release_from and not session_ended:
                self.unless_disrupted("exclusive-acquisition", "acquired-lost-on-leader-change", rec.acq_time, time,
                                      tp, "acquired-while-locked",
                                      f"{where} delivered to {process} while {rec.owner}'s acquisition lock was live "
                                      f"({(rec.lock_end - time) / MS:.0f} ms left, not released)",
                                      (rec.last_index, index), owner=rec.owner, offset=offset)
        # delivery count
        if count < 1:
            self.anomaly("delivery-count", "count-invalid", f"{where} delivered with delivery count {count}", (index,))
        elif count > self.limit:
            self.anomaly("delivery-count", "beyond-limit",
                         f"{where} delivered with delivery count {count} > limit {self.limit}", (index,))
        decreased = session_ended and self.profile.session_release_count == "decrease"
        if prev >= self.limit and rec.status < ACCEPTED and not decreased:
            self.unless_disrupted("delivery-count", "delivery-count-lag", rec.acq_time, time, tp,
                                  "delivered-after-limit",
                                  f"{where} delivered again (count {count}) after a delivery at the limit {self.limit}",
                                  (rec.last_index, index), offset=offset)
        elif count >= 1 and count != prev + 1:
            if count > prev + 1:
                found = self.unseen_acquisitions(rec, count - prev - 1, time, index)
                if found is not None:
                    self.allow("delivery-count", *found)
                else:
                    self.anomaly("delivery-count", "count-skipped",
                                 f"{where} delivered with count {count} after count {prev}, with no acquisition "
                                 f"unseen by the history (no session end, and too soon for a lock to elapse)", (rec.last_index, index), offset=offset)
            elif decreased and count == prev:
                self.n["session-release-decrements"] += 1
            elif rec.status >= ACCEPTED and not self.disrupted(rec.acq_time if prev else rec.avail_time, time, tp):
                self.delivered_after_terminal(tp, offset, "delivery-count", "count-regressed",
                                              f"{where} delivered with count {count} after count {prev}",
                                              (rec.last_index, index))
            else:
                self.unless_disrupted("delivery-count", "delivery-count-lag", rec.acq_time if prev else rec.avail_time,
                                      time, tp,
                                      "count-regressed", f"{where} delivered with count {count} after count {prev}",
                                      (rec.last_index, index), offset=offset)
        rec.count = max(count, 0)
        if rec.holders is None:
            rec.holders = {}
        rec.holders[process] = index
        rec.owner, rec.acq_time, rec.lock_end, rec.release_from = process, time, time + self.lock_ns, NEVER
        rec.last_index = index
        if rec.status == MAYBE:
            rec.status = OPEN  # redelivered, so the unknown acknowledgement did not land

    def acknowledge(self, index, time, process, tp, offset, ack) -> None:
        self.n["acks"] += 1
        if offset > self.max_acked.get((process, tp), -1):
            self.max_acked[(process, tp)] = offset
        key = (tp[0], tp[1], offset)
        self.acked_tps[process].add(tp)
        rec = self.rec_for(tp, offset)
        excused = offset in self.truncated_at[tp] or tp in self.reset_tps
        if rec is None:
            # acknowledging a record already terminal: its result (an error) is not tracked, but the
            # process must have been handed it (and not have acknowledged that delivery already)
            if self.orphans.pop((process, *key), None) is None and not excused and ack != "RENEW":
                self.ack_not_held(index, process, tp, offset, ack, "it was settled before and ")
            return
        handed = rec.holders.get(process) if rec.holders else None
        if handed is None and not excused:
            self.ack_not_held(index, process, tp, offset, ack,
                              "another consumer holds it and " if rec.given else "")
        elif handed is not None and handed < 0 and ack != "RENEW" and not excused:
            self.anomaly("ack-results", "ack-undelivered",
                         f"{process} acknowledged {tp[0]}-{tp[1]}@{offset} ({ack}) again, with no delivery since its "
                         f"acknowledgement at index {-handed - 2}: a client acknowledges each delivery once",
                         (-handed - 2, index), offset=offset, process=process)
        if rec.holders and process in rec.holders and ack != "RENEW":
            rec.holders[process] = -index - 2  # acknowledged: a new delivery must come first
        old = self.unresolved[process].pop(key, None)
        if old is not None:
            self.anomaly("ack-results", "ack-result-missing",
                         f"{process}'s {old.type} of {tp[0]}-{tp[1]}@{offset} got no result before it acknowledged "
                         f"the record again", (old.index, index))
        a = Ack(ack, index, time, rec)
        self.acks[process][key] = a
        self.unresolved[process][key] = a
        if ack in ("ACCEPT", "REJECT"):
            rec.ack_seen = True
        elif ack == "RELEASE" and rec.owner == process:
            rec.release_from = min(rec.release_from, time)  # it may go out with the next request
        elif ack == "RENEW" and rec.owner == process:
            rec.renewed = True

    def ack_not_held(self, index: int, process: str, tp: tuple, offset: int, ack: str, how: str) -> None:
        self.anomaly("ack-results", "ack-undelivered",
                     f"{process} acknowledged {tp[0]}-{tp[1]}@{offset} ({ack}), but {how}no poll handed it to "
                     f"{process}: a client acknowledges only records it handed to the application", (index,),
                     offset=offset, process=process)

    def resolve(self, process, key, a: Ack, ok: bool | None, index: int, time: int, via: str) -> None:
        if via == "callback":
            a.callbacks += 1
            if a.callbacks > 1:
                self.anomaly("ack-results", "ack-result-duplicate",
                             f"{process}'s {a.type} of {key[0]}-{key[1]}@{key[2]} got {a.callbacks} callback results",
                             (a.index, index))
        self.unresolved[process].pop(key, None)
        rec = a.rec
        if not ok and rec.holders and rec.holders.get(process, 0) < 0:
            rec.holders[process] = a.index  # it may not have landed: the client may acknowledge it again
        if ok is None:
            if a.type in ("ACCEPT", "REJECT") and rec.status == OPEN:
                rec.status = MAYBE
            return
        if not ok:
            return
        if a.type in ("ACCEPT", "REJECT"):
            if rec.status < ACCEPTED:
                if rec.owner is not None and rec.owner != process and rec.last_index < a.index:
                    self.unless_disrupted("exclusive-acquisition", "acquired-lost-on-leader-change", rec.acq_time,
                                          time, (key[0], key[1]), "ack-from-non-owner",
                                          f"{process}'s {a.type} of {key[0]}-{key[1]}@{key[2]} succeeded although "
                                          f"{rec.owner} acquired the record after it was acknowledged",
                                          (a.index, rec.last_index, index))
                rec.status = ACCEPTED if a.type == "ACCEPT" else REJECTED
                rec.status_index = index
                self.advance((key[0], key[1]), time)
        elif a.type == "RELEASE" and rec.owner == process:
            rec.release_from = min(rec.release_from, a.time)
        elif a.type == "RENEW" and rec.owner == process:
            rec.lock_end = max(rec.lock_end, a.time + self.lock_ns)

    def callback(self, index, time, process, tp, offset, error) -> None:
        key = (tp[0], tp[1], offset)
        a = self.acks[process].get(key)
        if a is None:
            recent, older = self.retired[process]
            a = recent.get(key) or older.get(key)
        if a is None:
            held = self.recs[tp].get(offset)
            top = self.max_acked.get((process, tp))
            if offset >= self.watermark[tp] and (held is None or held.produce_index < 0) \
                    and top is not None and offset <= top + 1:
                # no record was produced at this offset (a transaction marker, a compacted gap) and it lies
                # within what the process acknowledged (or is the marker right after it): the client
                # acknowledges gaps itself (KIP-932's GAP acknowledgement type)
                self.n["gap-results"] += 1
            elif offset >= self.watermark[tp]:
                self.anomaly("ack-results", "ack-result-unsolicited",
                             f"{process} got a callback result for {tp[0]}-{tp[1]}@{offset} it never acknowledged",
                             (index,))
            return
        self.resolve(process, key, a, error is None, index, time, "callback")

    def commit(self, index, time, process, type_, topic, partition, error) -> None:
        pending = self.unresolved[process]
        if type_ == "invoke":
            self.retired[process] = ({}, self.retired[process][0])
            # acks the previous commit carried must have their result by now
            for key, a in self.commit_scope.get(process, ()):
                if pending.get(key) is a:
                    del pending[key]
                    self.anomaly("ack-results", "ack-result-missing",
                                 f"{process}'s {a.type} of {key[0]}-{key[1]}@{key[2]} got no result from the commit "
                                 f"that carried it", (a.index, index), process=process)
            self.commit_scope[process] = list(pending.items())
            self.commit_done[process] = False
            return
        self.commit_done[process] = True
        if type_ == "ok":
            if topic is None:
                return
            if (topic, partition) not in self.acked_tps[process]:
                self.anomaly("ack-results", "ack-result-unsolicited",
                             f"{process}'s commit returned a result for {topic}-{partition}, where it never "
                             f"acknowledged a record", (index,), process=process)
            for key, a in [(k, a) for k, a in pending.items() if k[0] == topic and k[1] == partition]:
                self.resolve(process, key, a, error is None, index, time, "commit")
            return
        for key, a in list(pending.items()):  # fail / info: the outcome of every pending ack is unknown
            self.resolve(process, key, a, None, index, time, "commit")

    def other(self, index, time, process, type_, f, topic, partition, offset, value) -> None:
        if f not in KNOWN_F:
            self.obs.unknown.setdefault("*", f"unknown event type {f!r} at index {index}")
            return
        v = json.loads(value) if value else {}
        if f == "close" and type_ == "invoke":
            self.session_end[process] = time
            self.session_event(time, index, process, ("session", process, self.session_no[process]),
                               post_drain=time >= self.drain_end)
            self.forget_holdings(process)
        elif f == "close" and type_ == "info":
            self.crashed(process, time, index)
        elif f == "crash":
            self.crashed(v.get("process", ""), time, index)
        elif f == "start" and type_ == "ok":
            self.first_start = min(self.first_start, index)
            self.first_start_time = min(self.first_start_time, time)
            self.session_no[process] += 1
        elif f == "drain" and type_ in ("ok", "info"):
            self.drain_end = min(self.drain_end, time)
        elif f == "error":
            # a client error (a broken connection: its share session may be gone): one per session counts
            self.session_event(time, index, process, ("error", process, self.session_no[process]))
        elif f == "fault-start" and type_ in ("invoke", "ok"):
            if "session-loss" in (v.get("effects") or ()) and v.get("processes"):
                self.session_faults[v.get("id")] = list(v["processes"])
                self.sessions_lost(v["processes"], time, index, v.get("id"))
            if set(v.get("effects") or ()) & set(DISRUPTING):
                parts = v.get("partitions")
                tps = None if parts is None else {(v.get("topic"), p) for p in parts}
                if not any(w[3] == v.get("id") for w in self.windows):
                    self.windows.append([time, NEVER, tps, v.get("id"), index])
        elif f == "fault-heal" and type_ == "ok":
            self.sessions_lost(self.session_faults.pop(v.get("id"), ()), time, index, v.get("id"))
            for w in self.windows:
                if w[3] == v.get("id") and w[1] == NEVER:
                    w[1] = time + self.settle_ns
        elif f == "share-offsets":
            if type_ == "invoke":
                self.offset_reads[process] = dict(self.watermark)
            elif type_ == "ok":
                self.durable(index, time, process, (topic, partition), offset)
        elif f == "share-state" and type_ == "ok" and topic is not None:
            self.durable_reads += 1
            self.final_state[(topic, partition)] = (offset, StateRanges(v.get("batches", [])))
            self.state_writes[(topic, partition)] = v.get("writes", [])
            self.state_max_start[(topic, partition)] = v.get("max_start_offset", offset)
            self.final_start[(topic, partition)] = (offset, time)
            self.start_read((topic, partition), offset, time, index)
            if "ever_written" in v:
                self.state_seen[(topic, partition)] = {
                    "from": int(v.get("writes_from", 0)),
                    "written": StateRanges([(a, b, 1, 0) for a, b in v["ever_written"]]),
                    "archived": StateRanges([(a, b, 4, 0) for a, b in v.get("ever_archived", ())])}
        elif f == "transaction" and type_ in ("ok", "info") and v.get("outcome") == "abort" and self.read_committed:
            # read_committed: an aborted transaction's records are never delivered nor expected
            ids = set(v.get("ids", ()))
            self.aborted_ids |= ids
            for rid in sorted(ids & self.delivered_ids):  # delivered before the abort: the LSO was ignored
                self.anomaly("no-loss", "aborted-delivered", f"record {rid} was delivered before its transaction "
                             f"aborted, to a group reading committed records only", (index,))
            for tp, recs in self.recs.items():
                for o, rec in sorted(recs.items()):
                    if rec.rid in ids and rec.status != GONE:
                        rec.status, rec.status_index = GONE, index
                        self.n["aborted"] += 1
                self.advance(tp, time)
        elif f == "records-deleted" and type_ == "ok" and topic is not None:
            # The log start moved to `offset` (Admin deleteRecords): what was below it and not yet
            # terminal is archived by the group, never to be delivered; not lost.
            tp = (topic, partition)
            self.log_start[tp] = max(self.log_start.get(tp, 0), offset)
            for o, rec in sorted(self.recs[tp].items()):
                if o < offset and rec.status < ACCEPTED and rec.produce_index >= 0:
                    rec.status, rec.status_index = GONE, index
                    self.gone[tp].add(o)
                    self.n["deleted"] += 1
            self.advance(tp, time)
        elif f == "records-compacted" and type_ == "ok" and topic is not None:
            # The log cleaner removed the record at `offset` (its key was written again later): if
            # not yet terminal, it is gone from the log, never to be delivered again; not lost.
            tp = (topic, partition)
            rec = self.recs[tp].get(offset)
            if rec is not None and rec.status < ACCEPTED and rec.produce_index >= 0:
                rec.status, rec.status_index = GONE, index
                self.gone[tp].add(offset)
                self.n["compacted"] += 1
                self.advance(tp, time)
        elif f == "reset-offsets" and type_ == "ok" and topic is not None:
            tp = (topic, partition)
            for o, rec in list(self.recs[tp].items()):
                if o >= offset:
                    del self.recs[tp][o]
            self.watermark[tp] = min(self.watermark[tp], offset)
            for r in v.get("records", ()):  # produced from the new start on: deliverable again
                if r["id"] in self.aborted_ids or r["id"] in self.truncated_ids \
                        or r["offset"] < self.log_start.get(tp, 0):
                    continue  # gone for good: no reset brings it back
                rec = self.rec_for(tp, r["offset"])
                if rec is not None:
                    rec.produce_index, rec.rid = index, r["id"]
            self.n["offset-resets"] += 1
            self.reset_tps.add(tp)

    def delivered_after_terminal(self, tp: tuple, offset: int, prop: str, kind: str, message: str,
                                 evidence: tuple[int, ...]) -> None:
        """A record the history proves accepted or rejected is delivered again (or its count restarts).
        On a release whose share coordinator may move a start offset back (`state-start-offset-regressed`),
        the state topic read after the drain decides whether that bug explains it; else an anomaly."""
        if self.profile.state_start_may_regress and tp not in self.reset_tps \
                and len(self.after_terminal) < ANOMALY_CAP:
            self.after_terminal.append((tp, offset, prop, kind, message, evidence))
        else:
            self.anomaly(prop, kind, message, evidence, offset=offset)

    def start_went_back_over(self, tp: tuple, offset: int) -> str | None:
        """How the state topic's start offset of `tp` went back over `offset` (from a start above it to one
        at or below it), if its writes show that; None if they do not (or were not read)."""
        if tp not in self.final_state or tp in self.reset_tps:
            return None
        highest = -1
        for write in self.state_writes.get(tp, []):
            start = write[2]
            if 0 <= start <= offset < highest:
                return f"start offset written as {start} after {highest}"
            highest = max(highest, start)
        start = self.final_state[tp][0]
        top = self.state_max_start.get(tp, start)
        return f"start offset {start}, earlier {top}" if start <= offset < top else None

    def before_latest_start(self, tp: tuple, offset: int, rec: Rec) -> bool:
        """With share.auto.offset.reset=latest: produced before the first consumer started, never
        delivered, and below the lowest offset the share-partition delivered (so before it was
        initialized at the log end)."""
        return (self.latest and rec.count == 0 and rec.produce_index < self.first_start
                and offset < self.lowest_delivered.get(tp, -1))

    def unseen_acquisitions(self, rec: Rec, need: int, by: int, by_index: int,
                            expiry: bool = True) -> tuple[str, list[int]] | None:
        """The allowance and its evidence if `need` acquisitions of `rec` can have gone unseen (to a
        client that never handed them to the application) between when it could be acquired again (its
        last delivery, else its produce) and `by`; None if the history holds no such events.

        Each unseen acquisition needs its own end: a session end of a consumer (close, crash, a fault
        cutting its connections, a client error; one per session), not the one that released the
        delivery the history saw, or a whole lock duration (`-expired`). Orderly closes after the drain
        count once together: until then every consumer polled, and a poll hands over what it fetched, so
        only the fetch a close cut off can go unseen. On a release whose session release decreases the
        count (4.1) a session end takes nothing. `expiry=False`: lock durations do not count (a record
        that ends archived without a delivery the history saw at the limit needs session ends: a live
        client hands what it fetched to the application at its next poll)."""
        if need <= 0:
            return "unobserved-acquisition", [by_index]
        since = rec.acq_time if rec.count else rec.avail_time
        since_index = rec.last_index if rec.count else rec.produce_index
        used: list[int] = []
        if self.profile.session_release_count != "decrease":
            owner_release = rec.count > 0 and rec.owner is not None and rec.release_from == NEVER
            keys: set = set()
            post_drain = False
            lo = bisect.bisect_right(self.end_times, since)
            for t, index, process, key, after_drain in self.ends[lo:bisect.bisect_right(self.end_times, by)]:
                if owner_release and process == rec.owner and t <= rec.lock_end:
                    owner_release = False  # this end released the delivery the history saw
                    continue
                if key in keys or (after_drain and post_drain):
                    continue
                keys.add(key)
                post_drain = post_drain or after_drain
                used.append(index)
                if len(used) == need:
                    return "unobserved-acquisition", [since_index, *used, by_index]
        started = since if rec.count or self.first_start_time > by else max(since, self.first_start_time)
        if expiry and by - started >= (need - len(used)) * self.lock_ns:
            return "unobserved-acquisition-expired", [since_index, *used, by_index]
        return None

    def archived_unseen(self, tp: tuple, rec: Rec, by: int, by_index: int) -> tuple[str, list[int]] | None:
        """`unseen_acquisitions` for a record never seen at the limit that a start-offset read put below the
        start: it was archived after acquisitions the history did not see (None: no evidence)."""
        if rec.count >= self.limit:
            return "unobserved-acquisition", [by_index]
        return self.unseen_acquisitions(rec, self.limit - rec.count, by, by_index, expiry=False)

    def start_read(self, tp: tuple, start: int, time: int, index: int) -> None:
        reads = self.start_reads[tp]
        if not reads or start > reads[-1][0]:
            reads.append((start, time, index))

    def first_read_past(self, tp: tuple, offset: int) -> tuple[int, int]:
        """(time, op index) of the first start-offset read above `offset` (NEVER, -1 if none)."""
        reads = self.start_reads.get(tp, ())
        at = bisect.bisect_right([r[0] for r in reads], offset)
        return (reads[at][1], reads[at][2]) if at < len(reads) else (NEVER, -1)

    def state_disagrees(self, tp: tuple, offset: int) -> str | None:
        """Why `__share_group_state` contradicts a record archived unseen: no write held it archived (in
        no write at all: it was skipped). None if they agree or the writes were not read."""
        seen = self.state_seen.get(tp)
        if seen is None or offset < seen["from"] or offset in seen["archived"]:
            return None
        if offset in seen["written"]:
            return "no __share_group_state write held it archived"
        return "no __share_group_state write ever held it: the share-partition skipped it"

    def sessions_lost(self, processes, time: int, index: int, fault: Any) -> None:
        """A fault may have ended these consumers' share sessions (connections cut or reset) by `time`."""
        for process in processes:
            self.session_end[process] = time
            self.session_event(time, index, process, ("fault", process, fault))

    def session_event(self, time: int, index: int, process: str, key: tuple, post_drain: bool = False) -> None:
        if self.end_times and time < self.end_times[-1]:
            time = self.end_times[-1]  # kept sorted (a history's times may step back a little)
        self.ends.append((time, index, process, key, post_drain))
        self.end_times.append(time)

    def forget_holdings(self, process: str) -> None:
        """The client `process` closed or died: what it was handed is no longer its to acknowledge."""
        for recs in self.recs.values():
            for rec in recs.values():
                if rec.holders and process in rec.holders:
                    del rec.holders[process]
        for key in [k for k in self.orphans if k[0] == process]:
            del self.orphans[key]

    def crashed(self, process: str, time: int, index: int) -> None:
        self.session_end[process] = time
        self.session_event(time, index, process, ("session", process, self.session_no[process]))
        self.forget_holdings(process)
        returned = {id(a) for _, a in self.commit_scope.get(process, ())} if self.commit_done.get(process) else set()
        for key, a in list(self.unresolved[process].items()):
            self.unresolved[process].pop(key)
            if id(a) in returned:  # its commit had returned without a result for it: not the crash's doing
                self.anomaly("ack-results", "ack-result-missing",
                             f"{process}'s {a.type} of {key[0]}-{key[1]}@{key[2]} got no result from the commit "
                             f"that carried it", (a.index,), process=process)
            else:
                self.allow("ack-results", "ack-lost-with-consumer")
            if a.type in ("ACCEPT", "REJECT") and a.rec.status == OPEN:
                a.rec.status = MAYBE

    def durable(self, index, time, process, tp, start) -> None:
        if tp[0] is None:
            return
        self.durable_reads += 1
        self.final_start[tp] = (start, time)
        self.start_read(tp, start, time, index)
        floor = self.offset_reads.get(process, {}).get(tp, 0)
        if start < floor:
            # Observed on 4.3.1: the start offset a write persists is the one from before the acknowledgements
            # it carries, so the summary lags until the next write. Not a loss (the acknowledged states are
            # written); recorded, and a redelivery of those records would fail no-redelivery-after-ack.
            lag = self.obs.stats["durable-state"].setdefault("start_offset_behind_acknowledged", {})
            lag[f"{tp[0]}-{tp[1]}"] = floor - start
        for o, rec in self.recs[tp].items():
            if o < start and rec.produce_index >= 0 and not rec.ack_seen and rec.status < ACCEPTED \
                    and self.archived_unseen(tp, rec, time, index) is None \
                    and not self.before_latest_start(tp, o, rec):
                self.anomaly("durable-state", "durable-state-ahead",
                             f"share-group start offset of {tp[0]}-{tp[1]} read as {start}, past record {o} which "
                             f"was never acknowledged and is below the delivery limit (delivered {rec.count} times)",
                             (rec.produce_index, index), start=start, offset=o)
                break

    def check_state_topic(self) -> None:
        """The decoded `__share_group_state` must agree with the model: every record the history proves
        accepted or rejected is terminal there (below the start offset, or acknowledged/archived); no
        record is acknowledged there that was never delivered. An acknowledgement of unknown outcome is
        settled by it."""
        checked = 0
        for tp, (start, states) in self.final_state.items():
            def terminal(o: int) -> bool:
                return o < start or states.get(o, (0, 0))[0] in (2, 4)

            def held(o: int) -> str:
                """How the state topic holds offset `o`, with the writes that decided it."""
                state = f"as {STATE_NAMES.get(states[o][0], states[o][0])} (delivery count {states[o][1]})" \
                    if o in states else "in no batch (not yet delivered, to a leader loading it)"
                return f"{state}, start offset {start}; writes: {_writes_touching(self.state_writes.get(tp, []), o)}"
            # Below the highest start offset ever written the share coordinator once had every record
            # terminal: the start went back (out-of-order writes; 4.4 keeps the higher one).
            went_back = self.state_max_start.get(tp, start) if tp not in self.reset_tps else start

            def not_terminal(o: int, message: str, evidence: tuple[int, ...]) -> None:
                if o < went_back:
                    if self.profile.state_start_may_regress:  # a known bug of this release: counted, shown
                        self.allow("durable-state", "state-start-offset-regressed")
                        evidence_kept = self.obs.stats["durable-state"].setdefault("known_bug_evidence", [])
                        if len(evidence_kept) < KNOWN_BUG_EVIDENCE:
                            evidence_kept.append(f"{message}; the state topic's start offset went back from "
                                                 f"{went_back}")
                        return
                    self.anomaly("durable-state", "state-start-offset-regressed",
                                 f"{message}; the state topic's start offset went back from {went_back}",
                                 evidence, offset=o)
                    return
                self.anomaly("durable-state", "state-topic-not-terminal", message, evidence, offset=o)
            # compacted away as accepted: must be terminal (from -1 at most: no record lies below offset 0)
            for o in range(max(start, -1), self.watermark[tp]):
                checked += 1
                if not terminal(o):
                    not_terminal(o, f"{tp[0]}-{tp[1]}@{o} was accepted, but __share_group_state holds it {held(o)}",
                                 ())
            for o, rec in self.recs[tp].items():
                if rec.produce_index < 0:
                    continue
                checked += 1
                if rec.status in (ACCEPTED, REJECTED) and not terminal(o):
                    not_terminal(o, f"record {rec.rid} at {tp[0]}-{tp[1]}@{o} was "
                                 f"{'accepted' if rec.status == ACCEPTED else 'rejected'} by a successful commit, "
                                 f"but __share_group_state holds it {held(o)}", (rec.status_index,))
                elif (rec.status == MAYBE or (rec.status == OPEN and rec.ack_seen)) and terminal(o):
                    # the broker has it: the unknown outcome is settled, or the acknowledgement whose result
                    # was an error (seen on 4.3.1: "_TRANSPORT: Broker transport failure" while the
                    # controller was killed) reached the broker after all
                    rec.status = ACCEPTED
                    self.n["resolved-by-state-topic"] += 1
                elif states.get(o, (0, 0))[0] == 2 and rec.count == 0:
                    self.anomaly("durable-state", "state-topic-acknowledged-undelivered",
                                 f"record {rec.rid} at {tp[0]}-{tp[1]}@{o} is acknowledged in __share_group_state "
                                 f"but the history never saw it delivered", (rec.produce_index,), offset=o)
        if self.final_state:
            self.obs.stats["durable-state"]["state_topic_records_checked"] = checked
        for tp, o, prop, kind, message, evidence in self.after_terminal:
            how = self.start_went_back_over(tp, o)
            if how is None:
                self.anomaly(prop, kind, message, evidence, offset=o)
                continue
            self.allow("durable-state", "state-start-offset-regressed")  # a known bug of this release
            kept = self.obs.stats["durable-state"].setdefault("known_bug_evidence", [])
            if len(kept) < KNOWN_BUG_EVIDENCE:
                kept.append(f"{message}; in __share_group_state the {how}: {tp[0]}-{tp[1]}@{o} lost its state")

    # -- the end -----------------------------------------------------------------
    def partial(self) -> "Partial":
        """End of the replay: the final checks, and what `observation` needs to build the verdicts. A
        replay of one share-partition's rows (plus the global ones) gives one Partial; they merge."""
        self.check_state_topic()
        obs, n = self.obs, self.n
        for tp, recs in self.recs.items():
            start, _ = self.final_start.get(tp, (0, -1))
            for o, rec in sorted(recs.items()):
                if rec.produce_index < 0:
                    continue
                where = f"{tp[0]}-{tp[1]}@{o}"
                if rec.status == GONE:
                    continue
                elif rec.status >= ACCEPTED:
                    n["accepted"] += 1
                elif rec.count >= self.limit:
                    n["archived-at-limit"] += 1  # delivered at the limit and never accepted: archived by the broker
                elif o < start and rec.ack_seen:
                    n["resolved-by-durable-state"] += 1
                elif o < start and (unseen := self.archived_unseen(tp, rec, *self.first_read_past(tp, o))):
                    disagrees = self.state_disagrees(tp, o)
                    if disagrees is None:
                        n["archived-at-limit"] += 1  # terminal per the broker; archived after acquisitions unseen
                        self.allow("no-loss", *unseen)
                    else:
                        self.anomaly("no-loss", "skipped" if rec.count == 0 else "not-accepted",
                                     f"record {rec.rid} at {where} was delivered {rec.count} times, never "
                                     f"accepted, and the start offset moved past it, but {disagrees}",
                                     (rec.produce_index, rec.last_index), offset=o)
                elif rec.status == MAYBE:
                    n["unresolved-maybe"] += 1
                elif self.before_latest_start(tp, o, rec):
                    n["skipped-by-latest"] += 1
                    self.allow("no-loss", "before-latest-start")
                elif rec.count == 0:
                    self.anomaly("no-loss", "lost", f"record {rec.rid} at {where} was acknowledged by the broker "
                                 f"but never delivered", (rec.produce_index,), offset=o)
                else:
                    self.anomaly("no-loss", "not-accepted", f"record {rec.rid} at {where} was delivered "
                                 f"{rec.count} times but never accepted, rejected or archived",
                                 (rec.produce_index, rec.last_index), offset=o)
        for rid, (produce_index, (topic, partition)) in self.unplaced.items():
            if rid not in self.truncated_ids:
                self.anomaly("no-loss", "lost", f"record {rid} was acknowledged by the broker to {topic}-{partition} "
                             f"(offset not reported) but never delivered", (produce_index,))
        for (topic, partition, offset, rid), (produce_index, _) in self.overwritten.items():
            self.anomaly("no-loss", "offset-reused",
                         f"record {rid} at {topic}-{partition}@{offset} was acknowledged by the broker, but another "
                         f"record was later acknowledged at the same offset and the history shows no truncation",
                         (produce_index,), offset=offset)
        for process, pending in self.unresolved.items():
            for key, a in pending.items():
                self.anomaly("ack-results", "ack-result-missing",
                             f"{process}'s {a.type} of {key[0]}-{key[1]}@{key[2]} never got a result",
                             (a.index,), process=process)
        # below the watermark: settled; those settled as GONE (deleted, aborted) were not accepted
        n["accepted"] += max(0, sum(self.watermark.values()) - n["gone-passed"])
        n["durable-reads"] += self.durable_reads
        return Partial(obs.anomalies, obs.allowances, dict(n), obs.stats["durable-state"], obs.unknown, obs.config,
                       obs.allowance_evidence)


@dataclass
class Partial:
    """One replay's findings before the verdicts: anomalies, allowance and event counts, the
    durable-state stats (counts and per-partition maps) and undecidable properties. Partials of
    disjoint share-partitions (each with the history's global rows) add up to the whole history's."""

    anomalies: dict[str, list[Anomaly]]
    allowances: dict[str, dict[str, int]]
    counts: dict[str, int]
    durable: dict[str, Any]
    unknown: dict[str, str]
    config: dict[str, Any]
    allowance_evidence: dict[str, dict[str, list[list[int]]]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"anomalies": {p: [[a.kind, a.message, list(a.evidence), a.detail] for a in found]
                              for p, found in self.anomalies.items()},
                "allowances": self.allowances, "counts": self.counts, "durable": self.durable,
                "unknown": self.unknown, "config": self.config, "allowance_evidence": self.allowance_evidence}

    @staticmethod
    def from_json(data: dict[str, Any]) -> "Partial":
        return Partial({p: [Anomaly(k, m, tuple(e), d) for k, m, e, d in found]
                        for p, found in data["anomalies"].items()},
                       data["allowances"], data["counts"], data["durable"], data["unknown"], data["config"],
                       data.get("allowance_evidence", {}))


ANOMALY_CAP = 1000
EVIDENCE_KEPT = 20  # uses of each allowance whose evidence a result lists
KNOWN_BUG_EVIDENCE = 5  # messages kept (in stats) of situations a known bug of the release explains


def observation(partials: Sequence[Partial], batches: int | None = None) -> Observation:
    """The verdict-ready Observation of the partials' history (one partial: a whole-history replay).

    Anomalies are listed in history order (by evidence), at most ANOMALY_CAP per property; `batches`
    overrides the summed count of polls with records (a poll spanning partitions is in several partials)."""
    config = next((p.config for p in partials if p.config), {})
    obs = Observation(config=config)
    n: dict[str, int] = defaultdict(int)
    for part in partials:
        for key, value in part.counts.items():
            n[key] += value
        for prop, found in part.anomalies.items():
            obs.anomalies[prop].extend(found)
        for prop, counts in part.allowances.items():
            mine = obs.allowances[prop]
            for name, count in counts.items():
                mine[name] = mine.get(name, 0) + count
        for prop, uses in part.allowance_evidence.items():
            for name, found in uses.items():
                kept = obs.allowance_evidence[prop].setdefault(name, [])
                kept.extend(found)
                kept.sort()
                del kept[EVIDENCE_KEPT:]
        for key, value in part.durable.items():
            if isinstance(value, dict):
                obs.stats["durable-state"].setdefault(key, {}).update(value)
            elif isinstance(value, list):
                kept = obs.stats["durable-state"].setdefault(key, [])
                kept.extend(value)
                kept.sort()
                del kept[KNOWN_BUG_EVIDENCE:]
            else:
                obs.stats["durable-state"][key] = obs.stats["durable-state"].get(key, 0) + value
        for prop, why in part.unknown.items():  # the earliest in the history, as one replay would keep
            if prop not in obs.unknown or _at_index(why) < _at_index(obs.unknown[prop]):
                obs.unknown[prop] = why
    if batches is not None:
        n["batches"] = batches
    for prop, found in obs.anomalies.items():
        found.sort(key=lambda a: (a.evidence, a.kind, a.message))
        if len(found) > ANOMALY_CAP:
            n[f"{prop}:more"] += len(found) - ANOMALY_CAP
            del found[ANOMALY_CAP:]
    profile = model_profile(config.get("model_profile") or config.get("kafka_version") or "4.3")
    limit = int(config.get("delivery_count_limit", 5))
    s = obs.stats
    s["no-loss"] = {"produced_ok": n["produced"], "deliveries": n["deliveries"], "accepted_or_rejected": n["accepted"],
                    "archived_at_limit": n["archived-at-limit"], "unknown_outcome": n["unresolved-maybe"],
                    "resolved_by_durable_state": n["resolved-by-durable-state"] + n["resolved-by-state-topic"],
                    "truncated": n["truncated"], "deleted": n["deleted"], "compacted": n["compacted"],
                    "skipped_by_latest": n["skipped-by-latest"], "aborted": n["aborted"]}
    s["delivery-count"] = {"deliveries": n["deliveries"], "limit": limit, "profile": profile.line,
                           "session_release_decrements": n["session-release-decrements"]}
    s["batch-order"] = {"batches": n["batches"]}
    s["exclusive-acquisition"] = {"deliveries": n["deliveries"],
                                  "lock_duration_ms": int(config.get("lock_duration_ms", 30000)),
                                  "tolerance_ms": int(config.get("lock_tolerance_ms", 2000))}
    s["no-redelivery-after-ack"] = {"deliveries": n["deliveries"], "offset_resets": n["offset-resets"]}
    s["ack-results"] = {"acks": n["acks"]}
    s["durable-state"] = {"start_offset_reads": n["durable-reads"], **s["durable-state"]}
    for prop in PROPERTIES:
        if n[f"{prop}:more"]:
            s[prop]["anomalies_not_listed"] = n[f"{prop}:more"]
    u = obs.unknown
    if n["unresolved-maybe"]:
        u["no-loss"] = (f"{n['unresolved-maybe']} records' acknowledgements have an unknown outcome and no later "
                        f"start-offset read settles them")
    if not n["produced"]:
        u["no-loss"] = "no produce was acknowledged: nothing to check"
    if not n["batches"]:
        for prop in ("batch-order", "delivery-count", "exclusive-acquisition", "no-redelivery-after-ack"):
            u[prop] = "no poll delivered records: nothing to check"
    if not n["acks"]:
        u["ack-results"] = "no acknowledgement in the history: nothing to check"
    if not n["durable-reads"]:
        u["durable-state"] = "the history holds no read of durable state (share-offsets): nothing to check"
    if not config:
        for prop in ("delivery-count", "exclusive-acquisition"):
            u.setdefault(prop, "the history has no config operation (version 0): the delivery-count limit and "
                               "lock duration in force are unknown")
    return obs


def _at_index(why: str) -> int:
    found = re.search(r"at index (\d+)", why)
    return int(found.group(1)) if found else NEVER


class StateRanges:
    """The offsets of `__share_group_state` batches ([first, last, state, delivery count]) and their
    (state, count), as disjoint ranges: a batch costs the same whatever its length (a batch
    [0, 3000000000] is one range, not three billion offsets). Where batches overlap the later one
    holds, as when they are applied one after another. Reads like a dict: `o in s`, `s[o]`, `s.get(o)`."""

    __slots__ = ("firsts", "lasts", "values")

    def __init__(self, batches) -> None:
        import heapq
        self.firsts: list[int] = []
        self.lasts: list[int] = []
        self.values: list[tuple[int, int]] = []
        batches = [(int(b[0]), int(b[1]), (b[2], b[3])) for b in batches if int(b[0]) <= int(b[1])]
        if all(a[1] < b[0] for a, b in zip(batches, batches[1:])):  # sorted and disjoint: as the harness writes
            for first, last, value in batches:
                self._add(first, last, value)
            return
        # overlapping: sweep the range ends; in each piece between two ends the latest batch holding it wins
        order = sorted(range(len(batches)), key=lambda i: batches[i][0])
        ends = sorted({b[0] for b in batches} | {b[1] + 1 for b in batches})
        live: list[tuple[int, int]] = []  # heap of (-position in the list, last offset)
        k = 0
        for here, upto in zip(ends, ends[1:]):
            while k < len(order) and batches[order[k]][0] <= here:
                heapq.heappush(live, (-order[k], batches[order[k]][1]))
                k += 1
            while live and live[0][1] < here:
                heapq.heappop(live)
            if live:
                self._add(here, upto - 1, batches[-live[0][0]][2])

    def _add(self, first: int, last: int, value: tuple[int, int]) -> None:
        if self.lasts and self.lasts[-1] == first - 1 and self.values[-1] == value:
            self.lasts[-1] = last
        else:
            self.firsts.append(first)
            self.lasts.append(last)
            self.values.append(value)

    def get(self, offset: int, default: Any = None) -> Any:
        at = bisect.bisect_right(self.firsts, offset) - 1
        return self.values[at] if at >= 0 and offset <= self.lasts[at] else default

    def __contains__(self, offset: int) -> bool:
        return self.get(offset) is not None

    def __getitem__(self, offset: int) -> tuple[int, int]:
        found = self.get(offset)
        if found is None:
            raise KeyError(offset)
        return found


#: Record states in `__share_group_state` batches (KIP-932 RecordState ids).
STATE_NAMES = {0: "AVAILABLE", 1: "ACQUIRED", 2: "ACKNOWLEDGED", 4: "ARCHIVED"}


def _writes_touching(writes: list[list], offset: int, last: int = 6) -> str:
    """The state-topic writes (snapshot, then updates) that set `offset`'s state or a start offset, the
    latest `last` of them, e.g. `update e7 start 3 [3-7 ACKNOWLEDGED c1]`."""
    shown = []
    for kind, epoch, start, batches in writes:
        hit = [f"{f}-{l} {STATE_NAMES.get(st, st)} c{c}" for f, l, st, c in batches if f <= offset <= l]
        if hit or kind == "snapshot" or start >= 0:  # it touched the offset, or set the start
            shown.append(f"{kind} e{epoch} start {start}" + (f" [{', '.join(hit)}]" if hit else ""))
    if not shown:
        return "none"
    return ("... " if len(shown) > last else "") + "; ".join(shown[-last:])


_cache: tuple[int, Any, Observation] | None = None


def replay(history: "EventTable | Sequence[Op]") -> Observation:
    """Replay `history`; the seven checkers asking about the same EventTable share one replay."""
    global _cache
    if _cache is not None and _cache[1] is history and _cache[0] == len(history):
        return _cache[2]  # only EventTables are cached: they are built once and not edited
    table = as_events(history)
    if len(table) == 0:
        obs = Observation()
        obs.unknown["*"] = "the history is empty"
    else:
        config = _config(table)
        obs = _Replay(config).run(table.rows())
    if isinstance(history, EventTable):
        _cache = (len(history), history, obs)
    return obs


def replay_parquet(path, batch_rows: int = 262_144) -> Observation:
    """Replay a Parquet history batch by batch: memory follows the records in flight, not the file size."""
    import itertools

    import pyarrow.parquet as pq
    from harness.history.events import COLUMNS
    handle = pq.ParquetFile(path)

    def rows():
        for batch in handle.iter_batches(batch_size=batch_rows, columns=list(COLUMNS)):
            yield from EventTable.from_arrow(batch).rows()

    stream = rows()
    head = list(itertools.islice(stream, 1000))
    if not head:
        obs = Observation()
        obs.unknown["*"] = "the history is empty"
        return obs
    config = _config(EventTable({c: [r[i] for r in head] for i, c in enumerate(COLUMNS)}))
    return _Replay(config).run(itertools.chain(head, stream))


def _config(table: EventTable) -> dict[str, Any]:
    for f, value in zip(table.columns["f"], table.columns["value"]):
        if f == "config":
            config = json.loads(value) if value else {}
            line = config.get("model_profile") or config.get("kafka_version")
            if line is not None and ".".join(str(line).split(".")[:2]) not in MODEL_PROFILES:
                raise ValueError(f"config names Kafka {line}, which has no model profile")
            return config
    return {}
