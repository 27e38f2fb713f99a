"""Conformance suites: one file per KIP-932 area, each test one behaviour, on a real cluster.

Markers: `pytest.mark.kip("area")` (an area of `harness.conformance.report.AREAS`) on every test
module; `pytest.mark.requires(line="4.3", group_config="delivery_count_limit")` on a test that
needs a release line or a group-level config: elsewhere it is skipped with that reason.

`share_session(**spec_overrides)` opens a `harness.conformance.ShareSession` on the session
cluster; `session.assert_conforms()` closes it, checks its history with all seven checkers and asserts
the verdict. At the end a report (area x result) is written to reports/conformance/<time>/ (by the
harness's pytest plugin, which gathers the rows of every xdist worker first: `ksh_fixtures.plugin`).
"""

from __future__ import annotations

import dataclasses

import pytest

from harness.cluster.local.spec import random_sasl_users
from ksh_fixtures.plugin import CONFORMANCE_ROW_ATTR as ROW_ATTR

_SESSIONS = pytest.StashKey[dict]()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "kip(area): the KIP-932 area a conformance test checks")
    config.addinivalue_line("markers", "rule(id): the client rule (harness.certify.certificate.RULES) a test decides, "
                                       "for `share-harness certify`")
    config.addinivalue_line("markers", "requires(line, group_config): the release line (at least) or the "
                                       "group-level config a conformance test needs")


def pytest_collection_modifyitems(config, items) -> None:
    """`--ksh-rules a,b` (`share-harness certify --rules a,b`): keep only the tests of those rules."""
    from ksh_fixtures.plugin import session_spec
    wanted = set(session_spec(config).rules)
    if not wanted:
        return
    keep = [i for i in items if (m := i.get_closest_marker("rule")) is not None and m.args and m.args[0] in wanted]
    dropped = [i for i in items if i not in keep]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep


@pytest.fixture(autouse=True)
def _requires(request, ksh_spec):
    """Skip, naming what is missing, a test whose release line or group config the cluster lacks. (The
    session cluster is asked for only here: a test on the suite's own cluster alone starts no other.)"""
    from harness.conformance import missing_requirement
    from harness.run import kafka_version_of
    marker = request.node.get_closest_marker("requires")
    if marker is None:
        return
    kafka_cluster = request.getfixturevalue("kafka_cluster")
    why = missing_requirement(kafka_version_of(kafka_cluster, ksh_spec), marker.kwargs.get("line"),
                              marker.kwargs.get("group_config"))
    if why:
        pytest.skip(why)


@pytest.fixture(autouse=True)
def _rule_contract(request, ksh_spec):
    """Skip as "not supported" a rule resting on a client-API contract (`harness.certify.rules.Rule.feature`)
    that the driver does not declare: a library without, e.g., an acknowledgement-mode setting does not
    fail a rule about that setting."""
    marker = request.node.get_closest_marker("rule")
    if marker is None or not marker.args:
        return
    from harness.certify.rules import CLIENT_RULES
    from harness.clients.registry import driver_info
    rule = CLIENT_RULES.get(marker.args[0])
    older = rule is not None and rule.feature and driver_info(ksh_spec.client).older_contract(rule.feature)
    if older:  # not run, never "not supported": the driver was never asked (certificates say which and why)
        pytest.skip(older)
    if rule is not None and rule.feature and not driver_info(ksh_spec.client).supports(rule.feature):
        pytest.skip(f"not supported by the {driver_info(ksh_spec.client).name} driver: {rule.feature} (the rule "
                    f"rests on {rule.source}; the driver does not declare the feature)")


def _opener(cluster, ksh_spec, request, **fixed):
    """Open sessions (fresh topic and group each) on `cluster`; at the end, finish those a failed test
    left open (their drivers closed, their history kept)."""
    from dataclasses import replace

    from harness.conformance import ShareSession
    from harness.report.rundir import new_run_dir
    opened = []

    def _open(**overrides):
        name = overrides.pop("name", request.node.name)
        names = overrides.pop("names", None)  # (topic, group) instead of the session's own
        spec = replace(ksh_spec, name=name, **{**fixed, **overrides})
        from harness.cluster.mock import NotServed
        try:
            session = ShareSession(cluster, spec, new_run_dir(name), names)
        except NotServed as exc:  # a setting the mock has none of: the behaviour cannot be exercised there
            pytest.skip(str(exc))
        opened.append(session)
        request.config.stash.setdefault(_SESSIONS, {})[request.node.nodeid] = str(session.run_dir)
        return session

    yield _open
    for session in opened:
        if session.valid is None:
            try:
                session.finish(ended_early=True)
            except Exception:  # the test's own failure is the one to report
                pass


