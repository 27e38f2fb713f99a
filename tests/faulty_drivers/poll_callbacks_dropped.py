"""Faulty driver: the acknowledgement commit callback reports only the results of commitAsync: results of the
acknowledgements a poll carried are never delivered (the driver prints no callback for them). Certification
must fail rule `explicit-poll-commits`."""

import sys

from harness.clients import confluent_share_driver as d

_emit = d.emit
_async = [False]  # a commitAsync was called since the last callback it reported


def emit(type_, f, value=None):
    if f == "commit" and type_ == "invoke" and isinstance(value, dict) and value.get("async"):
        _async[0] = True
    elif f == "callback":
        if not _async[0]:
            return
        _async[0] = False
    _emit(type_, f, value)


d.emit = emit
sys.exit(d.main(sys.argv))
