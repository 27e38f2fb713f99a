"""Network partitions through Toxiproxy: a node isolated from the others, a minority/majority
split, a one-way cut between two brokers, and a consumer lane cut from one broker."""

import pytest

from ksh_fixtures.chaos import assert_chaos_verdict

pytestmark = [pytest.mark.real, pytest.mark.cluster, pytest.mark.local_only, pytest.mark.chaos]


@pytest.mark.parametrize("fault", ["isolate-node", "split", "one-way-cut", "consumer-cut"])
def test_network_partition(chaos_run, fault):
    outcome = chaos_run("accept-explicit", fault=fault)
    assert_chaos_verdict(outcome, fault)
