"""Leader failover under every consumer workload: the leader of one partition is stopped gracefully
(SIGTERM), killed (SIGKILL) or paused (SIGSTOP past the broker session) mid-stream, a new leader
takes over, the old one comes back; no acknowledged record is lost, none is delivered beyond the
delivery-count limit, batches stay in offset order, and acquisition stays exclusive."""

import pytest

from ksh_fixtures.chaos import assert_chaos_verdict
from harness.workloads import WORKLOADS

pytestmark = [pytest.mark.real, pytest.mark.cluster, pytest.mark.local_only, pytest.mark.chaos]


@pytest.mark.matrix(fault=["leader-stop", "leader-kill", "leader-pause"], workload=list(WORKLOADS))
def test_leader_failover(chaos_run, fault, workload):
    """Every fault with every workload in the nightly profile; in ci, every workload once, the three
    faults taking turns (suites/chaos/conftest.py `covering`)."""
    outcome = chaos_run(workload, fault=fault)
    assert_chaos_verdict(outcome, fault)
