"""Behaviour that changed between Kafka releases, as the model needs it.

The model is KIP-932's. Where a release deviates from the KIP and a later release fixed it, the
deviation is a named known bug of the releases that have it (`KNOWN_BUGS`: the allowance that
excuses it, its fix release and the evidence a run must show), never the profile's normal
behaviour: a run that meets it passes only as an expected failure of that release (the chaos suite
turns it into an xfail naming the bug, the matrix into KNOWN BUG), and on a release without the bug
the same history is an anomaly.

Each fact is taken from the release's sources (`SharePartition.java`, `InFlightState.java`,
`AcknowledgeType.java`, `ShareCoordinatorShard.java` in the `kafka_2.13` / `kafka-server` /
`kafka-clients` / `kafka-share-coordinator` jars):

- Session release (a share session ends: the consumer closes, i.e. ShareFetch or ShareAcknowledge
  with the final epoch, or its connection drops; see `SharePartitionManager.releaseSession` ->
  `SharePartition.releaseAcquiredRecords`). KIP-932: "Every time that a record is acquired by a
  consumer in a share group, its delivery count increments by 1", and a record at the limit is
  archived. 4.0.x and 4.2.0+ keep the count (`DeliveryCountOps.NO_OP`) and archive at the limit.
  Known bug `session-release-decrement` of 4.1.x: the records go back to Available with their count
  *decreased* by one (`DeliveryCountOps.DECREASE`, KAFKA-17541: "These records were fetched but they
  were not actually delivered to the client.") and are never archived at the limit; fixed in 4.2.0
  (KAFKA-19972 "Bump delivery count on session release").
- `AcknowledgeType.RENEW` (KIP-1222) exists from 4.2.0; 4.3 adds the group config
  `share.renew.acknowledge.enable` (default true).
- Known bug `state-start-offset-regressed` of 4.0.x-4.3.x: the share coordinator's
  `ShareCoordinatorShard.generateShareStateRecord` takes a write's start offset even when lower than
  the stored one, so writes that arrive out of order (each acknowledgement and lock timeout is its
  own RPC, retried on its own) move it back; 4.4.0 takes the max (checked in the 4.4.0 jar:
  `Math.max` on the start offsets).
- A member that expires from the group (heartbeat timeout) does not release its records in any of
  these versions: only the acquisition lock does.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.errors import HarnessError
from harness.known_range import KnownRange


@dataclass(frozen=True)
class KnownBug:
    """A release's deviation from KIP-932, fixed in a later release."""

    name: str  # the allowance (harness.model.allowances) a checker uses when a history meets it
    #: the Kafka releases it is known on: since the first met, confirmed on the newest seen, fixed in the first
    #: without it (`harness.known_range`: a release newer than confirmed and not fixed keeps it expected)
    known: KnownRange
    #: what a run must show for the checkers to excuse it (anything else is an anomaly)
    evidence: str
    #: what fixed it in `known.fixed_in`: the Kafka issue, or the change in the sources
    fix: str = ""
    #: who recognizes it: "allowance" (the checkers excuse it by the allowance of the same name, with its
    #: evidence) or "conformance" (a conformance test xfails on it, and the explorer's triage names it:
    #: `harness.explore.triage`); the model's profiles list only the first kind
    judged_by: str = "allowance"

    def affects(self, version: str) -> bool:
        """Whether the bug is expected on release `version` ("4.3.1"): known there, or newer than the newest
        release it was confirmed on and not fixed. A release before it was met, or fixed, is not affected (a run
        meeting it there is an anomaly); a version that is not one is a one-line HarnessError."""
        return self.known.expects(version)

    @property
    def fixed(self) -> str:
        """Its fix, as a report names it: "4.2.0 (KAFKA-19972)"; "no release yet" when none is known."""
        if not self.known.fixed_in:
            return "no release yet"
        return f"{self.known.fixed_in} ({self.fix})" if self.fix else self.known.fixed_in


#: (confirmed: the newest release the harness knows of the last line with the bug, `harness.kafka.versions`; a
#: newer one of that line, not yet run, keeps the bug expected: "not yet confirmed")
KNOWN_BUGS = {b.name: b for b in (
    KnownBug("session-release-decrement", KnownRange(since="4.1.0", confirmed="4.1.2", fixed_in="4.2.0"),
             "a record released by a share session's end (close, crash, dropped connection) delivered again "
             "with the same delivery count as its previous delivery, also at the limit (not archived)",
             fix="KAFKA-19972"),
    KnownBug("state-start-offset-regressed", KnownRange(since="4.0.0", confirmed="4.3.1", fixed_in="4.4.0"),
             "a record the history proves accepted or rejected lies below a start offset __share_group_state "
             "held earlier and is not terminal there (or is delivered again), the writes showing the start "
             "going back",
             fix="ShareCoordinatorShard keeps the max start offset"),
    KnownBug("alter-offsets-non-empty-accepted", KnownRange(since="4.1.0", confirmed="4.1.2", fixed_in="4.2.0"),
             "Admin.alterShareGroupOffsets on a group with members returns success and leaves the start offset "
             "unchanged (the coordinator's NON_EMPTY_GROUP is a top-level error the Admin client never reads; "
             "suites/conformance/test_group_lifecycle.py)", fix="KAFKA-19440", judged_by="conformance"),
    KnownBug("added-partitions-start-at-latest", KnownRange(since="4.1.0", confirmed="4.3.1", fixed_in="4.4.0"),
             "with share.auto.offset.reset latest (or by_duration), the records produced to a partition added "
             "while the group consumes, before its first share fetch, are never delivered (the added "
             "share-partition is initialized at the log end; suites/conformance/test_partitions_added.py)",
             judged_by="conformance"),
)}


