"""KIP-932 acquisition locks: a record whose lock expires becomes available to another consumer,
not before the group's lock duration."""

import pytest

from harness.conformance import LATE_AFTER_LOCK_S as LATE_S
from harness.conformance import precondition

pytestmark = [pytest.mark.real, pytest.mark.cluster, pytest.mark.kip("locks")]

#: The brokers' default record lock (group.share.record.lock.duration.ms, 30 s): a record the group's lock did
#: not free comes back by then if it comes back at all
BROKER_LOCK_S = 30


@pytest.mark.rule("lock-expiry")
def test_expired_lock_makes_the_record_available_to_another_consumer(share_session):
    """A record held past its lock duration goes to another consumer with the next delivery count,
    and not before the group's lock duration (share.record.lock.duration.ms) has passed."""
    s = share_session(topic_partitions=1, lock_duration_ms=3000)
    s.produce(1)
    holder = s.consumer()
    got = holder.poll_until(1)
    precondition(len(got) == 1, f"the holder was not given the record: {got}")
    [held] = got
    other = s.consumer()  # only now: a client fetching before its first poll cannot take the record first
    got = other.poll_until(1, timeout=3 + LATE_S, ack="ACCEPT")
    if not got:  # late (the group's lock not applied) or never (the record lost): two failures, told apart
        late = other.poll_until(1, timeout=BROKER_LOCK_S, ack="ACCEPT")
        assert late, (f"the record held past its 3 s lock did not reach another consumer within {3 + LATE_S} s "
                      f"and never came back (another {BROKER_LOCK_S} s): lost, not late")
        came = next(op.time for op in s.ops(other.name, "poll") if op.type == "ok" and op.value.get("records"))
        pytest.fail(f"the record held past its 3 s lock did not reach another consumer within {3 + LATE_S} s: it "
                    f"came back after {(came - _held_at(s, holder)) / 1e9:.1f} s (the group's lock duration was not "
                    f"applied?): {late}")
    assert len(got) == 1, f"another consumer was given {got}, not the one record"
    again = got[0]
    # a higher count, not necessarily 2: a library fetching in the background may re-acquire the record for
    # its holder, unseen, before another consumer gets it (rule no-stale-records judges what it does with that)
    assert again.key == held.key and again.delivery_count > held.delivery_count, \
        f"the other consumer was given {again}, after the holder's {held}"
    acquired = min(op.time for op in s.ops(holder.name, "poll"))
    redelivered = min(op.time for op in s.ops(other.name, "poll"))
    waited = (redelivered - acquired) / 1e9
    assert waited >= 3.0 - s.spec.lock_tolerance_ms / 1000, f"redelivered after {waited:.2f}s, lock is 3 s"
    assert waited <= 3.0 + LATE_S, f"redelivered only after {waited:.2f}s: the group's 3 s lock was not applied"
    other.commit_ok()
    s.assert_conforms()


@pytest.mark.rule("no-stale-records")
def test_a_poll_hands_out_no_record_whose_lock_expired(share_session):
    """A poll returns only records acquired for this consumer and still locked: a consumer that polled
    before the records were written (a library may fetch them before the application polls again) does
    not hand out, after those locks expired and another consumer acquired the records, its own copies."""
    s = share_session(topic_partitions=1, lock_duration_ms=5000)
    s.produce(1)
    early = s.consumer()
    first = early.poll_until(1, ack="ACCEPT")
    precondition(len(first) == 1, f"the first consumer was not given the first record: {first}")
    results = early.commit_sync()
    precondition(results and all(r["error"] is None for r in results), f"the first record's ACCEPT failed: {results}")
    s.produce(3)  # `early` does not poll: a library that fetches in the background acquires these now
    other = s.consumer()
    got = other.poll(5 + LATE_S)  # at once, or once what `early` acquired unasked was released (one batch: it holds it)
    precondition(len(got) == 3, f"the second consumer did not acquire the 3 records in one poll within {5 + LATE_S} "
                                f"s: {got}")
    held = {r.key: r.delivery_count for r in got}
    handed = early.poll(1.0)  # while `other` holds them (their 5 s locks began at most a poll ago)
    stale = [r for r in handed if r.key in held and r.delivery_count <= held[r.key]]
    assert not stale, (f"handed out copies {[(r.offset, r.delivery_count) for r in stale]} while another consumer held "
                       f"those records (offset, count) {sorted((key[2], count) for key, count in held.items())}: "
                       f"acquisitions whose locks had expired")
    other.ack(got, "ACCEPT")
    results = other.commit_sync()
    precondition(results and all(r["error"] is None for r in results),
                 f"the holder's ACCEPT failed ({results}): its locks ran out during the test")
    if handed:
        early.ack(handed, "ACCEPT")
        early.commit_sync()
    s.assert_conforms()


