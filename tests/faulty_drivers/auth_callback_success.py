"""Faulty driver: an acknowledgement the broker refused for want of authorization is reported to the callback as
committed (a library that treats an authorization error of a ShareAcknowledge as retriable, then forgets it).
Certification must fail rule `callback-authorization`."""

import sys

from harness.clients import confluent_share_driver as d

_on_commit = d._on_commit


def on_commit(offsets, exc):
    _on_commit(offsets, None if exc is not None and "AUTHORIZATION" in d._error_text(exc).upper() else exc)


d._on_commit = on_commit
sys.exit(d.main(sys.argv))
