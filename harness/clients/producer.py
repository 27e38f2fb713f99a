"""The producer: confluent-kafka, acks=all, idempotent; every delivery report goes into the history.

Each value is a unique id (`<run>-<seq>`), so a delivered record can be traced
back to exactly one produce. A produce whose report never arrives stays an
`invoke` without completion (outcome unknown), never an assumed success.
"""

from __future__ import annotations

from confluent_kafka import Producer

from harness.clients.logging import client_logging
from harness.history.store import HistoryWriter


class HistoryProducer:
    """Produces unique ids and records invoke/ok/fail for each."""

    def __init__(self, bootstrap: str, history: HistoryWriter, process: str = "producer-0",
                 extra: dict[str, object] | None = None) -> None:
        self.history = history
        self.process = process
        self._producer = Producer({"bootstrap.servers": bootstrap, "acks": "all",
                                   "enable.idempotence": True, "linger.ms": 5,
                                   **client_logging(), **(extra or {})})

    def produce(self, topic: str, record_id: str, partition: int | None = None) -> None:
        value = {"id": record_id, "topic": topic}
        if partition is not None:
            value["partition"] = partition
        self.history.append(self.process, "invoke", "produce", value)

        def report(err, msg) -> None:
            if err is not None:
                self.history.append(self.process, "fail", "produce", {**value, "error": err.str()})
            else:
                self.history.append(self.process, "ok", "produce",
                                    {"id": record_id, "topic": topic, "partition": msg.partition(), "offset": msg.offset()})

        kwargs = {} if partition is None else {"partition": partition}
        self._producer.produce(topic, record_id.encode(), on_delivery=report, **kwargs)
        self._producer.poll(0)

    def poll(self, timeout: float) -> None:
        """Serve delivery reports for up to `timeout` seconds."""
        self._producer.poll(timeout)

    def flush(self, timeout: float) -> int:
        """Wait for delivery reports; returns how many are still outstanding."""
        return self._producer.flush(timeout)
