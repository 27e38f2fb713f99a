"""Faulty driver: subscribe([]) is taken as "no change" (a wrapper that skips an empty list instead of passing it on):
the consumer stays subscribed and keeps taking records. Certification must fail rule `subscribe-empty-unsubscribes`."""

import sys

from _wrap import Wrapped, run


def wrap(consumer, config):
    def subscribe(topics):
        if topics:
            consumer.subscribe(topics)
    return Wrapped(consumer, subscribe=subscribe)


sys.exit(run(wrap))
