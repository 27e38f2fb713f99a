"""No loss (at-least-once).

Every record whose produce was acknowledged, at an offset the group consumes,
is delivered, and by the end of the run is accepted or rejected (an ACCEPT or
REJECT whose commit result was success) or archived at the delivery limit
(delivered with count == limit and never accepted). Anomalies: `lost` (never
delivered), `not-accepted` (delivered, never finished), `phantom` (a delivered
id no produce invoked; a produced id at an offset no produce reported is a second
copy of it in the log, `duplicate_writes` in the stats, followed like any record),
`offset-reused` (another record was delivered or acknowledged at the offset a
produce reported, with no truncation). An ACCEPT or REJECT the broker refused
settles nothing (`ack_results.definitive`). An acknowledgement whose commit outcome is unknown
(`info`) makes the record's fate unknown unless a later start-offset read
(`share-offsets`) is past it; the verdict is then "unknown", never a pass.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.checkers.ledger import ACCEPTED, GONE, MAYBE, NEVER
from harness.checkers.judge import Judge

if TYPE_CHECKING:
    from harness.checkers.view import ReplayView

NAME = "no-loss"


def lost_delivered(r: ReplayView, index: int, tp: tuple, offset: int, rid: str, unclean: bool, evidence: tuple) -> None:
    """A record the log truncated was delivered: only an unclean election can lose a delivered record."""
    if unclean:
        r.findings.allow(NAME, "lost-to-unclean-election", (*evidence, index))
    else:
        r.findings.anomaly(NAME, "truncated-delivered",
                           f"record {rid} at {tp[0]}-{tp[1]}@{offset} was delivered, but the log later truncated "
                           f"it: a share fetch returned a record that was never committed", evidence, offset=offset)


#: how far a record's CreateTime may lie from its produce's invoke (the harness stamps the invoke just
#: before the client stamps the record; the wall clock at time 0 is read once)
STAMP_SLACK_NS = 1_000_000_000


def before_latest_start(r: ReplayView, tp: tuple, offset: int, rec) -> bool:
    """With share.auto.offset.reset=latest: produced before the first consumer started, never
    delivered, and below the lowest offset the share-partition delivered (so before it was
    initialized at the log end). With by_duration:D, also older than the duration (`before_duration`):
    False where the record's timestamp says it had to be delivered; an unknown verdict where the history
    cannot tell."""
    lowest = r.ledger.lowest_delivered.get(tp, -1)
    if tp[1] >= r.added_partitions.get(tp[0], 1 << 31):  # an added partition starts at 0 (KIP-932): no excuse
        return False
    # a share-partition that delivered nothing was initialized (if at all) past everything produced before it:
    # certainly past what came before the first consumer started (the explorer's drain may be that consumer)
    if not (r.latest and rec.count == 0 and (offset < lowest or (lowest < 0 and (
            rec.produce_index < r.evidence.first_start or r.by_duration_ns is None)))):
        return False
    if rec.produce_index > r.evidence.first_start and r.by_duration_ns is None:
        # A share-partition is initialized at its first share fetch, not when a consumer starts: a record produced
        # after the first consumer started (a step consumer that polls later, the explorer's schedules) and below
        # the lowest offset the share-partition delivered may lie before or after where it was initialized; the
        # history does not show that moment, so whether skipping it was right is unknown (never a pass, never a FAIL)
        r.findings.obs.unknown.setdefault(NAME, f"record {rec.rid} at {tp[0]}-{tp[1]}@{offset} was never delivered "
                                                f"under share.auto.offset.reset={r.config.get('auto_offset_reset')}: "
                                                f"produced after the first consumer started (index "
                                                f"{r.evidence.first_start}) and below the lowest offset its "
                                                f"share-partition delivered ({lowest if lowest >= 0 else 'none'}), it "
                                                f"may lie before the offset the "
                                                f"share-partition was initialized at (its first share fetch, which the "
                                                f"history does not show)")
        return True  # (excused, but the verdict is unknown)
    if rec.produce_index > r.evidence.first_start:
        return False
    return r.by_duration_ns is None or before_duration(r, tp, offset, rec)


def before_duration(r: ReplayView, tp: tuple, offset: int, rec) -> bool:
    """by_duration:D initializes a share-partition at the first record whose timestamp lies within D of
    the initialization (at or after the first consumer start, at or before its first delivery): a record
    is skipped rightly only if its timestamp is older than D before the first consumer start; one no older
    than D before the first delivery had to be delivered; in between, or without the wall clock, the
    history cannot tell (no-loss unknown)."""
    where = f"record {rec.rid} at {tp[0]}-{tp[1]}@{offset}"
    if r.by_duration_ns < 0 or r.wall_clock_ms is None:
        r.findings.obs.unknown.setdefault(NAME, f"{where} was never delivered under share.auto.offset.reset="
                                                f"{r.config.get('auto_offset_reset')}, and the history cannot place "
                                                f"its timestamp against the duration (produced at index "
                                                f"{rec.produce_index})")
        return True  # (excused, but the verdict is unknown)
    wall_ns = r.wall_clock_ms * 1_000_000
    stamp = r.ledger.timestamps.get(rec.rid)
    if stamp is not None:
        lo = hi = stamp * 1_000_000
    else:
        lo, hi = wall_ns + rec.avail_time - STAMP_SLACK_NS, wall_ns + rec.avail_time + STAMP_SLACK_NS
    if hi < wall_ns + r.evidence.first_start_time - r.by_duration_ns:
        return True
    if lo >= wall_ns + r.ledger.first_delivered_time.get(tp, NEVER) - r.by_duration_ns:
        return False
    r.findings.obs.unknown.setdefault(NAME, f"{where} was never delivered under share.auto.offset.reset="
                                            f"{r.config.get('auto_offset_reset')}; its timestamp lies too close to "
                                            f"the duration's edge to tell whether it was within it (produced at "
                                            f"index {rec.produce_index})")
    return True


def skipped_after_unclean(r: ReplayView, tp: tuple, o: int, rec) -> int | None:
    """The `truncated` op (index) of the unclean election that took a record a consumer had been handed
    at offset `o`, when `rec`, written there again after it, was never delivered: the group's state
    counted the offset as done with the lost record. None otherwise."""
    if rec.count != 0 or not r.ledger.unclean_reused:
        return None
    return r.ledger.unclean_reused.get((tp, o))


def archived_unseen(r: ReplayView, rec, by: int, by_index: int):
    """The allowance (and evidence) for a record never seen at the limit, terminal per a start-offset read
    (at `by`, op `by_index`): acquisitions the history did not see archived it. A record delivered at the
    limit whose session end released it without archiving (4.1) needs one more, unseen, acquisition."""
    if rec.count >= r.limit:  # (only where `session_released`: else it was archived at the limit)
        return r.evidence.unseen_acquisitions(rec, 1, by, by_index, expiry=False)
    return r.evidence.archived_unseen(rec, by, by_index)


def settle(r: ReplayView, tp: tuple, o: int, rec, start: int) -> None:
    """How a record still in the ledger at the end is settled, or the anomaly it is."""
    n, evidence, findings = r.findings.n, r.evidence, r.findings
    if rec.produce_index < 0 or rec.status == GONE:
        return
    where = f"{tp[0]}-{tp[1]}@{o}"
    if rec.status >= ACCEPTED:
        n["accepted"] += 1
    elif rec.count >= r.limit and not r.session_released(rec):
        n["archived-at-limit"] += 1  # delivered at the limit and never accepted: archived by the broker
    elif o < start and rec.ack_seen:
        n["resolved-by-durable-state"] += 1
    elif o < start and (cut := skipped_after_unclean(r, tp, o, rec)) is not None:
        n["skipped-after-unclean-election"] += 1
        findings.allow(NAME, "skipped-after-unclean-election", (rec.produce_index, cut))
    elif before_latest_start(r, tp, o, rec):
        n["skipped-by-latest"] += 1
        findings.allow(NAME, "before-latest-start", (rec.produce_index, evidence.first_start))
    elif o < start and (unseen := archived_unseen(r, rec, *evidence.first_read_past(tp, o))):
        disagrees = evidence.state_disagrees(tp, rec, o, evidence.first_read_past(tp, o)[0])
        if disagrees is None and evidence.state_unread is not None:  # the corroboration was not read
            findings.obs.unknown.setdefault(NAME, f"record {rec.rid} at {where} is terminal per a start-offset read "
                                            f"after acquisitions the history did not see, and the "
                                            f"__share_group_state read that would corroborate it failed (at index "
                                            f"{evidence.state_unread})")
        elif disagrees is None:
            n["archived-at-limit"] += 1  # terminal per the broker; archived after acquisitions unseen
            findings.allow(NAME, *unseen)
        else:
            findings.anomaly(NAME, "skipped" if rec.count == 0 else "not-accepted",
                             f"record {rec.rid} at {where} was delivered {rec.count} times, never "
                             f"accepted, and the start offset moved past it, but {disagrees}",
                             (rec.produce_index, rec.last_index), offset=o)
    elif rec.status == MAYBE:
        n["unresolved-maybe"] += 1
    elif tp not in r.ledger.reset_tps and (read := evidence.archived_in_state(tp, o)) \
            and (unseen := archived_unseen(r, rec, *read)):
        # the start offset did not show it (4.4.0 reports start 0 with lag 0), but a __share_group_state write held
        # it archived: archived after acquisitions the history did not see (their evidence: `unseen`)
        n["archived-at-limit"] += 1
        findings.allow(NAME, *unseen)
    elif rec.count == 0:
        findings.anomaly(NAME, "lost", f"record {rec.rid} at {where} was acknowledged by the broker "
                         f"but never delivered", (rec.produce_index,), offset=o)
    else:
        findings.anomaly(NAME, "not-accepted", f"record {rec.rid} at {where} was delivered "
                         f"{rec.count} times but never accepted, rejected or archived",
                         (rec.produce_index, rec.last_index), offset=o)


def judge_end(r: ReplayView) -> None:
    """After the replay: every record produced is settled (accepted, rejected, archived at the limit,
    gone from the log), or terminal per a durable read with the evidence an allowance needs."""
    n, ledger, findings = r.findings.n, r.ledger, r.findings
    for tp, recs in ledger.recs.items():
        start = r.final_start.get(tp, (0, -1))[0]
        for o, rec in sorted(recs.items()):
            settle(r, tp, o, rec, start)
    for (tp, o), rec in sorted(ledger.reproduced.items()):  # written again at a settled offset
        settle(r, tp, o, rec, r.final_start.get(tp, (0, -1))[0])
    for rid, (produce_index, (topic, partition)) in ledger.unplaced.items():
        if rid not in ledger.truncated_ids:
            findings.anomaly(NAME, "lost", f"record {rid} was acknowledged by the broker to {topic}-{partition} "
                             f"(offset not reported) but never delivered", (produce_index,))
    for (topic, partition, offset, rid), (produce_index, _) in ledger.overwritten.items():
        findings.anomaly(NAME, "offset-reused",
                         f"record {rid} at {topic}-{partition}@{offset} was acknowledged by the broker, but another "
                         f"record was later acknowledged at the same offset and the history shows no truncation",
                         (produce_index,), offset=offset)
    # below the watermark: settled; those settled as GONE (deleted, aborted) or archived at the limit
    # (`Ledger.advance`) were not accepted
    n["accepted"] += max(0, sum(ledger.watermark.values()) - n["gone-passed"] - n["archived"])


class NoLoss(Judge):
    """Judged by the replay's model (`lost_delivered`, `settle`, `judge_end`; the dead-letter queue's part in
    `harness.checkers.dead_letter`)."""

    NAME = NAME
    SENTENCE = ("KIP-932 \u00a7In-flight records: \"This means that the delivery behavior is at-least-once.\"")

    @staticmethod
    def stats(n, config, found):
        stats = {"produced_ok": n["produced"], "deliveries": n["deliveries"], "accepted_or_rejected": n["accepted"],
                 "archived_at_limit": n["archived-at-limit"] + n["archived"], "unknown_outcome": n["unresolved-maybe"],
                 "resolved_by_durable_state": n["resolved-by-durable-state"] + n["resolved-by-state-topic"],
                 "truncated": n["truncated"], "deleted": n["deleted"], "compacted": n["compacted"],
                 "skipped_by_latest": n["skipped-by-latest"], "aborted": n["aborted"],
                 "skipped_after_unclean_election": n["skipped-after-unclean-election"],
                 "duplicate_writes": n["duplicate-writes"], "acks_refused": n["acks-refused"]}
        if config.get("dead_letter_topic"):  # KIP-1191 (harness.checkers.dead_letter)
            stats["dead_letter_queue"] = {
                "topic": config["dead_letter_topic"], "accounted": n["dead-letters-accounted"],
                "duplicates": n["dead-letter-duplicates"], "of_unsettled_records": n["dead-letters-unsettled"],
                "pending_at_the_read": n["dead-letters-pending"]}
        return stats

    NEEDS = ("produced", "no produce was acknowledged")

    @classmethod
    def unknown(cls, n, config, found):
        if n["unresolved-maybe"]:
            found = (f"{n['unresolved-maybe']} records' acknowledgements have an unknown outcome and no later "
                     f"start-offset read settles them")
        return super().unknown(n, config, found)
