"""Bounces operators meet every week, under a consumer workload, checked record by record.

A fast bounce kills (SIGKILL) or stops (SIGTERM) the leader of one partition and starts a new process at
once, while consumers hold share sessions to it (and, in the `slow` workload, sit between polls holding
records they have not acknowledged): the new leader process starts with empty in-memory share-partition
state. A rolling restart restarts every node in turn, clean or unclean, waiting for a full ISR between
steps. Either way no acknowledged record is lost, none is delivered beyond the delivery-count limit,
batches stay in offset order, acquisition stays exclusive, and the durable state agrees with the model.
"""

import pytest

from ksh_fixtures.chaos import assert_chaos_verdict

pytestmark = [pytest.mark.real, pytest.mark.cluster, pytest.mark.local_only, pytest.mark.chaos]


@pytest.mark.parametrize("fault, workload", [  # ci: one bounce (CI's time budget); nightly: the rest
    ("bounce-kill", "slow"), pytest.param("bounce-stop", "accept-explicit", marks=pytest.mark.nightly),
    pytest.param("bounce-kill", "accept-explicit", marks=pytest.mark.nightly),
    pytest.param("bounce-stop", "slow", marks=pytest.mark.nightly)])
def test_fast_bounce(chaos_run, fault, workload):
    outcome = chaos_run(workload, fault=fault)
    assert_chaos_verdict(outcome, fault)
    bounce = next(f for f in outcome.faults if f.fault == fault)
    assert "started it again" in bounce.evidence and "after it (" in bounce.heal_evidence, outcome.summary()


@pytest.mark.parametrize("fault, workload", [  # a roll takes ~40-60 s (2-3 min a scenario): nightly only
    pytest.param("rolling-kill", "mix", marks=pytest.mark.nightly), pytest.param("rolling-restart", "accept-implicit", marks=pytest.mark.nightly),
    pytest.param("rolling-kill", "crash", marks=pytest.mark.nightly),
    pytest.param("rolling-restart", "slow", marks=pytest.mark.nightly)])
def test_rolling_restart(chaos_run, fault, workload):
    outcome = chaos_run(workload, fault=fault)
    assert_chaos_verdict(outcome, fault)
    roll = next(f for f in outcome.faults if f.fault == fault)
    assert roll.evidence.count("in sync after") == 3, outcome.summary()
