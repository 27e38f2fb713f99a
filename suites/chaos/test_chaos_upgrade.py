"""A rolling upgrade under a consumer workload, checked record by record.

A cluster of an older release is upgraded broker by broker to the newest supported one while
consumers share its partitions (`rolling-upgrade`: every node stopped with SIGTERM and started on the
next release's jars with its data kept, a full ISR between steps, the features finalised with that
release's `FeatureCommand upgrade --release-version` after each release). The share groups' durable
state and every delivery guarantee are checked across it, each phase against the model profile of the
releases its brokers ran (the history's `release` operations).

`under-test`: the upgrade starts from the release under test (`--kafka-version`, as the version matrix
passes it) when that is older than the newest supported, else from the newest release of the line before
it (4.3.1 for 4.4.0).
"""

import pytest

from harness.clients.registry import unsupported_release
from harness.faults.upgrade import previous_line_release, upgrade_path
from harness.kafka.versions import DEFAULT_VERSION, parse_version
from harness.workloads import apply_workload
from ksh_fixtures.chaos import assert_chaos_verdict

pytestmark = [pytest.mark.real, pytest.mark.cluster, pytest.mark.local_only, pytest.mark.chaos]


def start_release(start: str, under_test: str) -> str:
    """The release a scenario's cluster starts on (see the module's text for `under-test`)."""
    if start != "under-test":
        return start
    if parse_version(under_test) < parse_version(DEFAULT_VERSION):
        return under_test
    return previous_line_release()


@pytest.mark.parametrize("start, workload", [
    # nightly only (issue 53): the longest scenario (5 min in CI); CI proves the restart group with a fast bounce
    pytest.param("under-test", "accept-explicit", marks=pytest.mark.nightly),
    pytest.param("4.2.2", "mix", marks=pytest.mark.nightly),
    pytest.param("under-test", "accept-implicit", marks=pytest.mark.nightly)])
def test_rolling_upgrade(own_cluster_run, ksh_spec, scenario_seed, start, workload):
    start = start_release(start, ksh_spec.kafka_version)
    if reason := unsupported_release(ksh_spec.client, start):
        pytest.skip(f"not supported on {start}: {reason}")
    spec = apply_workload(ksh_spec, workload)
    # records arrive through the whole upgrade, not only its start: each release takes three restarts of
    # about 7-9 s and the features' finalisation (measured on 4.3.1 -> 4.4.0)
    steps = len(upgrade_path(start))
    outcome = own_cluster_run(
        produce_rate=min(spec.produce_rate, spec.records / (40.0 * steps)), kafka_version=start, seed=scenario_seed, behaviour=spec.behaviour, consumers=spec.consumers,
        topic_partitions=spec.topic_partitions, workload=workload, workload_events=spec.workload_events,
        lock_duration_ms=spec.lock_duration_ms, delivery_count_limit=spec.delivery_count_limit,
        faults=("rolling-upgrade",), fault_mode="once")
    assert_chaos_verdict(outcome, "rolling-upgrade")
    upgrade = next(f for f in outcome.faults if f.fault == "rolling-upgrade")
    for version in upgrade_path(start):  # every node reported every release of the path, in its own log
        assert upgrade.evidence.count(f'"Kafka version: {version}"') == 3, outcome.summary()
    assert f"--release-version {DEFAULT_VERSION.rsplit('.', 1)[0]}" in upgrade.evidence, outcome.summary()
    assert "share.version=2" in upgrade.evidence.rsplit("features finalised", 1)[1], outcome.summary()
