"""Not a deliberate fault: confluent-kafka 2.16.1 itself, unchanged. Its ShareConsumer, subscribed to a topic name
Kafka does not allow, is never told so (no error from poll, in a message or to the error callback), where the
Javadoc says poll "@throws InvalidTopicException if the current subscription contains any invalid topic"
(harness/conformance/deviations.py, `invalid-topic-unreported`). Certification must fail rule
`poll-invalid-topic`; when a release of the library reports it, this test fails and both entries come off."""

import sys

from harness.clients import confluent_share_driver as d

sys.exit(d.main(sys.argv))
