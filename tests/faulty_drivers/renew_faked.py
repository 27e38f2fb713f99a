"""Faulty driver: RENEW is declared but never reaches the library: the acknowledgement is taken, reported as
success and dropped (a wrapper mapping an acknowledgement type the library lacks to nothing). Certification must
fail rules `renew-callback` (no callback ever reports the RENEW) and `renew-implicit-refused` (an implicit-mode
consumer takes it)."""

import sys

from harness.clients import confluent_share_driver as d

_acknowledge = d._acknowledge


def acknowledge(consumer, given, records):
    return _acknowledge(consumer, given, [r for r in records if r.get("type") != "RENEW"])


d._acknowledge = acknowledge
sys.exit(d.main(sys.argv))
