"""Faulty driver: close() stops at its first failing step: it commits the pending acknowledgements first and, when
the broker refuses one, throws that error without leaving the group or releasing anything (explicit mode; a wrapper whose
shutdown is a chain of steps that gives up early), where the Javadoc says close "will attempt all shutdown steps
even if one of them fails". Certification must fail rule `close-continues-after-failure`."""

import sys

from confluent_kafka import KafkaException

from harness.clients import confluent_share_driver as d


class _GivesUp:
    def __init__(self, consumer, explicit):
        self._consumer, self._explicit = consumer, explicit

    def __getattr__(self, name):
        return getattr(self._consumer, name)

    def close(self, *args, **kwargs):
        if not self._explicit:  # (a commit first would accept an implicit consumer's last batch: another bug)
            return self._consumer.close(*args, **kwargs)
        results = self._consumer.commit_sync(30.0)
        for error in results.values():
            if error is not None:  # the bug: the first failed step ends the close
                raise KafkaException(error.args[0] if isinstance(error, KafkaException) else error)
        return self._consumer.close(*args, **kwargs)


_subscribed = d._subscribed


def subscribed(config, explicit, *args, **kwargs):
    return _GivesUp(_subscribed(config, explicit, *args, **kwargs), explicit)


d._subscribed = subscribed
sys.exit(d.main(sys.argv))
