"""Client-side faults: the network delays one consumer lane's requests (its acknowledgements among them)
past the acquisition lock, so what those consumers acknowledge has already been released to others.
Late acknowledgements fail or land on records already redelivered; no acknowledged record is lost and
acquisition stays exclusive while each lock holds."""

import pytest

from ksh_fixtures.chaos import assert_chaos_verdict

pytestmark = [pytest.mark.real, pytest.mark.cluster, pytest.mark.local_only, pytest.mark.chaos]


@pytest.mark.parametrize("workload", ["accept-explicit", pytest.param("mix", marks=pytest.mark.nightly)])
def test_consumer_lane_latency_past_the_lock(chaos_run, workload):
    outcome = chaos_run(workload, fault="consumer-latency")
    assert_chaos_verdict(outcome, "consumer-latency")
    fault = next(f for f in outcome.faults if f.fault == "consumer-latency")
    assert "the lock duration + 1 s" in fault.evidence, outcome.summary()
