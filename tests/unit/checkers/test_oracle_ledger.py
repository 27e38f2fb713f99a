"""Issue 46, items 5 and 6: what the ledger may assume, and what a delivered id is.

Item 6: a delivered id that some produce invoked is never a phantom. At an offset no produce reported it
is a second copy of that produce in the log (`duplicate_writes`, a producer statistic) and followed by
no-loss like any record; an offset whose produce reported another id is `offset-reused`; a phantom is
an id no produce invoked.
Item 5: a history without its config is unknown; an excuse of durable-state is an allowance with its
evidence; on 4.1 a record at the limit released by its owner's session end is not archived; a failed
`__share_group_state` read makes what it would corroborate unknown.
"""

from __future__ import annotations

from harness.checkers import durable_state, no_loss
from harness.checkers.registry import property_result
from tests.support.builders import ALL, H, T, kinds

START = {"client": "test", "client_version": "1"}


# ------------------------------------------------------------------ item 6: phantoms by record id

def test_a_second_copy_of_a_produced_id_is_no_phantom_and_is_followed():
    """An idempotent producer's retry across a cold restart wrote id a at offsets 0 and 1; the produce
    reported 0. Both copies are delivered and accepted: no anomaly, one duplicate write counted."""
    h = H()
    h.produce("a", 0, 0)
    h.consume("consumer-0", [("a", 0, 0), ("a", 0, 1)])
    h.read_start({0: 2})
    r = property_result(no_loss.NAME, h.ops)
    assert r.valid is True, r
    assert r.stats["duplicate_writes"] == 1


def test_a_second_copy_delivered_once_and_never_accepted_is_not_accepted():
    h = H()
    h.produce("a", 0, 0)
    h.consume("consumer-0", [("a", 0, 0)])
    h.poll("consumer-0", [("a", 0, 1)])
    assert kinds(property_result(no_loss.NAME, h.ops)) == ["not-accepted"]


def test_a_copy_of_an_id_whose_record_already_settled_is_no_phantom():
    """The case CI met: the produce's own offset was settled (left the ledger) before the copy came."""
    h = H()
    h.produce("a", 0, 0)
    h.consume("consumer-0", [("a", 0, 0)])
    h.produce("b", 0, 2)
    h.consume("consumer-0", [("a", 0, 1), ("b", 0, 2)])
    h.read_start({0: 3})
    r = property_result(no_loss.NAME, h.ops)
    assert r.valid is True and r.stats["duplicate_writes"] == 1, r


def test_an_id_no_produce_invoked_is_a_phantom():
    h = H()
    h.produce("a", 0, 0)
    h.consume("consumer-0", [("a", 0, 0), ("zzz", 0, 1)])
    r = property_result(no_loss.NAME, h.ops)
    assert kinds(r) == ["phantom"] and "no produce invoked" in r.anomalies[0].message, r


def test_an_offset_whose_produce_reported_another_id_is_offset_reused():
    """b's produce reported offset 1 and a's offset 0; a copy of b delivered at 0: a's offset was reused."""
    h = H()
    h.produce("a", 0, 0)
    h.produce("b", 0, 1)
    h.consume("consumer-0", [("b", 0, 0), ("b", 0, 1)])
    h.read_start({0: 2})
    assert kinds(property_result(no_loss.NAME, h.ops)) == ["offset-reused"]


def test_ids_of_other_shapes_and_out_of_order_sequences_are_remembered():
    from harness.checkers.ledger import IdSet
    ids = IdSet()
    for rid in ("1-0", "1-1", "1-5", "1-3", "1-4", "1-2", "x", "2-07", "p-q-9"):
        ids.add(rid)
    assert all(rid in ids for rid in ("1-0", "1-1", "1-2", "1-3", "1-4", "1-5", "x", "2-07", "p-q-9"))
    assert not any(rid in ids for rid in ("1-6", "2-7", "y", "p-q-8", "1-"))
    assert len(ids.bits["1"]) == 1 and not ids.other - {"x", "2-07"}
    spread = IdSet()  # a Spark slot's share: every fourth id, still a bit each
    for n in range(0, 400_000, 4):
        spread.add(f"7-{n}")
    assert len(spread.bits["7"]) <= 2 * 400_000 // 8 and "7-396" in spread and "7-397" not in spread
    spread.add("7-99999999999")  # past the bits: a plain entry, not a huge bitmap
    assert "7-99999999999" in spread and len(spread.bits["7"]) <= 2 * 400_000 // 8
    other_digits = IdSet()  # digits of other scripts are not a sequence: never the same id as an ASCII one
    for rid in ("3-\u0663", "3-\u00b2"):  # (ARABIC-INDIC DIGIT THREE, SUPERSCRIPT TWO: int() reads one, not the other)
        other_digits.add(rid)
    assert "3-\u0663" in other_digits and "3-\u00b2" in other_digits and "3-3" not in other_digits
    assert not other_digits.bits and len(other_digits.other) == 2


