"""Faulty driver: commitSync(timeout) waits out a fixed 8 s retry back-off on top of its timeout before it gives up (a
library that checks its deadline only between retries). Certification must fail rule `commit-sync-bounded`."""

import sys
import time

from harness.clients import confluent_share_driver as d

_step = d._step


def step(consumer, cmd, command, given):
    if cmd == "commit_sync" and isinstance(command.get("timeout"), (int, float)):
        began = time.monotonic()
        reply = _step(consumer, cmd, command, given)
        time.sleep(max(0.0, command["timeout"] + 8.0 - (time.monotonic() - began)))
        return reply
    return _step(consumer, cmd, command, given)


d._step = step
sys.exit(d.main(sys.argv))
