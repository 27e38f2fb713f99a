"""Newer share-group features where the release and the client have them: acquire modes and
max.poll.records (KIP-1206), the member's rack id (KIP-1227). Dead-letter queues (KIP-1191) are in no release the harness supports yet."""

import pytest

from harness.conformance import precondition
from harness.sys.wait import wait_until

pytestmark = [pytest.mark.real, pytest.mark.cluster, pytest.mark.kip("newer-features")]

#: how long consumer B may take to be given the records consumer A did not acquire: its join and first
#: fetches (seconds, on a loaded machine), a third of A's 60 s lock, which would release what A prefetched
NO_PREFETCH_S = 20


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


@pytest.mark.rule("record-limit-no-prefetch")
@pytest.mark.requires(line="4.2")
def test_record_limit_acquires_no_more_than_a_poll_returns(share_session):
    """Row B5 ("If the application sets the property to "record_limit", the share consumer fetches no more than
    max.poll.records records at a time and does not prefetch."), gap G13: consumer A in record_limit with
    max.poll.records=3 polls once and then holds its batch; the other seven records of the one producer batch
    were not acquired for A, so consumer B gets them at once, each with delivery count 1, long before A's lock
    (60 s) would have released anything A had prefetched."""
    s = share_session(topic_partitions=1, lock_duration_ms=60000)
    s.require("acquire_mode")
    s.produce(10)  # one producer batch: a fetch could take it whole
    a = s.consumer(share_acquire_mode="record_limit", max_poll_records="3")
    held = a.poll_until(1, timeout=30)
    precondition(held, "consumer A was given no record in 30 s")
    assert len(held) <= 3, f"a record_limit poll with max.poll.records=3 returned {len(held)} records"
    b = s.consumer()
    rest = b.poll_until(10 - len(held), timeout=NO_PREFETCH_S, ack="ACCEPT")
    precondition(rest or len(s.describe().get("members") or []) == 2,
                 f"consumer B was given nothing and is not a member of the group after {NO_PREFETCH_S} s")
    offsets = sorted(r.offset for r in rest)
    assert offsets == sorted(set(range(10)) - {r.offset for r in held}), (
        f"consumer B got offsets {offsets} within {NO_PREFETCH_S} s while A held {sorted(r.offset for r in held)}: "
        f"the records missing were acquired for A beyond its poll (record_limit does not prefetch)")
    assert all(r.delivery_count == 1 for r in rest), [(r.offset, r.delivery_count) for r in rest]
    b.commit_sync()
    assert a.ack(held, "ACCEPT") is None
    a.commit_sync()
    s.assert_conforms()


@pytest.mark.rule("rack-id")
@pytest.mark.requires(line="4.2")
def test_member_description_carries_the_consumers_rack_id(share_session):
    """KIP-1227: a share consumer configured with client.rack sends it as its rack id, and the
    group's description shows it on that member; a member that sent none shows none."""
    s = share_session(topic_partitions=2)
    s.require("rack_id")
    s.produce(2, partition=None)
    racked, plain = s.consumer(client_rack="rack-a"), s.consumer()
    taken: list = []

    def both_members_and_records_taken() -> bool:  # a client may join only when it first polls
        for c in (racked, plain):
            batch = c.poll(0.2)
            if batch:
                c.ack(batch, "ACCEPT")
                taken.extend(batch)
        return len(s.describe().get("members", [])) == 2 and len(taken) >= 2

    wait_until(both_members_and_records_taken, timeout=30, what="both consumers to be members and the records taken",
               interval=0.3)
    racks = sorted((m.get("rack") or "") for m in s.describe()["members"])
    assert racks == ["", "rack-a"], f"member rack ids {racks}: KIP-1227 says the description carries client.rack"
    for c in (racked, plain):
        c.commit_sync()
    s.assert_conforms()


@pytest.mark.requires(line="4.3")
def test_assignment_interval_group_config_is_held_to_the_broker_bounds(share_session):
    """KIP-1263: a share group's share.assignment.interval.ms is accepted at the bounds the brokers
    set (group.share.min/max.assignment.interval.ms) and refused with INVALID_CONFIG past them; a
    group with it set still assigns its member and delivers."""
    s = share_session(topic_partitions=1)
    low, high, tried = s.group_config_bounds_refusals("share.assignment.interval.ms",
                                                      "group.share.{}.assignment.interval.ms")
    assert tried == {low - 1: "INVALID_CONFIG", high + 1: "INVALID_CONFIG", low: None, high: None}, tried
    assert s.try_group_configs(s.group, share_assignment_interval_ms=str(low)) is None
    s.produce(3)
    c = s.consumer()
    assert len(c.poll_until(3, ack="ACCEPT")) == 3
    c.commit_sync()
    s.assert_conforms()
