"""Unobserved acquisitions need a cause each, and a lock runs from the earliest acquisition (issue 46,
items 2 and 8).

`unobserved-acquisition` (`Evidence.unseen_acquisitions`) excuses a count that skips, or a record terminal
without a delivery at the limit, only with a distinct event per acquisition the history did not see: the
session end of a consumer live then, at or after the record was free again (2a), or a lock expiry a lock
duration after the previous lock ended (2b); windows start at the produce's invoke, never at time 0 (2c);
a driver's command error is no session end (2d); the DLQ's `dead-lettered-by-lost-leader` uses the same
window start. `exclusive-acquisition` measures a lock from the owner's previous poll of the
share-partition, where it may have fetched the record, or at its first poll of the share-partition from
the consumer's start (8). Each test builds the case the old rule
excused (it fails on the code before issue 46) and its converse, where the real cause is there.
"""

from __future__ import annotations

import pytest

from harness.checkers import delivery_count, durable_state, exclusive, no_loss
from harness.checkers.registry import property_result
from harness.kafka.dead_letter import MESSAGE_LIMIT
from tests.support.builders import MS, H, T, kinds

START = {"client": "test", "client_version": "1"}


def start(h: H, *consumers: str) -> None:
    for c in consumers:
        h.add(c, "ok", "start", dict(START))


def close_and_restart(h: H, c: str) -> int:
    op = h.add(c, "invoke", "close", {})
    h.add(c, "ok", "close", {})
    h.add(c, "ok", "start", dict(START))
    return op.index


def crash(h: H, c: str) -> int:
    op = h.add("harness", "info", "crash", {"process": c})
    h.add(c, "ok", "start", dict(START))
    return op.index


# ------------------------------------------------------------------ 2a: a session end needs a live consumer able to hold it


@pytest.mark.parametrize("after_the_lock", [False, True])
def test_other_consumers_closes_during_a_live_lock_release_no_unseen_acquisition(after_the_lock):
    """2a: consumer-0 holds a (count 1, lock 1000 ms) and never acknowledges it; consumer-1 and consumer-2
    close (and restart) while that lock is live, and the start offset then passes a. They could not hold a:
    nothing explains the two acquisitions a needs to end archived (limit 3). Converse: the same closes after
    the lock ended explain them."""
    h = H(limit=3, lock_ms=1000)
    start(h, "consumer-0", "consumer-1", "consumer-2")
    h.produce("a", 0, 0)
    poll = h.poll("consumer-0", [("a", 0, 0, 1)])
    if after_the_lock:
        h.t += 1500 * MS
    closes = [close_and_restart(h, c) for c in ("consumer-1", "consumer-2")]
    read = h.read_start({0: 1})
    r = property_result(no_loss.NAME, h.ops)
    if after_the_lock:
        assert r.valid is True and r.allowances == {"unobserved-acquisition": 1}, r
        assert r.allowance_evidence["unobserved-acquisition"] == [[poll.index, *closes, read.index]]
        assert property_result(durable_state.NAME, h.ops).valid is True
    else:
        assert kinds(r) == ["not-accepted"], r
        assert kinds(property_result(durable_state.NAME, h.ops)) == ["durable-state-ahead"]


@pytest.mark.parametrize("started", [False, True])
def test_a_consumer_that_never_started_releases_nothing(started):
    """2a: two records, b delivered, a never; the start offset passes a (limit 2). The only session ends are
    closes of consumers with no start operation: they were never in the group, so they held nothing.
    Converse: the same closes of started consumers explain a's two unseen acquisitions."""
    h = H(limit=2)
    start(h, "consumer-0")
    if started:
        start(h, "consumer-7", "consumer-8")
    h.produce("a", 0, 0)
    h.produce("b", 0, 1)
    for c in ("consumer-7", "consumer-8"):
        h.add(c, "invoke", "close", {})
        h.add(c, "ok", "close", {})
    h.consume("consumer-0", [("b", 0, 1)])
    h.read_start({0: 2})
    r = property_result(no_loss.NAME, h.ops)
    if started:
        assert r.valid is True and r.allowances == {"unobserved-acquisition": 1}, r
    else:
        assert kinds(r) == ["lost"], r


