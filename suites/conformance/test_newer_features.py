"""Newer share-group features where the release and the client have them: acquire modes and
max.poll.records (KIP-1206). Dead-letter queues (KIP-1191) are in no release the harness supports yet."""

import pytest

pytestmark = [pytest.mark.real, pytest.mark.cluster, pytest.mark.kip("newer-features")]

@pytest.mark.rule("acquire-mode")
@pytest.mark.requires(line="4.2")
def test_record_limit_acquire_mode_caps_each_poll_at_max_poll_records(share_session):
    """With share.acquire.mode=record_limit a poll returns at most max.poll.records records, and
    every record is still delivered, in order, exactly once when accepted."""
    s = share_session(topic_partitions=1)
    s.require("acquire_mode")  # share.acquire.mode: KafkaShareConsumer from 4.2
    s.produce(10)  # one producer batch: batch_optimized could hand it over whole
    c = s.consumer(share_acquire_mode="record_limit", max_poll_records="3")
    batches: list = []
    while sum(len(b) for b in batches) < 10:
        batch = c.poll(10.0)
        assert batch, f"delivery stopped after {sum(len(b) for b in batches)} of 10 records"
        assert c.ack(batch, "ACCEPT") is None
        batches.append(batch)
    c.commit_sync()
    assert all(len(b) <= 3 for b in batches), [len(b) for b in batches]
    assert sorted(r.offset for b in batches for r in b) == list(range(10))
    assert c.poll(3.0) == []
    s.assert_conforms()
