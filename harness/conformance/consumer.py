"""A share consumer in step mode, as a conformance test drives it: one driver process running one
command at a time (poll, ack, commit, close; `docs/driver.md`), and the records it was given."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from harness.checkers.evidence import DRIVER_OWN
from harness.conformance.kafka_errors import error_is
from harness.errors import HarnessError
from harness.sys.wait import WaitTimeout, wait_until

#: How long past its acquisition lock a record may take to reach another consumer (the expiry timer, the next
#: poll, a loaded machine): far below the brokers' default lock (30 s), so a group lock duration that was not
#: applied fails the lock tests instead of passing on the broker's lock.
LATE_AFTER_LOCK_S = 12

#: a command's field left out: the driver's own default (commit_sync and close: 30 s)
DRIVER_DEFAULT: Any = object()


class ConstructionRefused(HarnessError):
    """The client refused to construct a consumer with the configuration given (driver contract 4: its `start`
    `fail` event); `error` is what the library raised. A test of a refused setting catches it; anywhere else it is
    a set-up that did not hold."""

    def __init__(self, name: str, error: str) -> None:
        super().__init__(f"{name}: the client refused to construct the consumer: {error}")
        self.error = error


@dataclass(frozen=True)
class Record:
    """A record as a consumer was given it."""

    id: str
    topic: str
    partition: int
    offset: int
    delivery_count: int

    @property
    def key(self) -> tuple[str, int, int]:
        return self.topic, self.partition, self.offset


def _given(ops) -> list[Record]:
    """The records the `poll` operations among `ops` gave, in order."""
    return [Record(r["id"], r["topic"], r["partition"], r["offset"], r["delivery_count"])
            for op in ops if op.f == "poll" and op.type == "ok" for r in op.value["records"]]


class StepConsumer:
    """One share consumer in its own process, in step mode."""

    def __init__(self, driver, mode: str = "explicit", features: tuple[str, ...] | None = None) -> None:
        self.driver = driver
        self.mode = mode
        self.features = features  # what the driver declares (None: take it as supporting everything)
        self.name = driver.name
        self.last_error: str | None = None  # the error the client raised on the last command, if any
        self.last_reply: dict[str, Any] = {}  # the last command's end marker, as the driver printed it
        self.close_sent = False  # close() was asked of the client (its process may still be running)

    def _do(self, cmd: dict[str, Any], timeout: float = 60.0):
        reply, ops = self.driver.command(cmd, timeout)
        self.last_error, self.last_reply = reply.get("error"), reply
        return reply, ops

    def poll(self, timeout: float = 10.0) -> list[Record]:
        """One batch (empty if none came within `timeout` seconds)."""
        _, ops = self._do({"cmd": "poll", "timeout": timeout}, timeout + 30)
        return _given(ops)

    def poll_until(self, count: int, timeout: float = 30.0, ack: str | None = None,
                   settled: Callable[[], bool] | None = None) -> list[Record]:
        """Batches until `count` records came or `timeout` passed (all of them, in order). In explicit
        mode a batch must be acknowledged before the next poll: `ack` names the type each batch gets
        (without it, a short first batch is an error rather than a refused poll). `settled`: asked
        after a poll that returned nothing, it says that no more records can come (e.g. the session's
        `all_settled`: the group settled every record written), so the wait ends there."""
        import time
        deadline, got = time.monotonic() + timeout, []
        while len(got) < count and (left := deadline - time.monotonic()) > 0:
            batch = self.poll(min(left, 5.0))
            if not batch and settled is not None and settled():
                break
            got.extend(batch)
            if batch and ack is not None:
                self.ack(batch, ack)
            elif batch and self.mode == "explicit" and len(got) < count:
                raise HarnessError(f"{self.name}: {len(got)} of {count} records in the first batch; pass ack= "
                                   f"to acknowledge each batch (explicit mode refuses a poll before that)")
        return got

    def poll_until_error(self, codes: tuple[str, ...], timeout: float = 30.0) -> str:
        """Poll until the client reports one of the Kafka errors `codes` (e.g. GROUP_AUTHORIZATION_FAILED);
        the one it reported (a line the driver or the harness wrote about itself, `DRIVER_OWN`, is not a
        report). Records given meanwhile are in the history (`records_given`)."""
        seen: dict[str, str] = {}

        def refused() -> bool:
            _, ops = self._do({"cmd": "poll", "timeout": 1.0}, 31.0)
            for op in ops:
                if op.f == "error" and not str(op.value.get("message", "")).startswith(DRIVER_OWN):
                    text = f"{op.value.get('code')} {op.value.get('message')}"
                    seen.update({"code": code for code in codes if error_is(text, code)})
            return "code" in seen
        try:
            wait_until(refused, timeout=timeout, interval=0.0,
                       what=f"{self.name} to be refused with {' or '.join(codes)}")
        except WaitTimeout as exc:  # the client never said so: its failure (a WaitTimeout alone is inconclusive)
            raise AssertionError(str(exc)) from None
        return seen["code"]

    def records_given(self) -> list[Record]:
        """Every record any poll of this consumer was given so far."""
        return _given(op for op in self.driver.history.ops() if op.process == self.name)

    def _require(self, feature: str) -> None:
        """Skip the test as "not supported" if the driver does not declare `feature`."""
        if self.features is not None and feature not in self.features:
            import pytest
            pytest.skip(f"not supported by the {self.name} driver: {feature}")

    def ack(self, records, type_: str | None = "ACCEPT", by_offset: bool = False) -> str | None:
        """Acknowledge `records` with `type_`; the client's error if it refused one, else None. Driver contract
        3: `type_` None calls the library's one-argument acknowledge (its documented default, ACCEPT);
        `by_offset` acknowledges by topic, partition and offset instead of by the record."""
        self._require("ack_default" if type_ is None else f"ack:{type_}")
        if by_offset:
            self._require("ack_by_offset")
        command: dict[str, Any] = {"cmd": "ack", "records": [
            {"topic": r.topic, "partition": r.partition, "offset": r.offset,
             **({} if type_ is None else {"type": type_})} for r in records]}
        if by_offset:
            command["by"] = "offset"
        reply, _ = self._do(command)
        return reply.get("error")

    def unsubscribe(self) -> str | None:
        """unsubscribe() (driver contract 2); the client's error if it refused, else None."""
        self._require("unsubscribe")
        reply, _ = self._do({"cmd": "unsubscribe"})
        return reply.get("error")

    def subscribe(self, topics: list[str]) -> str | None:
        """subscribe(topics) (driver contract 3): the client's error if it refused, else None."""
        self._require("subscribe")
        reply, _ = self._do({"cmd": "subscribe", "topics": list(topics)})
        return reply.get("error")

    def subscription(self) -> list[str]:
        """subscription() (driver contract 3): the topics it names, sorted; an error is a HarnessError."""
        self._require("subscribe")
        reply, _ = self._do({"cmd": "subscription"})
        if reply.get("error") or not isinstance(reply.get("topics"), list):
            raise HarnessError(f"{self.name}: subscription() gave no topics: {reply}")
        return sorted(reply["topics"])

    def lock_timeout(self) -> int | None:
        """acquisitionLockTimeoutMs() (driver contract 3): the milliseconds it reports, None if not known; an error
        is a HarnessError."""
        self._require("lock_timeout")
        reply, _ = self._do({"cmd": "lock_timeout"})
        if reply.get("error") or "ms" not in reply:
            raise HarnessError(f"{self.name}: acquisitionLockTimeoutMs() gave no answer: {reply}")
        return reply["ms"]

    def commit_sync(self, timeout: Any = DRIVER_DEFAULT) -> list[dict[str, Any]]:
        """commit_sync: its per-partition results ({topic, partition, error}); an exception is a HarnessError.
        `timeout` (driver contract 3): None calls the library's commitSync() without one, seconds pass them; a
        call the library refused before sending anything (a negative timeout) returns [] with `last_error` set."""
        op = self.commit_outcome(timeout)
        if op is not None and op.type == "ok":
            return op.value["results"]
        if op is not None and op.type == "info":
            raise HarnessError(f"{self.name}: commit_sync raised {op.value.get('error')}")
        return []

    def commit_outcome(self, timeout: Any = DRIVER_DEFAULT):
        """commit_sync, and the operation that ended it: `ok` (its results), `info` (it raised: outcome unknown),
        `fail` (refused before anything was sent); None if the driver printed none (`timeout`: as commit_sync's)."""
        self._require("commit_sync")
        command: dict[str, Any] = {"cmd": "commit_sync"}
        if timeout is not DRIVER_DEFAULT:
            if timeout is None or timeout < 0:
                self._require("default_timeouts" if timeout is None else "negative_timeout_refused")
            command["timeout"] = timeout
        _, ops = self._do(command)
        return next((op for op in ops if op.f == "commit" and op.type in ("ok", "info", "fail")), None)

    def wakeup(self) -> str | None:
        """wakeup() on the driver's own thread, no call blocking (driver contract 3): the error, if it raised."""
        self._require("wakeup")
        reply, _ = self._do({"cmd": "wakeup"})
        return reply.get("error")

    def poll_concurrent(self, timeout: float) -> list[str | None]:
        """poll(timeout) on the driver's thread while a second thread calls the consumer (subscription(), again and
        again until the poll returns; driver contract 4): the error each raised (None: none), the poll's first."""
        self._require("thread_guard")
        reply, _ = self._do({"cmd": "poll_concurrent", "timeout": timeout}, timeout + 30)
        errors = reply.get("errors")
        if not isinstance(errors, list) or len(errors) != 2:
            raise HarnessError(f"{self.name}: poll_concurrent gave no errors of its two polls: {reply}")
        return errors

    def client_instance_id(self, timeout: float) -> tuple[str | None, int | None, str | None]:
        """clientInstanceId(timeout) (driver contract 4): the id (None: the library returned none), how long the
        call took (ms) and the error it raised, if any."""
        self._require("client_instance_id")
        reply, _ = self._do({"cmd": "client_instance_id", "timeout": timeout}, max(timeout, 0) + 30)
        return reply.get("id"), reply.get("elapsed_ms"), reply.get("error")

    def commit_ok(self, partitions=None) -> list[dict[str, Any]]:
        """commit_sync, asserting what a rule that commits acknowledgements needs: at least one result (an empty
        result where one was required is a failure, not a vacuous pass), one for each of `partitions` if
        given, and no error."""
        results = self.commit_sync()
        assert results, f"{self.name}: commitSync returned no per-partition result for acknowledgements it carried"
        if partitions is not None:
            got = sorted({r["partition"] for r in results})
            assert got == sorted(set(partitions)), f"{self.name}: commitSync results for partitions {got}, not " \
                                                   f"{sorted(set(partitions))}: {results}"
        errors = [r for r in results if r["error"] is not None]
        assert not errors, f"{self.name}: commitSync reported errors {errors}"
        return results

    def commit_async(self) -> None:
        self._require("commit_async")
        self._do({"cmd": "commit_async"})

    def poll_once(self, timeout: float, wakeup_after: float | None = None,
                  interrupt_after: float | None = None) -> tuple[list[Record], int | None, str | None]:
        """One library poll with `timeout` seconds (driver contract 3): the records it returned, how long the call
        took (ms) and the error it raised, if any. `wakeup_after` (driver contract 4): a second thread of the driver
        calls wakeup() that many seconds into the poll (`last_reply["wakeup_sent"]`: whether it did before the poll
        returned); `interrupt_after` (driver contract 4): a second thread interrupts the polling thread that many
        seconds in (`last_reply["interrupt_sent"]`)."""
        self._require("poll_once")
        if timeout < 0:
            self._require("negative_timeout_refused")
        command: dict[str, Any] = {"cmd": "poll_once", "timeout": timeout}
        if wakeup_after is not None:
            self._require("wakeup_thread")
            command["wakeup_after"] = wakeup_after
        if interrupt_after is not None:
            self._require("interrupt_thread")
            command["interrupt_after"] = interrupt_after
        reply, ops = self._do(command, max(timeout, 0) + 30)
        return _given(ops), reply.get("elapsed_ms"), reply.get("error")

    def close(self, wait_exit: bool = True, timeout: Any = DRIVER_DEFAULT) -> str | None:
        """Close the client (the command returns when the library's close() returned); then, unless
        `wait_exit` is False, wait for the driver's process to exit. A rule about what close() itself does
        measures from its return with the process still alive: a process that exits releases everything
        it held anyway (the broker drops its share sessions), which would hide a close() that did nothing.
        `timeout` (driver contract 3): None calls the library's close() without one; a negative one tests its
        refusal: the error the library refused the close with (the consumer then stays open), else None."""
        if timeout is not DRIVER_DEFAULT:  # driver contract 3: None calls close() without one; 4: S seconds
            self._require("default_timeouts" if timeout is None else
                          "close_timeout" if timeout >= 0 else "negative_timeout_refused")
        if self.driver.alive() and not self.close_sent:
            reply, _ = self._do({"cmd": "close"} if timeout is DRIVER_DEFAULT else {"cmd": "close", "timeout": timeout})
            if reply.get("error"):  # the library refused the close (a negative timeout): still open
                return reply["error"]
            self.close_sent = True
        if wait_exit:
            self.driver.close()
        return None
