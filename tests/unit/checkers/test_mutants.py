"""Mutation testing of the oracle on the committed real run histories (tests/histories).

Each unmutated history passes every checker (or fails exactly as a known Kafka deviation the oracle
rightly reports); each mutant class (`harness.mutants`: one seeded change outside every allowance)
is killed: the property it breaks fails with a matching anomaly the unmutated history did not have.
`benchmarks/mutation.py` runs the same with more seeds and prints the tables.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import random
from pathlib import Path

import pytest

from harness.mutants import MUTANTS, check_all, judge, known_deviation, read_ops, verdict_line

HISTORIES = sorted((Path(__file__).resolve().parents[2] / "histories").glob("*.jsonl.gz"))
SEEDS = (1, 2, 3)


def short(path: Path) -> str:
    return path.name.removesuffix(".jsonl.gz")


@functools.lru_cache(maxsize=None)
def loaded(path: Path) -> tuple[list, dict]:
    """The history's ops and its unmutated verdicts."""
    ops = read_ops(path)
    return ops, check_all(ops)


def test_the_committed_histories_are_there():
    assert len(HISTORIES) >= 6, HISTORIES


@pytest.mark.parametrize("path", HISTORIES, ids=short)
def test_unmutated_history_passes_every_checker(path):
    ops, base = loaded(path)
    failing = {p: r for p, r in base.items() if r.valid is not True}
    assert not failing or known_deviation(ops, base) is not None, \
        f"{path.name} unmutated: false alarm: {verdict_line(failing)} " \
        f"{[a.message for r in failing.values() for a in r.anomalies[:2]]} {[r.reason for r in failing.values()]}"


def applied(cls: str, ops: list) -> list:
    """(seed, mutant) for each of SEEDS whose mutant of `cls` finds a spot in `ops` (a history may have none)."""
    return [(seed, m) for seed in SEEDS if (m := MUTANTS[cls](ops, random.Random(seed))) is not None]


# CI checks the first seed's mutant of each class on each history (issue 53: the three seeds were 50 s of CI's
# pure tests); the nightly profile also the other seeds' (benchmarks/mutation.py: more seeds still)
@pytest.mark.parametrize("seeds", [pytest.param(slice(0, 1), id="first-seed"),
                                   pytest.param(slice(1, None), id="other-seeds", marks=pytest.mark.nightly)])
@pytest.mark.parametrize("path", HISTORIES, ids=short)
@pytest.mark.parametrize("cls", list(MUTANTS))
def test_every_mutant_is_killed(cls, path, seeds):
    ops, base = loaded(path)
    for seed, m in applied(cls, ops)[seeds]:  # none: the history has no spot for this change
        assert m.cls == cls and m.prop in base and m.kinds, m
        assert [op.index for op in m.ops] == list(range(len(m.ops))), f"{cls} seed {seed}: not renumbered"
        assert all(a.time <= b.time for a, b in zip(m.ops, m.ops[1:])), f"{cls} seed {seed}: time steps back"
        results = check_all(m.ops)
        outcome = judge(m, results, base)
        assert outcome == "killed", (
            f"mutant {cls} seed {seed} on {path.name} at {m.where} {outcome}: expected {m.prop} to fail with "
            f"{'/'.join(m.kinds)}; got {verdict_line(results)}")


@pytest.mark.parametrize("cls", list(MUTANTS))
def test_every_mutant_class_applies_to_a_committed_history(cls):
    """Guards the test above against vacuity: each class really changes some committed history."""
    spots = [short(p) for p in HISTORIES for seed in SEEDS if MUTANTS[cls](loaded(p)[0], random.Random(seed))]
    assert spots, f"mutant class {cls} applies to none of {[short(p) for p in HISTORIES]}"


def test_every_mutant_class_has_a_docstring():
    for name, cls in MUTANTS.items():
        doc = (cls.__doc__ or "").strip()
        assert len(doc) > 40 and "allowance" in doc.lower(), \
            f"mutant class {name} needs a docstring saying what bug it models and why no allowance applies"