class _BugFlags:
    """The known bugs the model asks about, from `known_bugs`."""

    known_bugs: frozenset[str]

    @property
    def session_release_decrements(self) -> bool:
        """Known bug of 4.1: a session end takes the acquisition back (count - 1, never archived)."""
        return "session-release-decrement" in self.known_bugs

    @property
    def state_start_may_regress(self) -> bool:
        """Known bug up to 4.3: out-of-order share-state writes move the start offset back."""
        return "state-start-offset-regressed" in self.known_bugs


@dataclass(frozen=True)
class ModelProfile(_BugFlags):
    line: str
    #: whether clients may acknowledge with RENEW (KIP-1222, 4.2.0).
    renew: bool
    #: the KNOWN_BUGS this line has.
    known_bugs: frozenset[str] = frozenset()


_REGRESS = frozenset({"state-start-offset-regressed"})
MODEL_PROFILES = {
    "4.0": ModelProfile("4.0", False, _REGRESS),
    "4.1": ModelProfile("4.1", False, _REGRESS | {"session-release-decrement"}),
    "4.2": ModelProfile("4.2", True, _REGRESS),
    "4.3": ModelProfile("4.3", True, _REGRESS),
    "4.4": ModelProfile("4.4", True),
}


def model_profile(version_or_line: str) -> ModelProfile:
    """The profile of "4.3.1" or "4.3"; an unknown line is a one-line error."""
    line = ".".join(str(version_or_line).split(".")[:2])
    profile = MODEL_PROFILES.get(line)
    if profile is None:
        raise HarnessError(f"no model profile for Kafka {version_or_line}: known lines are "
                           f"{', '.join(MODEL_PROFILES)} (add one in harness/model/profiles.py from the release's sources)")
    return profile


class PhasedProfile(_BugFlags):
    """The model profile in force at each moment of a history whose brokers changed release (a rolling
    upgrade: `release` operations, docs/history.md), read by the replay as it advances.

    While the nodes run different releases, the profile is their combination: RENEW only where every
    node has it, and the known bugs of any release a node runs (the broker that leads a share-partition,
    or coordinates its state, may be any of them). `phases` keeps when each combination began, so a
    deviation judged after the fact (a start offset that went back, found in the state topic read at the
    end) is excused only if a release with that bug ran when the write was made (`had_at`). A history
    without `release` operations has one phase: its config's profile, as before.
    """

    def __init__(self, base: ModelProfile) -> None:
        self.base = base
        self.line, self.renew, self.known_bugs = base.line, base.renew, base.known_bugs
        #: (history time the phase began, its known bugs, the releases running), in time order
        self.phases: list[tuple[int, frozenset[str], tuple[str, ...]]] = [(0, base.known_bugs, (base.line,))]

    def nodes_run(self, versions, time: int) -> None:
        """From history time `time` on, the nodes run `versions` (one per node)."""
        profiles = [model_profile(v) for v in versions]
        if not profiles:
            return
        self.renew = all(p.renew for p in profiles)
        self.known_bugs = frozenset().union(*(p.known_bugs for p in profiles))
        lines = tuple(sorted({p.line for p in profiles}))
        self.line = "+".join(lines)
        self.phases.append((time, self.known_bugs, lines))

    @property
    def phased(self) -> bool:
        """Whether the releases changed during the history."""
        return len({lines for _, _, lines in self.phases}) > 1

    def ever(self, bug: str) -> bool:
        """Whether a release with `bug` ran at some moment so far."""
        return any(bug in bugs for _, bugs, _ in self.phases)

    def had_at(self, bug: str, time: int) -> bool:
        """Whether a release with `bug` ran at history time `time`."""
        current = self.phases[0][1]
        for began, bugs, _ in self.phases:
            if began > time:
                break
            current = bugs
        return bug in current

    def describe(self) -> str:
        """The phases, for a finding's text: "4.3 from 0.0 s, 4.3+4.4 from 12.1 s, 4.4 from 30.2 s"."""
        return ", ".join(f"{'+'.join(lines)} from {began / 1e9:.1f} s" for began, _, lines in self.phases)
