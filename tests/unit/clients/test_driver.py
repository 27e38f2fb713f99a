"""The harness's side of a driver process, without a cluster: what a killed driver printed before
it died is in the history before its crash."""

import sys
import time

import pytest

from harness.clients.driver import ConsumerDriver
from harness.history.store import HistoryWriter

LINES = 20000  # far more than a pipe holds: some are still unread when the driver is killed


class _Printer(ConsumerDriver):
    def __init__(self, script, *args):
        super().__init__(*args)
        self.script = script

    def command_line(self):
        return [sys.executable, str(self.script)]


def test_a_crash_is_recorded_after_what_the_driver_printed_before_it(tmp_path):
    marker = tmp_path / "printed"
    script = tmp_path / "printer.py"
    script.write_text("import json, sys, time\n"
                      f"for i in range({LINES}):\n"
                      "    sys.stdout.write(json.dumps({'type': 'ok', 'f': 'hold', 'value': {'n': i}}) + '\\n')\n"
                      "sys.stdout.flush()\n"
                      f"open({str(marker)!r}, 'w').close()\n"
                      "time.sleep(60)\n")
    history = HistoryWriter(tmp_path / "history.jsonl")
    driver = _Printer(script, "consumer-0", {}, history, tmp_path)
    driver.start()
    deadline = time.monotonic() + 30
    while not marker.exists():
        assert time.monotonic() < deadline, f"the printer never finished (see {driver.log_path})"
        time.sleep(0.01)
    driver.crash()
    ops = history.ops()
    # the signal's moment (a `crash` invoke) may fall among lines still in the pipe; the crash itself comes last
    signalled = [i for i, op in enumerate(ops) if op.f == "crash" and op.type == "invoke"]
    assert len(signalled) == 1 and ops[signalled[0]].value == {"process": "consumer-0"}
    assert [op.f for op in ops if op.type != "invoke"] == ["hold"] * LINES + ["crash"]
    assert ops[-1].process == "nemesis" and ops[-1].type == "info" and ops[-1].value == {"process": "consumer-0"}
    assert not driver.alive()
    history.close()


def test_a_close_that_does_not_finish_ends_the_drivers_close_as_unknown(tmp_path):
    # the driver's own process completes as info (the checkers take it as a crash of that consumer),
    # after what it printed: not an operation of some other process
    script = tmp_path / "stuck.py"
    script.write_text("import json, signal, sys, time\n"
                      "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                      "print(json.dumps({'type': 'invoke', 'f': 'close', 'value': {}}), flush=True)\n"
                      "time.sleep(60)\n")
    history = HistoryWriter(tmp_path / "history.jsonl")
    driver = _Printer(script, "consumer-3", {}, history, tmp_path)
    driver.start()
    driver.close(timeout=1.0)
    ops = history.ops()
    assert [(op.process, op.type, op.f) for op in ops] == [("consumer-3", "invoke", "close"),
                                                           ("consumer-3", "info", "close")]
    assert "no exit within 1.0s" in ops[-1].value["error"] and not driver.alive()
    history.close()


def test_a_produce_refused_as_fatal_retires_the_producer_instead_of_failing_the_run():
    """After an unclean election librdkafka's idempotent producer turns fatal, and produce() may refuse
    with code _FATAL before error_cb has reported it (CI, 2026-11-26): the producer is retired (`fatal`)
    so the workload starts a new one, as for a fatal error reported by the callback. Any other error
    still raises."""
    from confluent_kafka import KafkaError, KafkaException

    from harness.clients.producer import HistoryProducer
    producer = HistoryProducer.__new__(HistoryProducer)
    producer.fatal, producer._reports = None, __import__("collections").deque()

    def refuse(code):
        def call():
            raise KafkaException(KafkaError(code, "Unable to produce message: Local: Fatal error"))
        return call

    with pytest.raises(KafkaException):
        producer._call(refuse(KafkaError._MSG_TIMED_OUT))
    assert producer.fatal is None
    producer._call(refuse(KafkaError._FATAL))
    assert producer.fatal == "Unable to produce message: Local: Fatal error"
    assert producer._call(lambda: pytest.fail("a retired client is not called again")) is None
