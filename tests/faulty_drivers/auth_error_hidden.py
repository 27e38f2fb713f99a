"""Faulty driver: an authorization or authentication error is swallowed: a poll the broker refuses
(GROUP_ or TOPIC_AUTHORIZATION_FAILED, a SASL authentication failure) looks like a poll that found
nothing, so the application never learns it lacks READ or that its password is wrong. Certification
must fail rules `poll-authorization` and `poll-authentication`."""

import sys

from harness.clients import confluent_share_driver as d

_emit = d.emit


def emit(type_, f, value=None):
    text = f"{value.get('code')} {value.get('message')}".upper() if isinstance(value, dict) else ""
    if f == "error" and ("AUTHORIZATION" in text or "AUTHENTICATION" in text):
        return
    _emit(type_, f, value)


d.emit = emit
sys.exit(d.main(sys.argv))