@pytest.mark.parametrize("other_crash", [False, True])
def test_the_owners_kill_and_crash_are_one_session_end(other_crash):
    """2a (one event never explains two acquisitions): consumer-0's kill releases the delivery the history
    saw; its recorded crash is the same session's end and cannot also release an unseen acquisition.
    Converse: another consumer's crash after the kill (the record free again) explains it."""
    h = H(limit=2, lock_ms=1000)
    start(h, "consumer-0", "consumer-1")
    h.produce("a", 0, 0)
    h.poll("consumer-0", [("a", 0, 0, 1)])
    h.add("harness", "invoke", "crash", {"process": "consumer-0"})
    h.add("harness", "info", "crash", {"process": "consumer-0"})
    h.add("consumer-0", "ok", "start", dict(START))
    if other_crash:
        crash(h, "consumer-1")
    h.read_start({0: 1})
    r = property_result(no_loss.NAME, h.ops)
    if other_crash:
        assert r.valid is True and r.allowances == {"unobserved-acquisition": 1}, r
    else:
        assert kinds(r) == ["not-accepted"], r


# ------------------------------------------------------------------ 2b: an expiry starts when the previous lock ended


@pytest.mark.parametrize("limit, count, after_ms, allowed", [
    (3, 3, 1500, False), (3, 3, 2100, True),  # one unseen expiry: its lock after the seen one's
    (5, 4, 2500, False), (5, 4, 3100, True),  # two: two locks after the seen one's
])
def test_an_unseen_expiry_needs_a_lock_duration_after_the_previous_lock_ended(limit, count, after_ms, allowed):
    """2b: consumer-0 holds a (count 1, lock 1000 ms, never acknowledged); consumer-1 gets it with count
    `count` `after_ms` later, no session end between. consumer-0's own lock is not one of the unseen
    acquisitions: each unseen one runs a lock duration from the end of the one before."""
    h = H(limit=limit, lock_ms=1000)
    start(h, "consumer-0", "consumer-1")
    h.produce("a", 0, 0)
    h.poll("consumer-0", [("a", 0, 0, 1)])
    h.t += (after_ms - 1) * MS
    h.poll("consumer-1", [("a", 0, 0, count)])
    r = property_result(delivery_count.NAME, h.ops)
    if allowed:
        assert r.valid is True and r.allowances == {"unobserved-acquisition-expired": 1}, r
    else:
        assert kinds(r) == ["count-skipped"], r
    assert property_result(exclusive.NAME, h.ops).valid is True  # (consumer-0's lock was over)


# ------------------------------------------------------------------ 2c: windows start at the produce's invoke


def _crashes(h: H) -> None:
    crash(h, "consumer-1")
    crash(h, "consumer-2")


@pytest.mark.parametrize("ends_after_invoke", [False, True])
def test_a_delivery_before_its_produce_returned_counts_session_ends_from_the_invoke(ends_after_invoke):
    """2c: a is first delivered with count 3 before its produce returned. Two crashes before its produce
    was invoked cannot have acquired it (the window started at time 0). Converse: the same crashes between
    the invoke and the delivery explain the two acquisitions."""
    h = H(limit=3)
    start(h, "consumer-0", "consumer-1", "consumer-2")
    if not ends_after_invoke:
        _crashes(h)
    h.add("producer-0", "invoke", "produce", {"id": "a", "topic": T, "partition": 0})
    if ends_after_invoke:
        _crashes(h)
    h.poll("consumer-0", [("a", 0, 0, 3)])
    h.add("producer-0", "ok", "produce", {"id": "a", "topic": T, "partition": 0, "offset": 0})
    r = property_result(delivery_count.NAME, h.ops)
    if ends_after_invoke:
        assert r.valid is True and r.allowances == {"unobserved-acquisition": 1}, r
    else:
        assert kinds(r) == ["count-skipped"], r


