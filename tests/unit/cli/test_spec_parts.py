"""The spec is made of parts, each owned and validated by its room (issue 50, item 2): the parts name every
field once, a spec built or read by a field's name is the same as one built from parts, `spec.json` stays flat
and reads back, each part refuses its own bad values without the spec, and only the modules that run a whole
spec import the spec."""

from __future__ import annotations

import json
from dataclasses import fields, replace

import pytest

from harness.certify.plan import CertifyPlan
from harness.check.plan import CheckPlan
from harness.clients.plan import ClientPlan
from harness.cluster.plan import ClusterPlan
from harness.errors import HarnessError
from harness.faults.plan import FaultPlan
from harness.kafka.group_configs import GroupPlan
from harness.spec import FIELD_PART, PARTS, RunSpec
from harness.workloads import Traffic
from tests.unit.cli.test_layout import _imports, _modules

#: The fields of spec.json before the spec had parts (at f4f0b0f): a reader of an older run directory (tally,
#: pages, the docker runner) finds every one of them still.
FLAT_FIELDS = {
    "backend", "base_port", "behaviour", "bootstrap_servers", "brokers", "check_engine", "client", "client_options",
    "conformance_out", "consumers", "controllers", "dead_letter", "delivery_count_limit", "drain_timeout",
    "fault_interval", "fault_mode", "fault_seed", "faults", "group_configs", "heap_mb", "kafka_home",
    "kafka_image", "kafka_image_classpath", "kafka_version", "kfake_version", "lock_duration_ms",
    "lock_tolerance_ms", "log_dirs", "max_poll_records", "min_insync_replicas", "name", "produce_rate", "profile",
    "records", "replication_factor", "rules", "seed", "settle_ms", "spark_threshold", "topic_partitions",
    "workload", "workload_events"}


def test_every_field_belongs_to_one_part_and_spec_json_keeps_its_keys():
    assert {"name", "seed", "profile"} | set(FIELD_PART) == FLAT_FIELDS
    assert set(json.loads(RunSpec().to_json())) == FLAT_FIELDS
    assert PARTS == {"cluster": ClusterPlan, "traffic": Traffic, "group": GroupPlan, "chaos": FaultPlan,
                     "library": ClientPlan, "checking": CheckPlan, "certification": CertifyPlan}


def test_a_spec_by_field_names_is_the_spec_by_parts():
    by_names = RunSpec(name="n", seed=4, brokers=5, records=7, lock_duration_ms=6000, faults=("leader-kill",),
                       client="java", settle_ms=1, rules=("ack-accept",))
    by_parts = RunSpec(name="n", seed=4, cluster=ClusterPlan(brokers=5), traffic=Traffic(records=7),
                       group=GroupPlan(lock_duration_ms=6000), chaos=FaultPlan(faults=("leader-kill",)),
                       library=ClientPlan(client="java"), checking=CheckPlan(settle_ms=1),
                       certification=CertifyPlan(rules=("ack-accept",)))
    assert by_names == by_parts
    assert by_names.brokers == by_names.cluster.brokers == 5
    assert by_names.faults == by_names.chaos.faults == ("leader-kill",)
    assert RunSpec.brokers == ClusterPlan.brokers == 3  # on the class: the field's default (help texts name it)
    changed = replace(by_names, seed=9, brokers=1, client="franz")
    assert (changed.seed, changed.brokers, changed.client, changed.records) == (9, 1, "franz", 7)
    assert replace(by_names, cluster=ClusterPlan(brokers=2)).brokers == 2


def test_spec_json_reads_back_into_the_same_spec():
    spec = RunSpec(seed=3, records=11, group_configs={"share.isolation.level": "read_committed"},
                   client_options={"a": "b"}, workload_events=("consumer-kill",), faults=("leader-stop",))
    again = json.loads(spec.to_json())
    again["faults"] = tuple(again["faults"])
    again["workload_events"] = tuple(again["workload_events"])
    again["rules"] = tuple(again["rules"])
    assert RunSpec(**again) == spec


