"""Faulty driver: acknowledge() sends the acknowledgement at once (an asynchronous commit right after it), where the
contract has it only update local information until the next poll, commit or close. Certification must fail rule
`ack-is-local`."""

import sys

from _wrap import Wrapped, run


def wrap(consumer, config):
    def acknowledge(message, *type_):
        consumer.acknowledge(message, *type_)
        consumer.commit_async()
    return Wrapped(consumer, acknowledge=acknowledge)


sys.exit(run(wrap))
