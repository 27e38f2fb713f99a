"""Full cluster cold restart: every node killed at once and started again. The share-group state
comes back from `__share_group_state` only: the start offsets read through the Admin API agree
with the model, and no record accepted before the restart is delivered again."""

import pytest

from ksh_fixtures.chaos import assert_chaos_verdict

pytestmark = [pytest.mark.real, pytest.mark.cluster, pytest.mark.local_only, pytest.mark.chaos]


@pytest.mark.nightly  # 1.5-2.5 min; CI reads durable state back after restarts in the bounce and coordinator scenarios
def test_cold_restart_recovers_durable_state(chaos_run):
    outcome = chaos_run("mix", fault="cold-restart")
    assert_chaos_verdict(outcome, "cold-restart")
    results = {r.checker: r for r in outcome.results}
    assert results["durable-state"].stats["start_offset_reads"] >= 1, outcome.summary()
    assert results["no-redelivery-after-ack"].valid is True, outcome.summary()
