"""KIP-932 partitions added to a subscribed topic: the new share-partitions start at offset 0, so
no record produced to them is skipped (whatever share.auto.offset.reset says)."""

import pytest

pytestmark = [pytest.mark.real, pytest.mark.cluster, pytest.mark.kip("partitions-added")]


LATEST_DEVIATION = (
    "Kafka 4.2.1 and 4.3.1 (sources read) deviate from KIP-932 here: the group coordinator initializes an added partition's "
    "share state with start offset -1 (GroupMetadataManager.buildInitializeShareGroupStateRequest), so the "
    "broker applies share.auto.offset.reset (SharePartition.startOffsetDuringInitialization) and, with "
    "latest (the default), skips what was produced to the new partition before its first share fetch; "
    "seen on 4.3.1: the 6 records of partitions 1-2 never delivered, their state never initialized")


@pytest.mark.parametrize("reset", ["earliest", pytest.param(
    "latest", marks=pytest.mark.xfail(reason=LATEST_DEVIATION, strict=False))])
def test_new_partitions_are_consumed_from_offset_zero(share_session, reset):
    """Records produced to partitions added while the group consumes are all delivered, from offset 0."""
    s = share_session(topic_partitions=1, group_configs={"share.auto.offset.reset": reset})
    c = s.consumer(topic_metadata_refresh_interval_ms="1000")
    if reset == "latest":  # the first share-partition starts at its end: only records after the join count
        c.poll(3.0)
    s.produce(2, partition=0)
    assert len(c.poll_until(2, ack="ACCEPT")) == 2
    c.commit_sync()
    s.add_partitions(3)
    for p in (1, 2):
        s.produce(3, partition=p)  # produced at once: before the group can have seen the new partitions
    got = c.poll_until(6, timeout=30, ack="ACCEPT")
    c.commit_sync()
    assert sorted((r.partition, r.offset) for r in got) == [(p, o) for p in (1, 2) for o in range(3)], got
    s.assert_conforms()
