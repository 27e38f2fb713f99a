"""The dead-letter queue's accounting under no-loss (KIP-1191, `harness.checkers.dead_letter`) on
hand-written histories: every rejected and limit-archived record is in the DLQ read with the context
its cause gives, no accepted record is there, and a group with a DLQ but no read of it is unknown.
Also the `dead-letters` op through the Parquet event rows and the spec's release check."""

from __future__ import annotations

import pytest

from harness.checkers import no_loss
from harness.checkers.registry import property_result
from harness.errors import HarnessError
from harness.history.events import EventTable
from harness.kafka.dead_letter import MESSAGE_LIMIT, MESSAGE_REJECTED, parse_dead_letter, writes_pending
from harness.settings import reproduce_command
from harness.spec import RunSpec
from tests.support.builders import H, T, kinds

DLQ = "dlq." + T


def dlq_history(limit: int = 2) -> H:
    """a accepted, b rejected, c released until archived at the limit (lock 1000 ms, then a later event)."""
    h = H(limit=limit)
    h.ops[0].value["dead_letter_topic"] = DLQ
    for rid, o in (("a", 0), ("b", 1), ("c", 2)):
        h.produce(rid, 0, o)
    h.consume("consumer-0", [("a", 0, 0)])
    h.consume("consumer-0", [("b", 0, 1)], ack="REJECT")
    for count in range(1, limit + 1):
        h.consume("consumer-0", [("c", 0, 2, count)], ack="RELEASE")
    h.add("consumer-0", "invoke", "close", {}, dt_ms=1500)
    h.add("consumer-0", "ok", "close", {})
    return h


def read(h: H, entries: list[tuple[int, int, str]], group: str = "g") -> None:
    h.add("admin-dlq", "invoke", "dead-letters", {"group": "g", "dlq_topic": DLQ})
    h.add("admin-dlq", "ok", "dead-letters", {"group": "g", "dlq_topic": DLQ, "records": [
        {"topic": T, "partition": 0, "offset": o, "group": group, "delivery_count": c, "message": m,
         "key": None, "value": None, "dlq_partition": 0, "dlq_offset": i} for i, (o, c, m) in enumerate(entries)]})


def test_every_rejected_and_limit_archived_record_accounted_passes():
    h = dlq_history()
    read(h, [(1, 1, MESSAGE_REJECTED), (2, 2, MESSAGE_LIMIT)])
    r = property_result(no_loss.NAME, h.ops)
    assert r.valid is True, r
    assert r.stats["dead_letter_queue"]["accounted"] == 2


def test_a_duplicate_dead_letter_is_allowed_and_counted():
    h = dlq_history()
    read(h, [(1, 1, MESSAGE_REJECTED), (1, 1, MESSAGE_REJECTED), (2, 2, MESSAGE_LIMIT)])
    r = property_result(no_loss.NAME, h.ops)
    assert r.valid is True and r.stats["dead_letter_queue"]["duplicates"] == 1, r


@pytest.mark.parametrize("entries, missing", [([(2, 2, MESSAGE_LIMIT)], 1), ([(1, 1, MESSAGE_REJECTED)], 2), ([], 1)])
def test_a_rejected_or_archived_record_missing_from_the_dlq_fails(entries, missing):
    h = dlq_history()
    read(h, entries)
    r = property_result(no_loss.NAME, h.ops)
    assert r.valid is False and "dlq-missing" in kinds(r), r
    assert any(a.detail.get("offset") == missing for a in r.anomalies if a.kind == "dlq-missing")


def test_an_accepted_record_in_the_dlq_fails():
    h = dlq_history()
    read(h, [(0, 1, MESSAGE_REJECTED), (1, 1, MESSAGE_REJECTED), (2, 2, MESSAGE_LIMIT)])
    assert kinds(property_result(no_loss.NAME, h.ops)) == ["dlq-accepted"]


