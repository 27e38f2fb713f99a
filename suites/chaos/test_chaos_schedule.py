"""A random schedule from the seed: several faults of every group overlapping under the rules of
`harness.faults.schedule`, with consumers crashing and restarting meanwhile."""

import pytest

from ksh_fixtures.chaos import assert_chaos_verdict
from harness.faults import parse_faults

pytestmark = [pytest.mark.real, pytest.mark.cluster, pytest.mark.local_only, pytest.mark.chaos]


def test_random_fault_schedule(chaos_run):
    faults = parse_faults("leader,coordinator,partition,latency")
    outcome = chaos_run("crash", faults=faults, fault_interval=4.0)
    assert len(outcome.faults) >= 2, outcome.summary()
    assert_chaos_verdict(outcome)
