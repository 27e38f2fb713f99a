"""The oracle's allowances excuse only what the history makes possible for THAT record (issue 21).

Each test builds the situation an allowance names, then moves one event just outside it: the
allowance must then not apply and the checker must fail with the matching anomaly. Every allowance
use lists its evidence (op indexes) in the result.
"""

from __future__ import annotations

from harness.checkers import ack_results, delivery_count, durable_state, exclusive, no_loss, no_redelivery
from harness.checkers.registry import property_result
from tests.support.builders import MS, H, kinds


def close(h: H, c: str) -> None:
    h.add(c, "invoke", "close", {})
    h.add(c, "ok", "close", {})


def crash(h: H, c: str) -> int:
    op = h.add("harness", "info", "crash", {"process": c})
    h.add(c, "ok", "start", {"client": "test", "client_version": "1"})
    return op.index


def start(h: H, *consumers: str) -> None:
    for c in consumers:
        h.add(c, "ok", "start", {"client": "test", "client_version": "1"})


def drained(h: H) -> None:
    h.add("harness", "invoke", "drain", {"timeout": 60})
    h.add("harness", "ok", "drain", {})


# ------------------------------------------------------------------ unobserved-acquisition

def test_orderly_closes_after_the_drain_do_not_excuse_a_record_never_delivered():
    """Limit 3, three consumers closing after the drain: the old rule counted their closes from the
    start of the run and excused any skipped record."""
    h = H(limit=3)
    start(h, "consumer-0", "consumer-1", "consumer-2")
    h.produce("a", 0, 0)
    h.produce("b", 0, 1)
    h.consume("consumer-0", [("b", 0, 1)])
    drained(h)
    for c in ("consumer-0", "consumer-1", "consumer-2"):
        close(h, c)
    h.read_start({0: 2})
    assert kinds(property_result(no_loss.NAME, h.ops)) == ["lost"]
    assert kinds(property_result(durable_state.NAME, h.ops)) == ["durable-state-ahead"]


def test_session_ends_before_the_record_existed_do_not_excuse_it():
    h = H(limit=3)
    start(h, "consumer-0", "consumer-1", "consumer-2")
    for c in ("consumer-0", "consumer-1", "consumer-2"):
        crash(h, c)
    h.produce("a", 0, 0)
    h.produce("b", 0, 1)
    h.consume("consumer-0", [("b", 0, 1)])
    h.read_start({0: 2})
    assert kinds(property_result(no_loss.NAME, h.ops)) == ["lost"]


def test_one_session_ended_twice_counts_once():
    """A session-loss fault's start and heal may both cut the same session: one end, not two."""
    h = H(limit=2)
    start(h, "consumer-0", "consumer-1")
    h.produce("a", 0, 0)
    h.produce("b", 0, 1)
    fault = {"id": "cut-1", "fault": "consumer-cut", "effects": ["session-loss"], "processes": ["consumer-1"]}
    h.add("nemesis", "ok", "fault-start", fault)
    h.add("nemesis", "ok", "fault-heal", fault)
    h.consume("consumer-0", [("b", 0, 1)])
    h.read_start({0: 2})
    assert kinds(property_result(no_loss.NAME, h.ops)) == ["lost"]


def test_enough_crashes_while_the_record_was_available_excuse_it_with_their_evidence():
    h = H(limit=3)
    start(h, "consumer-0", "consumer-1", "consumer-2")
    produced = h.produce("a", 0, 0)
    h.produce("b", 0, 1)
    crashes = [crash(h, c) for c in ("consumer-0", "consumer-1", "consumer-2")]
    h.consume("consumer-0", [("b", 0, 1)])
    read = h.read_start({0: 2})
    r = property_result(no_loss.NAME, h.ops)
    assert r.valid is True and r.allowances == {"unobserved-acquisition": 1}
    assert r.allowance_evidence["unobserved-acquisition"] == [[produced.index, *crashes, read.index]]


