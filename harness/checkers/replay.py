"""One pass of a history, observing every property at once: the public API of the oracle.

`Replay` reads event rows (`harness.history.events.COLUMNS`) in history order and hands each event
to the parts that keep what it proves, each one idea:

- `ledger.Ledger`: what the history proves about each record in flight, per share-partition;
- `evidence.Evidence`: disruption windows, session ends, start-offset reads and state-topic writes,
  the events an allowance needs for THAT record (`harness.model.allowances`);
- `state_topic.StateTopic`: `__share_group_state` as read after the drain, checked against the ledger;
- one judge per property, in its checker module (`no_loss`, `delivery_count`, `batch_order`,
  `exclusive`, `no_redelivery`, `ack_results`, `durable_state`), reporting to `findings.Findings`.

The rules of KIP-932 the judges apply come from the reference model (`harness.model`): the release's
profile (`model_profile`) says how a session release counts and archives, whether RENEW exists and
whether the share coordinator's start offset may go back; the named allowances are the model's.

A replay of a whole history gives one `Partial`; the Spark engine replays share-partitions (each with
the history's global rows) in separate tasks, and `observation` merges their Partials exactly.
Memory follows the records in flight: the ledger drops what is settled.

Times: the harness stamps each operation when it sees it, after the broker acted. An acquisition
lock is treated as live from the poll's time until `lock_duration_ms - lock_tolerance_ms` later (the
tolerance covers records a client fetched before the application polled them); it may end earlier
only through a RELEASE the broker may have received, a session end (close, crash) of its owner, or
an allowance.

Public API: `replay(history)`, `replay_parquet(path)`, `Replay(config).run(rows)` /
`.run_partial(rows)`, `config_of(table)`, `observation(partials)`, `Partial`, `Observation`,
`PROPERTIES`.

Longer than most modules (about 350 lines) on purpose: the replay loop and its per-event handlers
share the ledger, the evidence and the judges, and the hot path (poll, acknowledge, callback, commit,
produce) stays in one place where its cost can be read (benchmarks/checkers_throughput.py).
"""

from __future__ import annotations

import gc
import json
from typing import Any, Sequence

from harness.checkers import ack_results, batch_order, dead_letter, delivery_count, durable_state, exclusive, no_loss
from harness.checkers.evidence import Evidence
from harness.checkers.findings import Findings, Observation, Partial, observation
from harness.checkers.judge import Event, Judge
from harness.checkers.judges import JUDGES, PROPERTIES
from harness.checkers.ledger import ACCEPTED, GONE, MAYBE, MS, NEVER, OPEN, Ledger, Rec
from harness.checkers.no_redelivery import AfterTerminal
from harness.checkers.state_topic import StateRanges, StateTopic
from harness.history.events import COLUMNS, EventTable, as_events
from harness.history.schema import KNOWN_F, Op
from harness.model.profiles import MODEL_PROFILES, PhasedProfile, model_profile

#: The value of a commitAsync's invoke as the event table keeps it (compact JSON)
ASYNC_COMMIT = '{"async":true}'

__all__ = ["PROPERTIES", "Observation", "Partial", "Replay", "StateRanges", "config_of", "observation", "replay",
           "replay_parquet"]


