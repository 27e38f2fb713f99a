"""Faulty driver: wakeup() from another thread does not reach a poll already blocking (a library whose wakeup is only
seen by the next call, or a wrapper that calls it on a consumer object other than the one polling): the poll runs to
its timeout. confluent-kafka has no wakeup: `poll_once`'s `wakeup_after` is this driver's own, and it says the wakeup
was sent. Certification must fail rule `wakeup-blocking-call`."""

import sys

from harness.clients import confluent_share_driver as d

_step = d._step


def step(consumer, cmd, command, given):
    if cmd == "poll_once" and "wakeup_after" in command:
        return {**_step(consumer, cmd, {k: v for k, v in command.items() if k != "wakeup_after"}, given),
                "wakeup_sent": True}
    return _step(consumer, cmd, command, given)


d._step = step
sys.exit(d.main(sys.argv))
