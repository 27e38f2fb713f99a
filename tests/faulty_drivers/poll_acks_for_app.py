"""Faulty driver: in explicit mode a poll first ACCEPTs whatever of the previous batch the application left
unacknowledged (the library acknowledges for the application instead of refusing the poll), and prints
nothing of it. Certification must fail rule `explicit-poll-refused`."""

import sys

from confluent_kafka import AcknowledgeType

from harness.clients import confluent_share_driver as d

_subscribed = d._subscribed


def _key(msg):
    return msg.topic(), msg.partition(), msg.offset()


class _AckingPoll:
    def __init__(self, consumer):
        self._consumer = consumer
        self._last: list = []
        self._acked: set = set()

    def __getattr__(self, name):
        return getattr(self._consumer, name)

    def acknowledge(self, msg, *args):
        self._acked.add(_key(msg))
        return self._consumer.acknowledge(msg, *args)

    def poll(self, *args):
        for msg in self._last:
            if _key(msg) not in self._acked:
                try:
                    self._consumer.acknowledge(msg, AcknowledgeType.ACCEPT)
                except Exception:
                    pass
        messages = self._consumer.poll(*args)
        if messages:
            self._last, self._acked = [m for m in messages if m.error() is None], set()
        return messages


def subscribed(*args, **kwargs):
    return _AckingPoll(_subscribed(*args, **kwargs))


d._subscribed = subscribed
sys.exit(d.main(sys.argv))