def test_a_record_delivered_once_and_never_acknowledged_needs_the_remaining_session_ends():
    def history(crash_during_the_run: bool, crash_after_the_read: bool = False):
        h = H(limit=3)
        start(h, "consumer-0", "consumer-1", "consumer-2")
        h.produce("a", 0, 0)
        h.poll("consumer-0", [("a", 0, 0, 1)])
        crash(h, "consumer-0")  # releases the delivery the history saw: not an unseen acquisition
        if crash_during_the_run:
            crash(h, "consumer-1")
        drained(h)
        for c in ("consumer-0", "consumer-1", "consumer-2"):
            close(h, c)  # together at most one unseen acquisition (the fetch a close cut off)
        h.read_start({0: 1})
        if crash_after_the_read:
            crash(h, "consumer-2")
        return h.ops
    assert kinds(property_result(no_loss.NAME, history(False))) == ["not-accepted"]
    assert kinds(property_result(no_loss.NAME, history(False, crash_after_the_read=True))) == ["not-accepted"]
    r = property_result(no_loss.NAME, history(True))
    assert r.valid is True and r.allowances == {"unobserved-acquisition": 1}


def test_the_state_topic_must_hold_a_record_archived_unseen_as_archived():
    def history(ever_written, ever_archived):
        h = H(limit=2)
        start(h, "consumer-0", "consumer-1")
        h.produce("a", 0, 0)
        h.produce("b", 0, 1)
        crash(h, "consumer-0")
        crash(h, "consumer-1")
        h.consume("consumer-0", [("b", 0, 1)])
        h.add("admin", "ok", "share-state", {"group": "g", "partitions": [
            {"topic": "t", "partition": 0, "start_offset": 2, "batches": [], "writes_from": 0,
             "ever_written": ever_written, "ever_archived": ever_archived}]})
        return h
    ok = property_result(no_loss.NAME, history([[0, 1]], [[0, 0]]).ops)
    assert ok.valid is True and ok.allowances == {"unobserved-acquisition": 1}
    skipped = property_result(no_loss.NAME, history([[1, 1]], []).ops)
    assert kinds(skipped) == ["skipped"] and "skipped it" in skipped.anomalies[0].message
    assert kinds(property_result(no_loss.NAME, history([[0, 1]], []).ops)) == ["skipped"]


# ------------------------------------------------------------------ windows

def _archived_then_redelivered(fault_before_produce: bool):
    h = H(limit=1, lock_ms=1000)
    fault = {"id": "leader-1", "fault": "leader-kill", "effects": ["leader-change"], "topic": "t",
             "partitions": [0]}
    if fault_before_produce:
        h.add("nemesis", "ok", "fault-start", fault)
        h.add("nemesis", "ok", "fault-heal", fault)
    h.produce("a", 0, 0)
    h.poll("consumer-0", [("a", 0, 0, 1)])
    h.t += 2000 * MS  # its lock ends at the limit: archived
    h.produce("b", 0, 1)
    h.consume("consumer-0", [("b", 0, 1)])
    if not fault_before_produce:
        h.add("nemesis", "ok", "fault-start", fault)
        h.add("nemesis", "ok", "fault-heal", fault)
    h.poll("consumer-1", [("a", 0, 0, 1)])
    return h


def test_a_fault_healed_before_the_record_existed_does_not_excuse_its_redelivery_after_the_limit():
    assert kinds(property_result(delivery_count.NAME, _archived_then_redelivered(True).ops)) == ["delivered-after-limit"]
    r = property_result(delivery_count.NAME, _archived_then_redelivered(False).ops)
    assert r.valid is True and r.allowances == {"delivery-count-lag": 1}
    assert r.allowance_evidence["delivery-count-lag"][0][0] > 0  # the fault start's index comes first


# ------------------------------------------------------------------ acknowledgements per consumer

def test_an_accept_from_a_consumer_never_handed_the_record_fails_even_after_another_settled_it():
    h = H()
    h.produce("a", 0, 0)
    h.consume("consumer-0", [("a", 0, 0)])
    h.ack("consumer-1", [(0, 0)])
    h.commit("consumer-1", {0: None}, offsets={0: [0]})
    r = property_result(ack_results.NAME, h.ops)
    assert kinds(r) == ["ack-undelivered"] and "consumer-1" in r.anomalies[0].message


def test_an_accept_from_a_consumer_never_handed_the_record_fails_while_another_holds_it():
    h = H()
    h.produce("a", 0, 0)
    h.poll("consumer-0", [("a", 0, 0)])
    h.ack("consumer-1", [(0, 0)])
    h.commit("consumer-1", {0: "INVALID_RECORD_STATE"}, offsets={0: [0]})
    assert kinds(property_result(ack_results.NAME, h.ops)) == ["ack-undelivered"]


