"""Conformance: KIP-932 behaviours asserted one by one on a real cluster, each history checked too.

- `session.ShareSession`: a fresh topic and share group, producing and administration
  (`log_ops`, `admin_ops`), step consumers, and the verdict (the same run tail as chaos runs);
- `consumer.StepConsumer` / `consumer.Record`: one share consumer driven command by command;
- `kafka_errors.error_is`: a client's error text against a Kafka error code;
- `requirements.missing_requirement`: why a test cannot run on the release under test;
- `sasl.sasl_client_config`: client properties for a SASL/PLAIN listener;
- `outcomes.precondition` / `Inconclusive`: a set-up that did not hold ends a test as inconclusive;
- `report`: the area x result report of a conformance session.
"""

from harness.conformance.consumer import LATE_AFTER_LOCK_S, Record, StepConsumer
from harness.conformance.kafka_errors import ERROR_MESSAGES, error_is
from harness.conformance.outcomes import Inconclusive, precondition
from harness.conformance.requirements import missing_requirement
from harness.conformance.sasl import sasl_client_config
from harness.conformance.session import ShareSession

__all__ = ["ERROR_MESSAGES", "Inconclusive", "LATE_AFTER_LOCK_S", "Record", "ShareSession", "StepConsumer", "error_is", "missing_requirement",
           "precondition", "sasl_client_config"]
