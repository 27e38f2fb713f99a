"""Faulty driver: acknowledge(record) without a type RELEASEs the record (a library whose default type is not ACCEPT);
the driver, trusting the documented default, prints ACCEPT. Certification must fail rule `ack-default-accepts`."""

import sys

from confluent_kafka import AcknowledgeType

from _wrap import Wrapped, run


def wrap(consumer, config):
    def acknowledge(message, *type_):
        consumer.acknowledge(message, *(type_ or (AcknowledgeType.RELEASE,)))
    return Wrapped(consumer, acknowledge=acknowledge)


sys.exit(run(wrap))
