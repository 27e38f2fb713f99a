"""Faulty driver: subscribe() adds the topics to the current subscription instead of replacing it (subscriptions made
incremental). Certification must fail rules `subscribe-replaces` and `subscription-echo`."""

import sys

from _wrap import Wrapped, run


def wrap(consumer, config):
    def subscribe(topics):
        consumer.subscribe(sorted(set(consumer.subscription()) | set(topics)) if topics else [])
    return Wrapped(consumer, subscribe=subscribe)


sys.exit(run(wrap))
