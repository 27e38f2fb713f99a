"""Faulty driver: a poll without a subscription is silent: the IllegalStateException the library throws when the
consumer subscribed to no topic is swallowed and the poll returns nothing, so the application never learns it
consumes nothing. Certification must fail rule `poll-not-subscribed`."""

import sys

from confluent_kafka import IllegalStateException

from harness.clients import confluent_share_driver as d

_subscribed = d._subscribed


class _Silent:
    """The library's consumer, its "not subscribed" refusal turned into an empty poll."""

    def __init__(self, consumer) -> None:
        self._consumer = consumer

    def poll(self, timeout):
        try:
            return self._consumer.poll(timeout)
        except IllegalStateException as exc:
            if "not subscribed" not in str(exc):
                raise
            return []

    def __getattr__(self, name):
        return getattr(self._consumer, name)


def subscribed(config, explicit, start, subscribe=True):
    return _Silent(_subscribed(config, explicit, start, subscribe))


d._subscribed = subscribed
sys.exit(d.main(sys.argv))
