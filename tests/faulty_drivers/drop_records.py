"""Faulty driver: silently drops every record at an offset of the form 4k+3: the application never
sees it and the driver prints nothing of it (not its delivery, not the acceptance the client makes
in implicit mode). Certification must fail rule `every-record-handed`."""

import sys

from harness.clients import confluent_share_driver as d

_emit = d.emit


def _kept(records):
    return [r for r in records if r["offset"] % 4 != 3]


def emit(type_, f, value=None):
    if f in ("poll", "acknowledge") and isinstance(value, dict) and "records" in value:
        value = {**value, "records": _kept(value["records"])}
        if not value["records"]:
            return
    _emit(type_, f, value)


d.emit = emit
sys.exit(d.main(sys.argv))
