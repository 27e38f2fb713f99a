"""A share-partition as KIP-932 and the release sources define it: the executable reference model.

Records from SPSO (share-partition start offset) to SPEO (end offset) are
in flight, each in one of four states:

    Available --acquire (count + 1)--> Acquired(owner, lock deadline)
    Acquired --ACCEPT--> Acknowledged            (terminal)
    Acquired --REJECT--> Archived                (terminal)
    Acquired --RELEASE / lock timeout--> Available, or Archived when count >= limit
    Acquired --RENEW--> Acquired (lock restarted)
    Acquired --session end--> Available (count kept or decreased, by profile)

SPSO moves past the contiguous prefix of terminal records; acquisition never
goes beyond `max_record_locks` records in flight. The simulator
(`harness.model.simulate`) drives this model to produce histories the
checkers must accept.

The rules that depend on the release (how a release counts and archives) are
the functions below; `SharePartition` applies them, and the checkers' judges
(`harness.checkers.delivery_count`, `harness.checkers.evidence`) ask the same
functions what a history may show, so each rule is stated once.
"""

from __future__ import annotations

from harness.model.profiles import ModelProfile

AVAILABLE, ACQUIRED, ACKNOWLEDGED, ARCHIVED = "Available", "Acquired", "Acknowledged", "Archived"
#: KIP-1191 (4.4, a group with a dead-letter queue): a rejected or limit-archived record while its DLQ
#: write is under way; never delivered again, ARCHIVED once the write is done (or failed)
ARCHIVING = "Archiving"
TERMINAL = (ACKNOWLEDGED, ARCHIVED)
#: KIP-932 RecordState ids, as `__share_group_state` batches write them (Acquired is never persisted)
STATE_IDS = {AVAILABLE: 0, ACQUIRED: 1, ACKNOWLEDGED: 2, ARCHIVING: 3, ARCHIVED: 4}
STATE_NAMES = {i: name.upper() for name, i in STATE_IDS.items()}
#: what the state topic may hold for a record the history settled (ARCHIVING: on its way to ARCHIVED)
TERMINAL_IDS = (STATE_IDS[ACKNOWLEDGED], STATE_IDS[ARCHIVING], STATE_IDS[ARCHIVED])
#: what ends an acquisition: the consumer's RELEASE or its lock timing out ("release"), or its share
#: session ending (close, connection lost: "session")
RELEASE, SESSION = "release", "session"


def next_delivery_count(count: int) -> int:
    """"Every time that a record is acquired by a consumer in a share group, its delivery count
    increments by 1." (KIP-932)"""
    return count + 1


def count_after_release(count: int, cause: str, profile: ModelProfile) -> int:
    """The delivery count of a record whose acquisition ended by `cause`: kept (KIP-932), except on a
    release with the known bug `session-release-decrement` (4.1), where a session end takes the
    acquisition back ("These records were fetched but they were not actually delivered to the
    client", `DeliveryCountOps.DECREASE`)."""
    if cause == SESSION and profile.session_release_decrements:
        return count - 1
    return count


def archived_after_release(count: int, limit: int, cause: str, profile: ModelProfile) -> bool:
    """Whether that release archives the record: at the delivery-count limit ("the record is archived
    when its delivery count reaches the limit"), except a session end on a release with the known bug
    `session-release-decrement` (4.1), which never archives."""
    if cause == SESSION and profile.session_release_decrements:
        return False
    return count_after_release(count, cause, profile) >= limit


class InFlight:
    __slots__ = ("state", "count", "owner", "deadline")

    def __init__(self) -> None:
        self.state = AVAILABLE
        self.count = 0
        self.owner: str | None = None
        self.deadline = 0


