"""The launcher of librdkafka's mock cluster (harness/cluster/rdmock.py, issue 52's first part): a process of
its own, started and stopped like every other child, whose cluster a real producer and a real `ShareConsumer`
(confluent-kafka) use; its commands answered, its refusals one line, nothing left when its stdin closes."""

from __future__ import annotations

import json
import select
import sys
import time

from confluent_kafka import Producer, ShareConsumer

from harness.sys.procs import spawn
from harness.sys.wait import wait_until


def _line(proc, what: str, timeout: float = 30.0) -> dict:
    """The launcher's next JSON line, within `timeout` seconds (else a failure naming what was awaited)."""
    readable, _, _ = select.select([proc.popen.stdout], [], [], timeout)
    assert readable, f"the mock launcher gave no {what} within {timeout:g} s (its log: {proc.log_path})"
    return json.loads(proc.popen.stdout.readline())


def _start(tmp_path, brokers: int = 3):
    proc = spawn("rdmock", [sys.executable, "-m", "harness.cluster.rdmock", "--brokers", str(brokers)],
                 log_path=tmp_path / "rdmock.log", stdout_pipe=True, stdin_pipe=True)
    return proc, _line(proc, "ready line")


def _ask(proc, line: str) -> dict:
    proc.popen.stdin.write(f"{line}\n".encode())
    proc.popen.stdin.flush()
    return _line(proc, f"answer to {line!r}")


def test_a_share_consumer_gets_the_records_produced_to_the_mock_and_the_launcher_goes_with_its_stdin(tmp_path):
    proc, ready = _start(tmp_path)
    try:
        assert ready["event"] == "ready" and len(ready["bootstraps"].split(",")) == 3
        assert all(b.startswith("127.0.0.1:") for b in ready["bootstraps"].split(","))  # loopback only
        assert ready["librdkafka"].split(".")[:2] >= ["2", "12"]
        assert _ask(proc, "topic-create t 2 1") == {"ok": True}
        assert _ask(proc, "offset-reset earliest") == {"ok": True}
        assert _ask(proc, "topic-create t 2 1") == {"error": "TOPIC_ALREADY_EXISTS"}
        assert "no broker 9" in _ask(proc, "leader t 0 9")["error"]
        assert "no broker -1" in _ask(proc, "leader t 0 -1")["error"]  # (-1, every broker, only where it means that)
        assert "1..10000 partitions" in _ask(proc, "topic-create u -5 1")["error"]  # (librdkafka would abort)
        assert "1..3 replicas" in _ask(proc, "topic-create u 1 0")["error"]
        assert "unknown command" in _ask(proc, "explode")["error"]
        producer = Producer({"bootstrap.servers": ready["bootstraps"]})
        for i in range(20):
            producer.produce("t", value=f"r{i}".encode(), partition=i % 2)
        assert producer.flush(30) == 0
        consumer = ShareConsumer({"bootstrap.servers": ready["bootstraps"], "group.id": "g"})
        consumer.subscribe(["t"])
        seen: set[bytes] = set()
        deadline = time.monotonic() + 60
        try:
            while len(seen) < 20 and time.monotonic() < deadline:
                seen |= {m.value() for m in consumer.poll(0.5) if m.error() is None}
        finally:
            consumer.close()
        assert seen == {f"r{i}".encode() for i in range(20)}
    finally:
        proc.popen.stdin.close()
    wait_until(lambda: proc.popen.poll() is not None, timeout=30, what="the mock launcher to exit with its stdin")
    assert proc.popen.returncode == 0


def test_bad_brokers_are_refused_in_one_line(tmp_path):
    proc = spawn("rdmock", [sys.executable, "-m", "harness.cluster.rdmock", "--brokers", "0"],
                 log_path=tmp_path / "rdmock.log")
    wait_until(lambda: proc.popen.poll() is not None, timeout=30, what="the refusal")
    assert proc.popen.returncode == 2
    assert (tmp_path / "rdmock.log").read_text().strip() == "rdmock: invalid --brokers 0: use 1..9"
