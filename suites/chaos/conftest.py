"""Chaos scenarios: one fault (or a seeded schedule) under one consumer workload, checked record by record.

`chaos_run(fault=..., workload=...)` runs the workload on the session cluster
with short locks and a low delivery-count limit (and, for the workloads that reject or archive
records, a dead-letter queue on releases that have them: 4.4+), applies the fault once at a
seeded time (`--ksh-seed`), heals it, drains, and returns the outcome. Every
scenario asserts, through `ksh_fixtures.chaos.assert_chaos_verdict`, that the fault was applied
and healed as scheduled and that the composed verdict of all checkers is a
pass; an unknown verdict is never a pass.
"""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "matrix(**axes): a scenario over the product of its axes (fault=[...], "
                                       "workload=[...], ci={axis: [values]}): the whole product in the nightly profile, a "
                                       "covering subset in ci (every value of every axis at least once; `ci` narrows "
                                       "an axis to the values CI runs here, the others being run by another scenario)")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    marker = metafunc.definition.get_closest_marker("matrix")
    if marker is None:
        return
    import itertools

    from ksh_fixtures.chaos import covering
    from ksh_fixtures.plugin import session_spec
    axes = {name: list(values) for name, values in marker.kwargs.items() if name != "ci"}
    if session_spec(metafunc.config).profile == "nightly":
        combos = list(itertools.product(*axes.values()))
    else:
        narrowed = marker.kwargs.get("ci", {})
        unknown = {n: sorted(set(v) - set(axes.get(n, ()))) for n, v in narrowed.items()}
        if any(unknown.values()) or not set(narrowed) <= set(axes):
            raise pytest.UsageError(f"{metafunc.definition.nodeid}: matrix(ci=...) names values not on its axes: "
                                    f"{unknown}")
        combos = covering({n: list(narrowed.get(n, v)) for n, v in axes.items()})
    metafunc.parametrize(list(axes), combos, ids=["-".join(map(str, c)) for c in combos])


#: workloads that send records to a dead-letter queue (REJECTs, records archived at the limit): on a
#: release with DLQs (KIP-1191, 4.4+) their scenarios run with one, and no-loss accounts for it
DEAD_LETTER_WORKLOADS = ("poison", "mix")


def dead_letter_for(workload: str, version: str) -> str:
    """The `RunSpec.dead_letter` of a scenario: "headers" for a DLQ workload on a release with DLQs."""
    from harness.kafka.versions import release_line
    if workload in DEAD_LETTER_WORKLOADS and release_line(version).group_config("dead_letter_topic"):
        return "headers"
    return "off"


@pytest.fixture
def chaos_run(kafka_cluster, ksh_spec, share_run, scenario_seed):
    """Run `workload` with `fault` (a catalogue name, applied once) or `faults` (a random schedule),
    seeded by `scenario_seed` (one test per seed: --ksh-seed and --ksh-seeds). A scenario whose faults
    need a capability the cluster lacks (`harness.cluster.base`; kfake has no process or link control) is
    skipped with the reason, before anything runs."""
    from dataclasses import replace

    from harness.workloads import apply_workload
    ksh_spec = replace(ksh_spec, seed=scenario_seed)

    def _run(workload: str, fault: str | None = None, faults: tuple[str, ...] = (), **overrides):
        spec = apply_workload(ksh_spec, workload)
        chosen = (fault,) if fault else faults
        _skip_without_needs(kafka_cluster, (*chosen, *spec.workload_events))
        fields = {"behaviour": spec.behaviour, "consumers": spec.consumers, "topic_partitions": spec.topic_partitions,
                  "workload": workload, "workload_events": spec.workload_events,
                  "lock_duration_ms": spec.lock_duration_ms, "delivery_count_limit": spec.delivery_count_limit,
                  "faults": chosen, "fault_mode": "once" if fault else "random", "seed": scenario_seed,
                  "dead_letter": dead_letter_for(workload, ksh_spec.kafka_version)}
        return share_run(**{**fields, **overrides})

    return _run


def _skip_without_needs(cluster, names) -> None:
    from harness.faults import CATALOGUE
    from ksh_fixtures.plugin import unsupported_on
    missing = sorted({f"{name} needs {cap.__name__}" for name in names for cap in CATALOGUE[name].needs
                      if not isinstance(cluster, cap)})
    if missing:
        why = unsupported_on(cluster)
        pytest.skip(f"{'; '.join(missing)}: the cluster in use has none" + (f" ({why})" if why else ""))


@pytest.fixture(autouse=True)
def _report_allowances(request, record_property):
    """Each scenario records which named allowances its run used (JUnit properties, the report)."""
    yield
    from ksh_fixtures.chaos import allowances_used
    from ksh_fixtures.plugin import run_outcomes
    for outcome in run_outcomes(request.config, request.node.nodeid):
        for name, count in sorted(allowances_used(outcome).items()):
            record_property(f"allowance:{name}", count)



@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A scenario that passed only because a known bug of the release under test was allowed is
    recorded as an expected failure of that release (xfail), with the evidence in its reason; on a
    release without the bug the same situation is an anomaly and the test fails."""
    report = (yield).get_result()
    if call.when != "call" or not report.passed:
        return
    from ksh_fixtures.chaos import known_bugs
    from ksh_fixtures.plugin import run_outcomes
    bugs = [b for o in run_outcomes(item.config, item.nodeid) for b in known_bugs(o)]
    if bugs:
        report.outcome = "skipped"
        report.wasxfail = " | ".join(bugs)
