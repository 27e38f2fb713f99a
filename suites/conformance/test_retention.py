"""KIP-932 log retention: deleting records (the log start offset moves) moves the share-partition
start offset with it; records below it are never delivered, in-flight ones are archived, and
acknowledging such a record is not an error."""

import pytest

pytestmark = [pytest.mark.real, pytest.mark.cluster, pytest.mark.kip("retention")]


def test_deleted_records_are_never_delivered(share_session):
    """Records deleted before the group reads them are skipped: delivery starts at the log start."""
    s = share_session(topic_partitions=1)
    s.produce(10)
    assert s.delete_records(0, 4) == 4
    c = s.consumer()
    got = c.poll_until(6, ack="ACCEPT")
    c.commit_sync()
    assert sorted(r.offset for r in got) == list(range(4, 10)), got
    assert c.poll(3.0) == []
    s.assert_conforms()


def test_deleting_in_flight_records_archives_them_and_acknowledging_them_is_no_error(share_session):
    """Records acquired when they are deleted are archived; acknowledging them afterwards is not an
    error, and they are never delivered again."""
    s = share_session(topic_partitions=1, lock_duration_ms=60000)
    s.produce(10)
    c = s.consumer()
    held = c.poll(10)
    assert held and min(r.offset for r in held) == 0
    assert s.delete_records(0, 6) == 6
    assert c.ack(held, "RELEASE") is None  # released, a live record would come back; deleted ones must not
    results = c.commit_sync()
    assert all(r["error"] is None for r in results), results
    rest = c.poll_until(4, timeout=30, ack="ACCEPT")
    c.commit_sync()
    assert sorted(r.offset for r in rest) == list(range(6, 10)), rest
    assert c.poll(3.0) == [], "a deleted record was delivered"
    s.assert_conforms()
