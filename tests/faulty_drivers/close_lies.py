"""Faulty driver: close() reports success but does nothing: no final acknowledgement, no leave; the client
stays connected (and heartbeating) and the process exits 11 s later (past every rule's window after close: at most 10 s), when the broker finally drops its share
session. Certification must fail rules `close-releases` and `close-leaves`, which measure from close()'s return."""

import sys
import time

from harness.clients import confluent_share_driver as d


class _NoClose:
    def __init__(self, consumer):
        self._consumer = consumer

    def __getattr__(self, name):
        return getattr(self._consumer, name)

    def close(self):  # the lie: success, nothing sent
        return None


_subscribed = d._subscribed
_kept = []  # a reference past the driver's return: collecting the consumer would close it for real


def subscribed(*args, **kwargs):
    consumer = _subscribed(*args, **kwargs)
    _kept.append(consumer)
    return _NoClose(consumer)


d._subscribed = subscribed
rc = d.main(sys.argv)
time.sleep(11)  # still connected: the broker keeps the records acquired until the process goes
sys.exit(rc)
