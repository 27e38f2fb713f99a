"""Faulty driver: hides the last record of every batch of two or more from the application, and
acknowledges it ACCEPT with the next acknowledgement anyway (it acknowledges a record it never handed
over). Certification must fail rule `ack-only-given`."""

import sys

from harness.clients import confluent_share_driver as d

hidden: list[dict] = []
_emit, _acknowledge = d.emit, d._acknowledge


def emit(type_, f, value=None):
    if f == "poll" and type_ == "ok" and len(value["records"]) >= 2:
        last = value["records"][-1]
        hidden.append({"topic": last["topic"], "partition": last["partition"], "offset": last["offset"]})
        value = {"records": value["records"][:-1]}
    _emit(type_, f, value)


def acknowledge(consumer, given, records):
    extra = [{**h, "type": "ACCEPT"} for h in hidden]
    hidden.clear()
    return _acknowledge(consumer, given, list(records) + extra)


d.emit, d._acknowledge = emit, acknowledge
sys.exit(d.main(sys.argv))
