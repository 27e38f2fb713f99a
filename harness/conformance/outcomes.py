"""Inconclusive: a conformance test whose set-up did not hold decides nothing about the behaviour it
was written for. `precondition(ok, what)` ends such a test with `Inconclusive`; the suite's report and
certificates call it inconclusive (never pass, never a FAIL of the client), and pytest still counts it
a failure, so a gate that did not check what it promised does not pass.
"""

from __future__ import annotations


class Inconclusive(AssertionError):
    """The test's precondition did not hold: the behaviour under test was not exercised."""


#: How an Inconclusive's message starts (what the reports look for in a failure's text).
PREFIX = "INCONCLUSIVE (the behaviour was not exercised): "


def precondition(ok: object, what: str) -> None:
    """End the test as inconclusive unless `ok`: `what` names the set-up that did not hold."""
    if not ok:
        raise Inconclusive(PREFIX + what)


def is_inconclusive(text: str) -> bool:
    """Whether a failure's message (its exception line) is an Inconclusive's."""
    return PREFIX in (text or "")


def needs_admin_api(cluster, what: str) -> None:
    """Skip the test, with the reason, on an implementation that serves no Admin API for `what` (a
    `harness.cluster.base.SelfAdministered` cluster: librdkafka's mock): the behaviour cannot be exercised
    there, which the reports show as NOT SUPPORTED, never a pass or a FAIL."""
    from harness.cluster.base import SelfAdministered  # (deferred: a light module of its own)
    if isinstance(cluster, SelfAdministered):
        import pytest  # (deferred: only a test's own call reaches this)
        pytest.skip(f"needs {what} (Admin API): {getattr(type(cluster), 'no_admin', 'the implementation serves none')}")
