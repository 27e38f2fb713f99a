"""KIP-932 transactions: share.isolation.level read_committed never delivers records of aborted
transactions (nor control records); read_uncommitted delivers them too."""

import pytest

pytestmark = [pytest.mark.real, pytest.mark.cluster, pytest.mark.kip("transactions")]


@pytest.mark.requires(group_config="isolation_level")
@pytest.mark.parametrize("level", ["read_committed", "read_uncommitted"])
def test_isolation_level_decides_whether_aborted_records_are_delivered(share_session, level):
    """read_committed delivers only committed records; read_uncommitted delivers aborted ones too;
    control records (transaction markers) are never delivered."""
    s = share_session(topic_partitions=1, group_configs={"share.isolation.level": level})
    committed = s.produce_transaction(3, commit=True)
    aborted = s.produce_transaction(3, commit=False)
    after = s.produce_transaction(2, commit=True)
    c = s.consumer()
    expected = committed + after + (aborted if level == "read_uncommitted" else [])
    got = c.poll_until(len(expected), timeout=30, ack="ACCEPT")
    c.commit_sync()
    assert c.poll(3.0) == []
    assert sorted(r.id for r in got) == sorted(expected), (level, [r.id for r in got])
    markers = {3, 7, 10}  # a marker after each transaction: offsets never delivered
    assert not markers & {r.offset for r in got}
    s.assert_conforms()