class SharePartition:
    """One (group, topic, partition). Times are integers (ns); errors are returned, never raised."""

    def __init__(self, limit: int, lock_ns: int, max_record_locks: int, profile: ModelProfile,
                 dead_letter: bool = False) -> None:
        if limit < 1 or lock_ns < 1 or max_record_locks < 1:
            raise ValueError("limit, lock duration and max record locks must be positive")
        #: KIP-1191: with a dead-letter queue, every record archived by a REJECT or at the delivery-count
        #: limit is written to it: (offset, delivery count, cause "rejected" / "limit"), in that order
        self.dead_letters: list[tuple[int, int, str]] | None = [] if dead_letter else None
        self.limit = limit
        self.lock_ns = lock_ns
        self.max_record_locks = max_record_locks
        self.profile = profile
        self.records: dict[int, InFlight] = {}
        self.spso = 0
        self.speo = 0  # next offset never acquired
        self.log_end = 0
        self._earliest = 1 << 62  # a lower bound of the live lock deadlines (expire() is then O(1) mostly)

    # -- the log -------------------------------------------------------------
    def append(self, count: int = 1) -> range:
        first = self.log_end
        self.log_end += count
        return range(first, self.log_end)

    # -- acquisition -----------------------------------------------------------
    def acquire(self, member: str, now: int, max_records: int) -> list[tuple[int, int]]:
        """Acquire up to `max_records` Available records in offset order: [(offset, delivery count)]."""
        self.expire(now)
        got: list[tuple[int, int]] = []
        for offset in range(self.spso, self.speo):
            if len(got) == max_records:
                return got
            rec = self.records.get(offset)
            if rec is not None and rec.state == AVAILABLE:
                self._take(offset, rec, member, now, got)
        while len(got) < max_records and self.speo < self.log_end and self.speo - self.spso < self.max_record_locks:
            rec = self.records[self.speo] = InFlight()
            self._take(self.speo, rec, member, now, got)
            self.speo += 1
        return got

    def _take(self, offset: int, rec: InFlight, member: str, now: int, got: list) -> None:
        rec.state, rec.owner, rec.deadline = ACQUIRED, member, now + self.lock_ns
        self._earliest = min(self._earliest, rec.deadline)
        rec.count = next_delivery_count(rec.count)
        got.append((offset, rec.count))

    # -- acknowledgement -------------------------------------------------------
    def acknowledge(self, member: str, offset: int, ack: str, now: int) -> str | None:
        """Apply one acknowledgement; None on success, else the error the broker returns."""
        self.expire(now)
        rec = self.records.get(offset)
        if rec is None or rec.state != ACQUIRED or rec.owner != member:
            return "INVALID_RECORD_STATE"
        if ack == "ACCEPT":
            self._finish(offset, rec, ACKNOWLEDGED)
        elif ack == "REJECT":
            self._dead_letter(offset, rec, "rejected")
            self._finish(offset, rec, ARCHIVED)
        elif ack == "RELEASE":
            self._release(offset, rec, RELEASE)
        elif ack == "RENEW":
            if not self.profile.renew:
                return "INVALID_REQUEST"
            rec.deadline = now + self.lock_ns
        else:
            return "INVALID_REQUEST"
        return None

    def release_session(self, member: str, now: int) -> list[int]:
        """The member's share session ended: release what it holds, as the version does."""
        self.expire(now)
        released = [o for o, r in self.records.items() if r.state == ACQUIRED and r.owner == member]
        for offset in released:
            self._release(offset, self.records[offset], SESSION)
        return released

    def expire(self, now: int) -> None:
        """Acquisition locks whose deadline passed release their records (count kept)."""
        if now < self._earliest:
            return
        earliest = 1 << 62
        for offset, rec in list(self.records.items()):
            if rec.state == ACQUIRED:
                if rec.deadline <= now:
                    self._release(offset, rec, RELEASE)
                else:
                    earliest = min(earliest, rec.deadline)
        self._earliest = earliest

    def _release(self, offset: int, rec: InFlight, cause: str) -> None:
        rec.owner = None
        archive = archived_after_release(rec.count, self.limit, cause, self.profile)
        rec.count = count_after_release(rec.count, cause, self.profile)
        if archive:
            self._dead_letter(offset, rec, "limit")
            self._finish(offset, rec, ARCHIVED)
        else:
            rec.state = AVAILABLE

    def _dead_letter(self, offset: int, rec: InFlight, cause: str) -> None:
        if self.dead_letters is not None:
            self.dead_letters.append((offset, rec.count, cause))

    def _finish(self, offset: int, rec: InFlight, state: str) -> None:
        rec.state, rec.owner = state, None
        while self.spso < self.speo and self.records[self.spso].state in TERMINAL:
            del self.records[self.spso]
            self.spso += 1

    # -- reading ---------------------------------------------------------------
    def state(self, offset: int) -> tuple[str, int]:
        """(state, delivery count) of an offset; below SPSO everything is terminal."""
        if offset < self.spso:
            return ("Terminal", -1)
        rec = self.records.get(offset)
        return (rec.state, rec.count) if rec is not None else (AVAILABLE, 0)

    def in_flight(self) -> int:
        return self.speo - self.spso

    def done(self) -> bool:
        return self.spso == self.log_end
