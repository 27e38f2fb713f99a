"""Faulty driver: the broker's per-partition commit errors are dropped: commitSync's results and the commit
callback say `error: null` whatever the broker answered. Certification must fail rules `ack-expired-fails` (the
commit's result) and `commit-async-callback` (the callback's)."""

import sys

from harness.clients import confluent_share_driver as d

_emit = d.emit


def emit(type_, f, value=None):
    if f == "commit" and type_ == "ok":
        value = {**value, "results": [{**r, "error": None} for r in value["results"]]}
    elif f == "callback":
        value = {**value, "error": None}
    _emit(type_, f, value)


d.emit = emit
sys.exit(d.main(sys.argv))