# ------------------------------------------------------------------ item 5

def test_a_history_without_config_is_unknown_not_a_pass_on_assumed_defaults():
    h = H(config=False)
    h.produce("a", 0, 0)
    h.consume("consumer-0", [("a", 0, 0)])
    assert {fn(h.ops).valid for _, fn in ALL} == {"unknown"}


def test_a_durable_state_excuse_is_an_allowance_with_its_evidence():
    """A record never delivered, terminal per a start-offset read after enough crashes: durable-state
    used to pass it silently; the excuse is now counted with the crashes as evidence."""
    h = H(limit=2)
    for c in ("consumer-0", "consumer-1"):
        h.add(c, "ok", "start", START)
    h.produce("a", 0, 0)
    crashes = []
    for c in ("consumer-0", "consumer-1"):
        crashes.append(h.add("harness", "info", "crash", {"process": c}).index)
        h.add(c, "ok", "start", START)
    h.read_start({0: 1})
    r = property_result(durable_state.NAME, h.ops)
    assert r.valid is True and r.allowances == {"unobserved-acquisition": 1}, r
    assert set(crashes) <= set(r.allowance_evidence["unobserved-acquisition"][0])


def _released_at_the_limit(version: str, lock_ms: int = 60_000, close: bool = True) -> H:
    """Limit 2: consumer-0 RELEASEs a (count 1), consumer-1 acquires it at the limit and (`close`) closes."""
    h = H(limit=2, version=version, lock_ms=lock_ms)
    for c in ("consumer-0", "consumer-1"):
        h.add(c, "ok", "start", START)
    h.produce("a", 0, 0)
    h.poll("consumer-0", [("a", 0, 0, 1)])
    h.ack("consumer-0", [(0, 0)], "RELEASE")
    h.commit("consumer-0", {0: None})
    h.poll("consumer-1", [("a", 0, 0, 2)])
    if close:
        h.add("consumer-1", "invoke", "close", {})  # its share session ends with the record acquired
        h.add("consumer-1", "ok", "close", {})
    return h


def test_on_4_1_a_record_at_the_limit_released_by_a_session_end_is_not_archived():
    """4.1's session release decrements the count and never archives: the record must come again."""
    assert kinds(property_result(no_loss.NAME, _released_at_the_limit("4.1").ops)) == ["not-accepted"]


def test_on_4_2_a_session_end_at_the_limit_archives():
    assert property_result(no_loss.NAME, _released_at_the_limit("4.2").ops).valid is True


def test_on_4_1_the_start_past_it_needs_one_more_unseen_acquisition():
    h = _released_at_the_limit("4.1")
    h.read_start({0: 1})
    assert kinds(property_result(no_loss.NAME, h.ops)) == ["not-accepted"]
    assert kinds(property_result(durable_state.NAME, h.ops)) == ["durable-state-ahead"]
    h = _released_at_the_limit("4.1")
    # a fault cutting consumer-0's connections: an acquisition of it may have run out its lock at the limit
    # (a crash would not do on 4.1: its session end takes the acquisition back)
    cut = {"id": "cut-1", "fault": "consumer-cut", "effects": ["session-loss"], "processes": ["consumer-0"]}
    h.add("nemesis", "ok", "fault-start", cut)
    h.add("nemesis", "ok", "fault-heal", cut)
    h.read_start({0: 1})
    r = property_result(no_loss.NAME, h.ops)
    assert r.valid is True and "unobserved-acquisition" in r.allowances, r


def test_a_failed_state_topic_read_leaves_its_corroboration_unknown():
    """A record terminal per a start-offset read after unseen acquisitions is corroborated by the state
    topic's writes; when that read failed, no-loss and durable-state are unknown, not a pass."""
    h = H(limit=2)
    for c in ("consumer-0", "consumer-1"):
        h.add(c, "ok", "start", START)
    h.produce("a", 0, 0)
    for c in ("consumer-0", "consumer-1"):
        h.add("harness", "info", "crash", {"process": c})
        h.add(c, "ok", "start", START)
    h.read_start({0: 1})
    h.add("admin", "invoke", "share-state", {"group": "g"})
    h.add("admin", "fail", "share-state", {"group": "g", "error": "timed out reading __share_group_state"})
    assert property_result(no_loss.NAME, h.ops).valid == "unknown"
    r = property_result(durable_state.NAME, h.ops)
    assert r.valid == "unknown" and "__share_group_state read" in r.reason, r


