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
    c.commit_ok()
    rest = c.poll_until(4, timeout=30, ack="ACCEPT")
    c.commit_sync()
    assert sorted(r.offset for r in rest) == list(range(6, 10)), \
        f"after records 0-5 were deleted and all released, offsets {sorted(r.offset for r in rest)} came, not [6, 7, 8, 9]"
    assert c.poll(3.0) == [], "a deleted record was delivered"
    s.assert_conforms()


def test_a_compacted_topic_delivers_no_removed_record_and_never_stalls(share_session):
    """On a compacted topic the group never delivers a record the log cleaner removed (an older value
    of a key written again), and delivery goes on past the gaps to the last record."""
    s = share_session(topic_partitions=1)
    s.compacted()
    s.produce_keyed([f"k{i}" for i in range(8)])  # offsets 0-7
    s.produce_keyed([f"k{i}" for i in range(4)])  # offsets 8-11: k0-k3 again, so offsets 0-3 go
    gone = s.await_compaction(0, superseded={0, 1, 2, 3})
    held = s.log_offsets(0)
    assert {0, 1, 2, 3} <= gone and not gone & held, (gone, held)
    c = s.consumer()
    got = c.poll_until(len(held), timeout=60, ack="ACCEPT")
    c.commit_sync()
    assert sorted(r.offset for r in got) == sorted(held), (got, held)  # past every gap, nothing removed
    assert c.poll(3.0) == []
    s.assert_conforms()


def test_records_compacted_while_acquired_are_not_delivered_again_and_delivery_goes_on(share_session):
    """Records the log cleaner removes while a consumer holds them are not delivered again once
    released; the records around the gap are, and the share-partition does not stall on the gap."""
    s = share_session(topic_partitions=1, lock_duration_ms=60000)
    s.compacted()
    s.produce_keyed([f"k{i}" for i in range(8)])  # offsets 0-7
    c = s.consumer()
    held = c.poll(10)
    assert held and min(r.offset for r in held) == 0, held
    s.produce_keyed([f"k{i}" for i in range(4)])  # k0-k3 again: offsets 0-3 become removable
    gone = s.await_compaction(0, superseded={0, 1, 2, 3})
    assert c.ack(held, "RELEASE") is None
    c.commit_sync()
    live = s.log_offsets(0)
    got = c.poll_until(len(live), timeout=60, ack="ACCEPT")
    c.commit_sync()
    assert not {r.offset for r in got} & gone, f"removed records delivered again: {got}"
    assert {r.offset for r in got} == live, (got, live)
    s.assert_conforms()
