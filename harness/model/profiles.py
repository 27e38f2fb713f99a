"""Behaviour that changed between Kafka releases, as the model needs it.

Each fact is taken from the release's sources (`SharePartition.java`,
`InFlightState.java`, `AcknowledgeType.java` in the `kafka_2.13` /
`kafka-server` / `kafka-clients` sources jars):

- Session release (a share session ends: the consumer closes, i.e. ShareFetch
  or ShareAcknowledge with the final epoch, or its connection drops; see
  `SharePartitionManager.releaseSession` -> `SharePartition.releaseAcquiredRecords`):
  - 4.1.x: records go back to Available with their delivery count *decreased*
    by one (`DeliveryCountOps.DECREASE`, KAFKA-17541) and are never archived
    at the limit ("These records were fetched but they were not actually
    delivered to the client.").
  - 4.0.x and 4.2.0+: the count is kept (`DeliveryCountOps.NO_OP`, KAFKA-19972
    "Bump delivery count on session release") and a record at the limit is
    Archived.
- `AcknowledgeType.RENEW` (KIP-1222) exists from 4.2.0; 4.3 adds the group
  config `share.renew.acknowledge.enable` (default true).
- The share coordinator's start offset (`ShareCoordinatorShard.generateShareStateRecord`):
  up to 4.3.x a write's start offset replaces the stored one even when lower, so
  writes that arrive out of order (each acknowledgement and lock timeout is its
  own RPC, retried on its own) move it back; 4.4.0 takes the max (checked in the
  4.4.0 jar: `Math.max` on the start offsets).
- A member that expires from the group (heartbeat timeout) does not release
  its records in any of these versions: only the acquisition lock does.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.errors import HarnessError


@dataclass(frozen=True)
class ModelProfile:
    line: str
    #: "decrease" (4.1) or "keep" (4.0, 4.2+): the delivery count of a record released by a session end.
    session_release_count: str
    #: whether a record released by a session end at the delivery limit is archived.
    session_release_archives: bool
    #: whether clients may acknowledge with RENEW.
    renew: bool
    #: known bug: the share coordinator takes a write's start offset even when lower than the one it
    #: holds, so out-of-order writes move it back (fixed in 4.4: `ShareCoordinatorShard` keeps the max).
    state_start_may_regress: bool = False


MODEL_PROFILES = {
    "4.0": ModelProfile("4.0", "keep", True, False, state_start_may_regress=True),
    "4.1": ModelProfile("4.1", "decrease", False, False, state_start_may_regress=True),
    "4.2": ModelProfile("4.2", "keep", True, True, state_start_may_regress=True),
    "4.3": ModelProfile("4.3", "keep", True, True, state_start_may_regress=True),
    "4.4": ModelProfile("4.4", "keep", True, True),
}


def model_profile(version_or_line: str) -> ModelProfile:
    """The profile of "4.3.1" or "4.3"; an unknown line is a one-line error."""
    line = ".".join(str(version_or_line).split(".")[:2])
    profile = MODEL_PROFILES.get(line)
    if profile is None:
        raise HarnessError(f"no model profile for Kafka {version_or_line}: known lines are "
                           f"{', '.join(MODEL_PROFILES)} (add one in harness/model/profiles.py from the release's sources)")
    return profile
