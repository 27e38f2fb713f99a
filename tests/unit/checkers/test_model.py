"""The reference model, its simulator, and the checkers against model-generated histories.

Hypothesis drives the model with random workloads (releases, rejects, lock
expiries, closes, crashes with unseen fetches, leader changes; versions 4.1
and 4.3): every history must pass every checker. The same histories with one
mutation must fail with the matching anomaly.
"""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.checkers import (ack_results, batch_order, check_safe, delivery_count, durable_state, exclusive, no_loss,
                              no_redelivery)
from harness.checkers.registry import OWN
from harness.errors import HarnessError
from harness.history.events import EventTable
from harness.model.profiles import MODEL_PROFILES, model_profile
from harness.model.share_partition import ACKNOWLEDGED, ACQUIRED, ARCHIVED, AVAILABLE, SharePartition
from harness.model.simulate import SimConfig, simulate
from harness.mutants import MUTANTS

CHECKERS = (no_loss, delivery_count, batch_order, exclusive, no_redelivery, ack_results, durable_state)
MS = 1_000_000


# ------------------------------------------------------------------ the model itself


def sp(limit=3, lock_ms=1000, locks=100, version="4.3") -> SharePartition:
    return SharePartition(limit, lock_ms * MS, locks, model_profile(version))


def test_acquire_ack_and_spso():
    p = sp()
    p.append(5)
    assert p.acquire("c1", 0, 3) == [(0, 1), (1, 1), (2, 1)]
    assert p.acquire("c2", 0, 10) == [(3, 1), (4, 1)]
    assert p.acknowledge("c1", 1, "ACCEPT", 1) is None
    assert p.spso == 0 and p.state(1) == (ACKNOWLEDGED, 1)
    assert p.acknowledge("c2", 0, "ACCEPT", 1) == "INVALID_RECORD_STATE"  # not its record
    assert p.acknowledge("c1", 0, "REJECT", 1) is None
    assert p.spso == 2 and p.state(0) == ("Terminal", -1)
    assert p.acknowledge("c1", 2, "RELEASE", 2) is None
    assert p.state(2) == (AVAILABLE, 1)
    assert p.acquire("c2", 3, 10) == [(2, 2)]


def test_lock_expiry_and_archive_at_limit():
    p = sp(limit=2)
    p.append(1)
    p.acquire("c1", 0, 1)
    p.expire(999 * MS)
    assert p.state(0) == (ACQUIRED, 1)
    assert p.acquire("c2", 1000 * MS, 1) == [(0, 2)]  # the lock expired at 1000 ms
    assert p.acknowledge("c1", 0, "ACCEPT", 1000 * MS) == "INVALID_RECORD_STATE"
    p.expire(2000 * MS)  # expired at the limit: archived
    assert p.done()


def test_renew_extends_the_lock_only_where_supported():
    for version, ok in (("4.1", False), ("4.3", True)):
        p = sp(version=version)
        p.append(1)
        p.acquire("c1", 0, 1)
        assert (p.acknowledge("c1", 0, "RENEW", 900 * MS) is None) is ok
        p.expire(1500 * MS)
        assert (p.state(0)[0] == ACQUIRED) is ok


@pytest.mark.parametrize("version, state, count", [("4.1", AVAILABLE, 1), ("4.2", ARCHIVED, 2), ("4.3", ARCHIVED, 2)])
def test_session_release_by_version(version, state, count):
    """4.1 decreases the count of records released by a session end and never archives them there."""
    p = sp(limit=2, version=version)
    p.append(1)
    p.acquire("c1", 0, 1)
    p.acknowledge("c1", 0, "RELEASE", 1)
    p.acquire("c1", 2, 1)  # count 2 = limit
    p.release_session("c1", 3)
    if state == ARCHIVED:
        assert p.done()
    else:
        assert p.state(0) == (state, count)


def test_max_record_locks_bounds_what_is_in_flight():
    p = sp(locks=3)
    p.append(10)
    assert [o for o, _ in p.acquire("c1", 0, 10)] == [0, 1, 2]
    assert p.acquire("c2", 0, 10) == []
    p.acknowledge("c1", 0, "ACCEPT", 1)
    assert [o for o, _ in p.acquire("c2", 1, 10)] == [3]