class Replay:
    """One replay: feed it rows with `run` (verdict-ready) or `run_partial` (to merge with others)."""

    def __init__(self, config: dict[str, Any] | None, judges: Sequence[type[Judge]] = JUDGES) -> None:
        # None: the history has no `config` operation (`config_of`). The delivery-count limit, the lock
        # duration, the release and the reset policy every judge needs are then unknown: every property is
        # unknown, never a pass on assumed defaults
        unconfigured = config is None
        config = {} if config is None else config
        self.config = config
        self.limit = int(config.get("delivery_count_limit", 5))
        self.lock_ns = int(config.get("lock_duration_ms", 30000)) * MS
        self.tol_ns = int(config.get("lock_tolerance_ms", 2000)) * MS
        settle_ns = int(config.get("settle_ms", 10000)) * MS
        reset = str(config.get("auto_offset_reset") or "")
        # latest and by_duration both initialize a share-partition past what came before (by time or at the end)
        self.latest = reset == "latest" or reset.startswith("by_duration")
        #: by_duration:<ISO-8601 duration>: the duration in ns (None: latest or earliest; -1: unreadable)
        self.by_duration_ns = iso_duration_ns(reset.split(":", 1)[1]) if reset.startswith("by_duration") else None
        self.wall_clock_ms = config.get("wall_clock_ms")  # the wall clock at the history's time 0
        self.read_committed = config.get("isolation_level") == "read_committed"
        #: the model profile in force as the replay advances (`release` operations move it: a rolling upgrade)
        self.profile = PhasedProfile(model_profile(config.get("model_profile") or config.get("kafka_version")
                                                   or "4.3"))
        self.judges = tuple(judges)
        self.findings = Findings(config, [judge.NAME for judge in self.judges])
        if unconfigured:
            self.findings.obs.unknown["*"] = ("the history has no config operation: the delivery-count limit, "
                                              "lock duration, release and offset reset of its run are unknown")
        self.ledger = Ledger(self.limit, self.tol_ns, self.findings.n)
        self.evidence = Evidence(self.findings, self.profile, self.limit, self.lock_ns, settle_ns)
        self.evidence.tol_ns = self.tol_ns
        self.ledger.session_released = self.session_released
        self.state_topic = StateTopic(self.findings, self.ledger, self.profile)
        self.state_topic.wall_clock_ms = config.get("wall_clock_ms")
        self.after_terminal = AfterTerminal(self.findings, self.profile, self.ledger, self.state_topic, self.evidence)
        self.acks = ack_results.AckBook(self)
        self.batches = batch_order.Ordering(self.findings)
        self.dead_letters = dead_letter.DeadLetters(self, config)
        self.offset_reads: dict[str, dict[tuple, int]] = {}  # share-offsets invoke snapshots of watermarks
        self.durable_reads = 0
        #: topic -> its partition count before the first `partitions-added`: partitions from there on were added
        self.added_partitions: dict[str, int] = {}
        self.excused_reads: dict[tuple, str] = {}  # (tp, offset) a start-offset read passed by an allowance
        self.final_start: dict[tuple, tuple[int, int]] = {}  # tp -> (start offset, time) of the last read
        #: (tp, offset) -> count skips of that record to judge at the end (delivery_count.judge_end)
        self.pending_skips: dict[tuple, list[delivery_count.Skip]] = {}
        #: the judges that read events themselves (`Judge.EVENTS`), each handed the replay as its view
        self.watchers = [judge(self) for judge in self.judges if judge.EVENTS]

    def session_released(self, rec: Rec) -> bool:
        """Whether `rec`'s acquisition (at the limit) ended with its owner's share session (close, crash, a
        kill; not a fault cutting its connections: the TCP connection may stay up while the lock runs out,
        and the broker archives the record) before its lock ran out, on a release whose session end never archives a record
        (4.1: `archived_after_release`): then it is Available again, not archived."""
        if rec.owner is None or rec.release_from != NEVER or not self.profile.session_release_decrements:
            return False
        end = self.evidence.closed_at.get(rec.owner, -1)  # (a fault's cut may let the lock run out instead)
        return rec.acq_time <= end < rec.lock_end or rec.owner in self.evidence.being_killed

    def run(self, rows) -> Observation:
        """Replay event rows (tuples in `COLUMNS` order), e.g. `EventTable.rows()` or `stream_parquet()`."""
        return observation([self.run_partial(rows)], self.judges)

    def run_partial(self, rows) -> Partial:
        """Replay rows and return the findings unmerged (one share-partition's, in the Spark engine)."""
        # The hot loop (benchmarks/checkers_throughput.py): handlers bound once, the hot five tested in
        # the order of their frequency in a history, and one `tp` tuple per share-partition, reused (a
        # dict finds a key it holds by identity first)
        produce, commit = self.ledger.produce, self.acks.commit
        batch_row, delivery = self.batches.row, self.delivery
        acknowledge, callback = self.acks.acknowledge, self.acks.callback
        tps: dict[Any, dict[Any, tuple]] = {}  # topic -> partition -> (topic, partition)
        # The cyclic collector paused while rows pass: the replay's objects (records, acks) hold no cycles,
        # and its generation-0 passes over the records in flight cost about 6% of the loop
        paused = gc.isenabled()
        gc.disable()
        if self.watchers:
            rows = self._watched(rows)
        try:
            self._loop(rows, tps, produce, commit, batch_row, delivery, acknowledge, callback)
        finally:
            if paused:
                gc.enable()
        return self.partial()

    def _watched(self, rows):
        """`rows`, each handed as an `Event` to the judges that read its type once the replay handled it (the
        loop asks for the next row only then)."""
        seers: dict[str, list] = {}
        for judge in self.watchers:
            for f in judge.EVENTS:
                seers.setdefault(f, []).append(judge.see)
        for row in rows:
            yield row
            for see in seers.get(row[4], ()):
                see(Event(*row))

    def _loop(self, rows, tps, produce, commit, batch_row, delivery, acknowledge, callback) -> None:
        polled = self.evidence.polled  # once per poll and share-partition (`Evidence.polled`), not per record
        poll_index, poll_tp = -1, None
        for (index, time, process, type_, f, topic, partition, offset, rid, dc, ack, error, member,
             value) in rows:
            of_topic = tps.get(topic)
            if of_topic is None:
                of_topic = tps[topic] = {}
            tp = of_topic.get(partition)
            if tp is None:
                tp = of_topic[partition] = (topic, partition)
            if f == "produce":
                produce(index, time, type_, tp, offset, rid)
                if value is not None and type_ == "invoke":  # an explicit CreateTime
                    stamp = stamp_of(value)
                    if stamp is not None:
                        self.ledger.timestamps[rid] = stamp
            elif f == "commit":  # an invoke of commitAsync says so ({"async":true}): its results come by callback
                commit(index, time, process, type_, tp, error, type_ == "invoke" and value == ASYNC_COMMIT)
            elif f == "poll":
                if type_ == "ok" and topic is not None:
                    batch_row(index, process, tp, offset)
                    if index != poll_index or tp is not poll_tp:
                        poll_index, poll_tp = index, tp
                        polled(process, tp, index, time)
                    delivery(index, time, process, tp, offset, rid, dc)
            elif f == "acknowledge":
                if type_ == "ok" and topic is not None:
                    acknowledge(index, time, process, tp, offset, ack)
            elif f == "callback":
                if topic is not None:
                    callback(index, time, process, tp, offset, error)
            elif f == "truncated":
                if type_ == "ok" and topic is not None:
                    self.truncated(index, tp, offset, rid, value)
            else:
                self.other(index, time, process, type_, f, topic, partition, offset, value)

    # -- events ------------------------------------------------------------------
    def truncated(self, index, tp, offset, rid, value) -> None:
        """The log lost the record `rid` at `offset` (a truncation fault saw it gone): never committed,
        so never expected; but a consumer must not have received it (an unclean election excepted)."""
        ledger = self.ledger
        self.findings.n["truncated"] += 1
        unclean = bool(json.loads(value).get("unclean")) if value else False
        ledger.truncated_ids[rid] = unclean
        ledger.truncated_at[tp].add(offset)
        rec = ledger.recs[tp].get(offset)
        again = ledger.reproduced.get((tp, offset)) if ledger.reproduced else None
        before = ledger.overwritten.pop((tp[0], tp[1], offset, rid), None)
        if rec is not None and rec.rid == rid:
            before = (rec.produce_index, rec.count)
            del ledger.recs[tp][offset]
        elif again is not None and again.rid == rid:  # written again at a settled offset
            before = (again.produce_index, again.count)
            del ledger.reproduced[(tp, offset)]
        elif before is None and offset < ledger.watermark[tp] and (
                offset >= ledger.log_start.get(tp, 0) or rid in ledger.delivered_ids):
            # already terminal: it was delivered and acknowledged; below a deletion's log start it may have been
            # deleted undelivered (the explorer's 4.4.0 truncated-delivered: a deleteRecords during the cut), so
            # only a delivery the replay kept (read_committed keeps the delivered ids) counts there
            before = (-1, 1)
        if before is not None and before[1] > 0:
            no_loss.lost_delivered(self, index, tp, offset, rid, unclean, (before[0], index))
            if unclean:
                ledger.unclean_reused[(tp, offset)] = index

    def delivery(self, index, time, process, tp, offset, rid, count) -> None:
        ledger, findings = self.ledger, self.findings
        findings.n["deliveries"] += 1
        if count < 1 or count > self.limit:  # (whatever the ledger knows: the judge reports only these)
            delivery_count.judge_count_range(self, index, tp, offset, count)
        known = ledger.recs[tp].get(offset)
        # whatever comes of it, the client may acknowledge it once: every way out below hands it over
        if self.read_committed:
            ledger.delivered_ids.add(rid)
        if offset < ledger.lowest_delivered.get(tp, NEVER):
            if tp not in ledger.lowest_delivered:
                ledger.first_delivered_time[tp] = time
            ledger.lowest_delivered[tp] = offset
        if known is not None:  # handed over, even if it turns out truncated or aborted below
            known.given = True
        if rid in ledger.truncated_ids:
            ledger.hand(tp, offset, process, index)
            no_loss.lost_delivered(self, index, tp, offset, rid, ledger.truncated_ids[rid], (index,))
            return
        if rid in ledger.aborted_ids:
            ledger.hand(tp, offset, process, index)
            findings.anomaly("no-loss", "aborted-delivered", f"record {rid} at {tp[0]}-{tp[1]}@{offset} was delivered "
                             f"to {process}, but its transaction aborted and the group reads committed records only",
                             (index,), offset=offset)
            return
        if offset < ledger.watermark[tp]:  # (`Ledger.rec_for`, with the lookup above reused)
            rec = ledger.reproduced.get((tp, offset)) if ledger.reproduced else None
        elif known is None:
            rec = ledger.recs[tp][offset] = Rec()
        else:
            rec = known
        if rec is None:  # below the watermark: terminal for sure
            ledger.hand(tp, offset, process, index)
            if offset in ledger.gone[tp]:  # deleted while a client held it prefetched: handed over late
                findings.n["delivered-after-delete"] += 1
            elif offset in ledger.archived[tp]:
                delivery_count.judge_after_limit(self, tp, offset, ledger.archived[tp][offset], index, time, process)
            else:
                self.after_terminal.redelivered(tp, offset, process, (index,), time=time, count=count)
            return
        rec.given = True
        # (the common case, the record produced at that offset and no produce awaiting its offset, places
        # nothing: no call)
        if ledger.unplaced or rec.produce_index < 0 or rec.rid != rid:
            phantom = ledger.place(rec, tp, offset, rid, index)
            if phantom is not None:
                findings.anomaly("no-loss", "phantom", *phantom)
        if rec.renewed and rec.owner == process and count == rec.count and rec.status < ACCEPTED:
            # KIP-1222: a renewed record is handed back to its owner by the next poll, still acquired by
            # it with the same count: not a new acquisition (the lock the RENEW extended still holds)
            rec.renewed = False
            rec.last_index, rec.fetched = index, self.evidence.fetched_from
            ledger.hand(tp, offset, process, index)
            findings.n["renewed-handed-back"] += 1
            return
        rec.renewed = False
        status = rec.status
        if status == GONE:  # deleted while a client held it prefetched: handed over late, not redelivered
            findings.n["delivered-after-delete"] += 1
        elif status >= ACCEPTED:
            self.after_terminal.redelivered(tp, offset, process, (rec.status_index, index),
                                            "ACCEPT" if status == ACCEPTED else "REJECT", time, count, rec)
        # (a first acquisition has no earlier lock to judge)
        session_ended = rec.owner is not None and exclusive.judge_delivery(self, rec, index, time, process, tp,
                                                                           offset)
        # (a first delivery, count 1, has no earlier count to judge: no call)
        reordered = (rec.count != 0 or count != 1) and delivery_count.judge_delivery(
            self, rec, index, time, process, tp, offset, count, session_ended)
        holders = rec.holders
        if holders is None:  # (`Ledger.hand`, for the record at hand)
            rec.holders = {process: index}
        else:
            holders[process] = index
        if reordered:  # an earlier acquisition stamped late: the one the ledger holds stays current
            return
        # the ledger records the new acquisition
        rec.count = count if count > 0 else 0
        rec.owner, rec.acq_time, rec.lock_end, rec.release_from = process, time, time + self.lock_ns, NEVER
        rec.last_index, rec.fetched = index, self.evidence.fetched_from
        if rec.status == MAYBE:
            rec.status = OPEN  # redelivered, so the unknown acknowledgement did not land

    def other(self, index, time, process, type_, f, topic, partition, offset, value) -> None:
        """Every event but the hot five (poll, acknowledge, callback, commit, produce): sessions, faults,
        durable reads and the log changes an admin or a fault made."""
        if f not in KNOWN_F:
            self.findings.obs.unknown.setdefault("*", f"unknown event type {f!r} at index {index}")
            return
        v = json.loads(value) if value else {}
        if f in ("transaction", "records-compacted"):  # the log has gaps a client acknowledges itself
            self.acks.gaps_possible = True
        if f in ("close", "crash", "start", "drain", "error"):
            self.session_event(index, time, process, type_, f, v)
        elif f in ("fault-start", "fault-heal"):
            if f == "fault-start" and type_ in ("invoke", "ok"):
                self.evidence.fault_start(v, index, time)
                if self.evidence.windows:
                    self.after_terminal.watch()
            elif f == "fault-start" and type_ == "fail":
                self.evidence.fault_failed(v)
            elif f == "fault-heal" and type_ == "ok":
                self.evidence.fault_heal(v, index, time)
            elif f == "fault-heal" and type_ != "invoke":
                self.evidence.fault_failed(v)
        elif f in ("share-offsets", "share-state"):
            self.durable_read(index, time, process, type_, f, topic, partition, offset, v)
        elif f == "release" and type_ == "ok":  # the nodes run these releases from now on
            self.profile.nodes_run(list((v.get("nodes") or {}).values()), time)
            if len(getattr(self.profile, "phases", ())) >= 2:
                self.state_topic.watch()
        elif f == "dead-letters":
            self.dead_letters.row(index, type_, None if topic is None else (topic, partition), v)
        elif type_ in ("ok", "info") and f == "transaction":
            self.transaction(index, time, v)
        elif type_ == "ok" and f == "partitions-added":  # KIP-932: added share-partitions start at 0
            name, before = v.get("topic"), v.get("from")
            if isinstance(name, str) and isinstance(before, int):
                self.added_partitions[name] = min(self.added_partitions.get(name, before), before)
        elif type_ == "ok" and topic is not None and f in ("records-deleted", "records-compacted", "reset-offsets"):
            self.log_changed(index, time, f, (topic, partition), offset, v)

    def session_event(self, index, time, process, type_, f, v) -> None:
        """A consumer's session began or ended (close, crash), the drain ended, a client error."""
        ledger, evidence = self.ledger, self.evidence
        if f == "close" and type_ == "invoke":
            evidence.closing(process, index, time)
            ledger.forget_holdings(process)
            self.acks.session_ended(process)
        elif f == "crash" and type_ == "invoke":  # the kill is on its way: the session may end any moment
            evidence.killing(v.get("process", ""), index, time)
        elif f in ("close", "crash") and (f == "crash" or type_ == "info"):
            who = v.get("process", "") if f == "crash" else process
            evidence.crashed(who, index, time)
            ledger.forget_holdings(who)
            self.acks.crashed(who, index)
            self.acks.session_ended(who)
        elif f == "start" and type_ == "ok":
            evidence.started(process, index, time)
        elif f == "drain" and type_ in ("ok", "info"):
            evidence.drain_end = min(evidence.drain_end, time)
        elif f == "error":
            if not str(v.get("message", "")).startswith("bad command"):  # the driver's, not the client's
                evidence.client_error(process, index, time, v)

    def durable_read(self, index, time, process, type_, f, topic, partition, offset, v) -> None:
        """A start-offset read (Admin API) or the state topic's records of a share-partition."""
        if f == "share-offsets":
            if type_ == "invoke":
                self.offset_reads[process] = dict(self.ledger.watermark)
            elif type_ == "ok" and topic is not None:
                durable_state.judge_start_read(self, index, time, process, (topic, partition), offset)
        elif type_ in ("fail", "info"):  # share-state: what corroborates an allowance was not read
            self.findings.obs.unknown.setdefault(
                "durable-state", f"the __share_group_state read at index {index} failed: {v.get('error', type_)}")
            self.evidence.state_unread = index
        elif type_ == "ok" and topic is not None:  # share-state
            self.state_topic.read((topic, partition), offset, v, index)
            self.start_read(index, time, (topic, partition), offset)
            self.evidence.state_read((topic, partition), v, time, index)

    def transaction(self, index, time, v) -> None:
        """read_committed: an aborted transaction's records are never delivered nor expected."""
        if v.get("outcome") != "abort" or not self.read_committed:
            return
        ledger = self.ledger
        ids = set(v.get("ids", ()))
        ledger.aborted_ids |= ids
        for rid in sorted(ids & ledger.delivered_ids):  # delivered before the abort: the LSO was ignored
            self.findings.anomaly("no-loss", "aborted-delivered", f"record {rid} was delivered before its "
                                  f"transaction aborted, to a group reading committed records only", (index,))
        for tp, recs in ledger.recs.items():
            for o, rec in sorted(recs.items()):
                if rec.rid in ids and rec.status != GONE:
                    ledger.gone_from_log(tp, rec, o, index, "aborted")
            ledger.advance(tp, time)

    def log_changed(self, index, time, f, tp, offset, v) -> None:
        """The log or the group's start moved under the records: deleted below `offset` (Admin
        deleteRecords), compacted at `offset` (the log cleaner), or the start offset reset to `offset`."""
        ledger = self.ledger
        if f == "records-deleted":
            # what was below the new log start and not yet terminal is archived by the group, never to
            # be delivered; not lost
            ledger.log_start[tp] = max(ledger.log_start.get(tp, 0), offset)
            for o, rec in sorted(ledger.recs[tp].items()):
                if o < offset and rec.status < ACCEPTED and rec.produce_index >= 0:
                    ledger.gone_from_log(tp, rec, o, index, "deleted")
            ledger.advance(tp, time)
        elif f == "records-compacted":
            # its key was written again later: if not yet terminal, gone from the log; not lost
            rec = ledger.recs[tp].get(offset)
            if rec is not None and rec.status < ACCEPTED and rec.produce_index >= 0:
                ledger.gone_from_log(tp, rec, offset, index, "compacted")
                ledger.advance(tp, time)
        else:
            self.offsets_reset(index, time, tp, offset, v)

    def offsets_reset(self, index, time, tp, offset, v) -> None:
        """An admin reset the group's start offset of `tp` to `offset`: what was produced from there on
        is deliverable again (unless gone for good)."""
        ledger = self.ledger
        for o, rec in sorted(ledger.recs[tp].items()):
            # a reset forward (to the middle, the latest): what lies below the new start and is not settled is
            # skipped by the group's own choice, never to be delivered; not lost (the explorer met it on 4.3.1)
            if o < offset and rec.status < ACCEPTED and rec.produce_index >= 0 and rec.status != GONE:
                ledger.gone_from_log(tp, rec, o, index, "reset-past")
        for o in [o for o in ledger.recs[tp] if o >= offset]:
            del ledger.recs[tp][o]
        ledger.watermark[tp] = min(ledger.watermark[tp], offset)
        for r in v.get("records", ()):
            if r["id"] in ledger.aborted_ids or r["id"] in ledger.truncated_ids \
                    or r["offset"] < ledger.log_start.get(tp, 0):
                continue  # gone for good: no reset brings it back
            rec = ledger.rec_for(tp, r["offset"])
            if rec is not None:
                rec.produce_index, rec.rid, rec.avail_time = index, r["id"], time
        if "records" not in v:  # what the reset brought back is not known: its second life cannot be followed
            self.findings.obs.unknown.setdefault(
                "no-loss", f"the offset reset at index {index} does not name the records it makes deliverable again")
        self.findings.n["offset-resets"] += 1
        ledger.reset_tps.add(tp)

    def start_read(self, index: int, time: int, tp: tuple, start: int) -> None:
        """A durable read (Admin API or the state topic) of the group's start offset of `tp`."""
        self.durable_reads += 1
        self.final_start[tp] = (start, time)
        self.evidence.start_read(tp, start, time, index)

    # -- the end -----------------------------------------------------------------
    def partial(self) -> Partial:
        """End of the replay: the final checks, and what `observation` needs to build the verdicts."""
        self.state_topic.check()
        delivery_count.judge_end(self)
        self.after_terminal.resolve()
        no_loss.judge_end(self)
        self.dead_letters.judge_end()
        self.acks.end()
        for judge in self.watchers:
            judge.end()
        self.findings.n["durable-reads"] += self.durable_reads
        return self.findings.partial()