@pytest.mark.parametrize("fault", [True, False])
def test_a_record_accepted_after_a_leader_change_that_the_old_leader_archived_at_the_limit(fault):
    """Seen in CI (cold restart): c delivered at the limit, its ACCEPT failed while leadership moved, the
    old leader archived it to the DLQ when its lock ran out, the new leader delivered it again (the same
    count) and it was accepted. Only a leader change overlapping its life excuses it."""
    h = dlq_history()
    if fault:
        spec = {"id": "f1", "fault": "cold-restart", "targets": ["n1"], "effects": ["leader-change"]}
        h.add("nemesis", "invoke", "fault-start", spec)
        h.add("nemesis", "ok", "fault-heal", spec)
    h.consume("consumer-1", [("c", 0, 2, 2)])  # delivered again at the limit, accepted
    read(h, [(1, 1, MESSAGE_REJECTED), (2, 2, MESSAGE_LIMIT)])
    r = property_result(no_loss.NAME, h.ops)
    if fault:
        assert r.valid is True and r.allowances == {"dead-lettered-by-lost-leader": 1}, r
    else:
        assert kinds(r) == ["dlq-accepted"]


@pytest.mark.parametrize("in_dlq", [False, True])
def test_a_record_at_the_limit_whose_accept_had_no_outcome_when_its_lock_ran_out_is_not_judged(in_dlq):
    """The explorer's 4.4.0 dlq-missing (under disk-fail): d and e ACCEPTed by commitAsync, e delivered at the
    limit, one callback names both 5 s later, after e's lock ran out: d's success moves the replay on past e
    before e's own result is read, so e leaves archived with its ACCEPT of no outcome yet. Accepted or archived,
    the DLQ may hold e or not: neither dlq-missing nor dlq-accepted. With no ACCEPT sent, e is expected there."""
    for accept in (True, False):
        h = dlq_history()
        h.produce("d", 0, 3)
        h.produce("e", 0, 4)
        h.poll("consumer-1", [("e", 0, 4, 1)])
        h.ack("consumer-1", [(0, 4)], "RELEASE")
        h.commit("consumer-1", {0: None}, offsets={0: [4]})
        h.poll("consumer-1", [("d", 0, 3, 1), ("e", 0, 4, 2)])
        h.ack("consumer-1", [(0, 3), (0, 4)] if accept else [(0, 3)], "ACCEPT")
        h.add("consumer-1", "invoke", "commit", {"async": True})
        h.add("consumer-1", "ok", "callback", {"partitions": [{"topic": T, "partition": 0,
                                                               "offsets": [3, 4] if accept else [3]}], "error": None},
              dt_ms=5000)
        read(h, [(1, 1, MESSAGE_REJECTED), (2, 2, MESSAGE_LIMIT)] + ([(4, 2, MESSAGE_LIMIT)] if in_dlq else []))
        r = property_result(no_loss.NAME, h.ops)
        if accept or in_dlq:
            assert r.valid is True, (accept, r)
        else:
            assert kinds(r) == ["dlq-missing"], r


@pytest.mark.parametrize("entry, group", [((1, 1, MESSAGE_LIMIT), "g"), ((1, 0, MESSAGE_REJECTED), "g"),
                                          ((1, 1, MESSAGE_REJECTED), "other"), ((1, 1, "gone"), "g")])
def test_a_dead_letter_with_the_wrong_context_fails(entry, group):
    h = dlq_history()
    read(h, [entry, (2, 2, MESSAGE_LIMIT)], group=group)
    found = kinds(property_result(no_loss.NAME, h.ops))
    assert set(found) == {"dlq-wrong-context"} and len(found) == (2 if group != "g" else 1), found


def test_a_limit_archived_record_named_rejected_fails():
    h = dlq_history()
    read(h, [(1, 1, MESSAGE_REJECTED), (2, 2, MESSAGE_REJECTED)])
    assert kinds(property_result(no_loss.NAME, h.ops)) == ["dlq-wrong-context"]


