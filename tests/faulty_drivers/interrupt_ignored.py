"""Faulty driver: an interrupt of the thread blocked in poll is swallowed (a library that catches InterruptedException
in its wait and waits on): the poll runs to its timeout. confluent-kafka has no such notion: `poll_once`'s
`interrupt_after` is this driver's own, and it says the interrupt was sent. Certification must fail rule
`interrupt-blocking-call`."""

import sys

from harness.clients import confluent_share_driver as d

_step = d._step


def step(consumer, cmd, command, given):
    if cmd == "poll_once" and "interrupt_after" in command:
        return {**_step(consumer, cmd, {k: v for k, v in command.items() if k != "interrupt_after"}, given),
                "interrupt_sent": True}
    return _step(consumer, cmd, command, given)


d._step = step
sys.exit(d.main(sys.argv))
