"""Faulty driver: acknowledgements are held in the library until the next poll or commit, and close() drops
those still held (it neither commits nor sends them): records ACCEPTed just before close() go back to the
group. The driver prints the acknowledgements as made. Certification must fail rule `close-commits-pending`."""

import sys

from harness.clients import confluent_share_driver as d

_subscribed = d._subscribed


class _HeldAcks:
    def __init__(self, consumer):
        self._consumer = consumer
        self._held: list = []

    def __getattr__(self, name):
        return getattr(self._consumer, name)

    def acknowledge(self, msg, *args):
        self._held.append((msg, args))

    def _flush(self):
        held, self._held = self._held, []
        for msg, args in held:
            self._consumer.acknowledge(msg, *args)

    def poll(self, *args):
        self._flush()
        return self._consumer.poll(*args)

    def commit_sync(self, *args):
        self._flush()
        return self._consumer.commit_sync(*args)

    def commit_async(self, *args):
        self._flush()
        return self._consumer.commit_async(*args)

    def close(self, *args):
        self._held = []
        return self._consumer.close(*args)


def subscribed(*args, **kwargs):
    return _HeldAcks(_subscribed(*args, **kwargs))


d._subscribed = subscribed
sys.exit(d.main(sys.argv))
