"""Faulty driver: holds back the acknowledgements it is given and makes them when the commit comes,
last first (it commits acknowledgements out of the order the records were returned).
Certification must fail rule `ack-order`."""

import sys

from harness.clients import confluent_share_driver as d

held: list[dict] = []
_acknowledge, _commit = d._acknowledge, d.commit
_given: dict = {}


def acknowledge(consumer, given, records):
    _given.update(given)
    held.extend(records)
    return None


def commit(consumer):
    for record in reversed(held):
        _acknowledge(consumer, _given, [record])
    held.clear()
    _commit(consumer)


d._acknowledge, d.commit = acknowledge, commit
sys.exit(d.main(sys.argv))
