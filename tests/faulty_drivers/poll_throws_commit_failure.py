"""Faulty driver: a poll that committed acknowledgements the broker refused throws the refusal (a wrapper that
turns the acknowledgement commit callback's error into an exception of the next poll), where the Javadoc says "no
exception is thrown by a failure to commit the acknowledgements". Certification must fail rule
`poll-swallows-commit-failure`."""

import sys

from confluent_kafka import KafkaException

from harness.clients import confluent_share_driver as d

_failures = []
_on_commit = d._on_commit


def on_commit(offsets, exc):
    _on_commit(offsets, exc)
    if exc is not None:
        _failures.append(exc.args[0] if isinstance(exc, KafkaException) else exc)


class _Throwing:
    def __init__(self, consumer):
        self._consumer = consumer

    def __getattr__(self, name):
        return getattr(self._consumer, name)

    def poll(self, *args, **kwargs):
        messages = self._consumer.poll(*args, **kwargs)
        if _failures:  # the bug: the refusal the callback was given is thrown at the application as well
            raise KafkaException(_failures.pop(0))
        return messages


_subscribed = d._subscribed


def subscribed(*args, **kwargs):
    return _Throwing(_subscribed(*args, **kwargs))


d._on_commit = on_commit
d._subscribed = subscribed
sys.exit(d.main(sys.argv))