def test_a_second_acknowledgement_of_one_delivery_fails_but_one_per_delivery_is_fine():
    h = H(lock_ms=1000)
    h.produce("a", 0, 0)
    h.poll("consumer-0", [("a", 0, 0, 1)])
    h.ack("consumer-0", [(0, 0)], "RELEASE")
    h.commit("consumer-0", {0: None}, offsets={0: [0]})
    h.consume("consumer-0", [("a", 0, 0, 2)])  # delivered again: its acknowledgement is its own
    assert property_result(ack_results.NAME, h.ops).valid is True
    h.ack("consumer-0", [(0, 0)])
    h.commit("consumer-0", {0: "INVALID_RECORD_STATE"}, offsets={0: [0]})
    assert "ack-undelivered" in kinds(property_result(ack_results.NAME, h.ops))


def test_a_consumer_may_acknowledge_again_after_its_acknowledgement_failed():
    h = H()
    h.produce("a", 0, 0)
    h.poll("consumer-0", [("a", 0, 0)])
    h.ack("consumer-0", [(0, 0)])
    h.commit("consumer-0", {0: "COORDINATOR_NOT_AVAILABLE"}, offsets={0: [0]})
    h.ack("consumer-0", [(0, 0)])
    h.commit("consumer-0", {0: None}, offsets={0: [0]})
    assert property_result(ack_results.NAME, h.ops).valid is True


def test_a_consumer_that_restarted_may_not_acknowledge_what_its_last_instance_was_handed():
    h = H()
    h.produce("a", 0, 0)
    h.poll("consumer-0", [("a", 0, 0)])
    crash(h, "consumer-0")
    h.ack("consumer-0", [(0, 0)])
    h.commit("consumer-0", {0: "INVALID_RECORD_STATE"}, offsets={0: [0]})
    assert kinds(property_result(ack_results.NAME, h.ops)) == ["ack-undelivered"]


def test_a_commit_result_for_a_partition_never_acknowledged_is_unsolicited():
    h = H()
    h.produce("a", 0, 0)
    h.poll("consumer-0", [("a", 0, 0)])
    h.ack("consumer-0", [(0, 0)])
    h.commit("consumer-0", {0: None, 1: None}, callback=False)
    r = property_result(ack_results.NAME, h.ops)
    assert kinds(r) == ["ack-result-unsolicited"] and "t-1" in r.anomalies[0].message


# ------------------------------------------------------------------ offsets reused below the watermark

def test_a_record_written_again_at_a_settled_offset_and_truncated_undelivered_is_not_a_truncated_delivery():
    """Seen on a real run (tests/histories/wide-all-offset-reuse): an unclean election emptied settled
    offsets, a clean truncation's records were written there and lost before any delivery."""
    def history(delivered: bool):
        h = H()
        h.produce("a", 0, 0)
        h.consume("consumer-0", [("a", 0, 0)])
        h.add("nemesis", "ok", "truncated", {"id": "u-1", "topic": "t", "partition": 0, "unclean": True,
                                             "records": [{"offset": 0, "id": "a"}]})
        h.produce("x", 0, 0)  # the log reused offset 0
        if delivered:
            h.poll("consumer-0", [("x", 0, 0)])
        h.add("nemesis", "ok", "truncated", {"id": "c-1", "topic": "t", "partition": 0, "unclean": False,
                                             "records": [{"offset": 0, "id": "x"}]})
        return h.ops
    r = property_result(no_loss.NAME, history(False))
    assert r.valid is True and r.allowances == {"lost-to-unclean-election": 1}
    assert kinds(property_result(no_loss.NAME, history(True))) == ["truncated-delivered"]


# ------------------------------------------------------------------ found by an independent review

def test_a_consumer_may_acknowledge_a_record_delivered_after_it_was_deleted():
    h = H()
    h.produce("a", 0, 0)
    h.produce("b", 0, 1)
    h.add("admin", "ok", "records-deleted", {"topic": "t", "partition": 0, "offset": 1})
    h.consume("consumer-1", [("a", 0, 0)], error="INVALID_RECORD_STATE")  # prefetched before the delete
    h.consume("consumer-1", [("b", 0, 1)])
    assert property_result(ack_results.NAME, h.ops).valid is True


