"""KIP-932 ordering: in one batch the records of a share-partition come in increasing offset
order; redeliveries may come out of order across batches, never inside one."""

import pytest

pytestmark = [pytest.mark.real, pytest.mark.cluster, pytest.mark.kip("ordering")]


@pytest.mark.rule("batch-order")
def test_records_of_a_partition_in_a_batch_are_in_offset_order(share_session):
    """Each batch holds a share-partition's records in increasing offset order, redeliveries included."""
    s = share_session(topic_partitions=2, max_poll_records=50)
    s.produce(30, partition=0)
    s.produce(30, partition=1)
    c = s.consumer()
    accepted: set = set()
    while len(accepted) < 60:
        batch = c.poll(10)
        assert batch, f"only {len(accepted)} of 60 records were accepted"
        first_time = [r for r in batch if r.delivery_count == 1]
        release = [r for r in first_time if r.offset % 3 == 0]  # every third comes back once
        c.ack(release, "RELEASE") if release else None
        keep = [r for r in batch if r not in release]
        c.ack(keep, "ACCEPT")
        accepted.update(r.key for r in keep)
        c.commit_sync()
    batches = [op.value["records"] for op in s.ops(c.name, "poll")]
    assert any(r["delivery_count"] > 1 for b in batches for r in b), "no redelivery happened"
    for batch in batches:
        for p in (0, 1):
            offsets = [r["offset"] for r in batch if r["partition"] == p]
            assert offsets == sorted(set(offsets)), f"partition {p} out of order in a batch: {offsets}"
    s.assert_conforms()
