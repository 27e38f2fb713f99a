"""Fast unit tests of the checkers (no-loss, batch-order) and of check_safe/compose.

Histories are built by hand with `H`, a tiny builder that assigns `index` and
`time` the way `HistoryWriter` does; nothing here starts a process.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.checkers import Result, batch_order, check_safe, compose, no_loss, verdict_word
from harness.history.schema import Op

T = "t"  # topic used by every hand-built history


class H:
    """History builder: each method appends ops and returns what a test needs to refer to them."""

    def __init__(self) -> None:
        self.ops: list[Op] = []

    def add(self, process: str, type_: str, f: str, value: Any = None) -> Op:
        op = Op(len(self.ops), len(self.ops) * 1000, process, type_, f, value)
        self.ops.append(op)
        return op

    # produce -----------------------------------------------------------
    def produce_invoke(self, rid: str, partition: int | None = None, topic: str = T) -> Op:
        value = {"id": rid, "topic": topic}
        if partition is not None:
            value["partition"] = partition
        return self.add("producer-0", "invoke", "produce", value)

    def produce_ok(self, rid: str, partition: int, offset: int, topic: str = T) -> Op:
        return self.add("producer-0", "ok", "produce",
                        {"id": rid, "topic": topic, "partition": partition, "offset": offset})

    def produce(self, rid: str, partition: int, offset: int, topic: str = T) -> Op:
        self.produce_invoke(rid, partition, topic)
        return self.produce_ok(rid, partition, offset, topic)

    # consume -----------------------------------------------------------
    def poll(self, process: str, records: list[tuple[str, int, int]], topic: str = T) -> Op:
        """records: (id, partition, offset)."""
        return self.add(process, "ok", "poll", {"records": [
            {"id": rid, "topic": topic, "partition": p, "offset": o, "delivery_count": 1}
            for rid, p, o in records]})

    def ack(self, process: str, keys: list[tuple[int, int]], type_: str = "ACCEPT", topic: str = T) -> Op:
        """keys: (partition, offset)."""
        return self.add(process, "ok", "acknowledge", {"records": [
            {"topic": topic, "partition": p, "offset": o, "type": type_} for p, o in keys]})

    def commit_invoke(self, process: str) -> Op:
        return self.add(process, "invoke", "commit", {})

    def commit_ok(self, process: str, partitions: dict[int, str | None], topic: str = T) -> Op:
        """partitions: partition -> error (None for success)."""
        return self.add(process, "ok", "commit", {"results": [
            {"topic": topic, "partition": p, "error": e} for p, e in sorted(partitions.items())]})

    def commit_info(self, process: str) -> Op:
        return self.add(process, "info", "commit", {"error": "timed out"})

    def commit_fail(self, process: str) -> Op:
        return self.add(process, "fail", "commit", {"error": "coordinator not available"})

    def consume(self, process: str, records: list[tuple[str, int, int]]) -> Op:
        """poll, ACCEPT all, commit ok for every partition in the batch; returns the commit."""
        self.poll(process, records)
        self.ack(process, [(p, o) for _, p, o in records])
        self.commit_invoke(process)
        return self.commit_ok(process, {p: None for _, p, _ in records})


def kinds(result: Result) -> list[str]:
    return [a.kind for a in result.anomalies]


# --------------------------------------------------------------------- valid


def test_valid_history_passes_both_checkers_with_stats():
    h = H()
    h.produce("a", 0, 0)
    h.produce("b", 0, 1)
    h.produce("c", 1, 0)
    h.consume("consumer-0", [("a", 0, 0), ("c", 1, 0), ("b", 0, 1)])
    nl, bo = no_loss.check(h.ops), batch_order.check(h.ops)
    assert nl.valid is True and nl.anomalies == ()
    assert nl.stats == {"produced_ok": 3, "delivered": 3, "accepted": 3}
    assert bo.valid is True and bo.anomalies == ()
    assert bo.stats == {"batches": 1}
    assert compose([nl, bo]) is True
    assert verdict_word(compose([nl, bo])) == "PASS"


def test_failed_and_unknown_produces_are_not_required():
    h = H()
    h.produce("a", 0, 0)
    h.produce_invoke("b", 0)
    h.add("producer-0", "fail", "produce", {"id": "b", "topic": T, "error": "boom"})
    h.produce_invoke("c", 0)
    h.add("producer-0", "info", "produce", {"id": "c", "topic": T})
    h.consume("consumer-0", [("a", 0, 0)])
    assert no_loss.check(h.ops).valid is True


# ----------------------------------------------------------------- anomalies


def test_lost_record_produced_ok_never_delivered():
    h = H()
    prod_a = h.produce("a", 0, 0)
    h.produce("b", 0, 1)
    h.consume("consumer-0", [("b", 0, 1)])
    r = no_loss.check(h.ops)
    assert r.valid is False
    assert kinds(r) == ["lost"]
    assert r.anomalies[0].evidence == (prod_a.index,)
    assert r.anomalies[0].message.startswith("record a at ")
    assert r.stats == {"produced_ok": 2, "delivered": 1, "accepted": 1}


def test_not_accepted_when_commit_failed_for_the_partition():
    h = H()
    h.produce("a", 0, 0)
    h.produce("b", 1, 0)
    poll = h.poll("consumer-0", [("a", 0, 0), ("b", 1, 0)])
    h.ack("consumer-0", [(0, 0), (1, 0)])
    h.commit_invoke("consumer-0")
    h.commit_ok("consumer-0", {0: "INVALID_RECORD_STATE", 1: None})
    r = no_loss.check(h.ops)
    assert r.valid is False
    assert kinds(r) == ["not-accepted"]
    assert "(" + repr(T) + ", 0, 0)" in r.anomalies[0].message
    assert poll.index in r.anomalies[0].evidence
    assert r.stats["accepted"] == 1


def test_not_accepted_when_commit_outcome_is_info():
    h = H()
    h.produce("a", 0, 0)
    h.poll("consumer-0", [("a", 0, 0)])
    h.ack("consumer-0", [(0, 0)])
    h.commit_invoke("consumer-0")
    h.commit_info("consumer-0")
    # a later successful commit without new acks must not retroactively accept
    h.commit_invoke("consumer-0")
    h.commit_ok("consumer-0", {0: None})
    r = no_loss.check(h.ops)
    assert r.valid is False
    assert kinds(r) == ["not-accepted"]


def test_not_accepted_when_commit_op_failed():
    h = H()
    h.produce("a", 0, 0)
    h.poll("consumer-0", [("a", 0, 0)])
    h.ack("consumer-0", [(0, 0)])
    h.commit_invoke("consumer-0")
    h.commit_fail("consumer-0")
    assert kinds(no_loss.check(h.ops)) == ["not-accepted"]


@pytest.mark.parametrize("ack_type", ["RELEASE", "REJECT", "RENEW"])
def test_only_accept_acks_count(ack_type):
    h = H()
    h.produce("a", 0, 0)
    h.poll("consumer-0", [("a", 0, 0)])
    h.ack("consumer-0", [(0, 0)], ack_type)
    h.commit_invoke("consumer-0")
    h.commit_ok("consumer-0", {0: None})
    assert kinds(no_loss.check(h.ops)) == ["not-accepted"]


def test_acks_not_committed_before_next_poll_are_dropped():
    h = H()
    h.produce("a", 0, 0)
    h.produce("b", 0, 1)
    h.poll("consumer-0", [("a", 0, 0)])
    h.ack("consumer-0", [(0, 0)])
    h.poll("consumer-0", [("b", 0, 1)])  # polled again before committing "a"
    h.ack("consumer-0", [(0, 1)])
    h.commit_invoke("consumer-0")
    h.commit_ok("consumer-0", {0: None})
    r = no_loss.check(h.ops)
    assert r.valid is False
    assert kinds(r) == ["not-accepted"]
    assert "record a " in r.anomalies[0].message


def test_phantom_delivered_id_never_produced():
    h = H()
    h.produce("a", 0, 0)
    poll = h.poll("consumer-0", [("a", 0, 0), ("ghost", 0, 7)])
    h.ack("consumer-0", [(0, 0), (0, 7)])
    h.commit_invoke("consumer-0")
    h.commit_ok("consumer-0", {0: None})
    r = no_loss.check(h.ops)
    assert r.valid is False
    assert kinds(r) == ["phantom"]
    assert r.anomalies[0].evidence == (poll.index,)
    assert "ghost" in r.anomalies[0].message


def test_record_produced_with_unknown_outcome_is_not_a_phantom():
    h = H()
    h.produce("a", 0, 0)
    h.produce_invoke("b", 0)
    h.add("producer-0", "info", "produce", {"id": "b", "topic": T})
    h.consume("consumer-0", [("a", 0, 0), ("b", 0, 1)])
    assert no_loss.check(h.ops).valid is True


def test_phantom_without_any_acknowledged_produce_is_a_failure():
    h = H()
    h.produce_invoke("a", 0)
    h.add("producer-0", "info", "produce", {"id": "a", "topic": T})
    h.poll("consumer-0", [("ghost", 0, 0)])  # a definite violation: nobody ever produced "ghost"
    r = no_loss.check(h.ops)
    assert r.valid is False
    assert kinds(r) == ["phantom"]


def test_batch_order_violation_within_one_poll():
    h = H()
    h.produce("a", 0, 3)
    h.produce("b", 0, 5)
    poll = h.poll("consumer-0", [("b", 0, 5), ("a", 0, 3)])
    r = batch_order.check(h.ops)
    assert r.valid is False
    assert kinds(r) == ["batch-order"]
    a = r.anomalies[0]
    assert a.evidence == (poll.index,)
    assert a.detail == {"topic": T, "partition": 0, "previous": 5, "offset": 3}


def test_batch_order_duplicate_offset_in_one_poll_is_a_violation():
    h = H()
    h.poll("consumer-0", [("a", 0, 4), ("a", 0, 4)])
    assert batch_order.check(h.ops).valid is False


def test_batch_order_across_partitions_is_not_a_violation():
    h = H()
    h.poll("consumer-0", [("a", 0, 5), ("b", 1, 3), ("c", 0, 6), ("d", 1, 0)])
    r = batch_order.check(h.ops)
    # partition 1: 3 then 0 IS a violation; partition 0 vs 1 interleaving is not
    assert kinds(r) == ["batch-order"]
    assert r.anomalies[0].detail["partition"] == 1
    h2 = H()
    h2.poll("consumer-0", [("a", 0, 5), ("b", 1, 3), ("c", 0, 6), ("d", 1, 4)])
    assert batch_order.check(h2.ops).valid is True


def test_same_partition_number_of_different_topics_is_not_a_violation():
    h = H()
    h.add("consumer-0", "ok", "poll", {"records": [
        {"id": "a", "topic": "x", "partition": 0, "offset": 5, "delivery_count": 1},
        {"id": "b", "topic": "y", "partition": 0, "offset": 1, "delivery_count": 1}]})
    assert batch_order.check(h.ops).valid is True


def test_redelivery_in_later_poll_with_lower_offset_is_not_a_violation():
    h = H()
    h.produce("a", 0, 3)
    h.produce("b", 0, 5)
    h.poll("consumer-0", [("a", 0, 3), ("b", 0, 5)])
    h.ack("consumer-0", [(0, 3)], "RELEASE")
    h.ack("consumer-0", [(0, 5)])
    h.commit_invoke("consumer-0")
    h.commit_ok("consumer-0", {0: None})
    h.consume("consumer-1", [("a", 0, 3)])  # redelivered, lower offset than the last one seen
    bo = batch_order.check(h.ops)
    assert bo.valid is True and bo.stats == {"batches": 2}
    nl = no_loss.check(h.ops)
    assert nl.valid is True
    assert nl.stats == {"produced_ok": 2, "delivered": 2, "accepted": 2}


def test_commit_by_one_consumer_does_not_accept_records_polled_by_another():
    h = H()
    h.produce("a", 0, 0)
    h.produce("b", 0, 1)
    h.poll("consumer-B", [("a", 0, 0)])
    h.ack("consumer-B", [(0, 0)])
    h.poll("consumer-A", [("b", 0, 1)])
    h.ack("consumer-A", [(0, 1)])
    h.commit_invoke("consumer-A")
    h.commit_ok("consumer-A", {0: None})  # same share-partition, but A's commit
    r = no_loss.check(h.ops)
    assert r.valid is False
    assert kinds(r) == ["not-accepted"]
    assert "record a " in r.anomalies[0].message
    assert set(no_loss.accepted_records(h.ops)) == {(T, 0, 1)}


def test_accepted_records_maps_to_the_first_accepting_commit():
    h = H()
    h.produce("a", 0, 0)
    commit = h.consume("consumer-0", [("a", 0, 0)])
    h.consume("consumer-1", [("a", 0, 0)])
    assert no_loss.accepted_records(h.ops) == {(T, 0, 0): commit.index}


# --------------------------------------------------------- empty and unknown


def test_empty_history_is_unknown_for_both():
    for checker in (no_loss.check, batch_order.check):
        r = checker([])
        assert r.valid == "unknown" and r.valid is not True
        assert r.reason
    assert compose([no_loss.check([]), batch_order.check([])]) == "unknown"


def test_only_produces_no_polls_batch_order_unknown_no_loss_false():
    h = H()
    h.produce("a", 0, 0)
    assert batch_order.check(h.ops).valid == "unknown"
    assert no_loss.check(h.ops).valid is False


def test_only_empty_polls_is_unknown_for_batch_order():
    h = H()
    h.poll("consumer-0", [])
    h.poll("consumer-1", [])
    assert batch_order.check(h.ops).valid == "unknown"


def test_crashing_checker_is_unknown_through_check_safe():
    def boom(history):
        raise RuntimeError("kaput")

    r = check_safe("boom", boom, [])
    assert r.valid == "unknown"
    assert r.checker == "boom"
    assert "RuntimeError" in r.reason and "kaput" in r.reason


def test_checker_crashing_on_malformed_op_is_unknown():
    h = H()
    h.produce("a", 0, 0)
    h.add("consumer-0", "ok", "poll", None)  # value missing: both checkers hit a TypeError
    for name, fn in (("no-loss", no_loss.check), ("batch-order", batch_order.check)):
        r = check_safe(name, fn, h.ops)
        assert r.valid == "unknown" and r.checker == name


def test_check_safe_rejects_invalid_verdict():
    r = check_safe("weird", lambda h: Result("weird", "maybe"), [])  # type: ignore[arg-type]
    assert r.valid == "unknown" and "invalid verdict" in r.reason


def test_check_safe_passes_valid_results_through():
    res = Result("x", True, stats={"n": 1})
    assert check_safe("x", lambda h: res, []) is res


def test_check_safe_rejects_integer_verdicts():
    r0 = check_safe("zero", lambda h: Result("zero", 0), [])  # type: ignore[arg-type]
    assert r0.valid == "unknown"
    assert compose([r0]) is not True


@pytest.mark.parametrize("verdicts, expected", [
    ([], "unknown"),
    ([True], True),
    ([True, True], True),
    (["unknown"], "unknown"),
    ([True, "unknown"], "unknown"),
    (["unknown", True], "unknown"),
    ([False], False),
    ([True, False], False),
    (["unknown", False], False),
    ([False, "unknown", True], False),
])
def test_compose_priorities(verdicts, expected):
    got = compose([Result(f"c{i}", v) for i, v in enumerate(verdicts)])
    assert got == expected and type(got) is type(expected)


def test_verdict_words():
    assert [verdict_word(v) for v in (True, False, "unknown")] == ["PASS", "FAIL", "UNKNOWN"]


# ------------------------------------------------------------------ property


@st.composite
def valid_histories(draw):
    """Random produces on random partitions, consumed in batches by random consumers.

    Each record is delivered exactly once; within a batch offsets of a partition increase.
    Returns (ops, commit_indexes, batch_keys) where batch_keys[i] are the keys committed
    by the commit at commit_indexes[i].
    """
    n = draw(st.integers(1, 30))
    parts = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
    next_offset: dict[int, int] = {}
    records = []
    for i, p in enumerate(parts):
        o = next_offset.get(p, 0)
        next_offset[p] = o + draw(st.integers(1, 3))  # offsets may have gaps
        records.append((f"r{i}", p, o))
    # split the records (shuffled) into batches; sort each batch by offset within partition
    order = draw(st.permutations(range(n)))
    cuts = sorted(set(draw(st.lists(st.integers(1, max(1, n - 1)), max_size=n))) | {n}) if n > 1 else [1]
    batches, start = [], 0
    for c in cuts:
        if c > start:
            chosen = [records[i] for i in order[start:c]]
            # keep partitions interleaved in drawn order, but each partition's offsets increasing
            by_part: dict[int, list] = {}
            for rec in chosen:
                by_part.setdefault(rec[1], []).append(rec)
            for lst in by_part.values():
                lst.sort(key=lambda r: r[2])
            iters = {p: iter(lst) for p, lst in by_part.items()}
            batches.append([next(iters[rec[1]]) for rec in chosen])
            start = c
    consumers = [f"consumer-{draw(st.integers(0, 2))}" for _ in batches]
    # per-consumer op sequences, then a random interleaving preserving per-consumer order
    seqs: dict[str, list[tuple]] = {}
    for b, (proc, batch) in enumerate(zip(consumers, batches)):
        seqs.setdefault(proc, []).extend([("poll", proc, batch, b), ("ack", proc, batch, b),
                                          ("cinv", proc, batch, b), ("cok", proc, batch, b)])
    h = H()
    for rid, p, o in records:
        h.produce(rid, p, o)
    commit_of_batch: dict[int, int] = {}
    pos = {proc: 0 for proc in seqs}
    while any(pos[p] < len(seqs[p]) for p in seqs):
        live = sorted(p for p in seqs if pos[p] < len(seqs[p]))
        proc = draw(st.sampled_from(live))
        kind, _, batch, b = seqs[proc][pos[proc]]
        pos[proc] += 1
        if kind == "poll":
            h.poll(proc, batch)
        elif kind == "ack":
            h.ack(proc, [(p, o) for _, p, o in batch])
        elif kind == "cinv":
            h.commit_invoke(proc)
        else:
            commit_of_batch[b] = h.commit_ok(proc, {p: None for _, p, _ in batch}).index
    batch_keys = {b: {(T, p, o) for _, p, o in batches[b]} for b in commit_of_batch}
    return h.ops, commit_of_batch, batch_keys


def _reindex(ops: list[Op]) -> list[Op]:
    return [Op(i, op.time, op.process, op.type, op.f, op.value) for i, op in enumerate(ops)]


@settings(max_examples=150, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=valid_histories(), st_pick=st.data())
def test_property_valid_histories_pass_and_a_missing_commit_fails(data, st_pick):
    ops, commit_of_batch, batch_keys = data
    nl, bo = no_loss.check(ops), batch_order.check(ops)
    assert nl.valid is True, nl.anomalies
    assert bo.valid is True, bo.anomalies
    assert nl.stats["produced_ok"] == nl.stats["delivered"] == nl.stats["accepted"]
    assert bo.stats["batches"] == len(commit_of_batch)

    b = st_pick.draw(st.sampled_from(sorted(commit_of_batch)), label="batch whose commit is deleted")
    dropped = commit_of_batch[b]
    broken = _reindex([op for op in ops if op.index != dropped])
    r = no_loss.check(broken)
    assert r.valid is False
    assert {a.kind for a in r.anomalies} == {"not-accepted"}
    assert r.stats["accepted"] == nl.stats["accepted"] - len(batch_keys[b])
    assert batch_order.check(broken).valid is True  # order is unaffected by commits
