"""Faulty driver: a commit with nothing to commit reports the previous commit's results again (a client that keeps
its last result map and returns it when no request was needed). Certification must fail rule `empty-commit-noop`."""

import sys

from harness.clients import confluent_share_driver as d

_emit = d.emit
_last = []  # the last commit's results that named a partition


def emit(type_, f, value=None):
    if f == "commit" and type_ == "ok" and isinstance(value, dict):
        if value.get("results"):
            _last[:] = value["results"]
        elif _last:
            value = {**value, "results": list(_last)}
    _emit(type_, f, value)


d.emit = emit
sys.exit(d.main(sys.argv))
