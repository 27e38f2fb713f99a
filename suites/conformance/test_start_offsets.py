"""KIP-932 start offsets: share.auto.offset.reset earliest, latest and by_duration, and the Admin API's listing,
altering (only on an empty group) and deleting of share-group offsets."""

import pytest

from harness.sys.wait import wait_until

pytestmark = [pytest.mark.real, pytest.mark.cluster, pytest.mark.kip("start-offsets")]


def test_earliest_delivers_what_was_produced_before_the_group_existed(share_session):
    """share.auto.offset.reset=earliest: a new share-partition starts at the log start."""
    s = share_session(topic_partitions=1, group_configs={"share.auto.offset.reset": "earliest"})
    s.produce(4)
    c = s.consumer()
    assert sorted(r.offset for r in c.poll_until(4, ack="ACCEPT")) == [0, 1, 2, 3]
    c.commit_sync()
    s.assert_conforms()


def test_latest_starts_at_the_log_end(share_session):
    """share.auto.offset.reset=latest: a new share-partition starts at the log end when it is
    initialized, so what was produced before the group existed is not delivered, and everything
    produced after it is."""
    s = share_session(topic_partitions=1, group_configs={"share.auto.offset.reset": "latest"})
    s.produce(4)
    c = s.consumer()
    assert c.poll(5.0) == [], "latest delivered a record produced before the group existed"
    s.produce(3)
    got = c.poll_until(3, ack="ACCEPT")
    c.commit_sync()
    assert sorted(r.offset for r in got) == [4, 5, 6]  # the whole suffix: the model excuses only what is below
    assert c.poll(3.0) == []
    s.assert_conforms()


def test_by_duration_starts_at_the_first_record_within_the_duration(share_session):
    """share.auto.offset.reset=by_duration:PT10M: a new share-partition starts at the first record
    whose timestamp lies within the last 10 minutes; older records are not delivered, every newer one is."""
    import time
    s = share_session(topic_partitions=1, group_configs={"share.auto.offset.reset": "by_duration:PT10M"})
    s.produce(3, timestamp_ms=int(time.time() * 1000) - 3_600_000)  # an hour old: offsets 0-2
    s.produce(4)  # offsets 3-6
    c = s.consumer()
    got = c.poll_until(4, ack="ACCEPT")
    c.commit_sync()
    offsets = sorted(r.offset for r in got)
    assert offsets == [3, 4, 5, 6], f"by_duration:PT10M delivered offsets {offsets}, not [3, 4, 5, 6]"
    assert c.poll(3.0) == []
    s.assert_conforms()


def test_list_and_delete_share_group_offsets(share_session):
    """The Admin API lists the group's start offset; deleting the offsets of an empty group makes
    the share-partition start again by share.auto.offset.reset (earliest: all records again)."""
    s = share_session(topic_partitions=1)
    s.produce(3)
    c = s.consumer()
    c.poll_until(3, ack="ACCEPT")
    c.commit_sync()
    c.close()
    # 4.3.1 lists the start a write persisted, which may lag the acknowledgements it carried
    listed = wait_until(lambda: s.read_start_offsets().get(0) is not None and s.read_start_offsets(), timeout=30,
                        what="the start offset to be listed", interval=0.5)
    assert 0 <= listed[0] <= 3, listed
    wait_until(lambda: s.describe().get("state", "").upper() == "EMPTY", timeout=30, what="the group to be EMPTY",
               interval=0.5)
    assert s.delete_offsets() == {"deleted": True}
    again = s.consumer().poll_until(3, ack="ACCEPT")
    assert sorted(r.offset for r in again) == [0, 1, 2]
    s.consumers[-1].commit_sync()
    s.assert_conforms()


@pytest.mark.requires(line="4.2")
def test_lag_counts_the_records_not_yet_acknowledged(share_session):
    """The Admin API reports a share-partition's lag (KIP-1226) where the release does: the records
    from the start offset to the log end not yet acknowledged; it falls to 0 once all are accepted."""
    s = share_session(topic_partitions=1)
    s.produce(10)
    c = s.consumer()
    got: list = []
    while len(got) < 4:
        batch = c.poll(5.0)
        assert batch, "no records"
        take, rest = batch[:4 - len(got)], batch[4 - len(got):]
        c.ack(take, "ACCEPT")
        if rest:
            c.ack(rest, "RELEASE")
        got += take
    c.commit_sync()
    first = s.read_share_offsets().get(0, {})
    if first.get("lag") is None:
        pytest.skip(f"Kafka {s.cluster.version} reports no lag for share-group offsets")
    wait_until(lambda: s.read_share_offsets()[0]["lag"] == 6, timeout=30, interval=1.0,
               what="the lag to be the 6 records not yet acknowledged")
    rest = c.poll_until(6, timeout=60, ack="ACCEPT")
    c.commit_sync()
    assert len(rest) == 6
    wait_until(lambda: s.read_share_offsets()[0]["lag"] == 0, timeout=30, interval=1.0,
               what="the lag to fall to 0 once every record is accepted")
    s.assert_conforms()
