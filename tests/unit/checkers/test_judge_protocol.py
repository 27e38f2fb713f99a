"""The judge protocol (harness/checkers/judge.py): every property is a `Judge` listed once in `JUDGES`, and
everything else (the properties' names, the checkers, a verdict's stats and unknowns, the Spark engine's merge)
derives from that list, so a new property is one module and one line; shown here by running a property the
harness does not register (tests/support/extra_judge.py) beside the registered ones."""

from __future__ import annotations

import ast
from pathlib import Path

from harness.checkers import observed_result
from harness.checkers.findings import Partial, observation
from harness.checkers.judge import Event, Judge
from harness.checkers.judges import JUDGES, PROPERTIES
from harness.checkers.registry import CHECKERS
from harness.checkers.replay import Replay, config_of, replay
from harness.history.events import COLUMNS, as_events
from tests.support.builders import H
from tests.support.extra_judge import AckedUndelivered

CHECKERS_DIR = Path(__file__).resolve().parents[3] / "harness" / "checkers"


def test_every_property_is_a_judge_listed_once_with_its_sentence():
    assert all(isinstance(j, type) and issubclass(j, Judge) for j in JUDGES)
    names = [j.NAME for j in JUDGES]
    assert len(set(names)) == len(names) and all(names)
    assert all(j.SENTENCE and isinstance(j.EVENTS, frozenset) for j in JUDGES)
    assert PROPERTIES == tuple(names) == tuple(CHECKERS)
    assert Event._fields == COLUMNS  # an event is a history row, column by column


def test_no_module_but_a_judges_own_lists_the_properties():
    """The list, the registry and the findings name no property (durable-state's stats are the replay's model's
    own, carried in every partial)."""
    for module in ("judges.py", "registry.py", "findings.py"):
        literals = {node.value for node in ast.walk(ast.parse((CHECKERS_DIR / module).read_text()))
                    if isinstance(node, ast.Constant) and isinstance(node.value, str)}
        named = literals & set(PROPERTIES) - ({"durable-state"} if module == "findings.py" else set())
        assert named == set(), f"{module} names {sorted(named)}"


def _history(acked_offset: int):
    h = H()
    h.produce("a", 0, 0)
    h.produce("b", 0, 1)
    h.poll("c1", [("a", 0, 0), ("b", 0, 1)])
    h.ack("c1", [(0, 0), (0, acked_offset)])
    h.commit("c1", {0: None})
    return as_events(h.ops)


def _replay(table, judges):
    return Replay(config_of(table), judges).run(table.rows())


def test_a_new_property_is_one_judge_class_run_beside_the_others():
    judges = (*JUDGES, AckedUndelivered)
    good, bad = _history(1), _history(5)
    obs = _replay(good, judges)
    assert observed_result("acked-undelivered", obs).valid is True
    assert obs.stats["acked-undelivered"] == {"acks": 2}
    found = _replay(bad, judges)
    result = observed_result("acked-undelivered", found)
    assert result.valid is False and [a.kind for a in result.anomalies] == ["acked-undelivered"]
    assert "no poll handed it" in result.anomalies[0].message
    # the registered properties judge as they do without it
    alone = replay(bad)
    for prop in PROPERTIES:
        assert observed_result(prop, found) == observed_result(prop, alone), prop


def test_a_new_property_is_unknown_where_it_has_nothing_to_judge():
    h = H()
    h.produce("a", 0, 0)
    h.poll("c1", [("a", 0, 0)])
    table = as_events(h.ops)
    result = observed_result("acked-undelivered", _replay(table, (*JUDGES, AckedUndelivered)))
    assert result.valid == "unknown" and "no acknowledgement" in result.reason


def test_a_new_property_survives_the_spark_engines_merge_of_partials():
    """The Spark engine replays share-partitions apart and merges their Partials (as JSON): the new property's
    anomalies and stats come through as the judges list says."""
    judges = (*JUDGES, AckedUndelivered)
    table = _history(5)
    partial = Replay(config_of(table), judges).run_partial(table.rows())
    again = Partial.from_json(partial.to_json())
    obs = observation([again], judges)
    assert observed_result("acked-undelivered", obs).valid is False
    assert obs.stats["acked-undelivered"] == {"acks": 2}
