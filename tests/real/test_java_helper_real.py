"""The long-lived Java helper (harness/java/JavaHelper.java) answers as the programs do in a JVM of
their own, survives a program that throws, is replaced after a call it did not answer in time, and is
a managed process that stops with the harness."""

from __future__ import annotations

import json

import pytest

from harness.cluster import java_admin
from harness.sys.paths import cache_dir
from harness.sys.procs import live_processes

pytestmark = [pytest.mark.real, pytest.mark.cluster, pytest.mark.local_only]


def _helpers() -> set[int]:
    return {p.pid for p in live_processes() if p.name == java_admin.HELPER_NAME}


def test_the_helper_answers_as_a_jvm_of_its_own_does(local_cluster):
    dist, bootstrap = local_cluster.distribution, local_cluster.bootstrap_servers
    once = java_admin._run_once(dist, cache_dir(), "Quorum", (bootstrap,), 60, None)
    assert java_admin.run_java(dist, cache_dir(), "Quorum", bootstrap) == json.loads(once.strip().splitlines()[-1])
    assert _helpers(), "the call did not go through a helper"
    assert java_admin.run_java(dist, cache_dir(), "ShareAdmin", bootstrap, "bogus") == \
        {"error": "UsageError", "message": "unknown command bogus"}


def test_a_program_that_throws_is_an_error_and_the_helper_lives_on(local_cluster):
    dist, bootstrap = local_cluster.distribution, local_cluster.bootstrap_servers
    java_admin.run_java(dist, cache_dir(), "Quorum", bootstrap)
    before = _helpers()
    with pytest.raises(RuntimeError, match="ArrayIndexOutOfBoundsException"):
        java_admin.run_java(dist, cache_dir(), "ShareOffsets", bootstrap)  # no group given
    assert _helpers() == before
    assert java_admin.run_java(dist, cache_dir(), "Quorum", bootstrap)["voters"] == local_cluster.controller_ids


def test_a_call_not_answered_in_time_stops_its_helper_and_the_next_gets_a_new_one(local_cluster):
    dist, bootstrap = local_cluster.distribution, local_cluster.bootstrap_servers
    java_admin.stop_helpers()
    java_admin.run_java(dist, cache_dir(), "Quorum", bootstrap)
    [first] = _helpers()
    with pytest.raises(RuntimeError, match=r"ShareState did not finish within 0s: the Java helper was stopped"):
        java_admin.run_java(dist, cache_dir(), "ShareState", bootstrap, "some-group", timeout=0.001)
    assert first not in _helpers()
    java_admin.run_java(dist, cache_dir(), "Quorum", bootstrap)
    assert _helpers() and first not in _helpers()
    java_admin.stop_helpers()
    assert _helpers() == set()
