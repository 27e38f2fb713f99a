"""Issue 46, item 1: an ACCEPT or REJECT the broker refused settled nothing.

`ack_results` used to count an acknowledgement as sent before its result; afterwards no-loss counted
the record "resolved-by-durable-state" once the start offset passed it and durable-state left it out
of `durable-state-ahead`. A definitive refusal (INVALID_RECORD_STATE, ...) now drops it: the record
must be delivered again, archived at the limit with evidence, or it is lost. Only an ambiguous outcome
(a transport error, `info`) keeps it open; a disruption or a connection end between the acknowledgement
and the refusal is `refusal-may-mask-landing`, with that event as evidence.
"""

from __future__ import annotations

from harness.checkers import ack_results, durable_state, no_loss
from harness.checkers.registry import property_result
from tests.support.builders import H, kinds

REFUSED = "INVALID_RECORD_STATE: Broker: The record state is invalid"


def _acked_then_start_passed(error: str | None, between=None, type_: str = "ACCEPT") -> H:
    h = H(limit=3)
    h.add("consumer-0", "ok", "start", {"client": "test", "client_version": "1"})
    h.produce("a", 0, 0)
    h.poll("consumer-0", [("a", 0, 0)])
    h.ack("consumer-0", [(0, 0)], type_)
    h.add("consumer-0", "invoke", "commit", {})
    if between is not None:
        between(h)
    h.add("consumer-0", "ok", "commit", {"results": [{"topic": "t", "partition": 0, "error": error}]})
    h.read_start({0: 1})
    return h


def test_a_refused_accept_does_not_let_the_start_offset_settle_the_record():
    h = _acked_then_start_passed(REFUSED)
    assert kinds(property_result(no_loss.NAME, h.ops)) == ["not-accepted"]
    assert kinds(property_result(durable_state.NAME, h.ops)) == ["durable-state-ahead"]
    assert property_result(ack_results.NAME, h.ops).valid is True  # the refusal is a result: ack-results holds


def test_a_refused_reject_does_not_either():
    h = _acked_then_start_passed(REFUSED, type_="REJECT")
    assert kinds(property_result(no_loss.NAME, h.ops)) == ["not-accepted"]


def test_a_transport_error_keeps_the_acknowledgement_open():
    """Its outcome is unknown: it may have landed, so the start offset past it settles it."""
    for error in ("_TRANSPORT: Local: Broker transport failure", "REQUEST_TIMED_OUT",
                  "org.apache.kafka.common.errors.DisconnectException", "i/o timeout"):
        h = _acked_then_start_passed(error)
        assert property_result(no_loss.NAME, h.ops).valid is True, error
        assert property_result(durable_state.NAME, h.ops).valid is True, error


def test_a_refusal_after_a_disruption_may_mask_a_retried_landing_with_evidence():
    fault = {"id": "f1", "fault": "leader-kill", "effects": ["leader-change"], "topic": "t", "partitions": [0]}

    def disrupt(h: H) -> None:
        h.add("nemesis", "ok", "fault-start", fault)
        h.add("nemesis", "ok", "fault-heal", fault)
    h = _acked_then_start_passed(REFUSED, disrupt)
    r = property_result(no_loss.NAME, h.ops)
    assert r.valid is True
    acks = property_result(ack_results.NAME, h.ops)
    assert acks.allowances == {"refusal-may-mask-landing": 1}
    fault_index = next(op.index for op in h.ops if op.f == "fault-start")
    assert fault_index in acks.allowance_evidence["refusal-may-mask-landing"][0]


def test_a_disruption_of_another_partition_masks_nothing():
    fault = {"id": "f1", "fault": "leader-kill", "effects": ["leader-change"], "topic": "t", "partitions": [1]}

    def disrupt(h: H) -> None:
        h.add("nemesis", "ok", "fault-start", fault)
        h.add("nemesis", "ok", "fault-heal", fault)
    h = _acked_then_start_passed(REFUSED, disrupt)
    assert kinds(property_result(no_loss.NAME, h.ops)) == ["not-accepted"]


def test_a_refused_accept_redelivered_and_accepted_passes():
    h = H(limit=3)
    h.add("consumer-0", "ok", "start", {"client": "test", "client_version": "1"})
    h.produce("a", 0, 0)
    h.poll("consumer-0", [("a", 0, 0)])
    h.ack("consumer-0", [(0, 0)])
    h.commit("consumer-0", {0: REFUSED}, callback=False)
    h.consume("consumer-0", [("a", 0, 0, 2)])
    h.read_start({0: 1})
    assert property_result(no_loss.NAME, h.ops).valid is True
    assert property_result(durable_state.NAME, h.ops).valid is True


def test_another_consumers_open_accept_still_counts():
    """Two acknowledgements of one record: one refused, the other's outcome unknown (`info`)."""
    h = H(limit=3)
    for c in ("consumer-0", "consumer-1"):
        h.add(c, "ok", "start", {"client": "test", "client_version": "1"})
    h.produce("a", 0, 0)
    h.poll("consumer-0", [("a", 0, 0)])
    h.ack("consumer-0", [(0, 0)])
    h.add("consumer-0", "invoke", "commit", {})
    h.add("consumer-0", "info", "commit", {"error": "timed out"})
    h.poll("consumer-1", [("a", 0, 0, 2)], dt_ms=2000)
    h.ack("consumer-1", [(0, 0)])
    h.commit("consumer-1", {0: REFUSED}, callback=False)
    h.read_start({0: 1})
    assert property_result(no_loss.NAME, h.ops).valid is True


def test_definitive_errors():
    assert ack_results.definitive(REFUSED)
    assert ack_results.definitive("org.apache.kafka.common.errors.InvalidRecordStateException: The record state is invalid.")
    assert ack_results.definitive("NOT_LEADER_OR_FOLLOWER")
    for ambiguous in (None, "", "_TRANSPORT", "Local: Timed out", "REQUEST_TIMED_OUT", "NETWORK_EXCEPTION",
                      "unexpected EOF", "UNKNOWN_SERVER_ERROR", "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
                      "COORDINATOR_LOAD_IN_PROGRESS", "KAFKA_STORAGE_ERROR", "FENCED_STATE_EPOCH",
                      "KafkaException: something new", "broker omitted partition from share fetch response"):
        assert not ack_results.definitive(ambiguous), ambiguous
