"""KIP-1191 dead-letter queues (Kafka 4.4+): a share group whose `errors.deadletterqueue.topic.name`
names a DLQ topic has every record a client REJECTs, and every record archived at the delivery-count
limit, written to that topic: one DLQ record per offset, its headers naming the source topic,
partition, offset, group, delivery count and cause; key and value copied only with
`errors.deadletterqueue.copy.record.enable`. Accepted records never go there.

Each session's DLQ topic is `dlq.<topic>`, created by the harness and marked
`errors.deadletterqueue.group.enable=true` (the brokers do not create DLQ topics by default). Every
test also checks its whole history against the model, where no-loss accounts for every rejected and
limit-archived record in the DLQ read (`harness.checkers.dead_letter`)."""

import pytest

from harness.kafka.dead_letter import MESSAGE_LIMIT, MESSAGE_REJECTED
from harness.sys.wait import wait_until

pytestmark = [pytest.mark.real, pytest.mark.cluster, pytest.mark.kip("dead-letter"),
              pytest.mark.requires(line="4.4", group_config="dead_letter_topic")]


def _dead_letters(s, count: int, timeout: float = 30.0) -> list[dict]:
    """The DLQ's records once it holds `count` (the DLQ write follows the acknowledgement's result)."""
    found: list[dict] = []

    def enough() -> bool:
        found[:] = s.read_dead_letters()
        return len(found) >= count
    wait_until(enough, timeout=timeout, interval=0.5, what=f"{count} records in {s.dead_letter_topic}")
    return found


def _settle(c, count: int, reject: set[int]) -> list:
    """Poll `count` records, REJECT those at offsets in `reject` and ACCEPT the rest, one commit per batch."""
    got = []
    while len(got) < count:
        batch = c.poll(10.0)
        assert batch, f"delivery stopped after {len(got)} of {count} records"
        for record in batch:
            assert c.ack([record], "REJECT" if record.offset in reject else "ACCEPT") is None
        c.commit_ok()
        got.extend(batch)
    return got


@pytest.mark.rule("reject-dead-letters")
def test_rejected_records_go_to_the_dead_letter_queue_with_their_context(share_session):
    """A record a client REJECTs is written to the group's DLQ topic, once, with headers naming its
    topic, partition, offset, group, delivery count and "Offset rejected by client."; with the copy
    off, key and value are null; an accepted record never goes there."""
    s = share_session(topic_partitions=1, dead_letter="headers")
    s.produce(6)
    _settle(s.consumer(), 6, reject={1, 4})
    found = _dead_letters(s, 2)
    assert sorted(r["offset"] for r in found) == [1, 4], f"the DLQ holds {found}"
    for r in found:
        assert (r["topic"], r["partition"], r["group"]) == (s.topic, 0, s.group), r
        assert (r["delivery_count"], r["message"]) == (1, MESSAGE_REJECTED), r
        assert (r["key"], r["value"]) == (None, None), f"copy off, yet the DLQ record carries the record: {r}"
    s.assert_conforms()


@pytest.mark.rule("reject-dead-letters")
@pytest.mark.requires(line="4.4", group_config="delivery_count_limit")
def test_a_record_archived_at_the_limit_goes_to_the_dead_letter_queue(share_session):
    """A record released at every delivery is archived when its count reaches the limit, and written to
    the DLQ with that delivery count and "Offset delivery count exceeded the threshold."."""
    s = share_session(topic_partitions=1, dead_letter="headers", delivery_count_limit=2)
    s.produce(1)
    c = s.consumer()
    counts = []
    for _ in range(3):
        got = c.poll_until(1, timeout=15)
        if not got:
            break
        counts.append(got[0].delivery_count)
        c.ack(got, "RELEASE")
        c.commit_ok()
    assert counts == [1, 2], f"delivery counts {counts} with limit 2"
    [r] = _dead_letters(s, 1)
    assert (r["topic"], r["partition"], r["offset"]) == (s.topic, 0, 0), r
    assert (r["delivery_count"], r["message"]) == (2, MESSAGE_LIMIT), r
    s.assert_conforms()


def test_copy_mode_writes_the_record_itself_to_the_dead_letter_queue(share_session):
    """With `errors.deadletterqueue.copy.record.enable`, the DLQ record carries the rejected record's
    key and value beside the context headers."""
    s = share_session(topic_partitions=1, dead_letter="copy")
    ids = s.produce_keyed(["k0", "k1", "k2"])
    _settle(s.consumer(), 3, reject={0, 2})
    found = sorted(_dead_letters(s, 2), key=lambda r: r["offset"])
    assert [(r["offset"], r["key"], r["value"]) for r in found] == [(0, "k0", ids[0]), (2, "k2", ids[2])], found
    assert all(r["message"] == MESSAGE_REJECTED for r in found), found
    s.assert_conforms()
