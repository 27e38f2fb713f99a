"""librdkafka's log lines from in-process clients go to the `harness.librdkafka` logger, not stderr.

Connection-refused lines while a cluster starts or a link is cut are expected;
pytest captures the logger, and the CLI keeps it quiet.
"""

import logging

LOGGER = logging.getLogger("harness.librdkafka")
LOGGER.addHandler(logging.NullHandler())
LOGGER.propagate = False  # never to stderr; a run attaches a file handler (logs/librdkafka.log)


def client_logging() -> dict[str, object]:
    """Config entries that route a confluent-kafka client's logs to `LOGGER`."""
    return {"logger": LOGGER}
