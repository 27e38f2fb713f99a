"""Faulty driver: every poll after the first hands the application the first record of the previous
batch again (the same delivery, not a redelivery by the broker). Certification must fail rule
`ack-accept` (a record handed out twice is processed twice)."""

import sys

from harness.clients import confluent_share_driver as d

_poll_batch = d._poll_batch
previous: list = []


def poll_batch(consumer, timeout):
    again = previous[:1]
    records = _poll_batch(consumer, timeout)
    if records:
        previous[:] = records
        if again:  # the driver printed the real batch: print the copy as a batch of its own
            m = again[0]
            d.emit("ok", "poll", {"records": [{"id": d._id(m), "topic": m.topic(), "partition": m.partition(),
                                               "offset": m.offset(), "delivery_count": m.delivery_count()}]})
            return records + again
    return records


d._poll_batch = poll_batch
sys.exit(d.main(sys.argv))
