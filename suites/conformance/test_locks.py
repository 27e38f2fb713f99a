"""KIP-932 acquisition locks: a record whose lock expires becomes available to another consumer,
not before the group's lock duration."""

import pytest

pytestmark = [pytest.mark.real, pytest.mark.cluster, pytest.mark.kip("locks")]


def test_expired_lock_makes_the_record_available_to_another_consumer(share_session):
    """A record held past its lock duration goes to another consumer with the next delivery count,
    and not before the group's lock duration (share.record.lock.duration.ms) has passed."""
    s = share_session(topic_partitions=1, lock_duration_ms=3000)
    s.produce(1)
    holder, other = s.consumer(), s.consumer()
    [held] = holder.poll_until(1)
    [again] = other.poll_until(1, timeout=30, ack="ACCEPT")
    assert again.key == held.key and again.delivery_count == 2
    acquired = min(op.time for op in s.ops(holder.name, "poll"))
    redelivered = min(op.time for op in s.ops(other.name, "poll"))
    waited = (redelivered - acquired) / 1e9
    assert waited >= 3.0 - s.spec.lock_tolerance_ms / 1000, f"redelivered after {waited:.2f}s, lock is 3 s"
    assert all(r["error"] is None for r in other.commit_sync())
    s.assert_conforms()
