"""Client-side faults: the network delays one consumer lane's requests (its acknowledgements among them)
past the acquisition lock, so what those consumers acknowledge has already been released to others.
Late acknowledgements fail or land on records already redelivered; no acknowledged record is lost and
acquisition stays exclusive while each lock holds. And a consumer bounced (killed, replaced at once)
while its asynchronous commits are pending."""

import pytest

from ksh_fixtures.chaos import assert_chaos_verdict

pytestmark = [pytest.mark.real, pytest.mark.cluster, pytest.mark.local_only, pytest.mark.chaos]


@pytest.mark.parametrize("workload", ["accept-explicit", pytest.param("mix", marks=pytest.mark.nightly)])
def test_consumer_lane_latency_past_the_lock(chaos_run, workload):
    outcome = chaos_run(workload, fault="consumer-latency")
    assert_chaos_verdict(outcome, "consumer-latency")
    fault = next(f for f in outcome.faults if f.fault == "consumer-latency")
    assert "the lock duration + 1 s" in fault.evidence, outcome.summary()


@pytest.mark.parametrize("workload", ["accept-async"])
def test_consumer_bounce_with_pending_async_commits(chaos_run, workload, kafka_cluster):
    """A consumer committing with commitAsync is SIGKILLed while a commit is pending (acknowledged, no
    result yet) and replaced at once: what that commit carried may or may not have landed, so its
    records are redelivered or settled, never lost, and no result is invented for it. Only the group's
    durable state (its start offsets) can tell a record that commit settled from one never redelivered, so
    on an implementation that serves no read of it (librdkafka's mock) the scenario cannot be decided."""
    from harness.cluster.base import unchecked_of
    why = unchecked_of(kafka_cluster).get("durable-state")
    if why:
        pytest.skip(f"needs a read of the group's durable state to decide what a killed consumer's pending commit "
                    f"carried: {why}")
    outcome = chaos_run(workload, fault="consumer-kill")
    assert_chaos_verdict(outcome, "consumer-kill")
    kill = next(f for f in outcome.faults if f.fault == "consumer-kill")
    assert "with an asynchronous commit pending (" in kill.evidence, outcome.summary()
