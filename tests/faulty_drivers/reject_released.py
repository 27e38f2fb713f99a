"""Faulty driver: a REJECT is sent to the broker as RELEASE (the driver reports REJECT): a record the
application rejected is delivered again instead of being archived, and never reaches the group's
dead-letter queue. Certification must fail rule `reject-dead-letters`."""

import sys

from confluent_kafka import AcknowledgeType

from harness.clients import confluent_share_driver as d

d._ACK["REJECT"] = AcknowledgeType.RELEASE
sys.exit(d.main(sys.argv))
