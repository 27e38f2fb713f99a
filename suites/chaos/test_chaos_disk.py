"""Disk failure under a consumer workload, checked record by record.

The disk under one of a broker's two log directories fails mid-run: the one holding a test-topic
partition on its leader (`disk-fail`), or the one holding the `__share_group_state` partition of a
share-partition on its share coordinator (`disk-fail-state`). The broker takes that directory offline
and keeps running; the controller moves every partition on the disk to another replica, and the share
partitions (or the share state) come back from the durable state on the new leader. The heal replaces
the disk as an operator does (stop, a new formatted directory, start) and the replicas are rebuilt on
it. No acknowledged record is lost, none is delivered beyond the delivery-count limit, batches stay in
offset order, acquisition stays exclusive, and the durable state agrees with the model.
"""

import pytest

from ksh_fixtures.chaos import assert_chaos_verdict

pytestmark = [pytest.mark.real, pytest.mark.cluster, pytest.mark.local_only, pytest.mark.chaos]


@pytest.mark.parametrize("fault, workload", [
    # nightly only (1.5-2 min); CI proves the fault's effect and heal in tests/real/test_faults_real.py
    pytest.param("disk-fail", "accept-explicit", marks=pytest.mark.nightly), pytest.param("disk-fail-state", "mix", marks=pytest.mark.nightly),
    pytest.param("disk-fail", "slow", marks=pytest.mark.nightly),
    pytest.param("disk-fail-state", "accept-implicit", marks=pytest.mark.nightly)])
def test_disk_failure(chaos_run, fault, workload):
    outcome = chaos_run(workload, fault=fault)
    assert_chaos_verdict(outcome, fault)
    disk = next(f for f in outcome.faults if f.fault == fault)
    assert "listed offline for it and still running" in disk.evidence, outcome.summary()
    assert "re-replicated onto" in disk.heal_evidence, outcome.summary()