@pytest.mark.parametrize("ends_after_invoke", [False, True])
def test_a_record_produced_at_an_unreported_offset_counts_session_ends_from_the_invoke(ends_after_invoke):
    """2c: a's produce returned offset -1 (written, offset not reported); its delivery places it, with count
    3. Crashes before the invoke do not count; between the invoke and the delivery they do."""
    h = H(limit=3)
    start(h, "consumer-0", "consumer-1", "consumer-2")
    if not ends_after_invoke:
        _crashes(h)
    h.add("producer-0", "invoke", "produce", {"id": "a", "topic": T, "partition": 0})
    h.add("producer-0", "ok", "produce", {"id": "a", "topic": T, "partition": 0, "offset": -1})
    if ends_after_invoke:
        _crashes(h)
    h.poll("consumer-0", [("a", 0, 0, 3)])
    r = property_result(delivery_count.NAME, h.ops)
    if ends_after_invoke:
        assert r.valid is True and r.allowances == {"unobserved-acquisition": 1}, r
    else:
        assert kinds(r) == ["count-skipped"], r


@pytest.mark.parametrize("ends_after_reset", [False, True])
def test_a_record_an_offset_reset_brought_back_counts_session_ends_from_the_reset(ends_after_reset):
    """2c: an admin reset brings a back (its state starts again); its next delivery has count 3. Crashes
    before the reset cannot have acquired it since; after the reset they can."""
    h = H(limit=3)
    start(h, "consumer-0", "consumer-1", "consumer-2")
    h.produce("a", 0, 0)
    h.consume("consumer-0", [("a", 0, 0, 1)])
    if not ends_after_reset:
        _crashes(h)
    h.add("admin", "ok", "reset-offsets", {"group": "g", "topic": T, "partitions": [
        {"partition": 0, "offset": 0, "records": [{"offset": 0, "id": "a"}]}]})
    if ends_after_reset:
        _crashes(h)
    h.consume("consumer-0", [("a", 0, 0, 3)])
    r = property_result(delivery_count.NAME, h.ops)
    if ends_after_reset:
        assert r.valid is True and r.allowances == {"unobserved-acquisition": 1}, r
    else:
        assert kinds(r) == ["count-skipped"], r


# ------------------------------------------------------------------ 2d: only a client error ends a session


@pytest.mark.parametrize("message, counts", [
    ("poll: IllegalStateException: Not all records from the previous poll were acknowledged", False),
    ("ack: IllegalArgumentException: record was never returned by a poll", False),
    ("commit_sync: panic: runtime error", False),
    ("unparsable driver output: {\"type\"", False),
    ("the harness stopped driving this consumer; closing it", False),
    ("_TRANSPORT: Connection reset by peer", True),  # the client library's: its connection is gone
])
def test_only_a_client_error_is_a_session_end(message, counts):
    """2d: a never delivered, b delivered, the start offset past a (limit 2); each consumer wrote one
    `error`. A driver's error about a command (or the harness's about a driver line) ends no session;
    a client library's error may have (converse)."""
    h = H(limit=2)
    start(h, "consumer-0", "consumer-1")
    h.produce("a", 0, 0)
    h.produce("b", 0, 1)
    for c in ("consumer-0", "consumer-1"):
        h.add(c, "info", "error", {"code": None, "message": message})
    h.consume("consumer-0", [("b", 0, 1)])
    h.read_start({0: 2})
    r = property_result(no_loss.NAME, h.ops)
    if counts:
        assert r.valid is True and r.allowances == {"unobserved-acquisition": 1}, r
    else:
        assert kinds(r) == ["lost"], r


# ------------------------------------------------------------------ DLQ: the same window start


