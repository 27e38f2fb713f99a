"""Faults: the catalogue of every nemesis the harness can inject (`catalogue`: `CATALOGUE`, `GROUPS`,
`parse_faults`), the seeded schedule (`schedule`), the nemesis that runs it (`nemesis`), and the fault plan
of a run's spec (`plan`).

The package's own names are the catalogue's, loaded on first use (PEP 562): the catalogue's faults load
confluent_kafka, and the fault plan (`harness.faults.plan`) is read by every pytest session through the spec,
which must not load it.
"""

from __future__ import annotations

from typing import Any

_CATALOGUE_NAMES = ("CATALOGUE", "GROUPS", "Fault", "by_name_only", "in_group", "parse_faults")


def __getattr__(name: str) -> Any:
    if name in _CATALOGUE_NAMES:
        from harness.faults import catalogue  # (deferred: loads confluent_kafka; see the docstring)
        return getattr(catalogue, name)
    raise AttributeError(f"module 'harness.faults' has no attribute {name!r}")
