"""KIP-932 delivery counts: the count rises by one per acquisition, and a record delivered
`delivery count limit` times is archived, never delivered again."""

import pytest

pytestmark = [pytest.mark.real, pytest.mark.cluster, pytest.mark.kip("delivery-count")]


#: How long a record RELEASEd at the limit is polled for before "never again" holds (issue 53: was 15 s). A record
#: RELEASEd below the limit is available again at once (no lock to wait out), and came back within a second in every
#: run; the durable-state checker then reads the record ARCHIVED from `__share_group_state`, and no-loss and the
#: delivery-count checker judge every delivery the history holds.
NEVER_AGAIN_S = 5.0


def _released_until_archived(s, limit: int) -> list[int]:
    s.produce(1)
    c = s.consumer()
    counts = []
    for delivery in range(limit + 1):
        got = c.poll_until(1, timeout=15 if delivery < limit else NEVER_AGAIN_S)
        if not got:
            break
        counts.append(got[0].delivery_count)
        c.ack(got, "RELEASE")
        c.commit_sync()
    return counts


@pytest.mark.rule("delivery-count")
def test_count_rises_per_acquisition_and_the_limit_archives(share_session):
    """Released on every delivery, a record comes with counts 1, 2, ... up to the limit in force,
    then never again."""
    s = share_session(topic_partitions=1)
    limit = s.limits["delivery_count_limit"]
    assert _released_until_archived(s, limit) == list(range(1, limit + 1))
    s.assert_conforms()


@pytest.mark.requires(line="4.3", group_config="delivery_count_limit")
def test_group_delivery_count_limit_override(share_session):
    """The group-level delivery-count limit (share.delivery.count.limit) overrides the broker's."""
    s = share_session(topic_partitions=1, delivery_count_limit=2)
    assert s.limits["delivery_count_limit"] == 2
    counts = _released_until_archived(s, 2)
    assert counts == [1, 2], f"delivered with counts {counts} under a group delivery-count limit of 2"
    s.assert_conforms()


@pytest.mark.requires(line="4.3", group_config="delivery_count_limit")
def test_group_delivery_count_limit_is_held_to_the_broker_bounds(share_session):
    """A group's delivery-count limit is accepted at the bounds the broker enforces
    (group.share.min/max.delivery.count.limit) and refused with INVALID_CONFIG past them."""
    s = share_session(topic_partitions=1)
    low, high, tried = s.group_config_bounds_refusals("share.delivery.count.limit",
                                                      "group.share.{}.delivery.count.limit")
    assert tried == {low - 1: "INVALID_CONFIG", high + 1: "INVALID_CONFIG", low: None, high: None}, tried
    limit = s.limits["delivery_count_limit"]
    assert _released_until_archived(s, limit) == list(range(1, limit + 1))
    s.assert_conforms()
