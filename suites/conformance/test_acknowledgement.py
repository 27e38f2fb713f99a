"""KIP-932 acknowledgement: implicit and explicit modes, ACCEPT / RELEASE / REJECT, commit results,
the commit callback, acknowledging after the lock expired, and close releasing acquired records.

Every test also checks its whole history against the reference model (`assert_conforms`)."""

import time

import pytest

from harness.conformance import LATE_AFTER_LOCK_S as LATE_S, error_is

pytestmark = [pytest.mark.real, pytest.mark.cluster, pytest.mark.kip("acknowledgement")]

QUIET_S = 3.0  # how long a consumer polls to show that nothing more is delivered


def _offsets(records):
    return sorted(r.offset for r in records)


@pytest.mark.rule("ack-accept")
def test_explicit_accept_is_final(share_session):
    """Records acknowledged ACCEPT and committed are never delivered again."""
    s = share_session(topic_partitions=1)
    s.produce(10)
    c = s.consumer()
    got = c.poll_until(10, ack="ACCEPT")
    assert _offsets(got) == list(range(10)) and all(r.delivery_count == 1 for r in got)
    assert all(r["error"] is None for r in c.commit_sync())
    assert c.poll(QUIET_S) == [], "an accepted record was delivered again"
    s.assert_conforms()


@pytest.mark.rule("ack-release")
def test_release_makes_records_available_again_with_a_higher_count(share_session):
    """RELEASE returns records to Available: they are delivered again with delivery count 2."""
    s = share_session(topic_partitions=1)
    s.produce(5)
    c = s.consumer()
    first = c.poll_until(5, ack="RELEASE")
    c.commit_sync()
    again = c.poll_until(5, ack="ACCEPT")
    assert _offsets(again) == _offsets(first)
    assert all(r.delivery_count == 2 for r in again), [(r.offset, r.delivery_count) for r in again]
    c.commit_sync()
    s.assert_conforms()


@pytest.mark.rule("ack-reject")
def test_reject_archives_records(share_session):
    """REJECT archives records: they are never delivered again."""
    s = share_session(topic_partitions=1)
    s.produce(5)
    c = s.consumer()
    got = c.poll_until(5, ack="REJECT")
    assert len(got) == 5
    assert all(r["error"] is None for r in c.commit_sync())
    assert c.poll(QUIET_S) == [], "a rejected record was delivered again"
    s.assert_conforms()


@pytest.mark.rule("implicit-mode")
def test_implicit_mode_next_poll_accepts_the_previous_batch(share_session):
    """In implicit mode the next poll (or commit) accepts every record of the previous batch."""
    s = share_session(topic_partitions=1, max_poll_records=4)
    s.produce(12)
    c = s.consumer(mode="implicit")
    got = c.poll_until(12)
    assert _offsets(got) == list(range(12))
    c.commit_sync()  # accepts the last batch
    other = s.consumer(mode="implicit")
    assert c.poll(QUIET_S) == [] and other.poll(QUIET_S) == [], "an implicitly accepted record came again"
    s.assert_conforms()


@pytest.mark.rule("commit-sync-results")
def test_commit_sync_returns_a_result_per_partition(share_session):
    """commitSync returns one result for each share-partition whose acknowledgements it carried."""
    s = share_session(topic_partitions=3)
    for p in range(3):
        s.produce(4, partition=p)
    c = s.consumer()
    seen: set = set()
    partitions_with_results: set = set()
    while len(seen) < 12:
        batch = c.poll(10)
        assert batch, f"only {len(seen)} of 12 records came"
        seen.update(r.key for r in batch)
        c.ack(batch, "ACCEPT")
        results = c.commit_sync()
        assert sorted((r["partition"], r["error"]) for r in results) == \
            [(p, None) for p in sorted({r.partition for r in batch})], (results, batch)
        partitions_with_results.update(r["partition"] for r in results)
    assert partitions_with_results == {0, 1, 2}
    s.assert_conforms()


