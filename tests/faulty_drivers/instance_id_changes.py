"""Faulty driver: clientInstanceId answers a new id on every call (a library that makes one per request instead of
keeping the one the cluster gave it). confluent-kafka has no such call: the `client_instance_id` command is this
driver's own; it refuses a negative timeout and a consumer without telemetry as the Javadoc says. Certification must
fail rule `client-instance-id`."""

import json
import sys
import uuid

from harness.clients import confluent_share_driver as d

_step = d._step


def step(consumer, cmd, command, given):
    if cmd != "client_instance_id":
        return _step(consumer, cmd, command, given)
    if command["timeout"] < 0:
        return {"error": "IllegalArgumentException: The timeout cannot be negative."}
    if METRICS_OFF:
        return {"error": "IllegalStateException: Telemetry is not enabled."}
    return {"id": str(uuid.uuid4()), "elapsed_ms": 0}


#: the consumer was made with enable.metrics.push=false (telemetry off)
METRICS_OFF = json.loads(sys.argv[1]).get("client_config", {}).get("enable.metrics.push") == "false"
d._step = step
sys.exit(d.main(sys.argv))
