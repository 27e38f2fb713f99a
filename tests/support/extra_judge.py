"""A property the harness does not register, written as a new property would be: one module with its `Judge`
class (and, to register it, one line in `harness.checkers.judges.JUDGES`). The protocol's tests run it beside
the registered judges."""

from __future__ import annotations

from harness.checkers.judge import Event, Judge


class AckedUndelivered(Judge):
    """An acknowledgement names a record the acknowledging consumer was handed."""

    NAME = "acked-undelivered"
    SENTENCE = ("KafkaShareConsumer.acknowledge(record, type): \"Acknowledge successful delivery of a record "
                "returned on the last poll\"")
    EVENTS = frozenset({"poll", "acknowledge"})
    NEEDS = ("acks-judged", "no acknowledgement in the history")

    def __init__(self, view) -> None:
        super().__init__(view)
        self.handed: set[tuple] = set()

    def see(self, event: Event) -> None:
        if event.topic is None:
            return
        key = (event.process, event.topic, event.partition, event.offset)
        if event.f == "poll" and event.type == "ok":
            self.handed.add(key)
        elif event.f == "acknowledge" and event.type == "ok":
            self.r.findings.n["acks-judged"] += 1
            if key not in self.handed:
                self.r.findings.anomaly(self.NAME, "acked-undelivered",
                                        f"{event.process} acknowledged {event.topic}-{event.partition}@{event.offset},"
                                        " which no poll handed it", (event.index,))

    @staticmethod
    def stats(n, config, found):
        return {"acks": n["acks-judged"]}
