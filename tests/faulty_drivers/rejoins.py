"""Faulty driver: the client leaves and joins again every 4 s (it closes its consumer and makes a new one at the
next poll: a client that reconnects on a timer), so it is a new member each time. Certification must fail rule
`stays-in-group` (one member id while it polls)."""

import sys
import time

from harness.clients import confluent_share_driver as d

_subscribed = d._subscribed


class _Rejoining:
    """The consumer, closed and made again at the first poll 4 s after it was made."""

    def __init__(self, args):
        self._args, self._consumer, self._made = args, _subscribed(*args), time.monotonic()

    def __getattr__(self, name):
        return getattr(self._consumer, name)

    def poll(self, timeout):
        if time.monotonic() - self._made > 4.0:
            self._consumer.close()
            self._consumer, self._made = _subscribed(*self._args), time.monotonic()
        return self._consumer.poll(timeout)


def subscribed(*args):
    return _Rejoining(args)


d._subscribed = subscribed
sys.exit(d.main(sys.argv))