def test_an_unknown_field_is_refused_like_a_dataclass_refuses_it():
    with pytest.raises(TypeError, match="unexpected keyword argument 'brokerz'"):
        RunSpec(brokerz=3)


@pytest.mark.parametrize("part, check, message", [
    (ClusterPlan(brokers=0), lambda p: p.validate(), "invalid brokers 0"),
    (ClusterPlan(backend="vm"), lambda p: p.validate(), "invalid backend"),
    (ClusterPlan(bootstrap_servers="a b"), lambda p: p.validate(), "invalid bootstrap-servers"),
    (Traffic(consumers=65), lambda p: p.validate(), "invalid consumers 65"),
    (Traffic(behaviour="dance"), lambda p: p.validate(), "invalid behaviour"),
    (GroupPlan(dead_letter="maybe"), lambda p: p.validate("4.4.0", True), "invalid dead-letter"),
    (GroupPlan(lock_duration_ms=1), lambda p: p.validate("4.4.0", True), "lock-duration-ms"),
    (FaultPlan(faults=("leader-kaboom",)), lambda p: p.validate(ClusterPlan(), "ci"), "invalid fault"),
    (FaultPlan(faults=("leader-move",)), lambda p: p.validate(ClusterPlan(), "ci"), "only the kfake and mock backends have"),
    (FaultPlan(fault_interval=0.0), lambda p: p.validate(ClusterPlan(), "ci"), "invalid fault-interval"),
    (FaultPlan(faults=("leader-kill",)), lambda p: p.check_hostable(ClusterPlan(bootstrap_servers="h:1")),
     "external cluster"),
    (ClientPlan(client="nope"), lambda p: p.validate(), "nope"),
    (CheckPlan(check_engine="quantum"), lambda p: p.validate(), "invalid check engine"),
    (CertifyPlan(rules=("bogus-rule",)), lambda p: p.validate(), "unknown rules bogus-rule"),
])
def test_each_part_refuses_its_own_bad_values_without_the_spec(part, check, message):
    with pytest.raises(HarnessError, match=message):
        check(part)
    with pytest.raises(HarnessError, match=message):  # and the spec holding it says the same
        spec = RunSpec(**{name: part for name, cls in PARTS.items() if isinstance(part, cls)})
        if isinstance(part, FaultPlan) and part.faults == ("leader-kill",):
            replace(spec, bootstrap_servers="h:1").check_faults_hostable()
        else:
            spec.validate()


def test_the_parts_defaults_are_a_valid_spec():
    spec = RunSpec().validate()
    assert [type(getattr(spec, name)) for name in PARTS] == list(PARTS.values())
    assert spec.flat() == {f.name: getattr(spec, f.name) for cls in PARTS.values() for f in fields(cls)} | {
        "name": "share-basic", "seed": 1, "profile": "ci"}


#: The modules that run, certify, explore or configure a whole spec: above it. Every other module of the harness
#: (the rooms the parts come from, and what they use) imports neither the spec nor the settings table.
ABOVE_THE_SPEC = ("harness.spec", "harness.settings", "harness.cli", "harness.run", "harness.certify.certificate",
                  "harness.certify.matrix", "harness.explore", "ksh_fixtures")


def test_nothing_below_the_spec_imports_it():
    edges, _ = _imports(_modules())
    assert "harness.spec" in edges["harness.run"] and "harness.spec" in edges["harness.cli.run"]  # (the walk sees them)
    upward = sorted(f"{module} -> {target}" for module, targets in edges.items() for target in targets
                    if target in ("harness.spec", "harness.settings")
                    and not any(module == a or module.startswith(a + ".") for a in ABOVE_THE_SPEC))
    assert upward == [], f"rooms below the spec import it: {upward}"


def test_the_spec_imports_only_its_parts_rooms():
    edges, _ = _imports(_modules())
    assert edges["harness.spec"] == {
        "harness.certify.plan", "harness.check.plan", "harness.clients.behaviours", "harness.clients.plan",
        "harness.cluster.plan", "harness.errors", "harness.faults.plan", "harness.kafka.group_configs",
        "harness.workloads"}