def test_a_group_with_a_dlq_and_no_read_is_unknown_never_a_pass():
    h = dlq_history()
    r = property_result(no_loss.NAME, h.ops)
    assert r.valid == "unknown" and DLQ in r.reason, r
    h.add("admin-dlq", "invoke", "dead-letters", {"group": "g", "dlq_topic": DLQ})
    h.add("admin-dlq", "fail", "dead-letters", {"group": "g", "dlq_topic": DLQ, "error": "no topic"})
    r = property_result(no_loss.NAME, h.ops)
    assert r.valid == "unknown" and "no topic" in r.reason, r


def test_a_history_without_a_dlq_ignores_the_accounting():
    h = dlq_history()
    del h.ops[0].value["dead_letter_topic"]
    r = property_result(no_loss.NAME, h.ops)
    assert r.valid is True and "dead_letter_queue" not in r.stats


def test_the_parquet_rows_of_a_read_give_the_same_verdicts(tmp_path):
    """The read is flattened to its own row and one row per share-partition (each replay slot judges
    its own); the streamed Parquet replay agrees with the operations' replay, also on a failure."""
    from harness.checkers.replay import PROPERTIES, replay_parquet
    for entries, valid in (([(1, 1, MESSAGE_REJECTED), (2, 2, MESSAGE_LIMIT)], True), ([(2, 2, MESSAGE_LIMIT)], False)):
        h = dlq_history()
        read(h, entries)
        path = EventTable.from_ops(h.ops).write_parquet(tmp_path / f"h-{valid}.parquet")
        obs = replay_parquet(path)
        assert (not obs.anomalies["no-loss"]) is valid, obs.anomalies["no-loss"]
        assert [a.kind for a in obs.anomalies["no-loss"]] == kinds(property_result(no_loss.NAME, h.ops))
        assert set(PROPERTIES) >= set(obs.anomalies)


def test_parse_dead_letter_reads_the_context_headers():
    record = {"partition": 1, "offset": 7, "key": None, "value": "v", "headers": {
        "__dlq.errors.topic": "t", "__dlq.errors.partition": "2", "__dlq.errors.offset": "40",
        "__dlq.errors.group": "g", "__dlq.errors.delivery.count": "3", "__dlq.errors.message": MESSAGE_LIMIT}}
    parsed = parse_dead_letter(record)
    assert (parsed["topic"], parsed["partition"], parsed["offset"], parsed["delivery_count"]) == ("t", 2, 40, 3)
    assert (parsed["dlq_partition"], parsed["dlq_offset"], parsed["value"]) == (1, 7, "v")
    assert parse_dead_letter({"headers": {"__dlq.errors.offset": "x"}})["offset"] is None


def test_writes_pending_sees_a_record_archiving():
    assert writes_pending([{"batches": [[0, 3, 4, 1], [4, 4, 3, 2]]}])
    assert not writes_pending([{"batches": [[0, 3, 4, 1]]}, {"batches": []}])


def test_dead_letter_needs_a_release_with_a_dlq():
    RunSpec(kafka_version="4.4.0", dead_letter="copy").validate()
    with pytest.raises(HarnessError, match="needs Kafka 4.4.0 or newer"):
        RunSpec(kafka_version="4.3.1", dead_letter="headers").validate()
    with pytest.raises(HarnessError, match="invalid dead-letter"):
        RunSpec(dead_letter="on").validate()
    assert "--dead-letter headers" in reproduce_command(RunSpec(dead_letter="headers"))


def test_a_record_still_archiving_at_the_read_is_pending_not_missing(tmp_path):
    """The share coordinator still held it ARCHIVING (its DLQ write under way) when the DLQ was read:
    counted as pending, not judged missing; the Parquet rows carry the ranges too."""
    from harness.checkers.replay import replay_parquet
    h = dlq_history()
    read(h, [(1, 1, MESSAGE_REJECTED)])
    h.ops[-1].value["archiving"] = [[T, 0, 2, 2]]
    r = property_result(no_loss.NAME, h.ops)
    assert r.valid is True and r.stats["dead_letter_queue"]["pending_at_the_read"] == 1, r
    obs = replay_parquet(EventTable.from_ops(h.ops).write_parquet(tmp_path / "h.parquet"))
    assert not obs.anomalies["no-loss"]
    h.ops[-1].value["archiving"] = [[T, 0, 3, 9]]  # another range: offset 2 is missing
    assert kinds(property_result(no_loss.NAME, h.ops)) == ["dlq-missing"]


