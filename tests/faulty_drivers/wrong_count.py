"""Faulty driver: reports every delivery with delivery count 1, whatever the client says.
Certification must fail rule `delivery-count`."""

import sys

from harness.clients import confluent_share_driver as d

_emit = d.emit


def emit(type_, f, value=None):
    if f == "poll" and type_ == "ok":
        value = {"records": [{**r, "delivery_count": 1} for r in value["records"]]}
    _emit(type_, f, value)


d.emit = emit
sys.exit(d.main(sys.argv))
