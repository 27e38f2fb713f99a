"""A parent's helper JVMs served to its children (harness.cluster.java_admin.shared_helpers_env, issue 53): a child's
call goes through the parent's socket to the parent's helper and back, a helper's error comes back as the child's
RuntimeError, and a child with no parent serving (none named, or its socket gone) uses a helper of its own."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

import pytest

from harness.cluster import java_admin
from harness.kafka.jars import KafkaDistribution

DIST = KafkaDistribution("4.4.0", Path("/nonexistent/libs"), "maven")


class _StubHelper:
    calls: list = []

    def call(self, program, args, timeout):
        self.calls.append((program, args, timeout))
        if program == "Boom":
            raise RuntimeError("ShareState threw: the coordinator is loading")
        return '{"partitions": []}\n'


@pytest.fixture
def served(monkeypatch):
    seen = []

    @contextmanager
    def helper(dist, cache):
        seen.append((dist, cache))
        yield _StubHelper()
    monkeypatch.setattr(java_admin, "_helper", helper)
    env = java_admin.shared_helpers_env()
    assert java_admin.shared_helpers_env() == env  # one socket per process
    monkeypatch.setenv(java_admin.SHARED_HELPERS_ENV, env[java_admin.SHARED_HELPERS_ENV])
    _StubHelper.calls = []
    return seen


def test_a_childs_call_is_answered_by_the_parents_helper(served, tmp_path):
    printed = java_admin._call_shared(DIST, tmp_path, "ShareOffsets", ("127.0.0.1:1", "g"), 12.0)
    assert printed == '{"partitions": []}\n'
    assert _StubHelper.calls == [("ShareOffsets", ("127.0.0.1:1", "g"), 12.0)]
    assert served == [(DIST, tmp_path)]


def test_a_helpers_error_is_the_childs_runtime_error(served, tmp_path):
    with pytest.raises(RuntimeError, match="the coordinator is loading"):
        java_admin._call_shared(DIST, tmp_path, "Boom", (), 5.0)


def test_without_a_serving_parent_the_child_uses_its_own_helper(monkeypatch, tmp_path):
    monkeypatch.delenv(java_admin.SHARED_HELPERS_ENV, raising=False)
    assert java_admin._call_shared(DIST, tmp_path, "ShareOffsets", (), 5.0) is None
    monkeypatch.setenv(java_admin.SHARED_HELPERS_ENV, str(tmp_path / "gone"))
    assert java_admin._call_shared(DIST, tmp_path, "ShareOffsets", (), 5.0) is None
