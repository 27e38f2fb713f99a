"""Faulty driver: wakeup() is taken and forgotten (a wrapper that drops the call, or a library whose wakeup only
interrupts a call already blocking): the next poll and commitSync run as if it never came. confluent-kafka has no
wakeup: the `wakeup` command is this driver's own. Certification must fail rule `wakeup-next-call`."""

import sys

from harness.clients import confluent_share_driver as d

_step = d._step


def step(consumer, cmd, command, given):
    return {} if cmd == "wakeup" else _step(consumer, cmd, command, given)


d._step = step
sys.exit(d.main(sys.argv))
