"""Faulty driver: commitSync succeeds but reports no per-partition result at all (the library drops them).
Certification must fail rule `ack-accept` (an empty result where one was required), not pass it vacuously,
and `commit-sync-results`."""

import sys

from harness.clients import confluent_share_driver as d

_emit = d.emit


def emit(type_, f, value=None):
    if f == "commit" and type_ == "ok":
        value = {**value, "results": []}
    _emit(type_, f, value)


d.emit = emit
sys.exit(d.main(sys.argv))
