"""Faulty driver: unsubscribe() reports success but does nothing: the consumer stays subscribed and its next polls
keep taking records (a wrapper that forgets to forward the call). Speaks driver contract 2, which brought the
`unsubscribe` command. Certification must fail rule `unsubscribe-stops`."""

import sys

from harness.clients import confluent_share_driver as d


class _Ignored:
    def __init__(self, consumer):
        self._consumer = consumer

    def __getattr__(self, name):
        return getattr(self._consumer, name)

    def unsubscribe(self):  # the lie: success, still subscribed
        return None


_subscribed = d._subscribed


def subscribed(*args, **kwargs):
    return _Ignored(_subscribed(*args, **kwargs))


d._subscribed = subscribed
sys.exit(d.main(sys.argv))
