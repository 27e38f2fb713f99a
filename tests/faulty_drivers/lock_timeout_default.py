"""Faulty driver: answers acquisitionLockTimeoutMs() with the brokers' default lock duration (30 s), known before any
fetch and whatever the group's is (a library that reports its configuration, not the fetch's). confluent-kafka has
no such call: the `lock_timeout` command is this driver's own. Certification must fail rule `lock-timeout-reported`."""

import sys

from harness.clients import confluent_share_driver as d

_step = d._step


def step(consumer, cmd, command, given):
    return {"ms": 30000} if cmd == "lock_timeout" else _step(consumer, cmd, command, given)


d._step = step
sys.exit(d.main(sys.argv))
