"""Faulty driver: max.poll.interval.ms is accepted and ignored: the library is given its default (5 minutes)
while the driver's start lists nothing ignored, so a consumer that stops polling stays in the group as long as
its process lives (its heartbeats go on in the background). Certification must fail rule
`max-poll-interval-leaves`."""

import sys

from harness.clients import confluent_share_driver as d

_subscribed = d._subscribed


def subscribed(config, explicit, start, subscribe=True):
    client_config = {k: v for k, v in config.get("client_config", {}).items() if k != "max.poll.interval.ms"}
    return _subscribed({**config, "client_config": client_config}, explicit, start, subscribe)


d._subscribed = subscribed
sys.exit(d.main(sys.argv))