@pytest.mark.parametrize("fault_in_its_life", [False, True])
def test_dead_lettered_by_lost_leader_needs_a_leader_change_after_the_produce_was_invoked(fault_in_its_life):
    """DLQ (2c's window): c is delivered at the limit and accepted before its produce returned, and the DLQ
    holds it as archived at the limit. A leader change healed before its produce was invoked cannot have
    lost its acquisition (its life was counted from time 0). Converse: one during its life excuses it."""
    h = H(limit=2)
    h.ops[0].value["dead_letter_topic"] = "dlq." + T
    start(h, "consumer-0", "consumer-1")
    fault = {"id": "f1", "fault": "leader-kill", "effects": ["leader-change"], "topic": T, "partitions": [0]}
    if not fault_in_its_life:
        h.add("nemesis", "ok", "fault-start", fault)
        h.add("nemesis", "ok", "fault-heal", fault)
    h.add("producer-0", "invoke", "produce", {"id": "c", "topic": T, "partition": 0})
    h.consume("consumer-0", [("c", 0, 0, 1)], ack="RELEASE")
    if fault_in_its_life:
        h.add("nemesis", "ok", "fault-start", fault)
        h.add("nemesis", "ok", "fault-heal", fault)
    h.consume("consumer-1", [("c", 0, 0, 2)])  # at the limit, accepted
    h.add("producer-0", "ok", "produce", {"id": "c", "topic": T, "partition": 0, "offset": 0})
    h.add("admin-dlq", "invoke", "dead-letters", {"group": "g", "dlq_topic": "dlq." + T})
    h.add("admin-dlq", "ok", "dead-letters", {"group": "g", "dlq_topic": "dlq." + T, "records": [
        {"topic": T, "partition": 0, "offset": 0, "group": "g", "delivery_count": 2, "message": MESSAGE_LIMIT,
         "key": None, "value": None, "dlq_partition": 0, "dlq_offset": 0}]})
    r = property_result(no_loss.NAME, h.ops)
    if fault_in_its_life:
        assert r.valid is True and r.allowances == {"dead-lettered-by-lost-leader": 1}, r
    else:
        assert kinds(r) == ["dlq-accepted"], r


# ------------------------------------------------------------------ 8: a lock runs from the earliest acquisition


def _prefetched(second_at_ms: int, previous_poll: bool = True, restarted: bool = False) -> H:
    """consumer-0 polls x, 800 ms later polls a (it may have fetched a at its previous poll, of the same
    share-partition); consumer-1 gets a (count 2) `second_at_ms` after consumer-0's first poll. Lock
    1000 ms, tolerance 0. Without the previous poll consumer-0 starts 700 ms after the produces (it may have
    fetched from its start on); restarted, it crashes and starts again then."""
    h = H(limit=3, lock_ms=1000)
    start(h, "consumer-1")
    if previous_poll:
        start(h, "consumer-0")
    h.produce("x", 0, 0)
    h.produce("a", 0, 1)
    first = h.t
    if previous_poll:
        h.poll("consumer-0", [("x", 0, 0, 1)])
        first = h.t
        h.ack("consumer-0", [(0, 0)])
        h.commit("consumer-0", {0: None}, offsets={0: [0]})
    h.t = first + 700 * MS
    if restarted:
        crash(h, "consumer-0")
    elif not previous_poll:
        start(h, "consumer-0")
    h.t = first + 800 * MS - MS
    h.poll("consumer-0", [("a", 0, 1, 1)])
    h.t = first + second_at_ms * MS - MS
    h.poll("consumer-1", [("a", 0, 1, 2)])
    return h


def test_a_lock_runs_from_the_owners_previous_poll_of_the_partition():
    """8: consumer-1's delivery 1100 ms after consumer-0's previous poll (300 ms after the poll that handed
    a over) is legal: consumer-0 may have acquired a at that previous poll, its lock over by now."""
    r = property_result(exclusive.NAME, _prefetched(1100).ops)
    assert r.valid is True, r


