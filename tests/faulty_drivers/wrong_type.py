"""Faulty driver: a RELEASE is sent to the broker as ACCEPT (the driver reports RELEASE): a record the
application handed back is never delivered again. Certification must fail rule `ack-release`."""

import sys

from confluent_kafka import AcknowledgeType

from harness.clients import confluent_share_driver as d

d._ACK["RELEASE"] = AcknowledgeType.ACCEPT
sys.exit(d.main(sys.argv))
