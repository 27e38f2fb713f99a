"""Coordinator loss mid-stream: the node holding the share group's group coordinator, the share
coordinator of a share-partition (leader of its `__share_group_state` partition), or the active
controller is killed; the role moves, the consumers carry on, and the durable state agrees."""

import pytest

from ksh_fixtures.chaos import assert_chaos_verdict

pytestmark = [pytest.mark.real, pytest.mark.cluster, pytest.mark.local_only, pytest.mark.chaos]


@pytest.mark.parametrize("fault", ["group-coordinator-kill", "share-coordinator-kill", "controller-kill"])
def test_coordinator_loss(chaos_run, fault):
    outcome = chaos_run("mix", fault=fault)
    assert_chaos_verdict(outcome, fault)
