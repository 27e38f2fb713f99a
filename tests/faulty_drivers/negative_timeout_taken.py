"""Faulty driver: a negative timeout is taken as zero (clamped), where KafkaShareConsumer's poll, commitSync and close
refuse it with IllegalArgumentException. Certification must fail rule `negative-timeout-refused`."""

import sys

from _wrap import Wrapped, run


def wrap(consumer, config):
    return Wrapped(consumer, poll=lambda timeout=-1: consumer.poll(max(timeout, 0)))


sys.exit(run(wrap))
