"""Faulty driver: a consumer with no guard against a second thread (a wrapper that serializes every call with a lock, so
unsynchronized access never fails): the poll and the other thread's calls all return. confluent-kafka's ShareConsumer
has no such guard to test here: `poll_concurrent` is this driver's own. Certification must fail rule `thread-guard`."""

import sys

from harness.clients import confluent_share_driver as d

_step = d._step


def step(consumer, cmd, command, given):
    if cmd == "poll_concurrent":
        reply = _step(consumer, "poll_once", {"cmd": "poll_once", "timeout": command.get("timeout", 2.0)}, given)
        return {**reply, "errors": [reply.get("error"), None]}
    return _step(consumer, cmd, command, given)


d._step = step
sys.exit(d.main(sys.argv))