def test_unknown_version_profile_is_a_one_line_error():
    with pytest.raises(HarnessError, match="no model profile for Kafka 3.9"):
        model_profile("3.9.0")
    assert set(MODEL_PROFILES) >= {"4.1", "4.2", "4.3", "4.4"}


# ------------------------------------------------------------------ histories from the model

sim_configs = st.builds(
    SimConfig,
    seed=st.integers(0, 10**6), partitions=st.integers(1, 3), consumers=st.integers(1, 3),
    records=st.integers(5, 80), limit=st.integers(2, 4), max_poll=st.integers(1, 8),
    version=st.sampled_from(["4.1", "4.2", "4.3"]), p_release=st.sampled_from([0.0, 0.1]),
    p_reject=st.sampled_from([0.0, 0.05]), p_ignore=st.sampled_from([0.0, 0.05]),
    p_close=st.sampled_from([0.0, 0.03]), p_crash=st.sampled_from([0.0, 0.03]), leader_changes=st.integers(0, 2),
    dead_letter=st.booleans())

SETTINGS = settings(max_examples=60, deadline=None, database=None, suppress_health_check=list(HealthCheck))


def verdicts(ops) -> dict[str, object]:
    return {m.NAME: check_safe(m.NAME, OWN[m.NAME], ops) for m in CHECKERS}


@SETTINGS
@given(cfg=sim_configs)
def test_model_histories_pass_every_checker(cfg):
    ops = simulate(cfg)
    results = verdicts(ops)
    bad = {n: (r.valid, r.reason, [a.message for a in r.anomalies[:3]]) for n, r in results.items() if r.valid is not True}
    assert not bad, f"{cfg}: {bad}"


def test_model_histories_survive_the_parquet_round_trip(tmp_path):
    ops = simulate(SimConfig(seed=3, records=50, leader_changes=1, p_close=0.05))
    table = EventTable.from_ops(ops)
    back = EventTable.read_parquet(table.write_parquet(tmp_path / "h.parquet"))
    assert back.columns == table.columns and back.schema_version == 1
    assert {m.NAME: OWN[m.NAME](back).valid for m in CHECKERS} == {m.NAME: True for m in CHECKERS}


# ------------------------------------------------------------------ mutations

#: The shared mutant classes (harness/mutants.py) a model history can hold a spot for: the simulator writes
#: no state-topic read (state-not-terminal), no truncation (unclean-flag-dropped) and resets to earliest
#: (latest-skip-after-start).
MODEL_MUTANTS = tuple(n for n in MUTANTS if n not in ("state-not-terminal", "unclean-flag-dropped",
                                                       "latest-skip-after-start"))


def assert_killed(m, results) -> None:
    result = results[m.prop]
    found = [a.kind for a in result.anomalies]
    assert result.valid is False and set(found) & set(m.kinds), \
        f"mutant {m.cls} at {m.where}: expected {m.prop} to fail with {'/'.join(m.kinds)}, got {result.valid} {found}"


@SETTINGS
@given(cfg=sim_configs, mutation=st.sampled_from(MODEL_MUTANTS), data=st.data())
def test_one_mutation_fails_with_the_matching_anomaly(cfg, mutation, data):
    cfg = replace(cfg, records=max(cfg.records, 10))
    ops = simulate(cfg)
    seed = data.draw(st.integers(0, 2**32 - 1), label="mutant seed")
    m = MUTANTS[mutation](ops, random.Random(seed))
    if m is None:
        return  # this history has nothing to mutate that way
    assert_killed(m, verdicts(m.ops))


@pytest.mark.parametrize("mutation", MODEL_MUTANTS)
def test_every_mutation_applies_to_a_typical_history(mutation):
    """Guards the property above against vacuity: each mutation really fires on a normal history."""
    cfg = SimConfig(seed=7, records=60, partitions=2, consumers=2, max_poll=6, p_close=0.0, p_crash=0.0,
                    p_release=0.2, limit=4, dead_letter=True)
    m = MUTANTS[mutation](simulate(cfg), random.Random(0))
    assert m is not None
    assert_killed(m, verdicts(m.ops))
