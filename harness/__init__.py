"""kafka-share-harness: conformance and chaos tests for Kafka share groups (KIP-932).

Importing this package has no side effects: no process is started, nothing is
downloaded. See `harness.run` for the phases of one run.
"""

__version__ = "0.1.0"