def _settled_by_another_then_acknowledged(result: str | None) -> H:
    """consumer-0's lock expires, consumer-1 accepts the record, then consumer-0 acknowledges it too."""
    h = H(lock_ms=1000)
    h.produce("a", 0, 0)
    h.poll("consumer-0", [("a", 0, 0, 1)])
    h.poll("consumer-1", [("a", 0, 0, 2)], dt_ms=1500)
    h.ack("consumer-1", [(0, 0)])
    h.commit("consumer-1", {0: None}, offsets={0: [0]})
    h.ack("consumer-0", [(0, 0)])
    h.commit("consumer-0", {0: result}, offsets={0: [0]})
    return h


def test_a_consumer_may_retry_an_acknowledgement_that_failed_after_another_settled_the_record():
    h = _settled_by_another_then_acknowledged("INVALID_RECORD_STATE")
    h.ack("consumer-0", [(0, 0)])  # the client retries what it was handed
    h.commit("consumer-0", {0: "INVALID_RECORD_STATE"}, offsets={0: [0]})
    assert property_result(ack_results.NAME, h.ops).valid is True
    assert property_result(exclusive.NAME, h.ops).valid is True


def test_a_successful_acknowledgement_of_a_record_another_consumer_settled_is_an_anomaly():
    assert kinds(property_result(exclusive.NAME, _settled_by_another_then_acknowledged(None).ops)) == ["ack-from-non-owner"]


def test_a_commit_result_for_a_partition_of_gaps_only_is_no_anomaly_where_the_log_has_gaps():
    def history(transactions: bool):
        h = H()
        h.produce("a", 0, 0)
        if transactions:
            h.add("producer-0", "ok", "transaction", {"outcome": "commit", "ids": ["a"]})
        h.poll("consumer-0", [("a", 0, 0)])
        h.ack("consumer-0", [(0, 0)])
        h.commit("consumer-0", {0: None, 1: None}, callback=False)  # partition 1 held only a marker
        return h.ops
    assert property_result(ack_results.NAME, history(True)).valid is True
    assert kinds(property_result(ack_results.NAME, history(False))) == ["ack-result-unsolicited"]


def test_a_record_written_again_at_a_settled_offset_is_judged_like_any_record():
    h = H(lock_ms=1000)
    h.produce("a", 0, 0)
    h.consume("consumer-0", [("a", 0, 0)])
    h.add("nemesis", "ok", "truncated", {"id": "u-1", "topic": "t", "partition": 0, "unclean": True,
                                         "records": [{"offset": 0, "id": "a"}]})
    h.produce("x", 0, 0)  # the log reused offset 0
    h.consume("consumer-0", [("x", 0, 0, 1)], ack="RELEASE")
    h.consume("consumer-1", [("x", 0, 0, 2)])  # released, delivered again: no redelivery after an ack
    results = {m.NAME: property_result(m.NAME, h.ops) for m in (no_loss, no_redelivery, delivery_count, ack_results)}
    assert all(r.valid is True for r in results.values()), {k: kinds(r) for k, r in results.items()}


def test_acknowledging_a_record_deleted_or_compacted_while_held_succeeds_without_anomaly():
    """Seen on 4.3.1 (suites/conformance/test_retention.py): the broker answers success, and the client
    acknowledges a compacted offset again itself (a GAP), so its callback repeats it."""
    for event in ({"f": "records-deleted", "value": {"topic": "t", "partition": 0, "offset": 1}},
                  {"f": "records-compacted", "value": {"topic": "t", "partition": 0, "offsets": [0]}}):
        h = H()
        h.produce("a", 0, 0)
        h.produce("b", 0, 1)
        h.poll("consumer-0", [("a", 0, 0)])
        h.add("admin", "ok", event["f"], event["value"])
        h.ack("consumer-0", [(0, 0)], "RELEASE")
        h.commit("consumer-0", {0: None}, offsets={0: [0]})
        h.add("consumer-0", "ok", "callback", {"partitions": [{"topic": "t", "partition": 0, "offsets": [0]}],
                                               "error": None})
        h.consume("consumer-0", [("b", 0, 1)])
        assert property_result(exclusive.NAME, h.ops).valid is True and property_result(ack_results.NAME, h.ops).valid is True, event["f"]
