"""Faulty driver: poll returns after at most 0.1 s whatever its timeout (a library whose poll does not block),
where a poll with nothing to deliver must await its timeout. Certification must fail rule `poll-waits`."""

import sys

from _wrap import Wrapped, run


def wrap(consumer, config):
    return Wrapped(consumer, poll=lambda timeout=-1: consumer.poll(0.1 if timeout < 0 else min(timeout, 0.1)))


sys.exit(run(wrap))
