"""Faulty driver: the ACCEPT of every record at an offset of the form 3k+1 never reaches the broker, though
the driver reports it made and committed: the record goes back to the group (the driver releases it, as
an expired lock would, only sooner). Certification must fail rule `ack-accept`."""

import sys

from confluent_kafka import AcknowledgeType

from harness.clients import confluent_share_driver as d


class _Lost:
    """`consumer.acknowledge` with the ACCEPT of offsets 3k+1 lost (a release goes instead)."""

    def __init__(self, consumer):
        self._consumer = consumer

    def __getattr__(self, name):
        return getattr(self._consumer, name)

    def acknowledge(self, msg, type_=AcknowledgeType.ACCEPT):
        if type_ == AcknowledgeType.ACCEPT and msg.offset() % 3 == 1:
            type_ = AcknowledgeType.RELEASE
        return self._consumer.acknowledge(msg, type_)


_acknowledge = d._acknowledge


def acknowledge(consumer, given, records):
    return _acknowledge(_Lost(consumer), given, records)


d._acknowledge = acknowledge
sys.exit(d.main(sys.argv))