def test_an_offset_reset_that_names_no_records_is_unknown_for_no_loss():
    h = H()
    h.produce("a", 0, 0)
    h.consume("consumer-0", [("a", 0, 0)])
    h.add("admin", "ok", "reset-offsets", {"group": "g", "topic": T, "partitions": [{"partition": 0, "offset": 0}]})
    r = property_result(no_loss.NAME, h.ops)
    assert r.valid == "unknown" and "does not name" in r.reason, r
    h = H()  # a reset that names none (it brings back nothing) is decided
    h.produce("a", 0, 0)
    h.consume("consumer-0", [("a", 0, 0)])
    h.add("admin", "ok", "reset-offsets", {"group": "g", "topic": T,
                                           "partitions": [{"partition": 0, "offset": 1, "records": []}]})
    assert property_result(no_loss.NAME, h.ops).valid is True


# ------------------------------------------------------------------ item 5: by_duration against timestamps

WALL_MS = 1_800_000_000_000  # the wall clock at the history's time 0


def _by_duration(old_stamp: bool, wall: bool = True) -> H:
    """by_duration:PT10M; two records produced before the first consumer starts (an hour old by their
    CreateTime, or stamped now), never delivered; two produced after it, delivered and accepted."""
    h = H(reset="by_duration:PT10M")
    if wall:
        h.ops[0].value["wall_clock_ms"] = WALL_MS
    for rid, o in (("a", 0), ("b", 1)):
        value = {"id": rid, "topic": T, "partition": 0}
        if old_stamp:
            value["timestamp_ms"] = WALL_MS - 3_600_000
        h.add("producer-0", "invoke", "produce", value)
        h.add("producer-0", "ok", "produce", {"id": rid, "topic": T, "partition": 0, "offset": o})
    h.add("consumer-0", "ok", "start", START)
    h.produce("c", 0, 2)
    h.produce("d", 0, 3)
    h.consume("consumer-0", [("c", 0, 2), ("d", 0, 3)])
    h.read_start({0: 4})
    return h


def test_by_duration_skips_records_older_than_the_duration():
    r = property_result(no_loss.NAME, _by_duration(old_stamp=True).ops)
    assert r.valid is True and r.allowances == {"before-latest-start": 2}, r


def test_by_duration_must_deliver_records_within_the_duration():
    """Produced a few ms before the first consumer started, so within the last 10 minutes: the old rule
    excused them as if the reset were latest."""
    assert kinds(property_result(no_loss.NAME, _by_duration(old_stamp=False).ops)) == ["lost", "lost"]


def test_by_duration_without_the_wall_clock_is_unknown():
    r = property_result(no_loss.NAME, _by_duration(old_stamp=True, wall=False).ops)
    assert r.valid == "unknown" and "timestamp" in r.reason, r


def test_the_iso_duration_of_by_duration():
    from harness.checkers.replay import iso_duration_ns
    assert iso_duration_ns("PT10M") == 600 * 10**9
    assert iso_duration_ns("P1DT1H") == 25 * 3600 * 10**9
    assert iso_duration_ns("PT0.5S") == 5 * 10**8
    assert iso_duration_ns("banana") == -1 and iso_duration_ns("PT") == -1


# ------------------------------------------------------------------ a gap of docs/oracle.md closed (S2)

def test_a_state_topic_write_holding_a_record_acquired_is_an_anomaly():
    """KIP-932 (state persistence): "the Acquired state is not persisted"; no write of a real run holds it
    (the committed histories' writes hold states 0, 2, 3 and 4 only)."""
    from tests.support.builders import base
    h = base()
    h.add("admin", "invoke", "share-state", {"group": "g"})
    h.add("admin", "ok", "share-state", {"group": "g", "partitions": [
        {"topic": T, "partition": 0, "start_offset": 2, "batches": [], "writes": [
            ["snapshot", 4, 0, [[0, 1, 1, 1]]], ["update", 5, 2, [[0, 1, 2, 1]]]]},
        {"topic": T, "partition": 1, "start_offset": 1, "batches": []}]})
    r = property_result(durable_state.NAME, h.ops)
    assert kinds(r) == ["state-topic-acquired"] and "snapshot e4: 0-1" in r.anomalies[0].message, r


def test_on_4_1_a_fault_cutting_the_holder_at_the_limit_lets_its_lock_run_out_and_archive():
    """Review of issue 46: a consumer-cut keeps the TCP connection up (Toxiproxy timeout toxics), so the lock
    at the limit may run out and the broker archive the record: not a session release that never archives."""
    h = _released_at_the_limit("4.1", lock_ms=15_000, close=False)
    cut = {"id": "cut-1", "fault": "consumer-cut", "effects": ["session-loss"], "processes": ["consumer-1"]}
    h.add("nemesis", "ok", "fault-start", cut)
    h.add("nemesis", "ok", "fault-heal", cut, dt_ms=20_000)
    assert property_result(no_loss.NAME, h.ops).valid is True


def test_a_produce_value_that_is_not_a_timestamp_does_not_crash_the_replay():
    from harness.checkers.replay import stamp_of
    assert stamp_of('{"timestamp_ms": 5}') == 5
    assert all(stamp_of(v) is None for v in ("[1]", "nope", '{"timestamp_ms": "5"}', '{"timestamp_ms": true}', "7"))
