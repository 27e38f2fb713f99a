"""The harness's own tests: `real` ones start processes; the rest are pure and fast. A run hands the files to
its workers longest first (tests/ci_order.py)."""

from __future__ import annotations

import pytest

from ci_order import longest_first, recorded_seconds


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    items[:] = longest_first(items, recorded_seconds())
