"""Faulty driver: declares share.acquire.mode and ignores it. record_limit is dropped from the library's
configuration (so it fetches and acquires whole batches) and each poll's batch is cut to max.poll.records in the
driver, the rest kept, still acquired, for the next poll: no poll returns more than max.poll.records (rule
`acquire-mode` holds), but more records are acquired than a poll returned, the prefetch record_limit rules out.
Certification must fail rule `record-limit-no-prefetch`."""

import sys

from harness.clients import confluent_share_driver as d

_subscribed = d._subscribed


class _Prefetching:
    """The library's consumer, its polls cut to `limit` records, the rest held for the next poll."""

    def __init__(self, consumer, limit: int) -> None:
        self._consumer, self._limit, self._held = consumer, limit, []

    def poll(self, timeout):
        if not self._held:
            self._held = list(self._consumer.poll(timeout))
        batch, self._held = self._held[:self._limit], self._held[self._limit:]
        return batch

    def __getattr__(self, name):
        return getattr(self._consumer, name)


def subscribed(config, explicit, start, subscribe=True):
    client_config = dict(config.get("client_config", {}))
    mode = client_config.pop("share.acquire.mode", None)
    limit = int(client_config.pop("max.poll.records", "500")) if mode == "record_limit" else None
    consumer = _subscribed({**config, "client_config": client_config}, explicit, start, subscribe)
    return consumer if limit is None else _Prefetching(consumer, limit)


d._subscribed = subscribed
sys.exit(d.main(sys.argv))
