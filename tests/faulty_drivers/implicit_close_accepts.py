"""Faulty driver: in implicit mode close() first commits, which accepts the last batch (the library treats
close like the next poll): the records the application was handed last are never released to another
consumer. The driver prints nothing of it. Certification must fail rule `implicit-close-releases`."""

import sys

from harness.clients import confluent_share_driver as d

_subscribed = d._subscribed


class _AcceptingClose:
    def __init__(self, consumer):
        self._consumer = consumer

    def __getattr__(self, name):
        return getattr(self._consumer, name)

    def close(self, *args):
        try:
            self._consumer.commit_sync(10.0)  # (explicit mode: nothing acknowledged is pending, a no-op)
        except Exception:
            pass
        return self._consumer.close(*args)


def subscribed(*args, **kwargs):
    return _AcceptingClose(_subscribed(*args, **kwargs))


d._subscribed = subscribed
sys.exit(d.main(sys.argv))
