"""Faulty driver: an acknowledgement the library refuses is swallowed: no error reaches the application and nothing
is printed for it (a wrapper that catches the library's IllegalStateException and carries on). Certification must
fail rules `ack-after-commit-refused` (a RELEASE of a record whose ACCEPT was committed) and `no-mixing` (an
explicit acknowledgement in implicit mode)."""

import sys

from harness.clients import confluent_share_driver as d

_emit = d.emit
_acknowledge = d._acknowledge


def emit(type_, f, value=None):
    if f == "acknowledge" and type_ == "fail":
        return
    _emit(type_, f, value)


def acknowledge(consumer, given, records):
    _acknowledge(consumer, given, records)
    return None


d.emit = emit
d._acknowledge = acknowledge
sys.exit(d.main(sys.argv))
