"""The behaviour loop the harness runs for step-mode drivers in chaos runs (harness.clients.stepped),
against an in-process fake of a step driver: the same seeded decisions as the confluent driver."""

from __future__ import annotations

import threading

from harness.clients.behaviours import ack_type, holds
from harness.clients.stepped import SteppedConsumer
from harness.errors import HarnessError
from harness.history.store import HistoryWriter


class _FakeStep:
    """A step driver whose polls hand out `batches` in turn (then nothing); it records what it is sent."""

    proc = None

    def __init__(self, tmp_path, batches, refuse=False):
        self.refuse = refuse
        self.name = "consumer-0"
        self.history = HistoryWriter(tmp_path / "history.jsonl")
        self.batches = list(batches)
        self.sent: list[dict] = []
        self.running = True
        self.idle = threading.Event()
        self.closed_with = None

    def start(self):
        pass

    def alive(self):
        return self.running

    def command(self, cmd, timeout):
        if not self.running:
            raise HarnessError("driver consumer-0 exited")
        self.sent.append(cmd)
        if cmd["cmd"] == "poll":
            if self.refuse:
                return {"error": "IllegalStateException: unacknowledged records"}, []
            if not self.batches:
                self.idle.set()
                return {}, []
            records = self.batches.pop(0)
            return {}, [self.history.append(self.name, "ok", "poll", {"records": records})]
        return {}, []

    def close(self, timeout=30.0):
        self.closed_with = [c["cmd"] for c in self.sent]
        self.running = False
        return 0

    def crash(self):
        self.running = False


def _records(*ids, count=1):
    return [{"id": rid, "topic": "t", "partition": 0, "offset": i, "delivery_count": count}
            for i, rid in enumerate(ids)]


def _run(consumer: SteppedConsumer, step: _FakeStep) -> None:
    consumer.start()
    assert step.idle.wait(10), "the behaviour never ran out of batches"
    consumer.close(10)


def test_mix_acknowledges_each_record_as_the_seed_says_then_commits(tmp_path):
    batch = _records(*(f"1-{i}" for i in range(20)), count=2)
    step = _FakeStep(tmp_path, [batch])
    _run(SteppedConsumer(step, "mix", 1, 0), step)
    poll, ack, commit = step.sent[:3]
    assert poll["cmd"] == "poll" and commit == {"cmd": "commit_sync"}
    assert [r["type"] for r in ack["records"]] == [ack_type("mix", 1, r["id"], 2) for r in batch]
    assert len({r["type"] for r in ack["records"]}) > 1  # the seed mixes them


def test_implicit_mode_only_commits(tmp_path):
    step = _FakeStep(tmp_path, [_records("1-0", "1-1")])
    _run(SteppedConsumer(step, "accept-implicit", 1, 0), step)
    assert [c["cmd"] for c in step.sent[:2]] == ["poll", "commit_sync"]


def test_slow_records_a_hold_before_acknowledging(tmp_path):
    rid = next(f"1-{i}" for i in range(1000) if holds("slow", 1, f"1-{i}", 1))
    step = _FakeStep(tmp_path, [_records(rid)])
    _run(SteppedConsumer(step, "slow", 1, 50), step)
    holds_seen = [op for op in step.history.ops() if op.f == "hold"]
    assert holds_seen and holds_seen[0].value == {"seconds": 0.05}
    assert [c["cmd"] for c in step.sent[:3]] == ["poll", "ack", "commit_sync"]


def test_abandon_closes_right_after_the_next_poll_holding_its_records(tmp_path):
    step = _FakeStep(tmp_path, [])
    consumer = SteppedConsumer(step, "accept-explicit", 1, 0)
    consumer.start()
    assert step.idle.wait(10)
    assert consumer.send("abandon")
    step.batches.append(_records("1-7"))
    consumer._loop.join(10)
    assert step.closed_with is not None and step.closed_with[-1] == "poll"  # no ack, no commit after it


def test_a_crash_ends_the_behaviour_quietly(tmp_path):
    step = _FakeStep(tmp_path, [])
    consumer = SteppedConsumer(step, "accept-explicit", 1, 0)
    consumer.start()
    assert step.idle.wait(10)
    consumer.crash()
    consumer._loop.join(10)
    assert not consumer._loop.is_alive() and not consumer.alive()


def test_a_client_refusing_every_poll_is_closed_not_spun(tmp_path):
    step = _FakeStep(tmp_path, [], refuse=True)
    consumer = SteppedConsumer(step, "accept-explicit", 1, 0, poll_timeout=0.01)
    consumer.start()
    consumer._loop.join(10)
    polls = [c for c in step.sent if c["cmd"] == "poll"]
    from harness.clients.stepped import MAX_REFUSALS
    assert len(polls) == MAX_REFUSALS and step.closed_with is not None and not consumer.alive()
    assert any(op.f == "error" and "stopped driving" in op.value["message"] for op in step.history.ops())
