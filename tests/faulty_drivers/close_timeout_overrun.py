"""Faulty driver: close(timeout) with acknowledgements it cannot complete waits 11 s, well past a 3 s timeout, and then
returns as if it closed (a library that waits out its own request timeout, not the caller's): the process then exits,
dropping its connections. confluent-kafka's close takes no timeout: this driver declares `close_timeout` on its own.
Certification must fail rule `close-bounded`."""

import time

from _wrap import Wrapped, run


def overrun(consumer, config):
    return Wrapped(consumer, close=lambda: time.sleep(11.0))


raise SystemExit(run(wrap=overrun))
