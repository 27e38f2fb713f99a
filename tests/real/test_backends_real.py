"""The external backend: the same run against an existing cluster given by bootstrap servers."""

from dataclasses import replace

import pytest

from harness.cluster.external import ExternalCluster
from harness.run import run

pytestmark = [pytest.mark.real, pytest.mark.cluster]


def test_external_backend_runs_and_checks_a_workload(kafka_cluster, ksh_spec):
    external = ExternalCluster(kafka_cluster.bootstrap_servers)
    external.start()
    assert external.broker_ids == kafka_cluster.broker_ids
    outcome = run(replace(ksh_spec, name="external", records=100), cluster=external)
    assert outcome.valid is True, outcome.summary()
    from harness.cluster.base import Killable, Partitionable
    assert not isinstance(external, (Killable, Partitionable))  # no process or link control on an external cluster
