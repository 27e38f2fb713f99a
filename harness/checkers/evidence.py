"""Evidence for allowances: disruption windows, session ends, start-offset reads, state-topic writes.

An allowance (`harness.model.allowances`) excuses a behaviour only when the history holds the events
that make it possible for THAT record, in the interval in which it could have happened; every use
is counted with those events' op indexes (`Findings.allow`). This module keeps those events and
answers the questions the judges ask:

- `disruption(t0, t1, tp)`: a fault with a leader-change or coordinator-loss effect on `tp` whose
  window (its start to its heal plus `settle_ms`) overlaps [t0, t1];
- `unseen_acquisitions(rec, need, by, by_index)`: a distinct cause for each of `need` acquisitions the
  history did not see, one after another from when the record could be acquired again until `by`: the
  session end of a consumer that was live (started) and could hold it then, or a lock that ran out a
  lock duration after it was acquired (issue 46, item 2), with their op indexes;
- `polled(process, tp, index, time)` / `fetched_from`: the poll of a share-partition before the one that
  handed a record over (at the first, the consumer's start), when its consumer may have fetched (acquired)
  it (item 8); the replay keeps it with the record it acquired (`Rec.fetched`);
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
#: `error` operations that are no client error, by the start of their message (issue 46, item 2d). Only an
#: error the client library reported (a poll's or fetch's error: `{code, message}` from the library) may
#: mean that its connection, and with it its share session, is gone. These are written by a driver or the
#: harness about themselves: a command line that was not JSON ("bad command"), a driver line that was not
#: JSON ("unparsable driver output", `harness.clients.driver`), the harness giving up on a consumer (its
#: close, which follows, is the session end: "the harness stopped driving"), a line franzdriver could not
#: encode, and a command whose API call raised in the driver (`"<command>: <exception>"`, e.g.
#: "poll: IllegalStateException" for a batch not acknowledged, a panic: the command's misuse or the
#: driver's fault, not a broken connection; the stepped drivers of `harness.clients` and harness/java,
#: harness/go write these).
#: `DRIVER_OWN` are the driver's or the harness's words about themselves, never the library's; a command whose
#: call raised is the library's answer to that call (e.g. the InvalidTopicException a Java poll throws).
DRIVER_OWN = ("bad command", "unparsable driver output", "the harness stopped driving", "franzdriver:")
DRIVER_ERRORS = DRIVER_OWN + ("poll: ", "ack: ", "commit_sync: ", "commit_async: ", "close: ")


def client_error(value: Any) -> bool:
    """Whether an `error` operation's value is a client library's error (see `DRIVER_ERRORS`)."""
    message = value.get("message") if isinstance(value, dict) else None
    return not str(message or "").startswith(DRIVER_ERRORS)


def on_every_consumer(targets) -> bool:
    """Whether a fault with these targets acts on every consumer's connections: it takes down or restarts a node
    (`n<i>`), or acts on the client links (`client->n<j>`, which consumers without a lane use; a fault on them acts
    on the node's lane links too). A fault on one consumer lane, or on one consumer, names its processes."""
    return any(t.startswith("client->") or (t[:1] == "n" and t[1:].isdigit()) for t in map(str, targets))

class Evidence:
    def __init__(self, findings: Findings, profile: ModelProfile, limit: int, lock_ns: int, settle_ns: int) -> None:
        self.findings = findings
        self.profile = profile
        self.limit = limit
        self.lock_ns = lock_ns
        self.settle_ns = settle_ns
        self.tol_ns = 0  # the lock tolerance (`Replay` sets it): a lock stamped at a poll may have begun earlier
        #: process -> the time its last session surely ended (close, a kill sent, a crash; not a fault cutting its
        #: connections, which may leave the TCP connection up while a lock runs out)
        self.closed_at: dict[str, int] = {}
        self.windows: list[list] = []  # [start, end, partitions or None, id, index of the fault start]
        self.session_end: dict[str, int] = {}  # process -> time its last session ended (close invoke, crash)
        self.being_killed: set[str] = set()  # processes a SIGKILL was sent to, whose crash is not recorded yet
        #: session ends (close, crash, a fault that may cut sessions, a client error), in history order:
        #: (time, op index, process, what ended: one key per session, post-drain orderly close)
        self.ends: list[tuple[int, int, str, tuple, bool]] = []
        self.end_times: list[int] = []
        #: beside `ends`: whether the process's session was live then (started and not closed or crashed
        #: before): only a consumer in the group can have acquired what its session end released (item 2a)
        self.end_live: list[bool] = []
        self.live: set[str] = set()  # processes whose session started and did not end (close, crash) since
        self.session_no: dict[str, int] = defaultdict(int)  # process -> its sessions started so far
        self.session_faults: dict[str, list[str]] = {}  # fault id -> processes whose sessions it may end
        #: fault id -> nothing; the session-loss faults in place on the client links (and so on every consumer's
        #: connections to a node: a node's links reset), which go on ending sessions until healed: a consumer that
        #: starts while one is in place may lose its session to it too
        self.node_faults: dict[str, None] = {}
        self.drain_end = NEVER  # time the drain ended: orderly closes after it follow continuous polling
        self.first_start = NEVER  # index of the first consumer start (latest: what was produced before)
        self.first_start_time = NEVER  # its time: no acquisition comes before it
        #: tp -> [(start offset, time, op index)] of start-offset reads, each start higher than the last
        self.start_reads: dict[tuple, list[tuple[int, int, int]]] = defaultdict(list)
        self.state_seen: dict[tuple, dict] = {}  # tp -> what every __share_group_state write held (if read)
        self.state_unread: int | None = None  # index of a failed __share_group_state read: nothing corroborated
        #: (process, tp) -> (index, time, session number, `fetched_from`) of the process's last poll that handed it
        #: records of tp
        self.last_poll: dict[tuple, tuple[int, int, int, int | None]] = {}
        self.started_at: dict[str, int] = {}  # process -> time of its last start (its session's first moment)
        #: of the poll `polled` was last told of: the time of the same consumer's poll of its share-partition before
        #: it, in the same session (else the session's start): the consumer may have fetched (acquired) what this
        #: poll hands over from then on (item 8); None if unknown (no start seen)
        self.fetched_from: int | None = None

    # -- events ------------------------------------------------------------------
    def started(self, process: str, index: int, time: int) -> None:
        self.first_start = min(self.first_start, index)
        self.first_start_time = min(self.first_start_time, time)
        self.session_no[process] += 1
        self.started_at[process] = time
        self.live.add(process)
        for fault in self.node_faults:  # it connects under a fault that resets or takes down what it connects to
            if process not in self.session_faults[fault]:
                self.session_faults[fault].append(process)
                self.sessions_lost([process], time, index, fault)

    def closing(self, process: str, index: int, time: int) -> None:
        self.session_end[process] = time
        self.closed_at[process] = time
        self.session_event(time, index, process, ("session", process, self.session_no[process]),
                           post_drain=time >= self.drain_end)
        self.live.discard(process)

    def killing(self, process: str, index: int, time: int) -> None:
        """`process` is being killed (SIGKILL sent, its `crash` not yet recorded): whatever it holds may be
        released by the broker from now on, although its last operations may still be read after this. Its
        session's end is stamped here too (the same session as the crash's: counted once), so an acquisition
        the history never saw, released by the kill, is explained from the signal on."""
        self.being_killed.add(process)
        self.closed_at[process] = time
        self.session_event(time, index, process, ("session", process, self.session_no[process]))

    def crashed(self, process: str, index: int, time: int) -> None:
        if process not in self.being_killed:  # (a kill's signal ended the session already: its time stays)
            self.closed_at[process] = time
        self.being_killed.discard(process)
        self.session_end[process] = time
        self.session_event(time, index, process, ("session", process, self.session_no[process]))
        self.live.discard(process)

    def client_error(self, process: str, index: int, time: int, value: Any = None) -> None:
        """An `error` operation: a client error (a broken connection: its share session may be gone) counts,
        one per session; an error a driver or the harness wrote about itself or a command does not
        (`DRIVER_ERRORS`: never a session end, nor a connection end for ack-results)."""
        if value is not None and not client_error(value):
            return
        self.session_event(time, index, process, ("error", process, self.session_no[process]))

    def fault_start(self, v: dict[str, Any], index: int, time: int) -> None:
        if "session-loss" in (v.get("effects") or ()):
            processes = list(v.get("processes") or ())
            targets = [str(t) for t in v.get("targets") or ()]
            if on_every_consumer(targets):  # also consumers it does not list (they have no lane)
                processes += sorted(self.live - set(processes))
                if any(t.startswith("client->") for t in targets):
                    # a toxic on the links (reset-peer) goes on ending sessions until the heal: a consumer that
                    # starts meanwhile too (a restart of a node ends the sessions of those live when it restarts)
                    self.node_faults[v.get("id")] = None
            if processes or v.get("id") in self.node_faults:
                self.session_faults[v.get("id")] = processes
                self.sessions_lost(processes, time, index, v.get("id"))
        if set(v.get("effects") or ()) & set(DISRUPTING):
            parts = v.get("partitions")
            tps = None if parts is None else {(v.get("topic"), p) for p in parts}
            if not any(w[3] == v.get("id") for w in self.windows):
                self.windows.append([time, NEVER, tps, v.get("id"), index])

    def fault_failed(self, v: dict[str, Any]) -> None:
        """A fault that was not applied (the nemesis undid what it did at once), or whose heal failed (the
        nemesis resets the cluster): consumers starting after it are not under it."""
        self.node_faults.pop(v.get("id"), None)

    def fault_heal(self, v: dict[str, Any], index: int, time: int) -> None:
        self.node_faults.pop(v.get("id"), None)
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
        self.end_live.append(process in self.live)

    def polled(self, process: str, tp: tuple, index: int, time: int) -> None:
        """A poll (op `index`) handed `process` records of `tp` (called once per poll and share-partition by
        the replay's loop, before the deliveries it made): sets `fetched_from`. Its consumer may have fetched,
        so acquired, what a poll handed over as early as its previous poll of that share-partition in the same
        session (a client prefetches and hands over later); at its first poll of `tp` in a session, as early as
        the session's start (it may have fetched `tp` during a poll that handed over another share-partition and
        kept it buffered: seen on 4.4.0 with the Java client, records fetched 17 s before the poll that handed
        them over, their locks long run out)."""
        key = (process, tp)
        last = self.last_poll.get(key)
        session = self.session_no[process]
        if last is not None and last[0] == index:  # the same poll again (its rows of `tp` came apart)
            self.fetched_from = last[3]
            return
        if last is None or last[2] != session:
            since = self.started_at.get(process)
            if since is not None and since >= time:
                since = None  # no start seen (a history cut short): nothing known before it (the tolerance applies)
        else:
            since = last[1]
        self.last_poll[key] = (index, time, session, since)
        self.fetched_from = since

    def start_read(self, tp: tuple, start: int, time: int, index: int) -> None:
        reads = self.start_reads[tp]
        if not reads or start > reads[-1][0]:
            reads.append((start, time, index))

    def state_read(self, tp: tuple, v: dict[str, Any], time: int = NEVER, index: int = -1) -> None:
        if "ever_written" in v:
            self.state_seen[tp] = {
                "from": int(v.get("writes_from", 0)),
                "written": StateRanges([(a, b, 1, 0) for a, b in v["ever_written"]]),
                "archived": StateRanges([(a, b, 4, 0) for a, b in v.get("ever_archived", ())]),
                "time": time, "index": index}

    def archived_in_state(self, tp: tuple, offset: int) -> tuple[int, int] | None:
        """(time, op index) of the `__share_group_state` read in which a write held `offset` archived (a
        terminal state no acknowledgement or lock leaves), None if none did or it was not read."""
        seen = self.state_seen.get(tp)
        if seen is None or offset < seen["from"] or offset not in seen["archived"]:
            return None
        return seen["time"], seen["index"]

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
                            late: int = 0, seen_by: str | None = None,
                            tp: tuple | None = None) -> tuple[str, list[int]] | None:
        """The allowance and its evidence if `need` acquisitions of `rec` can have gone unseen (to a
        client that never handed them to the application) between when it could be acquired again and
        `by`; None if the history holds no such events.

        The unseen acquisitions come one after another, and each is released by its own event that could
        have released it (issue 46, item 2; one event never explains two):
        - the session end of a consumer (close, crash, a fault cutting its connections, a client error:
          `client_error`; one per session) that was live then (its session started and did not end
          before: item 2a), at or after the record was free again: a consumer cannot acquire a record
          while another's lock on it is live;
        - or (`-expired`) its lock running out, a whole lock duration after it was acquired, at the
          earliest when the record was free again (item 2b).
        The record is free again: for a record delivered before (count > 0), when the lock of the delivery
        the history saw ended (`lock_end`), was released (a RELEASE sent), or its owner's session ended (that
        end released it and counts for nothing else); for one never delivered, from its produce's invoke
        (`avail_time`, also for one delivered before its produce returned or produced at an unreported offset;
        from an offset reset that brought it back; unknown, NEVER, for a second copy of a produced id: no
        window, item 2c). Taking, each time, whichever of the
        next such session end and the lock expiry comes first gives the most acquisitions that fit.
        Orderly closes after the drain count once together: until then every consumer polled, and a poll
        hands over what it fetched, so only the fetch a close cut off can go unseen. On a release whose
        session release decreases the count (4.1) a close, crash or client error takes nothing; a fault
        cutting connections still counts (the connection may stay up while the lock runs out).
        `expiry=False`: lock durations do not count (a record that ends archived without a delivery the
        history saw at the limit needs session ends: a live client hands what it fetched to the
        application at its next poll). `late`: session ends stamped up to `late` after `by` (not by
        `seen_by` after `by_index`) may have come before it.
        `tp` (the record's share-partition; `-disrupted`): a disruption of it (a leader-change or
        coordinator-loss fault, from its start to its heal plus settle_ms) overlapping [free, by] releases one
        acquisition too, at the later of its start and `free` (KIP-932: "In the unlikely event of a
        share-partition leader crash, memory of the in-flight delivery will be lost"; a client that fetched
        from the leader that moved may also release what it never handed over, which keeps the count)."""
        if need <= 0:
            return "unobserved-acquisition", [by_index]
        found = self._unseen(rec, need, by, by_index, expiry, late, seen_by, None)
        if found is None and tp is not None:  # (the other causes first: a disruption only where they fall short)
            found = self._unseen(rec, need, by, by_index, expiry, late, seen_by, tp)
        return found

    def _unseen(self, rec: Rec, need: int, by: int, by_index: int, expiry: bool, late: int, seen_by: str | None,
                tp: tuple | None) -> tuple[str, list[int]] | None:
        if rec.count:
            since, since_index = rec.acq_time, rec.last_index
            # until then the delivery the history saw held it: its lock, less the tolerance (the client may have
            # fetched, so acquired, it before the poll that showed it: the replay's lock tolerance)
            free = min(rec.lock_end - self.tol_ns, rec.release_from)
            holder = rec.owner if rec.release_from == NEVER else None
        else:
            since, since_index = rec.avail_time, rec.produce_index
            if since >= NEVER:
                return None  # when it could first be acquired is unknown: no window (fail closed)
            free, holder = since, None
        held_until = free
        # a session end keeps the acquisition counted, except on 4.1; a fault cutting connections may instead
        # let the lock run out (the TCP connection stays up), which counts on every release
        sessions_count = count_after_release(1, SESSION, self.profile) == 1
        # no acquisition of a record never delivered before the first consumer start (when one is known)
        floor = self.first_start_time if not rec.count and self.first_start_time <= by else 0
        lock = self.lock_ns if expiry else NEVER
        ends, live = self.ends, self.end_live
        at, hi = bisect.bisect_right(self.end_times, since), bisect.bisect_right(self.end_times, by + late)
        used: list[int] = []
        keys: set = set()
        expired = 0
        post_drain = False
        # disruptions of the record's partition (leader change, coordinator loss) in [since, by]: each may have
        # lost one in-flight acquisition (the leader forgot it, or the client released what it had fetched
        # from a leader that moved: either way an acquisition the history did not see, counted once)
        disruptions = [] if tp is None else [
            (start, end, index) for start, end, partitions, _, index in self.windows
            if start <= by and end >= since and (partitions is None or tp in partitions)]
        disrupted = 0
        while len(used) + expired < need:
            found = None  # the next session end that can release an acquisition made from `free` on
            while at < hi:
                t, index, process, key, after_drain = ends[at]
                at += 1
                if 0 <= by_index < index and (not late or process == seen_by):
                    if not late:
                        at = hi  # stamped in the same instant as `by`, but after it
                        break
                    continue
                if holder is not None and process == holder and t <= held_until:
                    holder = None  # this end released the delivery the history saw, and nothing else
                    keys.add(key)
                    if not used and not expired:
                        free = min(free, t)
                    continue
                if t < free or not live[at - 1] or key in keys or (after_drain and post_drain) \
                        or not (sessions_count or key[0] == "fault"):
                    continue
                found = (t, index, key, after_drain)
                break
            expires = max(free, floor) + lock
            window = next((w for w in disruptions if w[1] >= free), None)
            lost = max(free, window[0]) if window is not None else NEVER
            if window is not None and lost <= by and lost <= expires and (found is None or lost < found[0]):
                disruptions.remove(window)
                free = lost
                disrupted += 1
                used.append(window[2])
                if found is not None:
                    at -= 1  # asked again from the new `free`
            elif found is not None and found[0] <= expires:
                free = found[0]
                keys.add(found[2])
                post_drain = post_drain or found[3]
                used.append(found[1])
            elif expires <= by:
                free = expires
                expired += 1
                if found is not None:
                    at -= 1  # asked again from the new `free`
            else:
                return None
        name = ("unobserved-acquisition-disrupted" if disrupted else
                "unobserved-acquisition-expired" if expired else "unobserved-acquisition")
        return name, [since_index, *used, by_index]

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
