"""The record ledger: what the history proves about each record of each share-partition.

Per share-partition, a `Rec` per offset in flight: where it came from (its produce), who holds it
(owner, lock, the consumers it was handed to), its delivery count and whether an acknowledgement
settled it. Records leave once every offset below them is known to be terminal (`advance`), so memory
follows the records in flight, not the history length. The ledger judges nothing: the judges in the
checker modules read it; `place` reports a phantom delivery to no-loss.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Callable

from harness.checkers.findings import NEVER

MS = 1_000_000
# record status as far as the history proves it
OPEN, MAYBE, ACCEPTED, REJECTED = 0, 1, 2, 3
GONE = 4  # terminal without an acknowledgement: deleted from the log, or aborted under read_committed
#: `Rec.ack_seen` bits: which terminal acknowledgements were ever sent for the record
ACCEPT_SENT, REJECT_SENT = 1, 2


class Rec:
    __slots__ = ("produce_index", "rid", "count", "owner", "acq_time", "lock_end", "release_from",
                 "last_index", "fetched", "status", "status_index", "status_time", "ack_seen", "renewed", "given",
                 "avail_time", "holders", "ackers")

    def __init__(self) -> None:
        self.produce_index = -1
        self.rid: str | None = None
        self.count = 0
        self.owner: str | None = None
        self.acq_time = 0
        self.lock_end = 0
        self.release_from = NEVER
        self.last_index = -1
        #: when the consumer of the poll at `last_index` may have fetched it (`Evidence.fetched_from`; None: unknown)
        self.fetched: int | None = None
        self.status = OPEN
        self.status_index = -1
        self.status_time = NEVER  # the time of status_index (its ACCEPT/REJECT's successful result); NEVER: unknown
        self.ack_seen = 0  # ACCEPT_SENT | REJECT_SENT: an ACCEPT/REJECT for it was ever sent (it may be terminal)
        self.renewed = False  # its owner sent RENEW: the client hands it back on a later poll (KIP-1222)
        self.given = False  # a poll handed the offset to some consumer (kept when the offset is reused)
        self.avail_time = 0  # when it could first be acquired: its produce's invoke (0 if unknown)
        #: process -> index of the poll that handed it the record (its current delivery), or -index - 2
        #: once that process acknowledged it: a client acknowledges only what it was handed, once per delivery
        self.holders: dict[str, int] | None = None
        self.ackers: list[str] | None = None  # processes holding an acknowledgement of it (`AckBook.acks`)

    def reset(self) -> None:
        """The offset now holds another record (the log reused it). Who was handed or acknowledged the
        offset (`holders`, `ackers`) is kept: their acknowledgements are judged against what they got."""
        self.count, self.owner, self.status, self.ack_seen = 0, None, OPEN, 0


class Ack:
    __slots__ = ("type", "index", "time", "callbacks", "rec", "detached", "refused", "unanswered")

    def __init__(self, type_: str, index: int, time: int, rec: Rec, detached: bool = False) -> None:
        self.type, self.index, self.time, self.rec = type_, index, time, rec
        self.callbacks = 0
        self.detached = detached  # of a record that had left the ledger (settled) when it was sent
        self.refused = False  # its result was a definitive refusal: it settled nothing (`ack_results.definitive`)
        self.unanswered = False  # the commit that carried it returned without its result (a callback may bring it)


class IdSet:
    """Every record id a produce invoked, compactly: the harness's ids are `<producer>-<sequence>`, kept as a
    bit per sequence number per producer prefix (a million ids: 125 kB, whichever of them a replay sees: a
    Spark slot sees every k-th), other ids (and sequences past `BITS`) in a plain set."""

    __slots__ = ("bits", "other")
    BITS = 1 << 27  # sequence numbers kept as bits below this (16 MB at most per producer)

    def __init__(self) -> None:
        self.bits: dict[str, bytearray] = {}  # prefix -> bit n set: `<prefix>-<n>` was invoked
        self.other: set[str] = set()

    @classmethod
    def _bit(cls, rid: str) -> tuple[str, int] | None:
        """(producer prefix, sequence) of an id kept as a bit, None for one kept in the plain set: the
        sequence in ASCII digits without a leading zero (so one id has one bit, and `p-01` is not `p-1`)."""
        prefix, sep, seq = rid.rpartition("-")
        if sep and seq.isdigit() and seq.isascii() and (seq[0] != "0" or len(seq) == 1):
            n = int(seq)
            if n < cls.BITS:
                return prefix, n
        return None

    def add(self, rid: str) -> None:
        # (`_bit` written out: once per produce, on the replay's hot path)
        prefix, sep, seq = rid.rpartition("-")
        if sep and seq.isdigit() and seq.isascii() and (seq[0] != "0" or len(seq) == 1):
            n = int(seq)
            if n < self.BITS:
                bits = self.bits.get(prefix)
                if bits is None:
                    bits = self.bits[prefix] = bytearray()
                byte = n >> 3
                if byte >= len(bits):
                    bits.extend(bytes(max(byte + 1 - len(bits), len(bits))))  # (doubling: amortised)
                bits[byte] |= 1 << (n & 7)
                return
        self.other.add(rid)

    def __contains__(self, rid: str) -> bool:
        found = self._bit(rid)
        if found is None:
            return rid in self.other
        bits = self.bits.get(found[0])
        byte = found[1] >> 3
        return bits is not None and byte < len(bits) and bool(bits[byte] & (1 << (found[1] & 7)))


class Ledger:
    def __init__(self, limit: int, tol_ns: int, counts: dict[str, int]) -> None:
        self.limit = limit
        self.tol_ns = tol_ns
        self.n = counts
        self.recs: dict[tuple, dict[int, Rec]] = defaultdict(dict)  # (topic, partition) -> offset -> Rec
        self.watermark: dict[tuple, int] = defaultdict(int)  # offsets below are terminal for sure
        #: below the watermark: archived at the limit -> the time of its delivery at the limit
        self.archived: dict[tuple, dict[int, int]] = defaultdict(dict)
        self.gone: dict[tuple, set] = defaultdict(set)  # share-partition -> offsets deleted from the log
        self.aborted: dict[tuple, set] = defaultdict(set)  # share-partition -> offsets of aborted records
        self.truncated_at: dict[tuple, set] = defaultdict(set)  # share-partition -> offsets a truncation emptied
        #: (tp, offset) -> the `truncated` op of an unclean election that took a record there after a
        #: consumer had been handed it: the group's state may count that offset as done
        self.unclean_reused: dict[tuple, int] = {}
        self.log_start: dict[tuple, int] = {}  # share-partition -> the log start a records-deleted set
        self.lowest_delivered: dict[tuple, int] = {}  # share-partition -> the lowest offset it delivered
        self.first_delivered_time: dict[tuple, int] = {}  # share-partition -> the time of its first delivery
        self.timestamps: dict[str, int] = {}  # record id -> the CreateTime (ms) its produce set explicitly
        self.reset_tps: set[tuple] = set()  # partitions whose start offset an admin reset moved
        self.pending_ids: dict[str, int] = {}  # produces invoked without an ok yet -> the invoke's time
        self.invoked = IdSet()  # every id a produce invoked: a delivered id among them is no phantom
        self.pending_at: dict[str, tuple[tuple, int]] = {}  # pending id -> where it was delivered
        self.unplaced: dict[str, tuple[int, tuple]] = {}  # acknowledged without an offset, not delivered yet
        self.unplaced_invoked: dict[str, int] = {}  # unplaced id -> its produce's invoke time (`Rec.avail_time`)
        self.overwritten: dict[tuple, tuple[int, int]] = {}  # (topic, partition, offset, id) -> (produce, count)
        self.truncated_ids: dict[str, bool] = {}  # record id -> lost to an unclean election
        self.aborted_ids: set = set()  # read_committed: ids of aborted transactions, never to be delivered
        self.delivered_ids: set = set()  # read_committed only: every id delivered (an abort may come later)
        #: (process, topic, partition, offset) -> its delivery's poll index: records that left the ledger
        #: (settled by another consumer) while this process, handed them, had not acknowledged them yet
        self.orphans: dict[tuple, int] = {}
        #: (tp, offset) -> the record written at an offset the ledger had already settled (the log reused
        #: it after a truncation): judged like any record, kept beside the ledger (below its watermark)
        self.reproduced: dict[tuple, Rec] = {}
        self.on_leave: list[Callable[[tuple, int, Rec], None]] = []  # called as a record leaves: (tp, offset, rec)
        #: whether the acquisition of a record delivered at the limit ended with its owner's share session on
        #: a release where that never archives (4.1: `session-release-decrement`): it is not archived then
        self.session_released: Callable[[Rec], bool] = lambda rec: False

    def rec_for(self, tp: tuple, offset: int) -> Rec | None:
        """The record at `offset` (created on first sight), or None below the watermark (terminal) unless
        a record was written there again (`reproduced`)."""
        if offset < self.watermark[tp]:
            return self.reproduced.get((tp, offset)) if self.reproduced else None
        recs = self.recs[tp]
        rec = recs.get(offset)
        if rec is None:
            rec = recs[offset] = Rec()
        return rec

    def advance(self, tp: tuple, now: int) -> None:
        """Forget the records below the first one that may still change (memory follows what is in flight).

        A record leaves when its ACCEPT/REJECT commit succeeded, or when it was delivered at the
        limit and its lock is over (archived; remembered in a small map for later deliveries).
        """
        recs, w = self.recs[tp], self.watermark[tp]
        on_leave = self.on_leave
        while True:
            rec = recs.get(w)
            if rec is None:
                break
            status = rec.status
            if status == GONE:
                self.n["gone-passed"] += 1
            elif status < ACCEPTED:
                if rec.count < self.limit or now <= rec.lock_end + self.tol_ns or rec.produce_index < 0 \
                        or self.session_released(rec):
                    break
                self.archived[tp][w] = rec.acq_time
                self.n["archived"] += 1
            if rec.holders:
                for process, handed in rec.holders.items():
                    if handed >= 0:
                        self.orphans[(process, tp[0], tp[1], w)] = handed
            del recs[w]
            for hook in on_leave:
                hook(tp, w, rec)
            w += 1
        self.watermark[tp] = w

    def produce(self, index: int, time: int, type_: str, tp: tuple, offset, rid: str) -> None:
        if type_ == "invoke":
            self.pending_ids[rid] = time
            self.invoked.add(rid)
        elif type_ == "ok":
            invoked = self.pending_ids.pop(rid, time)
            self.n["produced"] += 1
            at = self.pending_at.pop(rid, None) if self.pending_at else None
            if offset is None or offset < 0:  # written, offset not reported: placed by its delivery
                if at is None:
                    self.unplaced[rid] = (index, tp)
                    self.unplaced_invoked[rid] = invoked
                    return
                offset = at[1]
            if offset < self.watermark[tp]:  # (`rec_for` written out: once per produce)
                rec = self.reproduced.get((tp, offset)) if self.reproduced else None
            else:
                recs = self.recs[tp]
                rec = recs.get(offset)
                if rec is None:
                    rec = recs[offset] = Rec()
            if rec is None:
                if at is not None or not self.truncated_at[tp]:
                    return  # delivered (and settled) before its produce returned: nothing left to follow
                rec = self.reproduced[(tp, offset)] = Rec()  # written at a settled offset a truncation emptied
            if rec.produce_index >= 0 and rec.rid != rid:  # the offset was reused: fine only if truncated
                self.overwritten[(tp[0], tp[1], offset, rec.rid)] = (rec.produce_index, rec.count)
                rec.reset()
            rec.produce_index, rec.rid, rec.avail_time = index, rid, invoked
            if rec.status >= ACCEPTED:
                self.advance(tp, 0)

    def place(self, rec: Rec, tp: tuple, offset: int, rid: str, index: int) -> tuple[str, tuple] | None:
        """Tie a delivery of `rid` at `offset` to what was produced there; (message, evidence) of a
        phantom (an id no produce invoked), else None.

        A delivered id that a produce invoked is never a phantom: at an offset no produce reported it is a
        second log copy of that produce (`duplicate-write`: an idempotent producer's retry across a cold
        restart, say; a producer statistic), followed by no-loss like any record from this delivery on;
        where the offset's produce reported another id, that record's offset was reused (`offset-reused`,
        judged at the end unless a truncation explains it)."""
        placed = self.unplaced.pop(rid, None) if self.unplaced else None
        if placed is not None:  # acknowledged earlier without an offset: this is where it was written
            if rec.produce_index >= 0 and rec.rid != rid:
                self.overwritten[(tp[0], tp[1], offset, rec.rid)] = (rec.produce_index, rec.count)
                rec.reset()
            rec.produce_index, rec.rid = placed[0], rid
            rec.avail_time = self.unplaced_invoked.pop(rid, 0)
        elif rec.produce_index < 0 and rid in self.pending_ids:
            self.pending_at[rid] = (tp, offset)
            rec.avail_time = self.pending_ids[rid]  # delivered before its produce returned: invoked then
        if rec.produce_index >= 0 and rec.rid != rid and rid in self.pending_ids:
            # Its produce is not acknowledged in the history yet and the offset held another record: the
            # offset was reused (a truncation the history records later, else `offset-reused` at the end).
            self.overwritten[(tp[0], tp[1], offset, rec.rid)] = (rec.produce_index, rec.count)
            rec.reset()
            rec.produce_index, rec.rid, rec.avail_time = -1, None, self.pending_ids[rid]
        if rec.produce_index >= 0 and rec.rid == rid:
            return None
        if rec.produce_index < 0 and rid in self.pending_ids:
            return None  # its produce has not returned yet (placed above)
        if rid not in self.invoked:
            if rec.produce_index >= 0:
                return (f"{tp[0]}-{tp[1]}@{offset} delivered id {rid!r}, which no produce invoked ({rec.rid!r} "
                        f"was produced there)", (rec.produce_index, index))
            return f"{tp[0]}-{tp[1]}@{offset} delivered id {rid!r}, which no produce invoked", (index,)
        if rec.produce_index >= 0:  # the offset's produce reported another record: its offset was reused
            self.overwritten[(tp[0], tp[1], offset, rec.rid)] = (rec.produce_index, rec.count)
            rec.reset()
        # a second copy of a produced id, at an offset no produce reported: followed from this delivery on
        self.n["duplicate-writes"] += 1
        rec.produce_index, rec.rid, rec.avail_time = index, rid, NEVER  # (when it was written: unknown)
        return None

    def hand(self, tp: tuple, offset: int, process: str, index: int) -> None:
        """A poll (op `index`) handed the record at `offset` to `process`: it may acknowledge it once. A
        record the ledger does not hold yet is handed when the delivery creates it."""
        rec = self.recs[tp].get(offset) or (self.reproduced.get((tp, offset)) if self.reproduced else None)
        if rec is None:
            if offset < self.watermark[tp]:  # settled already: the client may still acknowledge it
                self.orphans[(process, tp[0], tp[1], offset)] = index
            return
        if rec.holders is None:
            rec.holders = {}
        rec.holders[process] = index

    def forget_holdings(self, process: str) -> None:
        """The client `process` closed or died: what it was handed is no longer its to acknowledge."""
        for recs in (*self.recs.values(), self.reproduced):
            for rec in recs.values():
                if rec.holders and process in rec.holders:
                    del rec.holders[process]
        for key in [k for k in self.orphans if k[0] == process]:
            del self.orphans[key]

    def gone_from_log(self, tp: tuple, rec: Rec, offset: int, index: int, count_as: str) -> None:
        """The record left the log (deleted, compacted, aborted) before it was settled: never expected."""
        rec.status, rec.status_index = GONE, index
        self.n[count_as] += 1
        (self.gone if count_as != "aborted" else self.aborted)[tp].add(offset)
