"""Faulty driver: an interrupt of the thread blocked in poll is swallowed (a library that catches InterruptedException
in its wait and waits on): the poll runs to its timeout. confluent-kafka has no such notion: `poll_once`'s
`interrupt_after` is this driver's own, and it says the interrupt was sent. Certification must fail rule
`interrupt-blocking-call`."""

from _wrap import run_ignoring_poll_field

raise SystemExit(run_ignoring_poll_field("interrupt_after"))
