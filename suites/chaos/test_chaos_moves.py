"""Leaders moved with every broker up (an implementation's own hooks: kfake's `MoveTopicPartition` and
`ShufflePartitionLeaders`): one partition's leader moves mid-stream, or every leader moves and the group
coordinators are rehashed. Clients must follow the new leaders; the share-partition's state carries over:
no acknowledged record is lost, none is delivered beyond the delivery-count limit, batches stay in offset
order, and acquisition stays exclusive. Skipped, with the reason, on a backend without leader moves (Apache
Kafka's backends move leaders by taking brokers down: test_chaos_leader.py)."""

import pytest

from ksh_fixtures.chaos import assert_chaos_verdict

pytestmark = [pytest.mark.real, pytest.mark.cluster, pytest.mark.chaos]


@pytest.mark.matrix(fault=["leader-move", "leader-shuffle"], workload=["accept-explicit", "accept-async", "mix"])
def test_leader_moves_with_every_broker_up(chaos_run, fault, workload):
    outcome = chaos_run(workload, fault=fault)
    assert_chaos_verdict(outcome, fault)