@pytest.fixture
def note_run(request):
    """`note_run(run_dir)`: name the run this test was judged on when another test of the session made it
    (the report row and a certificate point at it)."""
    def note(run_dir) -> None:
        request.config.stash.setdefault(_SESSIONS, {})[request.node.nodeid] = str(run_dir)
    return note


@pytest.fixture
def share_session(kafka_cluster, ksh_spec, request):
    """Open sessions (fresh topic and group each) on the session cluster: `share_session(topic_partitions=1)`."""
    yield from _opener(kafka_cluster, ksh_spec, request)


#: SASL/PLAIN users of the authorization cluster (name -> password): passwords random per run, from
#: `secrets`, not from the run's seed (`harness.cluster.local.spec.random_sasl_users`); the node's
#: server.properties that holds them is readable by this user only.
SASL_USERS = random_sasl_users("alice", "bob")


@pytest.fixture(scope="session")
def sasl_user():
    """`sasl_user(name)`: (name, password) of a SASL user of `own_cluster` (`SASL_USERS`)."""
    return lambda name: (name, SASL_USERS[name])


#: Broker settings of the suite's own cluster that the session cluster does not have.
OWN_CLUSTER_OVERRIDES = {"group.share.max.size": "3"}


@pytest.fixture(scope="session")
def own_cluster(ksh_spec):
    """A one-node local cluster of the suite's own, for behaviours that need broker settings the
    session cluster has not: a SASL/PLAIN listener (users `SASL_USERS`) with the standard authorizer
    (the harness's own clients use its PLAINTEXT listeners as a super user), and a group size limit
    of 3 (`OWN_CLUSTER_OVERRIDES`)."""
    if ksh_spec.bootstrap_servers:
        pytest.skip("needs a local cluster with broker settings of the harness's choosing (SASL users, ACLs, "
                    "group size limit); an external cluster's are not the harness's to set")
    from harness.cluster.local import LocalClusterSpec
    from harness.report.rundir import new_run_dir
    from harness.run.context import backend_cluster
    from ksh_fixtures.plugin import started
    if ksh_spec.backend == "mock":
        from harness.cluster.mock import UNSUPPORTED
        pytest.skip(f"needs a cluster with a group size limit or SASL users: {UNSUPPORTED['sasl']}, and the mock has "
                    "no setting for group.share.max.size")
    if ksh_spec.backend == "kfake":  # one kfake broker with the limit; no SASL listener (`UNSUPPORTED`)
        from harness.cluster.kfake import KfakeCluster
        yield from started(KfakeCluster(new_run_dir("cluster-own"), brokers=1, version=ksh_spec.kafka_version,
                                        kfake_version=ksh_spec.kfake_version, broker_configs=OWN_CLUSTER_OVERRIDES),
                           "the suite's own cluster")
        return
    cluster = backend_cluster(ksh_spec, LocalClusterSpec(
        version=ksh_spec.kafka_version, brokers=1, replication_factor=1, min_insync_replicas=1,
        internal_partitions=1, consumer_lanes=0, heap_mb=ksh_spec.heap_mb, kafka_home=ksh_spec.kafka_home,
        sasl_users=SASL_USERS, broker_overrides=OWN_CLUSTER_OVERRIDES), new_run_dir("cluster-own"))
    yield from started(cluster, "the suite's own cluster")


@pytest.fixture
def own_session(own_cluster, ksh_spec, request):
    """Sessions on the suite's own cluster (one partition, replication factor 1)."""
    yield from _opener(own_cluster, ksh_spec, request, replication_factor=1, min_insync_replicas=1,
                       topic_partitions=1)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    report = (yield).get_result()
    marker = item.get_closest_marker("kip")
    if marker is None or not marker.args:
        return
    from harness.conformance.report import report_row
    settled = report_row(report)
    if settled is not None:
        result, reason = settled
        text = (getattr(item.function, "__doc__", None) or item.name).strip()
        doc = " ".join(line.strip() for line in text.split("\n\n")[0].splitlines())  # the first paragraph, whole
        from harness.conformance.report import Row
        run_dir = item.config.stash.get(_SESSIONS, {}).get(item.nodeid, "")
        rule = item.get_closest_marker("rule")
        row = Row(marker.args[0], item.nodeid, doc, result, reason, run_dir, rule.args[0] if rule else "")
        # on the report itself: it reaches xdist's controller with the report (`ksh_fixtures.plugin`
        # gathers the rows from the reports), even from a worker that crashes later
        setattr(report, ROW_ATTR, list(dataclasses.astuple(row)))