@pytest.mark.parametrize("second_at_ms, previous_poll, restarted", [
    (900, True, False),  # within a lock of the previous poll: live whenever it was fetched
    (1100, False, False),  # no previous poll: from the consumer's start (700 ms)
    (1100, True, True),  # the previous poll was another session's: from the restart (700 ms)
])
def test_a_lock_from_the_earliest_acquisition_is_still_exclusive(second_at_ms, previous_poll, restarted):
    """8, converse: the delivery comes while the lock is live however early the acquisition was."""
    h = _prefetched(second_at_ms, previous_poll, restarted)
    assert kinds(property_result(exclusive.NAME, h.ops)) == ["acquired-while-locked"]


@pytest.mark.parametrize("second_after_ms, legal", [(1100, True), (900, False)])
def test_a_lock_at_the_first_poll_of_a_partition_runs_from_an_earlier_poll_of_another(second_after_ms, legal):
    """8, at the first poll of a share-partition in a session (the 4.4.0 Java exploration's
    acquired-while-locked): consumer-0 polls x of partition 1; 1000 ms later its first poll of partition 0
    hands over a, which it may have fetched (and buffered) during that earlier poll, its lock run out since;
    its own next poll gets a again with count 2 `second_after_ms` after the poll of x: legal once a lock
    from there is over, not before."""
    h = H(limit=3, lock_ms=1000)
    start(h, "consumer-0")
    h.produce("x", 1, 0)
    h.produce("a", 0, 0)
    h.poll("consumer-0", [("x", 1, 0, 1)])
    first = h.t
    h.t = first + 700 * MS
    h.poll("consumer-0", [("a", 0, 0, 1)])
    h.t = first + second_after_ms * MS
    h.poll("consumer-0", [("a", 0, 0, 2)])
    r = property_result(exclusive.NAME, h.ops)
    assert (r.valid is True) if legal else kinds(r) == ["acquired-while-locked"], r


# ------------------------------------------------------------------ a disruption of the partition loses one acquisition


@pytest.mark.parametrize("fault_partitions, need, allowed", [
    ([0], 1, True),  # a leader change of a's partition between its produce and the delivery: one lost acquisition
    ([1], 1, False),  # of another partition: nothing explains the skipped count
    (None, 1, True),  # of every partition
    ([0], 2, False),  # one disruption explains one acquisition, not two
])
def test_a_disruption_of_the_partition_explains_one_unseen_acquisition(fault_partitions, need, allowed):
    """chaos leader-pause-crash (CI): a is produced while a leader fault is active; the heal moves its
    partition's leadership back and a is first delivered with count 2, well inside a lock of its produce,
    with no session end after the produce (consumer-2 crashed just before it). KIP-932: "In the unlikely
    event of a share-partition leader crash, memory of the in-flight delivery will be lost": the count of
    one acquisition no consumer handed over. One disruption explains one acquisition; a fault of another
    partition explains none."""
    h = H(limit=5, lock_ms=5000)
    start(h, "consumer-0", "consumer-1", "consumer-2")
    fault = {"id": "f1", "fault": "leader", "targets": [1], "effects": ["leader-change"], "topic": T}
    if fault_partitions is not None:
        fault["partitions"] = fault_partitions
    h.add("nemesis", "invoke", "fault-start", fault)
    crash(h, "consumer-2")
    h.t += 100 * MS
    h.produce("a", 0, 0)
    h.t += 1000 * MS
    h.add("nemesis", "ok", "fault-heal", fault)
    h.t += 500 * MS
    h.poll("consumer-1", [("a", 0, 0, 1 + need)])
    r = property_result(delivery_count.NAME, h.ops)
    if allowed:
        assert r.valid is True and r.allowances == {"unobserved-acquisition-disrupted": 1}, r
        [evidence] = r.allowance_evidence["unobserved-acquisition-disrupted"]
        assert any(h.ops[i].f == "fault-start" for i in evidence), evidence
    else:
        assert kinds(r) == ["count-skipped"], r
