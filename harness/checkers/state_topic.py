"""`__share_group_state` as the checkers read it, and the check that it agrees with the history.

`StateRanges` holds a share-partition's decoded batches as disjoint intervals (a batch of three
billion offsets costs one entry). `StateTopic` keeps the last decoded read per share-partition and
`check` compares it with the ledger after the replay: every record the history proves accepted or
rejected is terminal there; none is acknowledged there that was never delivered; an acknowledgement
of unknown outcome is settled by it. Where the start offset went back (a known bug up to 4.3) the
release's profile decides between the allowance and an anomaly.
"""

from __future__ import annotations

import bisect
from typing import Any

from harness.checkers.findings import Findings
from harness.checkers.ledger import ACCEPTED, GONE, MAYBE, MS, NEVER, OPEN, REJECT_SENT, REJECTED, Ledger
from harness.model.profiles import ModelProfile
from harness.model.share_partition import ACKNOWLEDGED, ACQUIRED, STATE_IDS, STATE_NAMES, TERMINAL_IDS


class StateRanges:
    """The offsets of `__share_group_state` batches ([first, last, state, delivery count]) and their
    (state, count), as disjoint ranges: a batch costs the same whatever its length (a batch
    [0, 3000000000] is one range, not three billion offsets). Where batches overlap the later one
    holds, as when they are applied one after another. Reads like a dict: `o in s`, `s[o]`, `s.get(o)`."""

    __slots__ = ("firsts", "lasts", "values")

    def __init__(self, batches) -> None:
        import heapq
        self.firsts: list[int] = []
        self.lasts: list[int] = []
        self.values: list[tuple[int, int]] = []
        batches = [(int(b[0]), int(b[1]), (b[2], b[3])) for b in batches if int(b[0]) <= int(b[1])]
        if all(a[1] < b[0] for a, b in zip(batches, batches[1:])):  # sorted and disjoint: as the harness writes
            for first, last, value in batches:
                self._add(first, last, value)
            return
        # overlapping: sweep the range ends; in each piece between two ends the latest batch holding it wins
        order = sorted(range(len(batches)), key=lambda i: batches[i][0])
        ends = sorted({b[0] for b in batches} | {b[1] + 1 for b in batches})
        live: list[tuple[int, int]] = []  # heap of (-position in the list, last offset)
        k = 0
        for here, upto in zip(ends, ends[1:]):
            while k < len(order) and batches[order[k]][0] <= here:
                heapq.heappush(live, (-order[k], batches[order[k]][1]))
                k += 1
            while live and live[0][1] < here:
                heapq.heappop(live)
            if live:
                self._add(here, upto - 1, batches[-live[0][0]][2])

    def _add(self, first: int, last: int, value: tuple[int, int]) -> None:
        if self.lasts and self.lasts[-1] == first - 1 and self.values[-1] == value:
            self.lasts[-1] = last
        else:
            self.firsts.append(first)
            self.lasts.append(last)
            self.values.append(value)

    def get(self, offset: int, default: Any = None) -> Any:
        at = bisect.bisect_right(self.firsts, offset) - 1
        return self.values[at] if at >= 0 and offset <= self.lasts[at] else default

    def __contains__(self, offset: int) -> bool:
        return self.get(offset) is not None

    def __getitem__(self, offset: int) -> tuple[int, int]:
        found = self.get(offset)
        if found is None:
            raise KeyError(offset)
        return found


def writes_touching(writes: list[list], offset: int, last: int = 6) -> str:
    """The state-topic writes (snapshot, then updates) that set `offset`'s state or a start offset, the
    latest `last` of them, e.g. `update e7 start 3 [3-7 ACKNOWLEDGED c1]`."""
    shown = []
    for kind, epoch, start, batches in writes:
        hit = [f"{f}-{l} {STATE_NAMES.get(st, st)} c{c}" for f, l, st, c in batches if f <= offset <= l]
        if hit or kind == "snapshot" or start >= 0:  # it touched the offset, or set the start
            shown.append(f"{kind} e{epoch} start {start}" + (f" [{', '.join(hit)}]" if hit else ""))
    if not shown:
        return "none"
    return ("... " if len(shown) > last else "") + "; ".join(shown[-last:])


