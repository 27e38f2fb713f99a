"""Faulty driver: commitSync() without a timeout does nothing and returns no result (an overload left unimplemented
in a wrapper), where the timed one commits. Certification must fail rule `no-argument-overloads`."""

import sys

from _wrap import Wrapped, run


def wrap(consumer, config):
    return Wrapped(consumer, commit_sync=lambda *timeout: consumer.commit_sync(*timeout) if timeout else {})


sys.exit(run(wrap))
