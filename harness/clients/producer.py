"""The producer: confluent-kafka, acks=all, idempotent; every delivery report goes into the history.

Each value is a unique id (`<run>-<seq>`), so a delivered record can be traced
back to exactly one produce. A produce whose report never arrives stays an
`invoke` without completion (outcome unknown), never an assumed success.
A fatal producer error (an idempotent producer whose sequence no longer
matches the log after an unclean election) sets `fatal`; the caller starts a
new producer for the records still to come.
"""

from __future__ import annotations

from collections import deque

from confluent_kafka import KafkaError, KafkaException, Producer

from harness.clients.logging import client_logging
from harness.history.store import HistoryWriter


class HistoryProducer:
    """Produces unique ids and records invoke/ok/fail for each.

    Delivery reports are queued by the client's callbacks and written to the history by the caller's
    thread after each client call, never from inside a callback: after a fatal error confluent-kafka
    can leave a stray exception behind in callback context, which must not strike while the history
    lock is held. After a fatal error the client is not called again.
    """

    def __init__(self, bootstrap: str, history: HistoryWriter, process: str = "producer-0",
                 extra: dict[str, object] | None = None) -> None:
        self.history = history
        self.process = process
        self.fatal: str | None = None
        self._reports: deque[tuple[str, dict]] = deque()
        self._producer = Producer({"bootstrap.servers": bootstrap, "acks": "all",
                                   "enable.idempotence": True, "linger.ms": 5, "error_cb": self._on_error,
                                   **client_logging(), **(extra or {})})

    def _on_error(self, err) -> None:
        if err.fatal():
            self.fatal = err.str()

    def produce(self, topic: str, record_id: str, partition: int | None = None, key: str | None = None,
                timestamp_ms: int | None = None) -> None:
        value = {"id": record_id, "topic": topic}
        if partition is not None:
            value["partition"] = partition
        if key is not None:  # a compacted topic keeps the last record of each key
            value["key"] = key
        if timestamp_ms is not None:  # its CreateTime: by_duration's start is judged against it
            value["timestamp_ms"] = timestamp_ms
        self.history.append(self.process, "invoke", "produce", value)
        reports = self._reports

        def report(err, msg) -> None:
            if err is not None:
                reports.append(("fail", {**value, "error": err.str()}))
            else:
                # offset() is None when the broker acknowledged without an offset: a retried idempotent
                # batch it had already written (DUPLICATE_SEQUENCE_NUMBER). Written, at an offset unknown.
                offset = msg.offset()
                reports.append(("ok", {"id": record_id, "topic": topic, "partition": msg.partition(),
                                       "offset": -1 if offset is None or offset < 0 else offset}))

        kwargs: dict = {} if partition is None else {"partition": partition}
        if key is not None:
            kwargs["key"] = key.encode()
        if timestamp_ms is not None:  # a CreateTime in the past (share.auto.offset.reset=by_duration)
            kwargs["timestamp"] = timestamp_ms
        self._call(lambda: self._producer.produce(topic, record_id.encode(), on_delivery=report, **kwargs))
        self.poll(0)

    def transaction(self, topic: str, record_ids: list[str], partition: int | None, commit: bool,
                    timeout: float = 30.0) -> None:
        """Produce `record_ids` in one transaction (needs `transactional.id` in `extra`), then commit or
        abort it; the outcome is a `transaction` operation naming the ids (its `info` if it raised)."""
        self._producer.init_transactions(timeout)
        self._producer.begin_transaction()
        for rid in record_ids:
            self.produce(topic, rid, partition)
        self.flush(timeout)  # every record written (delivery reports in) before the outcome
        outcome = "commit" if commit else "abort"
        value = {"topic": topic, "outcome": outcome, "ids": list(record_ids)}
        self.history.append(self.process, "invoke", "transaction", value)
        try:
            (self._producer.commit_transaction if commit else self._producer.abort_transaction)(timeout)
        except KafkaException as exc:
            self.history.append(self.process, "info", "transaction", {**value, "error": str(exc)})
            raise
        self.history.append(self.process, "ok", "transaction", value)

    def poll(self, timeout: float) -> None:
        """Serve delivery reports for up to `timeout` seconds."""
        self._call(lambda: self._producer.poll(timeout))

    def flush(self, timeout: float) -> int:
        """Wait for delivery reports; returns how many are still outstanding."""
        result = self._call(lambda: self._producer.flush(timeout))
        return len(self._producer) if result is None else result

    def _call(self, call):
        """Call the client unless a fatal error retired it; record the delivery reports it served."""
        result = None
        if self.fatal is None:
            try:
                result = call()
            except KafkaException as exc:
                err = exc.args[0] if exc.args else None
                # produce() refuses with code _FATAL (its error's fatal flag unset) once the client is
                # fatal, possibly before error_cb has told us: seen in CI after an unclean election
                if self.fatal is None and not (err is not None and (err.fatal() or err.code() == KafkaError._FATAL)):
                    raise  # not a fatal client error: a real failure of the harness
                self.fatal = self.fatal or err.str()
            except SystemError:
                if self.fatal is None:
                    raise
        while self._reports:
            type_, value = self._reports.popleft()
            self.history.append(self.process, type_, "produce", value)
        return result
