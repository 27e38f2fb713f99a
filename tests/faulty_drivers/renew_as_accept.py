"""Faulty driver: RENEW is declared and sent as ACCEPT (a wrapper mapping an acknowledgement type its library lacks to
the nearest one it has): the record is settled instead of renewed, and never delivered again. Certification must fail
rule `renew-ends-on-disconnect`."""

import sys

from harness.clients import confluent_share_driver as d

_acknowledge = d._acknowledge


def acknowledge(consumer, given, records, *args, **kwargs):
    return _acknowledge(consumer, given, [{**r, "type": "ACCEPT"} if r.get("type") == "RENEW" else r for r in records],
                        *args, **kwargs)


d._acknowledge = acknowledge
sys.exit(d.main(sys.argv))
