"""Faulty driver: commitSync returns success for every partition acknowledged since the last commit at once,
sending nothing: the acknowledgements go to the broker with the next poll (or close). Certification must
fail rules `ack-accept` and `commit-sync-results` (the broker has not settled what the client reported
committed). (It relies on librdkafka, as of confluent-kafka 2.16.1, keeping acknowledgements until the next
poll, commit or close: were it to send them by itself at once, this driver would stop being deferred and
tests/real/test_certify_real*.py would say so.)"""

import sys

from harness.clients import confluent_share_driver as d

_acknowledge = d._acknowledge
pending: set = set()  # (topic, partition) acknowledged since the last commit


def acknowledge(consumer, given, records):
    pending.update((r["topic"], int(r["partition"])) for r in records)
    return _acknowledge(consumer, given, records)


def commit(consumer):  # the lie: success at once, nothing sent
    d.emit("invoke", "commit", {})
    d.emit("ok", "commit", {"results": [{"topic": t, "partition": p, "error": None} for t, p in sorted(pending)]})
    pending.clear()


d._acknowledge, d.commit = acknowledge, commit
sys.exit(d.main(sys.argv))
