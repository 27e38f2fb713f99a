"""Deliberately faulty drivers, one per bug class a client library can have: each `<name>.json` manifest names
its `bug_class`, the rules it `breaks` and the `evidence` a failed rule's message must hold. Certified by
tests/real/test_certify_real*.py (against the rules each breaks) and scripts/certify_mutants.py (every rule). A
manifest's `nightly` says why catching its bug costs more than CI's budget allows (the rule's patience waited out,
mostly): the ci profile deselects its certification, the nightly profile runs it (docs/ci.md)."""

import json
from pathlib import Path

import pytest

HERE = Path(__file__).parent


def faulty_drivers(half: int | None = None) -> list[tuple[str, dict]]:
    """(file stem, manifest) of every faulty driver, sorted; `half` 0 or 1: every other one (CI's two test
    files, so that two workers share the certifications)."""
    found = [(p.stem, json.loads(p.read_text())) for p in sorted(HERE.glob("*.json"))]
    return found if half is None else found[half::2]


def faulty_params(half: int) -> list:
    """`faulty_drivers(half)` as pytest parameters (name, manifest), those with a `nightly` reason marked nightly."""
    return [pytest.param(name, manifest, id=name, marks=[pytest.mark.nightly] if manifest.get("nightly") else [])
            for name, manifest in faulty_drivers(half)]
