"""Checking histories: the front every caller uses (`front`: `engine_for`, `check_events`, `check_histories`), the
engines behind it (`inprocess`; `harness.spark.engine`), and the checking part of a run's spec (`plan`).

The package's own names are the front's, loaded on first use (PEP 562): the front loads the oracle, and the
checking part of the spec (`harness.check.plan`) is read by every CLI command and pytest session through the spec.
"""

from __future__ import annotations

from typing import Any

_FRONT_NAMES = ("engine_for", "check_events", "check_histories")


def __getattr__(name: str) -> Any:
    if name in _FRONT_NAMES:
        from harness.check import front  # (deferred: loads the oracle; see the docstring)
        return getattr(front, name)
    raise AttributeError(f"module 'harness.check' has no attribute {name!r}")
