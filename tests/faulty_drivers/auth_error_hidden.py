"""Faulty driver: an authorization error is swallowed: a poll the broker refuses (GROUP_ or
TOPIC_AUTHORIZATION_FAILED) looks like a poll that found nothing, so the application never learns it
lacks READ. Certification must fail rule `poll-authorization`."""

import sys

from harness.clients import confluent_share_driver as d

_emit = d.emit


def emit(type_, f, value=None):
    if f == "error" and isinstance(value, dict) and "AUTHORIZATION" in f"{value.get('code')} {value.get('message')}".upper():
        return
    _emit(type_, f, value)


d.emit = emit
sys.exit(d.main(sys.argv))
