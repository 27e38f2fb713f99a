"""Faulty driver: acknowledging by topic, partition and offset drops the type and ACCEPTs (an overload that forgets to
pass its last argument on). Certification must fail rule `ack-by-offset`."""

import sys

from _wrap import Wrapped, run


def wrap(consumer, config):
    return Wrapped(consumer, acknowledge_offset=lambda topic, partition, offset, *type_:
                   consumer.acknowledge_offset(topic, partition, offset))


sys.exit(run(wrap))
