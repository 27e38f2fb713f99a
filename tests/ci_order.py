"""The order in which a run hands test files to pytest-xdist's workers (CI's `--dist loadfile
--no-loadscope-reorder`): longest first, by `tests/ci_order.json` (each file's seconds in a clean-clone CI run,
written by `python benchmarks/ci_times.py reports/ci/junit.xml --write-order tests/ci_order.json`), so that a
long file never starts last while the other workers have nothing left; a file it does not name goes by its kind
(one with real tests among the long ones, a pure one among the short). The tests of a file keep their order.
"""

from __future__ import annotations

import json
from pathlib import Path

ORDER = Path(__file__).with_name("ci_order.json")
#: the seconds assumed for a file `ci_order.json` does not name yet
NEW_REAL_S, NEW_PURE_S = 60, 1


def _file_of(item) -> str:
    return item.nodeid.split("::", 1)[0]


def longest_first(items: list, seconds: dict[str, float]) -> list:
    """`items` (pytest items) grouped by file, the files by their seconds (else by kind), longest first; stable
    otherwise."""
    real = {_file_of(i) for i in items if i.get_closest_marker("real")}
    first_seen: dict[str, int] = {}
    for i in items:
        first_seen.setdefault(_file_of(i), len(first_seen))

    def cost(name: str) -> float:
        return seconds.get(name, NEW_REAL_S if name in real else NEW_PURE_S)

    order = {name: rank for rank, name in enumerate(sorted(first_seen, key=lambda n: (-cost(n), first_seen[n])))}
    return sorted(items, key=lambda i: order[_file_of(i)])  # sorted() is stable: a file keeps its tests' order


def recorded_seconds() -> dict[str, float]:
    """`ci_order.json`'s seconds per file; empty if it is missing or unreadable (every file then goes by kind)."""
    try:
        return json.loads(ORDER.read_text())
    except (OSError, ValueError):
        return {}