def test_mutants_leave_the_original_history_alone():
    path = next(p for p in HISTORIES if "mix-restart" in p.name)  # truncations, state reads, redeliveries
    ops, _ = loaded(path)
    before = [json.dumps(op.to_json(), sort_keys=True) for op in ops]
    for cls in MUTANTS.values():
        for seed in SEEDS:
            cls(ops, random.Random(seed))
    assert [json.dumps(op.to_json(), sort_keys=True) for op in ops] == before


def test_a_known_deviation_excuses_only_its_own_failure():
    path = next(p for p in HISTORIES if "latest" in p.name)
    ops, base = loaded(path)
    assert base["no-loss"].valid is False and known_deviation(ops, base) is not None
    m = MUTANTS["count-past-limit"](ops, random.Random(1))
    assert m is not None and known_deviation(m.ops, check_all(m.ops)) is None


def test_a_known_deviation_is_expected_only_of_the_releases_in_its_range():
    """The same history said to come from 4.4.0, where the known bug is fixed: its failure is not excused."""
    path = next(p for p in HISTORIES if "latest" in p.name)
    ops, base = loaded(path)
    assert next(op.value for op in ops if op.f == "config")["kafka_version"] == "4.3.1"
    for version, excused in (("4.4.0", False), ("4.3.9", True), ("not a version", False)):
        moved = [dataclasses.replace(op, value={**op.value, "kafka_version": version}) if op.f == "config" else op
                 for op in ops]
        assert (known_deviation(moved, base) is not None) is excused, version


def test_the_same_seed_gives_the_same_mutant():
    ops, _ = loaded(HISTORIES[0])
    for name, cls in MUTANTS.items():
        a, b = cls(ops, random.Random(5)), cls(ops, random.Random(5))
        assert (a is None) == (b is None), name
        if a is not None:
            assert a.where == b.where and [op.to_json() for op in a.ops] == [op.to_json() for op in b.ops], name


# ------------------------------------------------------------------ holes the mutation testing found
# Each builds a history one mutation away from a valid one, outside every allowance, that the oracle
# passed before issue 21's fixes (found by hand while building the mutant classes; kept as regressions).


def _start(h, *consumers: str) -> None:
    for c in consumers:
        h.add(c, "ok", "start", {"client": "test", "client_version": "1"})


@pytest.mark.parametrize("count", [3, 0])
def test_a_count_out_of_range_fails_on_a_redelivery_after_archival(count):
    """count-past-limit on a redelivery `delivery-count-lag` excuses: the redelivery is excused, a count
    above the limit (or below 1) is not (no allowance names it)."""
    from tests.support.builders import H, T
    h = H(limit=2, lock_ms=1000)
    _start(h, "consumer-0", "consumer-1")
    h.produce("a", 0, 0)
    h.produce("b", 0, 1)
    h.poll("consumer-0", [("a", 0, 0, 1)])
    h.ack("consumer-0", [(0, 0)], "RELEASE")
    h.commit("consumer-0", {0: None}, offsets={0: [0]})
    h.poll("consumer-0", [("a", 0, 0, 2)])  # at the limit, never acknowledged
    h.poll("consumer-1", [("b", 0, 1, 1)], dt_ms=1500)  # a's lock is over
    h.ack("consumer-1", [(0, 1)])
    h.commit("consumer-1", {0: None}, offsets={0: [1]})  # the watermark passes a (archived) and b
    fault = {"id": "l-1", "fault": "leader", "effects": ["leader-change"], "topic": T, "partitions": [0]}
    h.add("nemesis", "ok", "fault-start", fault)
    h.poll("consumer-1", [("a", 0, 0, count)])  # excused as delivery-count-lag; the count is not
    h.add("nemesis", "ok", "fault-heal", fault)
    h.read_start({0: 2})
    kinds = [a.kind for a in check_all(h.ops)["delivery-count"].anomalies]
    assert ("beyond-limit" if count else "count-invalid") in kinds


