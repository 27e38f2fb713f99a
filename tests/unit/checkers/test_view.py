"""The judges' view of the replay (harness/checkers/view.py): the replay offers all of it, and no judge
reads anything of the replay that the view does not declare."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from harness.checkers import ack_results, dead_letter, delivery_count, durable_state, exclusive, no_loss
from harness.checkers.replay import Replay
from harness.checkers.view import ReplayView

JUDGES = (no_loss, delivery_count, exclusive, durable_state, ack_results, dead_letter)
CONFIG = {"schema_version": 1, "group": "g", "topics": ["t"], "model_profile": "4.4", "delivery_count_limit": 3,
          "lock_duration_ms": 1000, "lock_tolerance_ms": 0, "settle_ms": 0, "auto_offset_reset": "earliest"}


def _declared() -> set[str]:
    methods = {name for name, _ in inspect.getmembers(ReplayView, inspect.isfunction) if not name.startswith("_")}
    return set(ReplayView.__annotations__) | methods


def test_the_replay_offers_everything_the_view_declares():
    replay = Replay(CONFIG)
    missing = sorted(name for name in _declared() if not hasattr(replay, name))
    assert missing == [], f"Replay lacks {missing}"


def _reads(module) -> set[str]:
    """The attributes a judge module reads of the replay: `r.<name>` and `self.r.<name>`."""
    found = set()
    for node in ast.walk(ast.parse(Path(module.__file__).read_text())):
        if isinstance(node, ast.Attribute):
            owner = node.value
            if isinstance(owner, ast.Name) and owner.id == "r":
                found.add(node.attr)
            elif isinstance(owner, ast.Attribute) and owner.attr == "r" and isinstance(owner.value, ast.Name) \
                    and owner.value.id == "self":
                found.add(node.attr)
    return found


def test_no_judge_reads_what_the_view_does_not_declare():
    undeclared = {module.__name__: sorted(_reads(module) - _declared()) for module in JUDGES}
    assert {k: v for k, v in undeclared.items() if v} == {}
    assert all(_reads(module) for module in JUDGES)  # (the scan finds what each judge reads)