def stamp_of(value: str) -> int | None:
    """The explicit CreateTime (ms) a produce invoke's value carries, None if it carries none (a value that
    is not a JSON object holding an integer `timestamp_ms` carries none: never a crash of the replay)."""
    try:
        stamp = json.loads(value).get("timestamp_ms")
    except (ValueError, AttributeError, TypeError):
        return None
    return stamp if isinstance(stamp, int) and not isinstance(stamp, bool) else None


def iso_duration_ns(text: str) -> int:
    """An ISO-8601 duration as share.auto.offset.reset=by_duration takes it (`PnDTnHnMnS`, as Java's
    `Duration.parse`) in ns; -1 if it cannot be read."""
    import re
    found = re.fullmatch(r"P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?", text.strip().upper())
    if found is None or text.strip().upper() in ("P", "PT"):
        return -1
    d, h, m, sec = (float(g) if g else 0.0 for g in found.groups())
    return int((((d * 24 + h) * 60 + m) * 60 + sec) * 1e9)


def replay(history: "EventTable | Sequence[Op]") -> Observation:
    """Replay `history`; the seven checkers asking about the same EventTable share one replay (kept on the
    table itself, with the length it had: a table appended to since is replayed again)."""
    kept = getattr(history, "replayed", None) if isinstance(history, EventTable) else None
    if kept is not None and kept[0] == len(history):
        return kept[1]
    table = as_events(history)
    if len(table) == 0:
        obs = Observation.of(PROPERTIES)
        obs.unknown["*"] = "the history is empty"
    else:
        config = config_of(table)
        obs = Replay(config).run(table.rows())
    if isinstance(history, EventTable):
        history.replayed = (len(history), obs)
    return obs


def replay_parquet(path, batch_rows: int = 262_144) -> Observation:
    """Replay a Parquet history batch by batch: memory follows the records in flight, not the file size."""
    import itertools

    stream = EventTable.stream_parquet(path, batch_rows)
    head = list(itertools.islice(stream, 1000))
    if not head:
        obs = Observation.of(PROPERTIES)
        obs.unknown["*"] = "the history is empty"
        return obs
    config = config_of(EventTable({c: [r[i] for r in head] for i, c in enumerate(COLUMNS)}))
    return Replay(config).run(itertools.chain(head, stream))


def config_of(table: EventTable) -> dict[str, Any] | None:
    """The run's `config` operation (among the first rows: `replay_parquet` looks at 1000), None if none."""
    for f, value in zip(table.columns["f"], table.columns["value"]):
        if f == "config":
            config = json.loads(value) if value else {}
            line = config.get("model_profile") or config.get("kafka_version")
            if line is not None and ".".join(str(line).split(".")[:2]) not in MODEL_PROFILES:
                raise ValueError(f"config names Kafka {line}, which has no model profile")
            return config
    return None
