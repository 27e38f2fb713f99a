"""Evidence for allowances: disruption windows, session ends, start-offset reads, state-topic writes.

An allowance (`harness.model.allowances`) excuses a behaviour only when the history holds the events
that make it possible for THAT record, in the interval in which it could have happened; every use
is counted with those events' op indexes (`Findings.allow`). This module keeps those events and
answers the questions the judges ask:

- `disruption(t0, t1, tp)`: a fault with a leader-change or coordinator-loss effect on `tp` whose
  window (its start to its heal plus `settle_ms`) overlaps [t0, t1];
- `unseen_acquisitions(rec, need, by, by_index)`: enough session ends (of distinct sessions, after the
  record could be acquired, before `by`) or lock durations for `need` acquisitions the history did not
  see, with their op indexes;
- `state_disagrees(tp, rec, offset, by)`: `__share_group_state`'s writes contradict a record archived
  unseen (only where no disruption could have lost a write).
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from typing import Any

from harness.checkers.findings import Findings
from harness.checkers.ledger import NEVER, Rec
from harness.checkers.state_topic import StateRanges
from harness.model.profiles import ModelProfile
from harness.model.share_partition import SESSION, count_after_release

DISRUPTING = ("leader-change", "coordinator-loss")
#: how long after a delivery a session end may be stamped and still have come before it: operations are
#: stamped when the harness reads a driver's line, and a reader thread can lag another's on a busy host
READ_SLACK_NS = 500_000_000


class Evidence:
    def __init__(self, findings: Findings, profile: ModelProfile, limit: int, lock_ns: int, settle_ns: int) -> None:
        self.findings = findings
        self.profile = profile
        self.limit = limit
        self.lock_ns = lock_ns
        self.settle_ns = settle_ns
        self.windows: list[list] = []  # [start, end, partitions or None, id, index of the fault start]
        self.session_end: dict[str, int] = {}  # process -> time its last session ended (close invoke, crash)
        self.being_killed: set[str] = set()  # processes a SIGKILL was sent to, whose crash is not recorded yet
        #: session ends (close, crash, a fault that may cut sessions, a client error), in history order:
        #: (time, op index, process, what ended: one key per session, post-drain orderly close)
        self.ends: list[tuple[int, int, str, tuple, bool]] = []
        self.end_times: list[int] = []
        self.session_no: dict[str, int] = defaultdict(int)  # process -> its sessions started so far
        self.session_faults: dict[str, list[str]] = {}  # fault id -> processes whose sessions it may end
        self.drain_end = NEVER  # time the drain ended: orderly closes after it follow continuous polling
        self.first_start = NEVER  # index of the first consumer start (latest: what was produced before)
        self.first_start_time = NEVER  # its time: no acquisition comes before it
        #: tp -> [(start offset, time, op index)] of start-offset reads, each start higher than the last
        self.start_reads: dict[tuple, list[tuple[int, int, int]]] = defaultdict(list)
        self.state_seen: dict[tuple, dict] = {}  # tp -> what every __share_group_state write held (if read)
        self.state_unread: int | None = None  # index of a failed __share_group_state read: nothing corroborated

    # -- events ------------------------------------------------------------------
    def started(self, process: str, index: int, time: int) -> None:
        self.first_start = min(self.first_start, index)
        self.first_start_time = min(self.first_start_time, time)
        self.session_no[process] += 1

    def closing(self, process: str, index: int, time: int) -> None:
        self.session_end[process] = time
        self.session_event(time, index, process, ("session", process, self.session_no[process]),
                           post_drain=time >= self.drain_end)

    def killing(self, process: str, index: int, time: int) -> None:
        """`process` is being killed (SIGKILL sent, its `crash` not yet recorded): whatever it holds may be
        released by the broker from now on, although its last operations may still be read after this. Its
        session's end is stamped here too (the same session as the crash's: counted once), so an acquisition
        the history never saw, released by the kill, is explained from the signal on."""
        self.being_killed.add(process)
        self.session_event(time, index, process, ("session", process, self.session_no[process]))

    def crashed(self, process: str, index: int, time: int) -> None:
        self.being_killed.discard(process)
        self.session_end[process] = time
        self.session_event(time, index, process, ("session", process, self.session_no[process]))

    def client_error(self, process: str, index: int, time: int) -> None:
        """A client error (a broken connection: its share session may be gone): one per session counts."""
        self.session_event(time, index, process, ("error", process, self.session_no[process]))

    def fault_start(self, v: dict[str, Any], index: int, time: int) -> None:
        if "session-loss" in (v.get("effects") or ()) and v.get("processes"):
            self.session_faults[v.get("id")] = list(v["processes"])
            self.sessions_lost(v["processes"], time, index, v.get("id"))
        if set(v.get("effects") or ()) & set(DISRUPTING):
            parts = v.get("partitions")
            tps = None if parts is None else {(v.get("topic"), p) for p in parts}
            if not any(w[3] == v.get("id") for w in self.windows):
                self.windows.append([time, NEVER, tps, v.get("id"), index])

    def fault_heal(self, v: dict[str, Any], index: int, time: int) -> None:
        self.sessions_lost(self.session_faults.pop(v.get("id"), ()), time, index, v.get("id"))
        for w in self.windows:
            if w[3] == v.get("id") and w[1] == NEVER:
                w[1] = time + self.settle_ns

    def sessions_lost(self, processes, time: int, index: int, fault: Any) -> None:
        """A fault may have ended these consumers' share sessions (connections cut or reset) by `time`."""
        for process in processes:
            self.session_end[process] = time
            self.session_event(time, index, process, ("fault", process, fault))

    def session_event(self, time: int, index: int, process: str, key: tuple, post_drain: bool = False) -> None:
        if self.end_times and time < self.end_times[-1]:
            time = self.end_times[-1]  # kept sorted (a history's times may step back a little)
        self.ends.append((time, index, process, key, post_drain))
        self.end_times.append(time)

    def start_read(self, tp: tuple, start: int, time: int, index: int) -> None:
        reads = self.start_reads[tp]
        if not reads or start > reads[-1][0]:
            reads.append((start, time, index))

    def state_read(self, tp: tuple, v: dict[str, Any]) -> None:
        if "ever_written" in v:
            self.state_seen[tp] = {
                "from": int(v.get("writes_from", 0)),
                "written": StateRanges([(a, b, 1, 0) for a, b in v["ever_written"]]),
                "archived": StateRanges([(a, b, 4, 0) for a, b in v.get("ever_archived", ())])}

    # -- questions -----------------------------------------------------------------
    def disruption(self, t0: int, t1: int, tp: tuple) -> int | None:
        """The index of the fault start of a disruption of `tp` overlapping [t0, t1], if any."""
        for start, end, partitions, _, index in self.windows:
            if start <= t1 and end >= t0 and (partitions is None or tp in partitions):
                return index
        return None

    def disrupted(self, t0: int, t1: int, tp: tuple) -> bool:
        return self.disruption(t0, t1, tp) is not None

    def excuse(self, prop: str, allowance: str, t0: int, t1: int, tp: tuple, kind: str, message: str,
               evidence: tuple[int, ...], **detail: Any) -> None:
        """Count `allowance` if a disruption window of `tp` overlaps [t0, t1], the interval in which the
        excused behaviour could have happened; else report the anomaly."""
        window = self.disruption(t0, t1, tp)
        if window is not None:
            self.findings.allow(prop, allowance, (window, *evidence))
        else:
            self.findings.anomaly(prop, kind, message, evidence, **detail)

    def unseen_acquisitions(self, rec: Rec, need: int, by: int, by_index: int, expiry: bool = True,
                            late: int = 0, seen_by: str | None = None) -> tuple[str, list[int]] | None:
        """The allowance and its evidence if `need` acquisitions of `rec` can have gone unseen (to a
        client that never handed them to the application) between when it could be acquired again (its
        last delivery, else its produce) and `by`; None if the history holds no such events.

        Each unseen acquisition needs its own end: a session end of a consumer (close, crash, a fault
        cutting its connections, a client error; one per session), not the one that released the
        delivery the history saw, or a whole lock duration (`-expired`). Orderly closes after the drain
        count once together: until then every consumer polled, and a poll hands over what it fetched, so
        only the fetch a close cut off can go unseen. On a release whose session release decreases the
        count (4.1) a close, crash or client error takes nothing; a fault cutting connections still counts
        (the connection may stay up while the lock runs out). `expiry=False`: lock durations do not count (a record
        that ends archived without a delivery the history saw at the limit needs session ends: a live
        client hands what it fetched to the application at its next poll)."""
        if need <= 0:
            return "unobserved-acquisition", [by_index]
        since = rec.acq_time if rec.count else rec.avail_time
        since_index = rec.last_index if rec.count else rec.produce_index
        used: list[int] = []
        # a session end keeps the acquisition counted, except on 4.1; a fault cutting connections may instead
        # let the lock run out (the TCP connection stays up), which counts on every release
        sessions_count = count_after_release(1, SESSION, self.profile) == 1
        owner_release = rec.count > 0 and rec.owner is not None and rec.release_from == NEVER
        keys: set = set()
        post_drain = False
        lo = bisect.bisect_right(self.end_times, since)
        for t, index, process, key, after_drain in self.ends[lo:bisect.bisect_right(self.end_times, by + late)]:
            if 0 <= by_index < index and (not late or process == seen_by):
                if not late:
                    break  # stamped in the same instant as `by`, but after it
                continue
            if owner_release and process == rec.owner and t <= rec.lock_end:
                owner_release = False  # this end released the delivery the history saw
                continue
            if key in keys or (after_drain and post_drain) or not (sessions_count or key[0] == "fault"):
                continue
            keys.add(key)
            post_drain = post_drain or after_drain
            used.append(index)
            if len(used) == need:
                return "unobserved-acquisition", [since_index, *used, by_index]
        started = since if rec.count or self.first_start_time > by else max(since, self.first_start_time)
        if expiry and by - started >= (need - len(used)) * self.lock_ns:
            return "unobserved-acquisition-expired", [since_index, *used, by_index]
        return None

    def archived_unseen(self, rec: Rec, by: int, by_index: int) -> tuple[str, list[int]] | None:
        """`unseen_acquisitions` for a record never seen at the limit that a start-offset read put below the
        start: it was archived after acquisitions the history did not see (None: no evidence)."""
        if rec.count >= self.limit:
            return "unobserved-acquisition", [by_index]
        return self.unseen_acquisitions(rec, self.limit - rec.count, by, by_index, expiry=False)

    def first_read_past(self, tp: tuple, offset: int) -> tuple[int, int]:
        """(time, op index) of the first start-offset read above `offset` (NEVER, -1 if none)."""
        reads = self.start_reads.get(tp, ())
        at = bisect.bisect_right([r[0] for r in reads], offset)
        return (reads[at][1], reads[at][2]) if at < len(reads) else (NEVER, -1)

    def state_disagrees(self, tp: tuple, rec: Rec, offset: int, by: int) -> str | None:
        """Why `__share_group_state` contradicts a record archived unseen: no write held it archived (in
        no write at all: it was skipped). None if they agree, the writes were not read, or a disruption
        (leader change, coordinator loss) overlaps the record's time in flight: a share-partition archives
        on a lock timeout even when its write fails, and a new leader may archive without a write."""
        seen = self.state_seen.get(tp)
        if seen is None or offset < seen["from"] or offset in seen["archived"]:
            return None
        if self.disrupted(rec.acq_time if rec.count else rec.avail_time, by, tp):
            return None
        if offset in seen["written"]:
            return "no __share_group_state write held it archived"
        return "no __share_group_state write ever held it: the share-partition skipped it"
