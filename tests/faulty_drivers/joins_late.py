"""Faulty driver: the client defers its join: it subscribes only once it has polled for 20 s, and its polls until
then return nothing without asking the broker (a client that waits for its metadata or a local buffer before it
joins). Certification must fail rule `joins-on-poll` (a member once it polls, within 10 s)."""

import sys
import time

from harness.clients import confluent_share_driver as d


class _Deferred:
    """The consumer, its subscription deferred to 20 s after its first poll."""

    def __init__(self, consumer, topics):
        self._consumer, self._topics, self._first = consumer, topics, None

    def __getattr__(self, name):
        return getattr(self._consumer, name)

    def poll(self, timeout):
        self._first = self._first or time.monotonic()
        if self._topics is not None and time.monotonic() - self._first < 20.0:
            time.sleep(min(timeout, 0.5))
            return []
        if self._topics is not None:
            self._consumer.subscribe(self._topics)
            self._topics = None
        return self._consumer.poll(timeout)


_unsubscribed = d._subscribed


def subscribed(config, explicit, start):
    return _Deferred(_unsubscribed(config, explicit, start, subscribe=False), config["topics"])


d._subscribed = subscribed
sys.exit(d.main(sys.argv))
