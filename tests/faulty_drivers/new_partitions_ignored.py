"""Faulty driver: records of a partition the consumer was not handed records of in its first batch are
silently dropped (a library that fetches only the partitions of its first assignment): records produced
to partitions added to the topic later never reach the application. Certification must fail rule
`new-partitions-consumed`."""

import sys

from harness.clients import confluent_share_driver as d

_emit = d.emit
_known: set = set()


def emit(type_, f, value=None):
    if f in ("poll", "acknowledge") and isinstance(value, dict) and "records" in value:
        if f == "poll" and not _known:
            _known.update((r["topic"], r["partition"]) for r in value["records"])
        value = {**value, "records": [r for r in value["records"] if (r["topic"], r["partition"]) in _known]}
        if not value["records"]:
            return
    _emit(type_, f, value)


d.emit = emit
sys.exit(d.main(sys.argv))