@pytest.mark.rule("commit-async-callback")
def test_commit_async_reports_through_the_callback(share_session):
    """commitAsync's outcome arrives through the acknowledgement commit callback, per partition."""
    from harness.wait import wait_until
    s = share_session(topic_partitions=1)
    s.produce(5)
    c = s.consumer()
    got = c.poll_until(5, ack="ACCEPT")
    assert len(got) == 5
    c.commit_async()
    # callbacks are served while the client polls
    wait_until(lambda: c.poll(0.5) == [] and s.ops(c.name, "callback"), timeout=30,
               what="the acknowledgement commit callback")
    [callback] = [op for op in s.ops(c.name, "callback")]
    assert callback.value["error"] is None
    assert sorted(o for part in callback.value["partitions"] for o in part["offsets"]) == list(range(5))
    s.assert_conforms()


@pytest.mark.rule("ack-expired-fails")
def test_acknowledging_after_the_lock_expired_fails(share_session):
    """Acknowledging a record whose acquisition lock expired (it went to another consumer) fails
    with the invalid-record-state error, and the record's new owner keeps it."""
    s = share_session(topic_partitions=1, lock_duration_ms=2000)
    s.produce(1)
    late, other = s.consumer(), s.consumer()
    [mine] = late.poll_until(1)
    started = time.monotonic()
    got = other.poll_until(1, timeout=2 + LATE_S)  # only after the lock expired
    assert len(got) == 1, (f"the record held past its 2 s lock did not reach another consumer within {2 + LATE_S} s "
                           f"(the group's lock duration was not applied?): {got}")
    theirs = got[0]
    assert theirs.key == mine.key and theirs.delivery_count == 2
    assert time.monotonic() - started >= 1.0
    late.ack([mine], "ACCEPT")
    results = late.commit_sync()
    errors = [r["error"] for r in results if r["partition"] == mine.partition]
    assert errors and error_is(errors[0], "INVALID_RECORD_STATE"), results
    other.ack([theirs], "ACCEPT")
    assert all(r["error"] is None for r in other.commit_sync())
    s.assert_conforms()


@pytest.mark.rule("close-releases")
def test_close_releases_acquired_records(share_session):
    """Closing a consumer releases the records it still holds: another consumer gets them at once,
    long before their locks would have expired."""
    s = share_session(topic_partitions=1, lock_duration_ms=60000)
    s.produce(5)
    first = s.consumer()
    held = first.poll(10)
    assert held
    first.close()
    started = time.monotonic()
    second = s.consumer()
    again = second.poll_until(5, timeout=30, ack="ACCEPT")
    assert set(_offsets(held)) <= set(_offsets(again)) and len(again) == 5
    assert time.monotonic() - started < 45, "records came back only after their locks expired"
    second.commit_sync()
    s.assert_conforms()


@pytest.mark.rule("ack-renew")
@pytest.mark.requires(line="4.2")
def test_renew_extends_the_acquisition_lock(share_session):
    """RENEW (KIP-1222) keeps a record acquired by its holder past its lock duration: renewed before
    each lock ends, it goes to no other consumer, comes back to its holder with the same delivery
    count, and its holder then accepts it."""
    s = share_session(topic_partitions=1, lock_duration_ms=4000)
    s.require("ack:RENEW")
    s.produce(1)
    holder, other = s.consumer(), s.consumer()
    [held] = holder.poll_until(1)
    for _ in range(3):  # 3 x 2 s: past the 4 s lock only if the renewals hold it
        assert other.poll(2.0) == [], "a renewed record went to another consumer"
        assert holder.ack([held], "RENEW") is None
        assert all(r["error"] is None for r in holder.commit_sync())
        [again] = holder.poll_until(1)  # the client hands a renewed record back (KAFKA-20458)
        assert again.key == held.key and again.delivery_count == held.delivery_count, (again, held)
        held = again
    assert holder.ack([held], "ACCEPT") is None
    assert all(r["error"] is None for r in holder.commit_sync())
    assert other.poll(3.0) == []
    s.assert_conforms()
