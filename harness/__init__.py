"""kafka-share-harness: conformance and chaos tests for Kafka share groups (KIP-932).

Importing this package has no side effects: no process is started, nothing is
downloaded. See `harness.run` for the phases of one run.
"""

from harness.version import VERSION as __version__  # noqa: F401  (the distribution's: harness.version)
