"""Faulty driver: every acknowledgement the application makes is reported twice (the library acknowledges
each record twice in one delivery). Certification must fail rule `ack-accept` (the reference model: a
client acknowledges a record once per delivery)."""

import sys

from harness.clients import confluent_share_driver as d

_emit = d.emit


def emit(type_, f, value=None):
    _emit(type_, f, value)
    if f == "acknowledge" and type_ == "ok":
        _emit(type_, f, value)


d.emit = emit
sys.exit(d.main(sys.argv))
