"""Faulty driver: in implicit mode commitAsync does nothing (the library forgets that it must accept the
last batch): the records stay acquired until the next poll accepts them. The driver prints the implicit
acceptance as usual. Certification must fail rule `implicit-commit-async`."""

import sys

from harness.clients import confluent_share_driver as d

_subscribed = d._subscribed


class _NoopAsync:
    def __init__(self, consumer, explicit):
        self._consumer = consumer
        self._explicit = explicit

    def __getattr__(self, name):
        return getattr(self._consumer, name)

    def commit_async(self, *args):
        if self._explicit:
            return self._consumer.commit_async(*args)
        return None


def subscribed(config, explicit, start):
    return _NoopAsync(_subscribed(config, explicit, start), explicit)


d._subscribed = subscribed
sys.exit(d.main(sys.argv))