def _held_at(s, holder) -> int:
    """The history time the holder was handed its first record."""
    return next(op.time for op in s.ops(holder.name, "poll") if op.type == "ok" and op.value.get("records"))


def _bounds(s, role: str) -> tuple[int, int]:
    return s.config_bounds(f"group.share.{{}}.{role}")


def test_group_lock_duration_is_held_to_the_broker_bounds(share_session):
    """A group's lock duration (share.record.lock.duration.ms) is accepted at the bounds the broker
    enforces (group.share.min/max.record.lock.duration.ms) and refused with INVALID_CONFIG past them."""
    s = share_session(topic_partitions=1)
    low, high = _bounds(s, "record.lock.duration.ms")
    probe = f"{s.group}-bounds"  # another group: the session's own lock stays what the model was told
    for value, refused in ((low - 1, True), (high + 1, True), (low, False), (high, False)):
        error = s.try_group_configs(probe, share_record_lock_duration_ms=str(value))
        assert (error == "INVALID_CONFIG") if refused else error is None, (value, low, high, error)
    s.produce(2)
    c = s.consumer()
    c.poll_until(2, ack="ACCEPT")
    c.commit_sync()
    s.assert_conforms()


@pytest.mark.requires(line="4.3", group_config="max_record_locks")
def test_in_flight_limit_stops_acquisition_until_locks_drop(share_session):
    """With share.partition.max.record.locks = L, a share-partition has at most L records in flight
    (a batch may finish past it): records beyond stay unacquired, for every consumer, until the
    in-flight ones are acknowledged; then they are delivered."""
    s = share_session(topic_partitions=1, lock_duration_ms=30000, max_poll_records=500)
    low, _ = _bounds(s, "partition.max.record.locks")
    limit, total, batch = low, low + 60, 10
    assert s.try_group_configs(s.group, share_partition_max_record_locks=str(limit)) is None
    from harness.cluster.admin import group_configs_shown
    from harness.cluster.inspect import ClusterInspector
    from harness.sys.wait import wait_until
    admin = ClusterInspector(s.cluster.bootstrap_servers).admin
    wait_until(lambda: all(group_configs_shown(admin, s.group, {"share.partition.max.record.locks": str(limit)})
                           for _ in range(3)), timeout=30, what="the in-flight limit to be shown")
    for _ in range(total // batch):  # written in batches of 10: the limit may be passed by one batch only
        s.produce(batch)
    first, second = s.consumer(), s.consumer()
    held = first.poll(10)
    more = second.poll(5)  # the window is full (or nearly): at most what is left below the limit
    in_flight = len(held) + len(more)
    assert held and in_flight <= limit + batch, f"{in_flight} records in flight, limit {limit}"
    assert in_flight < total, f"every record ({total}) was acquired at once past the limit {limit}"
    assert first.ack(held, "ACCEPT") is None and (not more or second.ack(more, "ACCEPT") is None)
    first.commit_sync()
    if more:
        second.commit_sync()
    second.close()  # what its client fetched since without handing it over is released, not held to the lock
    rest = first.poll_until(total - in_flight, timeout=60, ack="ACCEPT")
    first.commit_sync()
    offsets = sorted(r.offset for r in [*held, *more, *rest])
    assert offsets == list(range(total)), f"after the locks dropped: {len(offsets)} of {total} delivered"
    s.assert_conforms()
