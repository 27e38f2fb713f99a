"""Faulty driver: subscription() names the topics the consumer was started with, whatever subscribe() changed since (a
wrapper that caches its configuration). Certification must fail rule `subscription-echo`."""

import sys

from _wrap import Wrapped, run


def wrap(consumer, config):
    return Wrapped(consumer, subscription=lambda: list(config["topics"]))


sys.exit(run(wrap))
