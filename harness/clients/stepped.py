"""A chaos run's consumer on any step-mode driver: the behaviour runs in the harness, the client in its process.

Chaos runs need consumers that poll, acknowledge and commit on their own, as `config["behaviour"]`
says (`harness.clients.behaviours`). The confluent driver does that inside its process. For every
other driver (the Java `KafkaShareConsumer`, franz-go) the harness runs the same behaviour itself
and sends the driver one step command at a time (`StepDriver.command`: poll, ack, commit_sync,
close; docs/driver.md), so the seeded decisions are written once, in Python, and every driver that
conformance can drive can also run the chaos matrix.

The process is still the driver's: a crash kills it, a pause stops it (a command waiting on a
stopped process waits for SIGCONT), `abandon` closes it right after the next poll holding what
that poll handed over, exactly as the confluent driver does.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from harness.clients.behaviours import ack_type, commits_async, explicit as is_explicit, holds
from harness.errors import HarnessError

if TYPE_CHECKING:
    from harness.clients.driver import StepDriver

#: How long one command may wait for its driver: longer than any pause a fault holds a driver in.
COMMAND_TIMEOUT_S = 900.0
#: Polls refused in a row (each after `poll_timeout`) before the consumer is closed: a client that
#: refuses every poll (e.g. explicit mode with a record it could not acknowledge) is closed, not spun.
MAX_REFUSALS = 20


class SteppedConsumer:
    """`step` (a StepDriver, not started) running `behaviour` from here; a ConsumerDriver to the pool."""

    def __init__(self, step: "StepDriver", behaviour: str, seed: int, hold_ms: int, poll_timeout: float = 0.5) -> None:
        self.step = step
        self.behaviour, self.seed, self.hold_s, self.poll_timeout = behaviour, seed, hold_ms / 1000, poll_timeout
        self.explicit = is_explicit(behaviour)
        self._stop = threading.Event()
        self._abandon = threading.Event()
        self._crash_lock = threading.Lock()  # no op of ours after the crash record
        self._loop: threading.Thread | None = None
        self._refusals = 0

    # -- what the pool and the faults use (the rest is the step driver's) -----------------------
    def __getattr__(self, item: str) -> Any:  # name, proc, log_path, history, closed, contract_error
        return getattr(self.step, item)

    def alive(self) -> bool:
        return self.step.alive()

    def start(self) -> None:
        self.step.start()
        self._loop = threading.Thread(target=self._run, name=f"{self.step.name}-behaviour", daemon=True)
        self._loop.start()

    def send(self, command: str) -> bool:
        """The plain lines a chaos run sends: `abandon` (close right after the next poll); any other stops
        the behaviour after its current command (`close` then closes the client)."""
        if not self.step.alive():
            return False
        (self._abandon if command == "abandon" else self._stop).set()
        return True

    def crash(self) -> None:
        with self._crash_lock:
            self._stop.set()
            self.step.crash()

    def close(self, timeout: float = 30.0) -> int | None:
        """Stop the behaviour after its current command, then close the client (the step driver's close)."""
        import signal
        self._stop.set()
        if self.step.proc is not None and self.step.alive():
            self.step.proc.signal(signal.SIGCONT)  # a paused driver answers no command, so the loop would wait
        if self._loop is not None and self._loop is not threading.current_thread():
            self._loop.join(timeout)
        return self.step.close(timeout)

    # -- the behaviour ------------------------------------------------------------------------
    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                if not self._one_batch():
                    break
            if self._abandon.is_set() and self.step.alive():
                self.step.close(60)  # holding what the last poll handed over
        except HarnessError:
            pass  # the driver died (a crash) or stopped answering: its log and the history say which
        finally:
            if not self._stop.is_set() and self.step.alive():
                # the behaviour ended on its own (the client refused to go on, or stopped answering): the
                # consumer must not stay in the group polling nothing, unseen by the pool: close it
                self.step.history.append(self.step.name, "info", "error", {
                    "code": None, "message": "the harness stopped driving this consumer; closing it"})
                self._stop.set()
                self.step.close(30)

    def _ok(self, cmd: dict[str, Any]) -> tuple[str | None, list]:
        """Run `cmd`; (the client's error, if it raised one; the operations it recorded)."""
        reply, ops = self.step.command(cmd, COMMAND_TIMEOUT_S)
        return reply.get("error"), ops

    def _one_batch(self) -> bool:
        """Poll, hold, acknowledge and commit one batch; False to stop (abandon, or asked to close)."""
        error, ops = self._ok({"cmd": "poll", "timeout": self.poll_timeout})
        records = [r for op in ops if op.f == "poll" and op.type == "ok" for r in op.value["records"]]
        if error is not None and not records:
            self._refusals += 1  # (recorded by the driver as an error op)
            if self._refusals >= MAX_REFUSALS:
                return False  # e.g. an explicit-mode client refusing every poll: closed by `_run`
            self._stop.wait(self.poll_timeout)  # a poll that fails at once must not spin
            return True
        self._refusals = 0
        if not records:
            return True
        if self._abandon.is_set() and self.explicit:
            return False  # close holding the records just delivered
        first = records[0]
        if holds(self.behaviour, self.seed, first["id"], first["delivery_count"]):
            with self._crash_lock:
                if not self.step.alive() or self._stop.is_set():
                    return False
                self.step.history.append(self.step.name, "ok", "hold", {"seconds": self.hold_s})
            if self._stop.wait(self.hold_s):
                return False  # asked to close while holding: close with the records still acquired
        if self._stop.is_set():
            return False  # asked to close: close with the records still acquired
        if self.explicit:
            self._ok({"cmd": "ack", "records": [
                {"topic": r["topic"], "partition": r["partition"], "offset": r["offset"],
                 "type": ack_type(self.behaviour, self.seed, r["id"], r["delivery_count"])} for r in records]})
        # implicit mode: the commit accepts the batch (errors are in the history); accept-async: results by callback
        self._ok({"cmd": "commit_async" if commits_async(self.behaviour) else "commit_sync"})
        return True


def stepped(make_step):
    """A registry `autonomous` factory from a step-driver factory: (name, config, history, log_dir, dist)."""
    def autonomous(name, config, history, log_dir, dist=None) -> SteppedConsumer:
        behaviour = config["behaviour"]
        step = make_step(name, {**config, "mode": "explicit" if is_explicit(behaviour) else "implicit"}, history,
                         log_dir, dist)
        return SteppedConsumer(step, behaviour, int(config.get("seed", 0)), int(config.get("hold_ms", 0)),
                               float(config.get("poll_timeout", 0.5)))
    return autonomous