@pytest.mark.parametrize("in_dlq", [True, False])
def test_a_reject_whose_result_was_a_transport_failure_is_not_accepted_by_the_state_topic(in_dlq):
    """CI's rolling-kill run: a REJECT's commit failed (`_TRANSPORT`, the broker was killed), the record
    was never delivered again, and the state topic's start moved past it. It reached the broker after all
    as a REJECT or never did (archived otherwise): in the DLQ or not, it is no accepted record there."""
    h = H()
    h.ops[0].value["dead_letter_topic"] = DLQ
    h.produce("a", 0, 0)
    h.produce("b", 0, 1)
    h.poll("consumer-0", [("a", 0, 0), ("b", 0, 1)])
    h.ack("consumer-0", [(0, 0)], "ACCEPT")
    h.ack("consumer-0", [(0, 1)], "REJECT")
    h.commit("consumer-0", {0: "_TRANSPORT: Local: Broker transport failure"}, offsets={0: [0, 1]})
    h.add("consumer-0", "invoke", "close", {})
    h.add("consumer-0", "ok", "close", {})
    h.add("admin", "invoke", "share-state", {"group": "g"})
    h.add("admin", "ok", "share-state", {"group": "g", "partitions": [
        {"topic": T, "partition": 0, "start_offset": 2, "batches": []}]})
    read(h, [(1, 1, MESSAGE_REJECTED)] if in_dlq else [])
    r = property_result(no_loss.NAME, h.ops)
    assert r.valid is True, kinds(r)
    if in_dlq:  # the accepted one in the DLQ is still an anomaly
        h2 = H()
        h2.ops[:] = h.ops[:-2]
        read(h2, [(0, 1, MESSAGE_REJECTED), (1, 1, MESSAGE_REJECTED)])
        assert "dlq-accepted" in kinds(property_result(no_loss.NAME, h2.ops))


def test_an_accept_never_sent_before_the_consumer_was_killed_at_the_limit_is_no_accepted_record():
    """The explorer's 4.4.0 run (issue 48): a record delivered at the limit (2), ACCEPTed by an explicit consumer
    that was killed before it sent the acknowledgement (no commit, no result); its lock ran out, the broker archived
    it at the limit and wrote it to the DLQ, and the state topic holds it Archived. It is not an accepted record in
    the DLQ; held Acknowledged, it would be."""
    def history(state: int) -> H:
        h = H(limit=2)
        h.ops[0].value["dead_letter_topic"] = DLQ
        h.produce("a", 0, 0)
        h.consume("consumer-0", [("a", 0, 0, 1)], ack="RELEASE")
        h.poll("consumer-1", [("a", 0, 0, 2)])
        h.ack("consumer-1", [(0, 0)], "ACCEPT")
        h.add("nemesis", "invoke", "crash", {"process": "consumer-1"})
        h.add("nemesis", "info", "crash", {"process": "consumer-1"}, dt_ms=1500)
        h.add("admin", "invoke", "share-state", {"group": "g"})
        h.add("admin", "ok", "share-state", {"group": "g", "partitions": [
            {"topic": T, "partition": 0, "start_offset": 0, "batches": [[0, 0, state, 2]]}]})
        read(h, [(0, 2, MESSAGE_LIMIT)])
        return h
    assert "dlq-accepted" not in kinds(property_result(no_loss.NAME, history(4).ops))  # Archived
    assert "dlq-accepted" in kinds(property_result(no_loss.NAME, history(2).ops))  # Acknowledged: it was accepted after all
