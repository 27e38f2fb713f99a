"""What a consumer driver does with the records it is given: seeded, and the same in every driver.

Each decision is a pure function of (seed, record id, delivery count), never of
which consumer got the record or when, so a run is reproducible from its seed
and any driver (Python, Java, Go) can implement the same behaviour.

- `accept-implicit`: implicit mode; the commit after a poll accepts the batch.
- `accept-explicit`: ACCEPT every record, then commit.
- `mix`: per record and delivery, ACCEPT (70 %), RELEASE (20 %) or REJECT (10 %).
- `poison`: about one record in ten is poison and is RELEASEd on every delivery, so the
  broker must archive it at the delivery-count limit; the others are ACCEPTed.
- `slow`: about one first-delivery batch in five is held past the acquisition lock
  (`hold_ms`) before it is ACCEPTed, so the lock expires and the record moves on.
- `accept-async`: ACCEPT every record, then commit asynchronously (`commitAsync`): the consumer
  polls on at once, and each commit's results arrive later through the acknowledgement commit
  callback, so commits are often still pending when something happens to the consumer.
"""

from __future__ import annotations

import hashlib

BEHAVIOURS = ("accept-implicit", "accept-explicit", "mix", "poison", "slow", "accept-async")
ACK_TYPES = ("ACCEPT", "RELEASE", "REJECT")


def _unit(seed: int, *parts: object) -> float:
    """A number in [0, 1) fixed by the seed and the parts."""
    digest = hashlib.blake2b(repr((seed, *parts)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2.0 ** 64


def explicit(behaviour: str) -> bool:
    return behaviour != "accept-implicit"


def commits_async(behaviour: str) -> bool:
    """Whether `behaviour` commits with commitAsync (results by callback) instead of commitSync."""
    return behaviour == "accept-async"


def is_poison(seed: int, record_id: str) -> bool:
    return _unit(seed, "poison", record_id) < 0.1


def ack_type(behaviour: str, seed: int, record_id: str, delivery_count: int) -> str:
    """The acknowledgement `behaviour` gives this delivery of the record."""
    if behaviour == "mix":
        u = _unit(seed, "mix", record_id, delivery_count)
        return "ACCEPT" if u < 0.7 else "RELEASE" if u < 0.9 else "REJECT"
    if behaviour == "poison" and is_poison(seed, record_id):
        return "RELEASE"
    return "ACCEPT"


def holds(behaviour: str, seed: int, record_id: str, delivery_count: int) -> bool:
    """Whether the batch starting with this delivery is held past its lock (first deliveries only,
    so a held record is processed normally by whoever gets it next)."""
    return behaviour == "slow" and delivery_count == 1 and _unit(seed, "slow", record_id) < 0.2
