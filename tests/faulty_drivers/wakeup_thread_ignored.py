"""Faulty driver: wakeup() from another thread does not reach a poll already blocking (a library whose wakeup is only
seen by the next call, or a wrapper that calls it on a consumer object other than the one polling): the poll runs to
its timeout. confluent-kafka has no wakeup: `poll_once`'s `wakeup_after` is this driver's own, and it says the wakeup
was sent. Certification must fail rule `wakeup-blocking-call`."""

from _wrap import run_ignoring_poll_field

raise SystemExit(run_ignoring_poll_field("wakeup_after"))
