"""Faulty driver: subscribe() drops empty topic names and subscribes to the rest, telling the application nothing (a
wrapper that "cleans" its input). Certification must fail rule `subscribe-invalid-refused`."""

import sys

from _wrap import Wrapped, run


def wrap(consumer, config):
    return Wrapped(consumer, subscribe=lambda topics: consumer.subscribe([t for t in topics if t]))


sys.exit(run(wrap))
