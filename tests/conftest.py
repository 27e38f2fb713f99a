"""The harness's own tests. `tests/unit/<room>/`: pure and fast, no process started (a test marked `real`
there is refused: move it to `tests/real/`). `tests/real/`: every test starts processes (Kafka, Toxiproxy,
drivers, Spark, a browser) and is marked `real` by being there, so `-m "not real"` leaves them all out.
`tests/support/`: what several test modules build histories and commands with."""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


@pytest.hookimpl(tryfirst=True)  # before `-m` selects: the directory's marker must already be on each item
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    misplaced = []
    for item in items:
        parents = Path(str(item.path)).resolve().parents
        if HERE / "real" in parents:
            item.add_marker(pytest.mark.real)
        elif HERE / "unit" in parents and item.get_closest_marker("real") is not None:
            misplaced.append(item.nodeid)
    if misplaced:
        raise pytest.UsageError(f"{len(misplaced)} test(s) marked real under tests/unit/ (a unit test starts no "
                                f"process): move them to tests/real/, e.g. {misplaced[0]}")
