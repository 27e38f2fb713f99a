"""A short smoke on the oldest supported release line (CI covers the default release everywhere else):
a cluster of its newest known patch starts with that line's own settings, and a workload on it passes
every checker. The whole suite on every release is the version matrix's work (nightly)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from harness.clients.registry import unsupported_release
from harness.kafka.versions import DEFAULT_VERSION, OLDEST_SUPPORTED, SUPPORTED_LINES
from harness.run import run

pytestmark = [pytest.mark.real, pytest.mark.local_only]


def test_the_oldest_line_is_not_the_default():
    assert OLDEST_SUPPORTED.startswith(SUPPORTED_LINES[0] + ".") and OLDEST_SUPPORTED != DEFAULT_VERSION


def test_oldest_supported_release_passes_a_checked_workload(ksh_spec):
    # confluent-kafka cannot drive share groups on 4.1 (`unsupported_release`): the release's own
    # KafkaShareConsumer does; its cluster's readiness probe is that consumer too (`ShareProbe`)
    client = "java" if unsupported_release(ksh_spec.client, OLDEST_SUPPORTED) else ksh_spec.client
    # two consumers (each a JVM with the java client) share three partitions: a smoke, not a load
    spec = replace(ksh_spec, name="oldest-release", kafka_version=OLDEST_SUPPORTED, records=150, client=client,
                   consumers=2,
                   bootstrap_servers=None, kafka_home=None).validate()
    outcome = run(spec)  # starts (and stops) its own cluster of that release
    assert outcome.overall is True, outcome.summary()
    assert len(outcome.results) == 7 and all(r.valid is True for r in outcome.results)
    assert outcome.spec.kafka_version == OLDEST_SUPPORTED
    # the tools read the durable state from the default release's jars (`tools_dist`): it was read
    durable = next(r for r in outcome.results if r.checker == "durable-state")
    assert durable.stats["start_offset_reads"] > 0 and durable.stats["state_topic_records_checked"] > 0
