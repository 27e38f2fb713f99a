"""What the checkers' allowances look at in a history, read once (`Facts`), and the questions the
mutant classes ask of it to pick spots outside every allowance.

`facts(ops)` returns the Facts of a history, cached for the last few (each mutant class asks again).
The tables are filled by `harness.mutants.scan`; the questions below mirror the allowances'
definitions (session ends, disruption windows, lock durations, the state topic's start offset).
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from typing import Any, Sequence

from harness.history.schema import Op
from harness.model.profiles import model_profile
from harness.mutants.registry import FINAL, MS, NEVER, Key
from harness.mutants.scan import AckInfo, Delivery, End, scan


class Facts:
    """What the checkers' allowances look at, read once from a history."""

    def __init__(self, ops: Sequence[Op]) -> None:
        self.ops = ops
        self.config: dict[str, Any] = next((op.value for op in ops if op.f == "config" and op.type == "ok"
                                            and isinstance(op.value, dict)), {})
        c = self.config
        self.limit = int(c.get("delivery_count_limit", 5))
        self.lock_ns = int(c.get("lock_duration_ms", 30000)) * MS
        self.tol_ns = int(c.get("lock_tolerance_ms", 2000)) * MS
        self.settle_ns = int(c.get("settle_ms", 10000)) * MS
        reset = str(c.get("auto_offset_reset") or "")
        self.latest = reset == "latest" or reset.startswith("by_duration")
        self.profile = model_profile(c.get("model_profile") or c.get("kafka_version") or "4.3")
        self.topics: list[str] = list(c.get("topics") or [])
        self.memo: dict[str, Any] = {}  # spot lists, computed once per history
        self._empty_tables()
        scan(self)

    def _empty_tables(self) -> None:
        """The tables the scan fills."""
        self.deliveries: dict[Key, list[Delivery]] = defaultdict(list)
        self.delivered_ids: set[str] = set()
        self.produce_invoke: dict[str, int] = {}  # id -> position
        self.produce_ok: dict[str, int] = {}
        self.acks: dict[Key, list[AckInfo]] = defaultdict(list)
        self.ack_list: list[AckInfo] = []
        self.ends: list[End] = []
        self.end_times: list[int] = []  # the ends' times, for bisecting
        self.windows: list[list] = []  # [start, end, {(topic, partition)} or None, id]
        self.reads: dict[tuple, list[tuple[int, int, int]]] = defaultdict(list)  # tp -> (start, time, pos)
        self.state_entries: dict[tuple, tuple[int, dict]] = {}  # tp -> (pos, entry) of the last share-state read
        self.starts: dict[str, list[int]] = defaultdict(list)  # process -> positions of its start ok
        self.stops: dict[str, list[int]] = defaultdict(list)  # process -> close invoke / close info / crash
        self.commit_ends: dict[int, int] = {}  # commit invoke position -> its ok / fail / info position
        self.first_start = NEVER  # position of the first consumer start
        self.excluded_ids: set[str] = set()  # truncated, aborted: their fate is another allowance's
        self.excluded_tps: set[tuple] = set()  # offsets reset, records deleted or compacted
        self.max_partition = -1
        self.commit_invokes: dict[str, list[int]] = defaultdict(list)  # process -> positions
        #: tp -> writes_from of the last share-state read that lists every write's offsets (ever_written)
        self.written_from: dict[tuple, int] = {}

    # -- consumers and commits ---------------------------------------------------------
    def next_commit(self, process: str, after: int) -> int:
        """The position of `process`'s first commit invoke after `after` (len(ops) if none)."""
        invokes = self.commit_invokes.get(process, [])
        at = bisect.bisect_right(invokes, after)
        return invokes[at] if at < len(invokes) else len(self.ops)

    def consumers(self) -> list[str]:
        return sorted(self.starts)

    def alive(self, process: str, pos: int) -> bool:
        """`process` started before `pos` and did not close or crash since."""
        started = [s for s in self.starts.get(process, ()) if s < pos]
        if not started:
            return False
        return not any(started[-1] < s < pos for s in self.stops.get(process, ()))

    # -- disruptions and session ends ----------------------------------------------------
    def disrupted(self, t0: int, t1: int, tp: tuple) -> bool:
        """A disruption window (a leader-change / coordinator-loss fault, from its start to its heal plus
        settle_ms; open if never healed) of `tp` overlaps [t0, t1]."""
        return any(start <= t1 and end >= t0 and (tps is None or tp in tps) for start, end, tps, _ in self.windows)

    def ends_between(self, t0: int, t1: int, process: str | None = None) -> list[End]:
        """Session ends (of `process`, or of anyone) with t0 <= time <= t1."""
        lo = bisect.bisect_left(self.end_times, t0)
        hi = bisect.bisect_right(self.end_times, t1)
        return [e for e in self.ends[lo:hi] if process is None or e.process == process]

    def countable_ends(self, t0: int, t1: int, by_pos: int = NEVER) -> int:
        """How many acquisitions `unobserved-acquisition` could excuse in [t0, t1] (and before position
        `by_pos`, the read that saw the record terminal): one per session that ended, the orderly closes
        after the drain once together."""
        keys: set = set()
        post_drain = False
        for e in self.ends_between(t0, t1):
            if e.pos > by_pos:
                break
            if e.key in keys or (e.post_drain and post_drain):
                continue
            keys.add(e.key)
            post_drain = post_drain or e.post_drain
        return len(keys)

    # -- start offsets and the state topic -----------------------------------------------
    def first_read_past(self, tp: tuple, offset: int) -> tuple[int, int] | None:
        """(time, pos) of the first start-offset read (share-offsets, share-state) above `offset`."""
        for start, time, pos in self.reads.get(tp, ()):
            if start > offset:
                return time, pos
        return None

    def state_proves_skip(self, tp: tuple, offset: int) -> bool:
        """The last share-state read holds every write's offsets (`ever_written`) from at or below `offset`:
        with `offset` taken out of them, no write ever held it, which no allowance excuses."""
        return tp in self.written_from and self.written_from[tp] <= offset

    def start_went_back_over(self, tp: tuple, offset: int) -> bool:
        """The last share-state read's writes show the start offset of `tp` going back over `offset` (the
        `state-start-offset-regressed` allowance, a known bug of releases up to 4.3)."""
        found = self.state_entries.get(tp)
        if found is None:
            return False
        part = found[1]
        highest = -1
        for write in part.get("writes") or ():
            start = write[2]
            if 0 <= start <= offset < highest:
                return True
            highest = max(highest, start)
        start = part["start_offset"]
        return start <= offset < part.get("max_start_offset", start)

    # -- records ---------------------------------------------------------------------
    def settled_ok(self, key: Key, before: int = NEVER) -> AckInfo | None:
        """The ACCEPT / REJECT of `key` whose first result was a success, before position `before`."""
        for a in self.acks.get(key, ()):
            if a.type in FINAL and a.result == "ok" and a.result_pos < before:
                return a
        return None

    def record_id(self, key: Key) -> str | None:
        ds = self.deliveries.get(key)
        return ds[0].record["id"] if ds else None

    def handback(self, ds: list[Delivery], i: int) -> bool:
        """Delivery i hands back a renewed record (same owner, same count): not an acquisition."""
        return i > 0 and ds[i].process == ds[i - 1].process and ds[i].count == ds[i - 1].count


_facts: list[tuple[Sequence[Op], Facts]] = []


def facts(ops: Sequence[Op]) -> Facts:
    """The Facts of `ops`, cached for the last few histories (each mutant class asks again)."""
    for known, found in _facts:
        if known is ops and len(found.ops) == len(ops):
            return found
    found = Facts(ops)
    _facts.append((ops, found))
    del _facts[:-4]
    return found