class StateTopic:
    def __init__(self, findings: Findings, ledger: Ledger, profile: ModelProfile) -> None:
        self.findings = findings
        self.ledger = ledger
        self.profile = profile
        #: tp -> (start offset, decoded states, op index of the read)
        self.final_state: dict[tuple, tuple[int, StateRanges, int]] = {}
        self.state_writes: dict[tuple, list[list]] = {}  # tp -> the state-topic writes final_state came from
        self.state_max_start: dict[tuple, int] = {}  # tp -> highest start offset the state topic ever held
        #: tp -> the writes that moved its start back ([timestamp ms, highest, start]), None if not read
        self.regressions: dict[tuple, list | None] = {}
        #: the wall clock (ms) at the history's time 0 (the config's `wall_clock_ms`), to place those writes
        self.wall_clock_ms: int | None = None
        #: tp -> (first offsets, times): from each first offset on, the records that left the ledger once the
        #: releases had changed were settled (their acknowledgement's success, or their archiving) by that
        #: history time at the latest (rounded up to the ms; NEVER: unknown), for `regression_excused`
        self.settled_runs: dict[tuple, tuple[list[int], list[int]]] = {}
        self.watching = False

    def watch(self) -> None:
        """From now on note the records that leave the ledger (`_left`): the replay calls it once the releases
        changed, so a history of one release pays nothing per record (`_left` would return at once)."""
        if not self.watching and self.ledger is not None:
            self.watching = True
            self.ledger.on_leave.append(self._left)

    def read(self, tp: tuple, start: int, v: dict[str, Any], index: int) -> None:
        self.final_state[tp] = (start, StateRanges(v.get("batches", [])), index)
        self.state_writes[tp] = v.get("writes", [])
        self.state_max_start[tp] = v.get("max_start_offset", start)
        self.regressions[tp] = v.get("start_regressions")

    def _left(self, tp: tuple, offset: int, rec) -> None:
        """A record left the ledger (settled): once the releases changed (a rolling upgrade), note by when it
        was settled, for `regression_excused` (a history of one release never asks). Runs of offsets settled
        by the same ms cost one entry (records acknowledged by one commit are one)."""
        if len(getattr(self.profile, "phases", ())) < 2 or not self.profile.phased or tp in self.ledger.reset_tps:
            return  # (the first test is the cheap one: this runs for every record that leaves)
        if rec.status in (ACCEPTED, REJECTED):
            by = rec.status_time  # the acknowledgement's successful result: it reached the broker before
        elif rec.status == GONE:
            by = NEVER  # deleted, compacted or aborted: when the group took it as done is not known
        else:  # archived at the limit: when its lock ran out at the latest
            by = rec.lock_end + self.ledger.tol_ns
        if by != NEVER:
            by = -(-by // MS) * MS  # rounded up: still no earlier than the record was settled
        firsts, times = self.settled_runs.setdefault(tp, ([], []))
        if not times or times[-1] != by:
            firsts.append(offset)
            times.append(by)

    def settled_by(self, tp: tuple, offset: int, rec=None) -> int:
        """The history time by which the record at `offset` was settled at the latest: for a record the ledger
        still holds (`rec`), its acknowledgement's successful result; for one that left it, as `_left` noted
        (before the releases first changed: that change's time, as it left before); NEVER if not known."""
        if rec is not None:
            return rec.status_time if rec.status in (ACCEPTED, REJECTED) else NEVER
        if self.ledger is None or tp in self.ledger.reset_tps or offset >= self.ledger.watermark[tp]:
            return NEVER
        firsts, times = self.settled_runs.get(tp, ((), ()))
        at = bisect.bisect_right(firsts, offset) - 1
        if at >= 0:
            return times[at]
        phases = getattr(self.profile, "phases", ())
        return next((began for began, _, lines in phases if lines != phases[0][2]), NEVER)

    def regression_excused(self, tp: tuple, offset: int, settled: int = NEVER, until: int = NEVER) -> bool | None:
        """Whether the known bug `state-start-offset-regressed` explains `tp`'s start offset going back over
        `offset`, the record there settled by history time `settled` at the latest (`settled_by`): the release
        under test has it; or, where the releases changed during the history (a rolling upgrade), a write that
        moved the start back over `offset` (from above it to at or below it) surely after the record was
        settled, and no later than `until` (the redelivery it would explain), was made while a release with the
        bug ran (issue 46 item 3: a write that may have come before the acknowledgement explains nothing).

        False: such a write surely after it was made while no release with the bug ran. None (unknown, never a
        pass): the decoder's list was cut (it keeps the first 50 such writes), no timed write moved the start
        back over `offset` surely after the record was settled, or a write made without the bug may have."""
        bug, profile = "state-start-offset-regressed", self.profile
        if not getattr(profile, "phased", False):
            return profile.state_start_may_regress
        if not profile.ever(bug):
            return False
        listed = self.regressions.get(tp) or ()
        if self.wall_clock_ms is None:
            return None
        after_with = maybe_without = False
        for ts, highest, start in listed:
            if not start <= offset < highest:
                continue
            at = (ts - self.wall_clock_ms) * MS  # history time (the writer's clock, the harness's 0)
            if at > until:
                continue  # after what it would explain
            with_bug = profile.had_at(bug, at)
            if at >= settled:  # surely after the record was settled
                if not with_bug:
                    return False
                after_with = True
            elif not with_bug:
                maybe_without = True
        if len(listed) >= 50 or maybe_without or not after_with:
            return None
        return True

    def regression_unknown(self, tp: tuple) -> str:
        return (f"{tp[0]}-{tp[1]}: __share_group_state's start offset went back while the releases changed "
                f"({self.profile.describe()}), and no write's time shows whether a release with the known bug "
                f"state-start-offset-regressed moved it back over the record after it was settled (no write "
                f"time, one that may precede the acknowledgement, or the decoder's list of such writes was cut "
                f"at 50)")

    def start_went_back_over(self, tp: tuple, offset: int) -> str | None:
        """How the state topic's start offset of `tp` went back over `offset` (from a start above it to one
        at or below it), if its writes show that; None if they do not (or were not read)."""
        if tp not in self.final_state or tp in self.ledger.reset_tps:
            return None
        highest = -1
        for write in self.state_writes.get(tp, []):
            start = write[2]
            if 0 <= start <= offset < highest:
                return f"start offset written as {start} after {highest}"
            highest = max(highest, start)
        start = self.final_state[tp][0]
        top = self.state_max_start.get(tp, start)
        return f"start offset {start}, earlier {top}" if start <= offset < top else None

    def check(self) -> None:
        """The decoded `__share_group_state` must agree with the ledger (see the module's text)."""
        ledger, findings = self.ledger, self.findings
        checked = 0
        for tp, (start, states, read_index) in self.final_state.items():
            log_start = ledger.log_start.get(tp, 0)

            def terminal(o: int) -> bool:
                # below the log start a deleteRecords set, a record is gone from the log: the share-partition
                # never has to hold it (one initialized after the deletion starts at the log start or later)
                return o < start or o < log_start or states.get(o, (0, 0))[0] in TERMINAL_IDS

            def held(o: int) -> str:
                """How the state topic holds offset `o`, with the writes that decided it."""
                state = f"as {STATE_NAMES.get(states[o][0], states[o][0])} (delivery count {states[o][1]})" \
                    if o in states else "in no batch (not yet delivered, to a leader loading it)"
                return f"{state}, start offset {start}; writes: {writes_touching(self.state_writes.get(tp, []), o)}"
            # Below the highest start offset ever written the share coordinator once had every record
            # terminal: the start went back (out-of-order writes; 4.4 keeps the higher one).
            went_back = self.state_max_start.get(tp, start) if tp not in ledger.reset_tps else start

            def not_terminal(o: int, message: str, evidence: tuple[int, ...], rec=None) -> None:
                if o < went_back:
                    excused = self.regression_excused(tp, o, self.settled_by(tp, o, rec))
                    if excused is None:
                        findings.obs.unknown.setdefault("durable-state", self.regression_unknown(tp))
                        return
                    if excused:  # a known bug of this release (of the phase that wrote it): counted, shown
                        findings.allow("durable-state", "state-start-offset-regressed", (*evidence, read_index))
                        findings.known_bug(f"{message}; the state topic's start offset went back from {went_back}")
                        return
                    findings.anomaly("durable-state", "state-start-offset-regressed",
                                     f"{message}; the state topic's start offset went back from {went_back}",
                                     evidence, offset=o)
                    return
                findings.anomaly("durable-state", "state-topic-not-terminal", message, evidence, offset=o)
            # compacted away as accepted: must be terminal (from -1 at most: no record lies below offset 0).
            # Not an aborted record under read_committed: never delivered, it may be in no write yet (4.4
            # archives it when a fetch filters it out and writes it with a later update)
            aborted = ledger.aborted.get(tp, ())
            for o in range(max(start, -1), ledger.watermark[tp]):
                checked += 1
                if not terminal(o) and o not in aborted:
                    not_terminal(o, f"{tp[0]}-{tp[1]}@{o} was accepted, but __share_group_state holds it {held(o)}",
                                 (read_index,))
            for o, rec in ledger.recs[tp].items():
                if rec.produce_index < 0:
                    continue
                checked += 1
                if rec.status in (ACCEPTED, REJECTED) and not terminal(o):
                    not_terminal(o, f"record {rec.rid} at {tp[0]}-{tp[1]}@{o} was "
                                 f"{'accepted' if rec.status == ACCEPTED else 'rejected'} by a successful commit, "
                                 f"but __share_group_state holds it {held(o)}", (rec.status_index, read_index), rec)
                elif (rec.status == MAYBE or (rec.status == OPEN and rec.ack_seen)) and terminal(o):
                    # the broker has it: the unknown outcome is settled, or the acknowledgement whose result
                    # was an error (seen on 4.3.1: "_TRANSPORT: Broker transport failure" while the
                    # controller was killed) reached the broker after all. Which one, where a REJECT was sent:
                    # the state topic's own state says (ARCHIVED: the REJECT); below the start it cannot, and
                    # the record stays unresolved (settled per no-loss; the DLQ may hold it or not)
                    state = states[o][0] if o >= start and o in states else None
                    # delivered at the limit and not held ACKNOWLEDGED: its lock or its owner's session may have
                    # ended first, archiving it at the limit (its ACCEPT never reaching the broker: the explorer met
                    # a consumer killed before it sent one on 4.4.0, the record then in the DLQ); left unresolved
                    at_limit = rec.count >= ledger.limit and state != STATE_IDS[ACKNOWLEDGED]
                    if state == STATE_IDS[ACKNOWLEDGED] or not (rec.ack_seen & REJECT_SENT or at_limit):
                        rec.status = ACCEPTED
                    elif state is not None:
                        rec.status, rec.status_index = REJECTED, -1  # (its result's index is unknown)
                    findings.n["resolved-by-state-topic"] += 1
                elif states.get(o, (0, 0))[0] == STATE_IDS[ACKNOWLEDGED] and rec.count == 0:
                    findings.anomaly("durable-state", "state-topic-acknowledged-undelivered",
                                     f"record {rec.rid} at {tp[0]}-{tp[1]}@{o} is acknowledged in __share_group_state "
                                     f"but the history never saw it delivered", (rec.produce_index, read_index),
                                     offset=o)
        for tp, (start, states, read_index) in self.final_state.items():
            self.no_acquired_state(tp, states, read_index)
        if self.final_state:
            findings.obs.stats["durable-state"]["state_topic_records_checked"] = checked

    def no_acquired_state(self, tp: tuple, states: StateRanges, read_index: int) -> None:
        """No write of `__share_group_state` holds a record Acquired: KIP-932 (the state-persistence
        revision) "the Acquired state is not persisted" (an acquisition is in memory only; a leader that
        persisted it would hand a lock to no one after a failover). Anomaly `state-topic-acquired`."""
        acquired = STATE_IDS[ACQUIRED]
        held = [f"{kind} e{epoch}: {first}-{last}" for kind, epoch, _, batches in self.state_writes.get(tp, [])
                for first, last, state, _ in batches if state == acquired]
        held += [f"the share-partition's state: {first}-{last}" for first, last, (state, _)
                 in zip(states.firsts, states.lasts, states.values) if state == acquired]
        if held:
            self.findings.anomaly("durable-state", "state-topic-acquired",
                                  f"__share_group_state holds records of {tp[0]}-{tp[1]} in the Acquired state "
                                  f"({'; '.join(held[:5])}{' ...' if len(held) > 5 else ''}): KIP-932 says the "
                                  f"Acquired state is not persisted", (read_index,), offset=-1)