def test_an_acknowledgement_of_a_settled_record_needs_a_result():
    """drop-ack-result on an acknowledgement of a record another consumer settled first (its lock had
    expired): the broker answers it (an error), so a commit that returns no result for it, and no
    callback, is ack-result-missing; the consumer neither crashed nor closed."""
    from tests.support.builders import H
    h = H(limit=3, lock_ms=1000)
    _start(h, "consumer-0", "consumer-1")
    h.produce("a", 0, 0)
    h.poll("consumer-0", [("a", 0, 0, 1)])
    h.poll("consumer-1", [("a", 0, 0, 2)], dt_ms=1500)  # consumer-0's lock expired
    h.ack("consumer-1", [(0, 0)])
    h.commit("consumer-1", {0: None}, offsets={0: [0]})
    h.ack("consumer-0", [(0, 0)])  # it acknowledges what it was handed, and lost
    h.add("consumer-0", "invoke", "commit", {})
    h.add("consumer-0", "ok", "commit", {"results": []})  # the result vanished (and no callback)
    h.add("consumer-0", "invoke", "commit", {})
    h.add("consumer-0", "ok", "commit", {"results": []})
    h.read_start({0: 1})
    assert "ack-result-missing" in [a.kind for a in check_all(h.ops)["ack-results"].anomalies]


def test_records_at_offsets_an_unclean_election_emptied_are_excused_only_with_the_truncation():
    """CI, 2026-11-26 (`unclean-reused-offset-skipped`): the records a consumer accepted at offsets 24-28
    were lost to an unclean election, the new leader's log took five new records at those offsets, and
    the group's state, which counted the offsets as done, skipped them. Excused by
    `skipped-after-unclean-election` (no-loss and durable-state), which needs the `truncated` operation:
    without it the same five records are `lost` again."""
    ops, base = loaded(Path(__file__).resolve().parents[2] / "histories" / "unclean-reused-offset-skipped.jsonl.gz")
    assert base["no-loss"].valid is True and base["no-loss"].allowances["skipped-after-unclean-election"] == 5
    assert base["durable-state"].valid is True
    assert base["durable-state"].allowances["skipped-after-unclean-election"] == 5
    without = [op for op in ops if op.f != "truncated"]
    results = check_all(without)
    assert results["no-loss"].valid is False
    assert {a.kind for a in results["no-loss"].anomalies} >= {"lost"}
    assert "skipped-after-unclean-election" not in results["no-loss"].allowances


def test_the_scan_ends_sessions_as_the_replay_does_under_a_fault_on_the_client_links():
    """A session-loss fault on the client links (reset-peer on client->n2) ends the session of every live
    consumer, also one it does not list, and of one that starts while it is in place, until its heal
    (`Evidence.fault_start`): the spots mutants pick must see the same session ends the checkers excuse with."""
    from harness.history.schema import Op
    from harness.mutants.facts import facts
    fault = {"id": "reset-1", "fault": "reset-peer", "effects": ["session-loss"], "targets": ["client->n2"],
             "processes": []}
    rows = [("consumer-0", "ok", "start", {"client": "t", "client_version": "1"}),
            ("nemesis", "ok", "fault-start", fault),
            ("consumer-1", "ok", "start", {"client": "t", "client_version": "1"}),
            ("nemesis", "ok", "fault-heal", {"id": "reset-1", "fault": "reset-peer"}),
            ("consumer-2", "ok", "start", {"client": "t", "client_version": "1"})]
    ops = [Op(i, (i + 1) * 1_000_000, p, t, f, v) for i, (p, t, f, v) in enumerate(rows)]
    f = facts(ops)
    ended = {e.process for e in f.ends_between(0, 10_000_000)}
    assert {"consumer-0", "consumer-1"} <= ended and "consumer-2" not in ended, ended
