"""Fast tests of the workloads' pure parts: seeded behaviours, the drain's settled set, scenario schedules."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import pytest

from harness.clients.behaviours import BEHAVIOURS, ack_type, explicit, holds, is_poison
from harness.errors import HarnessError
from harness.faults import CATALOGUE, parse_faults
from harness.faults.schedule import TIMINGS, generate
from harness.history.schema import Op
from harness.run.drain import settlement
from harness.settings import reproduce_command
from harness.spec import RunSpec
from harness.workloads import WORKLOADS, apply_workload


def test_behaviours_decide_from_seed_record_and_delivery_only():
    ids = [f"7-{i}" for i in range(4000)]
    mix = Counter(ack_type("mix", 7, rid, 1) for rid in ids)
    assert mix["ACCEPT"] > mix["RELEASE"] > mix["REJECT"] > 200  # about 70 / 20 / 10 %
    assert [ack_type("mix", 7, rid, 1) for rid in ids] == [ack_type("mix", 7, rid, 1) for rid in ids]
    assert [ack_type("mix", 7, rid, 1) for rid in ids] != [ack_type("mix", 8, rid, 1) for rid in ids]
    poison = [rid for rid in ids if is_poison(7, rid)]
    assert 250 < len(poison) < 550
    assert all(ack_type("poison", 7, rid, d) == "RELEASE" for rid in poison for d in (1, 2, 3))
    assert all(ack_type("poison", 7, rid, 1) == "ACCEPT" for rid in ids if rid not in poison)
    held = [rid for rid in ids if holds("slow", 7, rid, 1)]
    assert 600 < len(held) < 1000 and not any(holds("slow", 7, rid, 2) for rid in held)
    assert not any(holds(b, 7, rid, 1) for b in BEHAVIOURS if b != "slow" for rid in ids[:200])
    assert {b for b in BEHAVIOURS if not explicit(b)} == {"accept-implicit"}
    assert all(ack_type(b, 7, rid, 1) == "ACCEPT" for b in ("accept-implicit", "accept-explicit", "slow")
               for rid in ids[:200])


def _ops(*rows):
    return [Op(i, i, process, type_, f, value) for i, (process, type_, f, value) in enumerate(rows)]


def _poll(process, offset, count):
    return (process, "ok", "poll", {"records": [{"id": f"r{offset}", "topic": "t", "partition": 0,
                                                  "offset": offset, "delivery_count": count}]})


def _ack(process, offset, type_):
    return (process, "ok", "acknowledge", {"records": [{"topic": "t", "partition": 0, "offset": offset,
                                                         "type": type_}]})


def _commit(process, error=None):
    return (process, "ok", "commit", {"results": [{"topic": "t", "partition": 0, "error": error}]})


def test_settlement_counts_reject_and_release_at_the_limit_but_not_earlier_releases():
    ops = _ops(("harness", "ok", "config", {"delivery_count_limit": 3}),
               _poll("c0", 0, 1), _ack("c0", 0, "REJECT"), _commit("c0"),
               _poll("c0", 1, 2), _ack("c0", 1, "RELEASE"), _commit("c0"),
               _poll("c1", 2, 3), _ack("c1", 2, "RELEASE"), _commit("c1"),
               _poll("c1", 3, 1), _ack("c1", 3, "ACCEPT"), _commit("c1", "INVALID_RECORD_STATE"),
               _poll("c2", 4, 1), _ack("c2", 4, "ACCEPT"), ("nemesis", "info", "crash", {"process": "c2"}))
    # offset 3's ACCEPT got an error for its partition: settled only if the broker applied it, which the
    # durable read tells (the drain first gives it a lock duration to come back)
    sure, maybe = settlement(ops)
    assert sure == {("t", 0, 0), ("t", 0, 2)} and set(maybe) == {("t", 0, 3), ("t", 0, 4)}


def _callback(process, offset, error=None):
    return (process, "ok", "callback", {"partitions": [{"topic": "t", "partition": 0, "offsets": [offset]}],
                                        "error": error})


def test_settlement_takes_an_acknowledgements_own_result_from_its_callback():
    # The callback may fail an acknowledgement whose commit reports no error for the partition (the
    # acknowledgement went out earlier, with a fetch): the replay takes that failure, so the drain must
    # not call the record settled for sure (seen once in CI: the drain ended, the record never came back).
    ops = _ops(_poll("c0", 0, 1), _ack("c0", 0, "ACCEPT"), _callback("c0", 0, "INVALID_SHARE_SESSION_EPOCH"),
               _commit("c0"),
               _poll("c0", 1, 1), _ack("c0", 1, "ACCEPT"), _callback("c0", 1), _commit("c0", "NOT_LEADER_OR_FOLLOWER"),
               _poll("c0", 2, 1), _ack("c0", 2, "ACCEPT"), _commit("c0"))
    sure, maybe = settlement(ops)
    assert sure == {("t", 0, 1), ("t", 0, 2)} and set(maybe) == {("t", 0, 0)}
    assert maybe[("t", 0, 0)] == 2  # the callback's time


def test_drain_waits_a_session_timeout_after_the_last_crash_for_records_to_come_back():
    from harness.run.drain import all_settled as _all_settled
    ops = _ops(("producer", "ok", "produce", {"topic": "t", "partition": 0, "offset": 4, "id": "r4"}),
               _poll("c0", 4, 1), _ack("c0", 4, "ACCEPT"), _callback("c0", 4, "INVALID_RECORD_STATE"),
               ("nemesis", "info", "crash", {"process": "c1"}))
    failed, crash_time = ops[3].time, ops[-1].time
    # the lock has expired, but the crashed member may still hold the partition: wait for the group to drop it
    assert not _all_settled(ops, wait_ns=1000, now_ns=failed + 1000, rejoin_ns=5000)
    assert not _all_settled(ops, wait_ns=1000, now_ns=crash_time + 4999, rejoin_ns=5000)
    assert _all_settled(ops, wait_ns=1000, now_ns=crash_time + 5000, rejoin_ns=5000)
    assert _all_settled(ops[:4], wait_ns=1000, now_ns=failed + 1000, rejoin_ns=5000)  # no crash: the lock only
    settled = _ops(("producer", "ok", "produce", {"topic": "t", "partition": 0, "offset": 4, "id": "r4"}),
                   _poll("c0", 4, 1), _ack("c0", 4, "ACCEPT"), _commit("c0"), ("nemesis", "info", "crash", {"process": "c1"}))
    assert _all_settled(settled, wait_ns=1000, now_ns=settled[-1].time, rejoin_ns=5000)  # nothing in doubt: no wait


def test_once_mode_runs_each_fault_once_and_events_fit_the_rules():
    profile = TIMINGS["ci"]
    once = generate(("leader-kill",), 5, profile, mode="once")
    assert [s.fault for s in once] == ["leader-kill"] and once[0].at < profile.phase * 2 / 3
    assert once == generate(("leader-kill",), 5, profile, mode="once")
    with_events = generate(("truncate",), 5, profile, mode="once", events=("consumer-kill",))
    assert [s.fault for s in with_events].count("truncate") == 1
    assert [s.fault for s in with_events].count("consumer-kill") >= 1
    for s in with_events:  # nothing overlaps an exclusive fault
        others = [o for o in with_events if o is not s and o.at < s.at + s.duration and s.at < o.at + o.duration]
        assert not (others and CATALOGUE[s.fault].exclusive), (s, others)
    assert generate((), 5, profile, events=("consumer-join",))
    with pytest.raises(HarnessError, match="fault mode"):
        generate(("leader-kill",), 5, profile, mode="sometimes")


def test_workloads_set_behaviour_shape_and_limits_and_reject_unknown_names():
    spec = apply_workload(RunSpec(), "wide")
    assert (spec.consumers, spec.topic_partitions, spec.behaviour) == (5, 2, "accept-implicit")
    assert spec.lock_duration_ms and spec.delivery_count_limit
    assert apply_workload(RunSpec(), "crash").workload_events == ("consumer-kill",)
    assert all(w.behaviour in BEHAVIOURS for w in WORKLOADS.values())
    assert all(set(w.events) <= set(parse_faults("consumer")) for w in WORKLOADS.values())
    assert "--workload poison" in reproduce_command(apply_workload(RunSpec(), "poison").validate())
    with pytest.raises(HarnessError, match="invalid workload 'nope'.*accept-implicit"):
        apply_workload(RunSpec(), "nope")
    with pytest.raises(HarnessError, match="fault-mode"):
        replace(RunSpec(), fault_mode="sometimes").validate()


def _run_dir(root, name, seed, valid, allowances=None, applied=True):
    import json
    run = root / f"{name}-{seed}"
    run.mkdir()
    (run / "spec.json").write_text(json.dumps({"spec": {"name": name.format(seed=seed), "seed": seed}}))
    (run / "verdict.json").write_text(json.dumps({"valid": valid, "faults": [{"applied": applied}], "results": [
        {"checker": "no-loss", "valid": valid, "allowances": allowances or {}}]}))


def test_tally_groups_seeds_of_a_scenario_and_counts_allowances_and_non_passes(tmp_path):
    from harness.cli import main
    from harness.report.tally import render, tally
    _run_dir(tmp_path, "test_x[s{seed}-leader-kill-mix]", 1, True, {"ack-lost-with-consumer": 2})
    _run_dir(tmp_path, "test_x[s{seed}-leader-kill-mix]", 2, True, {"ack-lost-with-consumer": 1})
    _run_dir(tmp_path, "test_x[s{seed}-leader-kill-mix]", 3, None, applied=False)
    rows = tally([tmp_path])
    row = rows["test_x[leader-kill-mix]"]
    assert (row["runs"], row["pass"], row["unknown"], row["not_applied"]) == (3, 2, 1, 1)
    assert row["allowances"] == {"ack-lost-with-consumer": 3} and sorted(row["seeds"]) == [1, 2, 3]
    assert "not a pass" in render(rows)
    assert main(["tally", str(tmp_path)]) == 3  # an unknown run (a fault not applied): not a pass
    assert main(["tally", str(tmp_path / "missing")]) == 2


def test_drain_gives_an_acknowledgement_of_unknown_outcome_a_lock_duration_to_come_back():
    from harness.run.drain import all_settled as _all_settled
    ops = _ops(("producer", "ok", "produce", {"topic": "t", "partition": 0, "offset": 4, "id": "r4"}),
               _poll("c2", 4, 1), _ack("c2", 4, "ACCEPT"), ("nemesis", "info", "crash", {"process": "c2"}))
    crash_time = ops[-1].time
    assert not _all_settled(ops, wait_ns=1000, now_ns=crash_time + 999)
    assert _all_settled(ops, wait_ns=1000, now_ns=crash_time + 1000)
    accepted = ops + [Op(10, crash_time + 1, "c0", "ok", "poll", {"records": [
        {"id": "r4", "topic": "t", "partition": 0, "offset": 4, "delivery_count": 2}]}),
        Op(11, crash_time + 2, "c0", "ok", "acknowledge", {"records": [
            {"topic": "t", "partition": 0, "offset": 4, "type": "ACCEPT"}]}),
        Op(12, crash_time + 3, "c0", "ok", "commit", {"results": [{"topic": "t", "partition": 0, "error": None}]})]
    assert _all_settled(accepted, wait_ns=1000, now_ns=crash_time + 3)  # delivered again and accepted: sure


def test_drain_places_a_record_acknowledged_without_an_offset_by_its_delivery():
    from harness.run.drain import all_settled as _all_settled
    produced = ("producer", "ok", "produce", {"topic": "t", "partition": 0, "offset": -1, "id": "r4"})
    assert not _all_settled(_ops(produced))  # never delivered: not settled
    assert not _all_settled(_ops(produced, _poll("c0", 4, 1)))
    assert _all_settled(_ops(produced, _poll("c0", 4, 1), _ack("c0", 4, "ACCEPT"), _commit("c0")))


def test_drain_does_not_wait_for_records_the_log_lost_to_a_truncation():
    from harness.run.drain import all_settled as _all_settled
    produced = ("producer", "ok", "produce", {"topic": "t", "partition": 0, "offset": 4, "id": "r4"})
    truncated = ("nemesis", "ok", "truncated", {"id": "truncate-unclean-1", "topic": "t", "partition": 0,
                                                "unclean": True, "records": [{"offset": 4, "id": "r4"}]})
    assert not _all_settled(_ops(produced))
    assert _all_settled(_ops(produced, truncated))
    reused = ("producer", "ok", "produce", {"topic": "t", "partition": 0, "offset": 4, "id": "r9"})
    assert not _all_settled(_ops(produced, truncated, reused))  # the record now at that offset must settle
