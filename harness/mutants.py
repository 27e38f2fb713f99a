"""Mutants of a history, for mutation testing of the oracle (the checkers).

A mutant class is a function `(ops, rng) -> Mutant | None` that makes ONE seeded random change to a
history, a change that models one broker or client bug, and returns the mutated history with the
property that must then fail (a checker `NAME`), the anomaly kinds that report it and where it is.
None: the history holds no spot for that change.

Every class picks its spot OUTSIDE the situation of every allowance (`harness.model.allowances`,
boundaries as the replay in `harness.checkers.replay` draws them), so the mutated history must fail
that property, always: a mutant that passes is a hole in the oracle. The spot rules below mirror the
allowances' definitions (session ends, disruption windows, lock durations, the state topic's start
offset), computed from the history independently of the replay.

The original ops are never changed: a mutated history is a new list (renumbered: index = position,
times non-decreasing) whose changed values are deep copies.

    from harness.mutants import MUTANTS, check_all, judge
    m = MUTANTS["drop-delivery"](ops, random.Random(7))
    if m is not None:
        print(judge(m, check_all(m.ops), check_all(ops)))  # "killed", "killed-other" or "survived"
"""

from __future__ import annotations

import bisect
import copy
import random
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from harness.history.schema import Op
from harness.model.profiles import model_profile

MS = 1_000_000
NEVER = 1 << 62
DISRUPTING = ("leader-change", "coordinator-loss")
FINAL = ("ACCEPT", "REJECT")
LOSS_KINDS = ("lost", "not-accepted", "skipped")
#: a fresh client session, as a restart writes it
RESTART = {"client": "test", "client_version": "1"}

Key = tuple  # (topic, partition, offset)


@dataclass(frozen=True)
class Mutant:
    """One mutated history: `ops` must fail property `prop` (a checker NAME) with one of `kinds`."""

    cls: str
    ops: list[Op]
    prop: str
    kinds: tuple[str, ...]
    where: str  # the spot: op index (of the unmutated history), record


MutantClass = Callable[[list[Op], random.Random], "Mutant | None"]
#: mutant class name -> the class, in the order they are defined
MUTANTS: dict[str, MutantClass] = {}


def mutant_class(name: str) -> Callable[[MutantClass], MutantClass]:
    def register(fn: MutantClass) -> MutantClass:
        MUTANTS[name] = fn
        return fn
    return register


# ------------------------------------------------------------------ what a history shows


@dataclass
class Delivery:
    pos: int  # op position of the poll
    j: int  # position of the record in the poll
    process: str
    time: int
    count: int
    record: dict


@dataclass
class AckInfo:
    pos: int  # op position of the acknowledge
    process: str
    key: Key
    type: str
    time: int
    #: its first result: "ok", "error", "unknown" (its commit failed or never returned), "lost" (its consumer
    #: crashed first), "missing" (acknowledged again before any result), None (none yet)
    result: str | None = None
    result_pos: int = -1
    commit_pos: int = -1  # the commit invoke that carried it
    commit_end: int = -1  # that commit's ok / fail / info
    callbacks: list[int] = field(default_factory=list)  # callbacks listing it


@dataclass
class End:
    """A session end as the `unobserved-acquisition` allowance counts them."""

    time: int
    pos: int
    process: str
    key: tuple  # one per session
    post_drain: bool  # an orderly close after the drain (they count once together)


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
        self.deliveries: dict[Key, list[Delivery]] = defaultdict(list)
        self.delivered_ids: set[str] = set()
        self.produce_invoke: dict[str, int] = {}  # id -> position
        self.produce_ok: dict[str, int] = {}
        self.acks: dict[Key, list[AckInfo]] = defaultdict(list)
        self.ack_list: list[AckInfo] = []
        self.ends: list[End] = []
        self.windows: list[list] = []  # [start, end, {(topic, partition)} or None, id]
        self.reads: dict[tuple, list[tuple[int, int, int]]] = defaultdict(list)  # tp -> (start, time, pos)
        self.state_entries: dict[tuple, tuple[int, dict]] = {}  # tp -> (pos, entry) of the last share-state read
        self.starts: dict[str, list[int]] = defaultdict(list)  # process -> positions of its start ok
        self.stops: dict[str, list[int]] = defaultdict(list)  # process -> close invoke / close info / crash
        self.commit_ends: dict[int, int] = {}  # commit invoke position -> its ok / fail / info position
        self.first_start = NEVER  # position of the first consumer start
        self.excluded_ids: set[str] = set()  # truncated, aborted: their fate is another allowance's
        self.excluded_tps: set[tuple] = set()  # offsets reset, records deleted or compacted
        self.topics: list[str] = list(c.get("topics") or [])
        self.max_partition = -1
        self.commit_invokes: dict[str, list[int]] = defaultdict(list)  # process -> positions
        #: tp -> writes_from of the last share-state read that lists every write's offsets (ever_written)
        self.written_from: dict[tuple, int] = {}
        self.memo: dict[str, Any] = {}  # spot lists, computed once per history
        self._scan()

    # -- the scan ---------------------------------------------------------------
    def _scan(self) -> None:
        pending: dict[str, dict[Key, AckInfo]] = defaultdict(dict)
        last_ack: dict[str, dict[Key, AckInfo]] = defaultdict(dict)
        uncommitted: dict[str, list[AckInfo]] = defaultdict(list)
        open_commit: dict[str, tuple[int, list[AckInfo]]] = {}
        session_no: dict[str, int] = defaultdict(int)
        session_faults: dict[Any, list[str]] = {}
        drain_end = NEVER

        def end(time: int, pos: int, process: str, key: tuple, post_drain: bool = False) -> None:
            if self.ends and time < self.ends[-1].time:
                time = self.ends[-1].time  # as the replay keeps them sorted
            self.ends.append(End(time, pos, process, key, post_drain))

        def lose(process: str, pos: int) -> None:
            for a in pending.pop(process, {}).values():
                a.result, a.result_pos = "lost", pos

        for pos, op in enumerate(self.ops):
            v = op.value if isinstance(op.value, dict) else {}
            f, t, p = op.f, op.type, op.process
            if f == "poll" and t == "ok":
                for j, r in enumerate(v.get("records") or ()):
                    key = (r["topic"], r["partition"], r["offset"])
                    self.deliveries[key].append(Delivery(pos, j, p, op.time, r["delivery_count"], r))
                    self.delivered_ids.add(r["id"])
                    self._partition(r["topic"], r["partition"])
            elif f == "produce":
                if t == "invoke":
                    self.produce_invoke.setdefault(v.get("id"), pos)
                elif t == "ok":
                    self.produce_ok.setdefault(v.get("id"), pos)
                    self._partition(v.get("topic"), v.get("partition"))
            elif f == "acknowledge" and t == "ok":
                for r in v.get("records") or ():
                    key = (r["topic"], r["partition"], r["offset"])
                    a = AckInfo(pos, p, key, r["type"], op.time)
                    old = pending[p].get(key)
                    if old is not None and old.result is None:
                        old.result, old.result_pos = "missing", pos
                    pending[p][key] = a
                    last_ack[p][key] = a
                    uncommitted[p].append(a)
                    self.acks[key].append(a)
                    self.ack_list.append(a)
            elif f == "callback" and t == "ok":
                for part in v.get("partitions") or ():
                    for o in part.get("offsets") or ():
                        key = (part["topic"], part["partition"], o)
                        a = pending[p].pop(key, None)
                        if a is not None:
                            a.result, a.result_pos = ("ok" if v.get("error") is None else "error"), pos
                        a = a or last_ack[p].get(key)
                        if a is not None:
                            a.callbacks.append(pos)
            elif f == "commit":
                if t == "invoke":
                    self.commit_invokes[p].append(pos)
                    carried = list(pending[p].values()) + [a for a in uncommitted[p] if a.result is not None]
                    for a in carried:
                        if a.commit_pos < 0:
                            a.commit_pos = pos
                    uncommitted[p] = []
                    open_commit[p] = (pos, carried)
                else:
                    invoke, carried = open_commit.pop(p, (-1, []))
                    if invoke >= 0:
                        self.commit_ends[invoke] = pos
                    for a in carried:
                        if a.commit_pos == invoke:
                            a.commit_end = pos
                    if t == "ok":
                        for r in v.get("results") or ():
                            tp = (r["topic"], r["partition"])
                            for key in [k for k in pending[p] if k[:2] == tp]:
                                a = pending[p].pop(key)
                                a.result, a.result_pos = ("ok" if r.get("error") is None else "error"), pos
                    else:
                        for a in pending.pop(p, {}).values():
                            a.result, a.result_pos = "unknown", pos
            elif f == "start" and t == "ok":
                session_no[p] += 1
                self.starts[p].append(pos)
                self.first_start = min(self.first_start, pos)
            elif f == "drain" and t in ("ok", "info"):
                drain_end = min(drain_end, op.time)
            elif f == "close" and t == "invoke":
                end(op.time, pos, p, ("session", p, session_no[p]), op.time >= drain_end)
                self.stops[p].append(pos)
            elif f == "close" and t == "info":
                end(op.time, pos, p, ("session", p, session_no[p]))
                self.stops[p].append(pos)
                lose(p, pos)
            elif f == "crash":
                q = v.get("process", "")
                end(op.time, pos, q, ("session", q, session_no[q]))
                self.stops[q].append(pos)
                lose(q, pos)
            elif f == "error":
                end(op.time, pos, p, ("error", p, session_no[p]))
            elif f == "fault-start" and t in ("invoke", "ok"):
                effects = v.get("effects") or ()
                if "session-loss" in effects and v.get("processes"):
                    session_faults[v.get("id")] = list(v["processes"])
                    for q in v["processes"]:
                        end(op.time, pos, q, ("fault", q, v.get("id")))
                if set(effects) & set(DISRUPTING):
                    parts = v.get("partitions")
                    tps = None if parts is None else {(v.get("topic"), x) for x in parts}
                    if not any(w[3] == v.get("id") for w in self.windows):
                        self.windows.append([op.time, NEVER, tps, v.get("id")])
            elif f == "fault-heal" and t == "ok":
                for q in session_faults.pop(v.get("id"), ()):
                    end(op.time, pos, q, ("fault", q, v.get("id")))
                for w in self.windows:
                    if w[3] == v.get("id") and w[1] == NEVER:
                        w[1] = op.time + self.settle_ns
            elif f == "share-offsets" and t == "ok":
                for part in v.get("partitions") or ():
                    self._partition(part["topic"], part["partition"])
                    self.reads[(part["topic"], part["partition"])].append((part["start_offset"], op.time, pos))
            elif f == "share-state" and t == "ok":
                for part in v.get("partitions") or ():
                    tp = (part["topic"], part["partition"])
                    self._partition(*tp)
                    self.reads[tp].append((part["start_offset"], op.time, pos))
                    self.state_entries[tp] = (pos, part)
                    if "ever_written" in part:
                        self.written_from[tp] = int(part.get("writes_from", 0))
            elif f == "truncated" and t == "ok":
                self.excluded_ids.update(r["id"] for r in v.get("records") or ())
            elif f == "transaction":
                self.excluded_ids.update(v.get("ids") or ())
            elif f == "reset-offsets" and t == "ok":
                self.excluded_tps.update((v.get("topic"), part["partition"]) for part in v.get("partitions") or ())
            elif f in ("records-deleted", "records-compacted") and t == "ok":
                self.excluded_tps.add((v.get("topic"), v.get("partition")))
        self.end_times = [e.time for e in self.ends]

    def _partition(self, topic: Any, partition: Any) -> None:
        if isinstance(partition, int):
            self.max_partition = max(self.max_partition, partition)
        if isinstance(topic, str) and topic not in self.topics:
            self.topics.append(topic)

    # -- questions --------------------------------------------------------------
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

    def settled_ok(self, key: Key, before: int = NEVER) -> AckInfo | None:
        """The ACCEPT / REJECT of `key` whose first result was a success, before position `before`."""
        for a in self.acks.get(key, ()):
            if a.type in FINAL and a.result == "ok" and a.result_pos < before:
                return a
        return None

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


# ------------------------------------------------------------------ editing a history


def renumber(ops: Sequence[Op]) -> list[Op]:
    """index = position; times never step back."""
    out: list[Op] = []
    last = None
    for i, op in enumerate(ops):
        time = op.time if last is None or op.time >= last else last
        last = time
        out.append(op if op.index == i and op.time == time else Op(i, time, op.process, op.type, op.f, op.value))
    return out


def with_value(op: Op, value: Any) -> Op:
    return Op(op.index, op.time, op.process, op.type, op.f, value)


def insert(ops: Sequence[Op], after: int, new: list[tuple[str, str, str, Any]], dt: int = 0) -> list[Op]:
    """`ops` with `new` (process, type, f, value) inserted after position `after` (-1: at the start), at
    the time of the op before them plus `dt` (capped at the next op's time)."""
    base = ops[after].time if after >= 0 else (ops[0].time if ops else 0)
    time = base + dt
    if after + 1 < len(ops):
        time = min(time, ops[after + 1].time)
    added = [Op(0, max(time, base), p, t, f, v) for p, t, f, v in new]
    return renumber(list(ops[:after + 1]) + added + list(ops[after + 1:]))


def _where(f: Facts, pos: int, key: Key | None = None, extra: str = "") -> str:
    op = f.ops[pos]
    text = f"op {op.index} ({op.f} {op.type} by {op.process})"
    if key is not None:
        text += f": {key[0]}-{key[1]}@{key[2]}"
        rid = f.record_id(key)
        if rid is not None:
            text += f" id {rid}"
    return text + (f"; {extra}" if extra else "")


def _strip_ranges(ranges: list, offset: int) -> list:
    """[first, last(, ...)] ranges without `offset` (a range holding it is split)."""
    out = []
    for r in ranges:
        first, last = r[0], r[1]
        if first <= offset <= last:
            if first < offset:
                out.append([first, offset - 1, *r[2:]])
            if offset < last:
                out.append([offset + 1, last, *r[2:]])
        else:
            out.append(list(r))
    return out


def _strip_state(value: dict, tp: tuple, offset: int) -> dict:
    """A share-state read's value in which no write, batch or range of `tp` ever held `offset`."""
    value = copy.deepcopy(value)
    for part in value.get("partitions") or ():
        if (part["topic"], part["partition"]) != tp:
            continue
        part["batches"] = _strip_ranges(part.get("batches") or [], offset)
        for k in ("ever_written", "ever_archived"):
            if k in part:
                part[k] = _strip_ranges(part[k], offset)
        for write in part.get("writes") or ():
            write[3] = _strip_ranges(write[3], offset)
    return value


# ------------------------------------------------------------------ a record that vanishes


def _skippable(f: Facts, key: Key, after_start: bool = False) -> tuple[Delivery, AckInfo] | None:
    """(its delivery, its final acknowledgement) if the record `key` can be made to vanish outside every
    allowance: delivered exactly once, settled by an ACCEPT / REJECT whose result was a success (no
    error, no unknown outcome), by nobody else; not truncated, aborted, deleted, compacted or reset
    (their own allowances); not below where a `latest` share-partition started (`before-latest-start`);
    and `unobserved-acquisition` cannot archive it unseen: either fewer sessions ended between its
    produce and the first start-offset read past it than the delivery limit (so limit acquisitions
    cannot have gone unseen), or the state topic's writes, from at or below it, are all in the history
    (with the record taken out of them no write ever held it: skipped, not archived) and no disruption
    overlaps its time in flight (a leader change or coordinator loss may lose a write)."""
    ds = f.deliveries.get(key)
    if not ds or len(ds) != 1:
        return None
    d = ds[0]
    rid = d.record["id"]
    if rid in f.excluded_ids or key[:2] in f.excluded_tps or rid not in f.produce_ok or rid not in f.produce_invoke:
        return None
    if sum(1 for dd in ds if dd.record["id"] == rid) != 1:
        return None
    acks = f.acks.get(key, [])
    if not acks or any(a.process != d.process or a.result != "ok" for a in acks) or acks[-1].type not in FINAL:
        return None
    invoke = f.produce_invoke[rid]
    if after_start and invoke < f.first_start:
        return None
    if f.latest and f.produce_ok[rid] < f.first_start:
        others = [o for (t, p, o), dd in f.deliveries.items() if (t, p) == key[:2] and o != key[2]]
        if not others or key[2] < min(others):
            return None
    read = f.first_read_past(key[:2], key[2])
    if read is not None and f.countable_ends(f.ops[invoke].time, *read) >= f.limit \
            and not (f.state_proves_skip(key[:2], key[2])
                     and not f.disrupted(f.ops[invoke].time, read[0], key[:2])):
        return None  # (a disruption may lose state-topic writes: then they prove nothing)
    return d, acks[-1]


def _vanish(f: Facts, key: Key, d: Delivery) -> list[Op]:
    """The history without the record's delivery, its consumer's acknowledgements of it and the
    callback offsets for it (ops left empty are dropped; commit results stay), and with no state-topic
    write ever holding it."""
    out: list[Op] = []
    tp = key[:2]
    for pos, op in enumerate(f.ops):
        v = op.value
        if pos == d.pos:
            v = copy.deepcopy(v)
            del v["records"][d.j]
            if not v["records"]:
                continue
        elif op.process == d.process and op.f == "acknowledge" and op.type == "ok" and any(
                (r["topic"], r["partition"], r["offset"]) == key for r in v["records"]):
            v = copy.deepcopy(v)
            v["records"] = [r for r in v["records"] if (r["topic"], r["partition"], r["offset"]) != key]
            if not v["records"]:
                continue
        elif op.process == d.process and op.f == "callback" and op.type == "ok" and any(
                (p["topic"], p["partition"]) == tp and key[2] in p["offsets"] for p in v.get("partitions") or ()):
            v = copy.deepcopy(v)
            for p in v["partitions"]:
                if (p["topic"], p["partition"]) == tp:
                    p["offsets"] = [o for o in p["offsets"] if o != key[2]]
            v["partitions"] = [p for p in v["partitions"] if p["offsets"]]
            if not v["partitions"]:
                continue
        elif op.f == "share-state" and op.type == "ok" and isinstance(v, dict) and v.get("partitions"):
            v = _strip_state(v, tp, key[2])
        out.append(op if v is op.value else with_value(op, v))
    return renumber(out)


def _pick_skippable(f: Facts, rng: random.Random, after_start: bool = False) -> tuple[Key, Delivery] | None:
    memo = f"skippable-{after_start}"
    if memo not in f.memo:
        f.memo[memo] = sorted(k for k in f.deliveries if _skippable(f, k, after_start) is not None)
    candidates = f.memo[memo]
    if not candidates:
        return None
    key = rng.choice(candidates)
    return key, f.deliveries[key][0]


@mutant_class("drop-delivery")
def drop_delivery(ops: list[Op], rng: random.Random) -> Mutant | None:
    """The broker skips a record: delivered exactly once and accepted, it vanishes (its poll entry, its
    consumer's acknowledgements and callback offsets for it; state-topic writes never held it).
    Models a share-partition that moves its start offset past a record it never handed out.
    No allowance: the record is not truncated/deleted/aborted/reset; not below where a `latest`
    share-partition began (`before-latest-start`); and `unobserved-acquisition` cannot archive it
    unseen: fewer sessions ended between its produce and the start-offset read past it than the
    delivery limit, or the state topic's writes (from at or below it) show no write ever held it."""
    f = facts(ops)
    found = _pick_skippable(f, rng)
    if found is None:
        return None
    key, d = found
    return Mutant("drop-delivery", _vanish(f, key, d), "no-loss", LOSS_KINDS, _where(f, d.pos, key, "delivery removed"))


@mutant_class("skip-record-with-old-session-ends")
def skip_record_with_old_session_ends(ops: list[Op], rng: random.Random) -> Mutant | None:
    """drop-delivery, plus `limit` consumer crashes and restarts right before the record's produce.
    Models the same skip in a run whose consumers crashed earlier. Boundary of the
    `unobserved-acquisition` allowance: session ends that happened before the record existed cannot
    have acquired it, so however many there are they must not excuse it."""
    f = facts(ops)
    found = _pick_skippable(f, rng)
    consumers = f.consumers()
    if found is None or not consumers:
        return None
    key, d = found
    invoke = f.produce_invoke[d.record["id"]]
    started = [c for c in consumers if any(s < invoke for s in f.starts[c])]
    if not started:
        return None
    victim = rng.choice(started)
    vanished = _vanish(f, key, d)
    # the produce invoke's position is unchanged: everything removed lies after it (poll, acks, callbacks)
    extra = []
    for _ in range(f.limit):
        extra.append(("harness", "info", "crash", {"process": victim}))
        extra.append((victim, "ok", "start", dict(RESTART)))
    mutated = insert(vanished, invoke - 1, extra)
    return Mutant("skip-record-with-old-session-ends", mutated, "no-loss", LOSS_KINDS,
                  _where(f, d.pos, key, f"delivery removed; {f.limit} crashes of {victim} before its produce "
                                        f"(op {invoke})"))


@mutant_class("latest-skip-after-start")
def latest_skip_after_start(ops: list[Op], rng: random.Random) -> Mutant | None:
    """With share.auto.offset.reset=latest, drop-delivery of a record produced after the first consumer
    started. Models a share-partition initialized past records it should deliver. Boundary of the
    `before-latest-start` allowance: only records produced before the first consumer start may lie
    below where a latest share-partition began (`unobserved-acquisition` is ruled out as for
    drop-delivery)."""
    f = facts(ops)
    if not f.latest:
        return None
    found = _pick_skippable(f, rng, after_start=True)
    if found is None:
        return None
    key, d = found
    return Mutant("latest-skip-after-start", _vanish(f, key, d), "no-loss", LOSS_KINDS,
                  _where(f, d.pos, key, "delivery removed (produced after the first start)"))


# ------------------------------------------------------------------ acquisitions and counts


def _tracked(f: Facts, key: Key, pos: int) -> bool:
    """A delivery of `key` at `pos` is checked as an acquisition: one record ever at that offset, not
    truncated, aborted, deleted, compacted or reset; not settled (accepted, rejected) before, and not
    delivered at the limit before (then it is archived: a later delivery is another check's)."""
    ds = f.deliveries.get(key)
    if not ds or key[:2] in f.excluded_tps or len({d.record["id"] for d in ds}) != 1 \
            or ds[0].record["id"] in f.excluded_ids:
        return False
    return f.settled_ok(key, pos) is None and not any(d.pos < pos and d.count >= f.limit for d in ds)


@mutant_class("duplicate-acquisition")
def duplicate_acquisition(ops: list[Op], rng: random.Random) -> Mutant | None:
    """Right after a poll delivered record r to consumer A, another consumer B gets r too (count + 1).
    Models a broker that hands out a record whose acquisition lock is live. No allowance:
    `acquired-lost-on-leader-change` needs a disruption window (leader-change / coordinator-loss fault
    until its heal plus settle_ms) overlapping the two acquisitions, and none does; A's session did not
    end in between (1 ns) and A released nothing; the lock (lock_duration_ms - lock_tolerance_ms) is live."""
    f = facts(ops)
    consumers = f.consumers()
    spots = []
    for key, ds in f.deliveries.items():
        for i, d in enumerate(ds):
            if f.handback(ds, i) or not _tracked(f, key, d.pos):
                continue
            nxt = f.ops[d.pos + 1].time if d.pos + 1 < len(f.ops) else d.time + 1
            at = min(d.time + 1, nxt)
            if at - d.time >= f.lock_ns - f.tol_ns or f.disrupted(d.time, at, key[:2]):
                continue
            if f.ends_between(d.time, at, d.process):
                continue
            if any(c != d.process for c in consumers):
                spots.append((d.pos, d.j, key))
    if not spots:
        return None
    pos, j, key = rng.choice(sorted(spots))
    d = next(dd for dd in f.deliveries[key] if dd.pos == pos)
    others = [c for c in consumers if c != d.process]
    live = [c for c in others if f.alive(c, pos)]
    b = rng.choice(live or others)
    record = dict(d.record, delivery_count=d.count + 1)
    mutated = insert(f.ops, pos, [(b, "ok", "poll", {"records": [record]})], dt=1)
    return Mutant("duplicate-acquisition", mutated, "exclusive-acquisition", ("acquired-while-locked",),
                  _where(f, pos, key, f"{b} also polls it 1 ns later"))


def _redeliveries(f: Facts, key: Key) -> list[tuple[Delivery, Delivery]]:
    """(previous, this) acquisition pairs of `key` (hand-backs of renewed records are not acquisitions)."""
    ds = f.deliveries[key]
    acq = [d for i, d in enumerate(ds) if not f.handback(ds, i)]
    return list(zip(acq, acq[1:]))


def _retouch_count(f: Facts, d: Delivery, count: int) -> list[Op]:
    out = list(f.ops)
    v = copy.deepcopy(f.ops[d.pos].value)
    v["records"][d.j]["delivery_count"] = count
    out[d.pos] = with_value(f.ops[d.pos], v)
    return out


@mutant_class("count-skip")
def count_skip(ops: list[Op], rng: random.Random) -> Mutant | None:
    """A redelivery's count jumps by two (c -> c + 2 instead of c + 1). Models a broker that counts an
    acquisition twice. No allowance: `unobserved-acquisition` needs a session end (close, crash,
    session-loss fault) or client error between the two deliveries (none), `-expired` a whole lock
    duration between them (the gap is shorter), `delivery-count-lag` a disruption window (none)."""
    f = facts(ops)
    spots = []
    for key in sorted(f.deliveries):
        for prev, d in _redeliveries(f, key):
            if d.count != prev.count + 1 or prev.count + 2 > f.limit or not _tracked(f, key, d.pos):
                continue
            if d.time - prev.time >= f.lock_ns or f.disrupted(prev.time, d.time, key[:2]):
                continue
            if f.ends_between(prev.time, d.time) or any(prev.pos < e.pos < d.pos for e in f.ends):
                continue
            spots.append((key, prev, d))
    if not spots:
        return None
    key, prev, d = rng.choice(spots)
    return Mutant("count-skip", _retouch_count(f, d, prev.count + 2), "delivery-count", ("count-skipped",),
                  _where(f, d.pos, key, f"count {prev.count + 2} after {prev.count} (op {prev.pos})"))


@mutant_class("count-past-limit")
def count_past_limit(ops: list[Op], rng: random.Random) -> Mutant | None:
    """One delivery's count becomes limit + 1. Models a broker that delivers a record past
    group.share.delivery.count.limit. No allowance excuses a count above the limit, whatever else the
    delivery is (a redelivery excused by `delivery-count-lag`, of a truncated record...): any delivery
    is picked."""
    f = facts(ops)
    all_ds = sorted(((d.pos, d.j), key) for key, ds in f.deliveries.items() for d in ds)
    if not all_ds:
        return None
    (pos, j), key = rng.choice(all_ds)
    d = next(dd for dd in f.deliveries[key] if dd.pos == pos and dd.j == j)
    return Mutant("count-past-limit", _retouch_count(f, d, f.limit + 1), "delivery-count", ("beyond-limit",),
                  _where(f, pos, key, f"count {f.limit + 1} (limit {f.limit})"))


@mutant_class("count-regress")
def count_regress(ops: list[Op], rng: random.Random) -> Mutant | None:
    """A redelivery's count is lower than the previous delivery's. Models a broker that loses
    acquisitions from the count. No allowance: `delivery-count-lag` needs a disruption window
    overlapping the two deliveries (none), and the previous owner's session did not end in between
    (on 4.1 a session release decreases the count: those histories are skipped)."""
    f = facts(ops)
    if f.profile.session_release_count == "decrease":
        return None
    spots = []
    for key in sorted(f.deliveries):
        for prev, d in _redeliveries(f, key):
            if prev.count < 2 or prev.count >= f.limit or not _tracked(f, key, d.pos):
                continue
            if f.disrupted(prev.time, d.time, key[:2]) or f.ends_between(prev.time, d.time, prev.process):
                continue
            spots.append((key, prev, d))
    if not spots:
        return None
    key, prev, d = rng.choice(spots)
    count = rng.randint(1, prev.count - 1)
    return Mutant("count-regress", _retouch_count(f, d, count), "delivery-count", ("count-regressed",),
                  _where(f, d.pos, key, f"count {count} after {prev.count} (op {prev.pos})"))


@mutant_class("swap-in-batch")
def swap_in_batch(ops: list[Op], rng: random.Random) -> Mutant | None:
    """Two records of one share-partition swap places in a poll. Models a broker (or client) that
    returns a batch out of offset order. No allowance: within a batch offsets strictly increase."""
    f = facts(ops)
    spots = []
    for pos, op in enumerate(f.ops):
        if op.f == "poll" and op.type == "ok":
            recs = op.value.get("records") or []
            by_tp: dict[tuple, list[int]] = defaultdict(list)
            for j, r in enumerate(recs):
                by_tp[(r["topic"], r["partition"])].append(j)
            for js in by_tp.values():
                spots += [(pos, a, b) for x, a in enumerate(js) for b in js[x + 1:]]
    if not spots:
        return None
    pos, a, b = rng.choice(spots)
    v = copy.deepcopy(f.ops[pos].value)
    v["records"][a], v["records"][b] = v["records"][b], v["records"][a]
    out = list(f.ops)
    out[pos] = with_value(f.ops[pos], v)
    ra, rb = v["records"][b], v["records"][a]
    return Mutant("swap-in-batch", out, "batch-order", ("batch-order",),
                  _where(f, pos, None, f"{ra['topic']}-{ra['partition']} offsets {ra['offset']} and {rb['offset']} "
                                       f"swapped"))


# ------------------------------------------------------------------ acknowledgements


def _round_end(f: Facts, a: AckInfo) -> int:
    """The position after which the acknowledgement's commit round is over (its result, its commit's
    end, the callbacks listing it)."""
    return max([a.result_pos, a.commit_end, *a.callbacks])


@mutant_class("redeliver-accepted")
def redeliver_accepted(ops: list[Op], rng: random.Random) -> Mutant | None:
    """After a commit accepted (or rejected) record r, its consumer gets r again (count + 1). Models a
    broker that forgets a committed acknowledgement. No allowance: no admin reset moved the start
    back; on releases whose share coordinator may move the start offset back (known bug up to 4.3,
    `state-start-offset-regressed`) only records the state topic's writes do not show the start
    offset going back over are picked (those that do are excused by that known bug)."""
    f = facts(ops)
    spots = []
    for a in f.ack_list:
        if a.type not in FINAL or a.result != "ok" or a.key[:2] in f.excluded_tps:
            continue
        rid = f.record_id(a.key)
        if rid is None or rid in f.excluded_ids:
            continue
        if f.profile.state_start_may_regress and f.start_went_back_over(a.key[:2], a.key[2]):
            continue
        at = _round_end(f, a)
        before = [d for d in f.deliveries[a.key] if d.pos < at]
        if not before or before[-1].count + 1 > f.limit or f.settled_ok(a.key) is not a:
            continue
        spots.append((a.pos, a.key, at, before[-1], a.process))
    if not spots:
        return None
    _, key, at, prev, process = rng.choice(sorted(spots, key=lambda s: (s[0], s[1])))
    record = dict(prev.record, delivery_count=prev.count + 1)
    mutated = insert(f.ops, at, [(process, "ok", "poll", {"records": [record]})], dt=1)
    return Mutant("redeliver-accepted", mutated, "no-redelivery-after-ack", ("redelivered-after-ack",),
                  _where(f, at, key, f"redelivered to {process} after its acceptance"))


@mutant_class("drop-ack-result")
def drop_ack_result(ops: list[Op], rng: random.Random) -> Mutant | None:
    """An acknowledgement's callback and its commit's result for that partition vanish. Models a
    client that never reports an acknowledgement's outcome. No allowance: `ack-lost-with-consumer`
    needs the consumer killed (or its close unfinished) before the result came, and here its commit
    returned and it neither crashed nor closed before its next commit."""
    f = facts(ops)
    rounds: dict[tuple, list[AckInfo]] = defaultdict(list)  # (commit invoke, tp) -> the acks it carried
    for a in f.ack_list:
        if a.commit_pos >= 0 and a.commit_end >= 0 and f.ops[a.commit_end].type == "ok":
            rounds[(a.commit_pos, a.key[:2])].append(a)
    spots = []
    for (ci, tp), acks in sorted(rounds.items()):
        ce = f.commit_ends[ci]
        process = f.ops[ci].process
        if not any((r["topic"], r["partition"]) == tp for r in f.ops[ce].value.get("results") or ()):
            continue
        nxt = f.next_commit(process, ce)
        first = min(a.pos for a in acks)
        # each got its first result in this round (a callback or this commit's result): those are removed
        if any(a.result not in ("ok", "error") or not first < a.result_pos < nxt for a in acks):
            continue
        if any(first < s < nxt for s in f.stops.get(process, ())):
            continue
        spots.append((ci, ce, nxt, tp, acks))
    if not spots:
        return None
    ci, ce, nxt, tp, acks = rng.choice(spots)
    process = f.ops[ci].process
    offsets = {a.key[2] for a in acks}
    first = min(a.pos for a in acks)
    out = []
    for pos, op in enumerate(f.ops):
        v = op.value
        if pos == ce:
            v = dict(v, results=[r for r in v["results"] if (r["topic"], r["partition"]) != tp])
        elif first < pos < nxt and op.process == process and op.f == "callback" and op.type == "ok" and any(
                (p["topic"], p["partition"]) == tp for p in v.get("partitions") or ()):
            v = copy.deepcopy(v)
            for p in v["partitions"]:
                if (p["topic"], p["partition"]) == tp:
                    p["offsets"] = [o for o in p["offsets"] if o not in offsets]
            v["partitions"] = [p for p in v["partitions"] if p["offsets"]]
            if not v["partitions"]:
                continue
        out.append(op if v is op.value else with_value(op, v))
    return Mutant("drop-ack-result", renumber(out), "ack-results", ("ack-result-missing",),
                  _where(f, ce, None, f"{process}'s results for {tp[0]}-{tp[1]} offsets "
                                      f"{sorted(offsets)[:5]}{'...' if len(offsets) > 5 else ''} removed"))


@mutant_class("ack-by-stranger")
def ack_by_stranger(ops: list[Op], rng: random.Random) -> Mutant | None:
    """After consumer A's commit accepted record r, consumer B, never handed r, acknowledges it and
    commits. Models a client that acknowledges records it did not receive. No allowance: r is not
    truncated and no admin reset moved its partition (the only cases where a stray acknowledgement
    is excused)."""
    f = facts(ops)
    consumers = f.consumers()
    spots = []
    for a in f.ack_list:
        if a.type != "ACCEPT" or a.result != "ok" or a.key[:2] in f.excluded_tps:
            continue
        rid = f.record_id(a.key)
        if rid is None or rid in f.excluded_ids or f.settled_ok(a.key) is not a:
            continue
        handed = {d.process for d in f.deliveries[a.key]} | {x.process for x in f.acks[a.key]}
        at = _round_end(f, a)
        strangers = [c for c in consumers if c not in handed and f.alive(c, at + 1)]
        if strangers:
            spots.append((a.pos, a.key, at, strangers))
    if not spots:
        return None
    _, key, at, strangers = rng.choice(sorted(spots, key=lambda s: (s[0], s[1])))
    b = rng.choice(strangers)
    topic, partition, offset = key
    mutated = insert(f.ops, at, [
        (b, "ok", "acknowledge", {"records": [{"topic": topic, "partition": partition, "offset": offset,
                                               "type": "ACCEPT"}]}),
        (b, "invoke", "commit", {}),
        (b, "ok", "commit", {"results": [{"topic": topic, "partition": partition, "error": None}]})])
    return Mutant("ack-by-stranger", mutated, "ack-results", ("ack-undelivered",),
                  _where(f, at, key, f"{b} (never handed it) accepts it"))


@mutant_class("unsolicited-result")
def unsolicited_result(ops: list[Op], rng: random.Random) -> Mutant | None:
    """A commit returns an extra result for a partition (one above any in the history) its consumer
    never acknowledged. Models a client reporting results for acknowledgements nobody made. No
    allowance: no acknowledgement of that partition exists at all."""
    f = facts(ops)
    spots = [pos for pos, op in enumerate(f.ops) if op.f == "commit" and op.type == "ok"
             and isinstance(op.value, dict)]
    if not spots or not f.topics:
        return None
    pos = rng.choice(spots)
    topic = rng.choice(f.topics)
    extra = {"topic": topic, "partition": f.max_partition + 1, "error": None}
    v = dict(f.ops[pos].value, results=[*(f.ops[pos].value.get("results") or []), extra])
    out = list(f.ops)
    out[pos] = with_value(f.ops[pos], v)
    return Mutant("unsolicited-result", out, "ack-results", ("ack-result-unsolicited",),
                  _where(f, pos, None, f"extra result for {topic}-{f.max_partition + 1}"))


# ------------------------------------------------------------------ durable state and the log


@mutant_class("state-not-terminal")
def state_not_terminal(ops: list[Op], rng: random.Random) -> Mutant | None:
    """In the last __share_group_state read, a share-partition's start offset is 0 again and its history
    of starts is gone (max_start_offset 0, writes []): records accepted below the old start are not
    terminal in the state topic. Models a share coordinator that loses acknowledged state. No
    allowance: `state-start-offset-regressed` (known bug up to 4.3) needs the writes or the highest
    start ever held to show the start going back over the record; here they show no start above 0."""
    f = facts(ops)
    spots = []
    for tp, (pos, part) in sorted(f.state_entries.items()):
        if tp in f.excluded_tps or part["start_offset"] <= 0:
            continue
        below = [a for a in f.ack_list if a.key[:2] == tp and a.key[2] < part["start_offset"] and a.type in FINAL
                 and a.result == "ok" and f.record_id(a.key) not in f.excluded_ids]
        if below:
            spots.append((pos, tp))
    if not spots:
        return None
    pos, tp = rng.choice(spots)
    v = copy.deepcopy(f.ops[pos].value)
    for part in v["partitions"]:
        if (part["topic"], part["partition"]) == tp:
            old = part["start_offset"]
            part["start_offset"], part["max_start_offset"], part["writes"] = 0, 0, []
    out = list(f.ops)
    out[pos] = with_value(f.ops[pos], v)
    return Mutant("state-not-terminal", out, "durable-state", ("state-topic-not-terminal",
                                                               "state-start-offset-regressed"),
                  _where(f, pos, None, f"{tp[0]}-{tp[1]} start offset {old} -> 0, writes dropped"))


@mutant_class("unclean-flag-dropped")
def unclean_flag_dropped(ops: list[Op], rng: random.Random) -> Mutant | None:
    """A truncation that an unclean leader election caused, of a record that was delivered, is recorded
    as a clean one. Models a log that truncates a record a share fetch had already returned (a fetch
    past the high watermark). Boundary of the `lost-to-unclean-election` allowance: only an unclean
    election may take back a delivered record."""
    f = facts(ops)
    spots = []
    for pos, op in enumerate(f.ops):
        if op.f == "truncated" and op.type == "ok" and isinstance(op.value, dict) and op.value.get("unclean"):
            hit = [r for r in op.value.get("records") or () if r["id"] in f.delivered_ids]
            if hit:
                spots.append((pos, hit[0]["id"]))
    if not spots:
        return None
    pos, rid = rng.choice(spots)
    out = list(f.ops)
    out[pos] = with_value(f.ops[pos], dict(copy.deepcopy(f.ops[pos].value), unclean=False))
    v = f.ops[pos].value
    return Mutant("unclean-flag-dropped", out, "no-loss", ("truncated-delivered",),
                  _where(f, pos, None, f"{v.get('topic')}-{v.get('partition')} truncation marked clean "
                                       f"(delivered id {rid})"))


# ------------------------------------------------------------------ verdicts


def check_table(table: Any) -> dict[str, Any]:
    """Every checker's Result for an EventTable (the seven checkers share one replay of it)."""
    from harness.checkers import (ack_results, batch_order, check_safe, delivery_count, durable_state, exclusive,
                                  no_loss, no_redelivery)
    return {m.NAME: check_safe(m.NAME, m.check, table)
            for m in (no_loss, delivery_count, batch_order, exclusive, no_redelivery, ack_results, durable_state)}


def check_all(ops: Sequence[Op]) -> dict[str, Any]:
    """Every checker's Result for `ops` (flattened once, replayed once)."""
    from harness.history.events import EventTable
    return check_table(EventTable.from_ops(ops))


def _anomaly_keys(result: Any) -> set[tuple[str, str]]:
    return {(a.kind, a.message) for a in result.anomalies}


def judge(m: Mutant, results: dict[str, Any], baseline: dict[str, Any] | None = None) -> str:
    """"killed": `m.prop` failed with one of `m.kinds`; "killed-other": some property failed otherwise;
    "survived": nothing failed. With `baseline` (the unmutated history's results) only anomalies the
    unmutated history did not have count (a history may fail on purpose: a known deviation)."""
    def new(prop: str) -> list[Any]:
        seen = _anomaly_keys(baseline[prop]) if baseline is not None and prop in baseline else set()
        return [a for a in results[prop].anomalies if (a.kind, a.message) not in seen]
    target = results[m.prop]
    if target.valid is False and any(a.kind in m.kinds for a in new(m.prop)):
        return "killed"
    if any(r.valid is False and new(name) for name, r in results.items()):
        return "killed-other"
    return "survived"


def verdict_line(results: dict[str, Any]) -> str:
    """One line: each property's verdict and anomaly kinds, e.g. `no-loss=FAIL(lost x2) ...`."""
    parts = []
    for name, r in results.items():
        word = {True: "PASS", False: "FAIL"}.get(r.valid, "UNKNOWN")  # type: ignore[arg-type]
        kinds: dict[str, int] = {}
        for a in r.anomalies:
            kinds[a.kind] = kinds.get(a.kind, 0) + 1
        detail = ", ".join(f"{k} x{n}" if n > 1 else k for k, n in kinds.items())
        parts.append(f"{name}={word}" + (f"({detail})" if detail else ""))
    return " ".join(parts)


#: Runs whose unmutated history fails on purpose: a documented deviation of Kafka from KIP-932 that the
#: oracle rightly reports (the conformance test xfails on exactly that verdict). (a marker in the config's
#: group, {property: the only anomaly kinds it may report}, why). Any other failure is a false alarm.
KNOWN_DEVIATIONS: tuple[tuple[str, dict[str, tuple[str, ...]], str], ...] = (
    ("test_new_partitions_are_consumed_from_offset_zero-latest", {"no-loss": ("lost",)},
     "Kafka 4.2/4.3 initialize a partition added to the topic at latest (start offset -1, then "
     "share.auto.offset.reset): records produced to it before its first share fetch are skipped "
     "(suites/conformance/test_partitions_added.py, LATEST_DEVIATION)"),
)


def known_deviation(ops: Sequence[Op], results: dict[str, Any]) -> str | None:
    """Why the unmutated history `ops` fails as it does, if that is a known deviation (every property
    passes but those the deviation names, which fail with its kinds only); None otherwise."""
    config = next((op.value for op in ops if op.f == "config" and isinstance(op.value, dict)), {})
    group = str(config.get("group") or "")
    for marker, allowed, why in KNOWN_DEVIATIONS:
        if marker in group and all(
                r.valid is True or (r.valid is False and name in allowed
                                    and all(a.kind in allowed[name] for a in r.anomalies))
                for name, r in results.items()):
            return why
    return None


def read_ops(path: Any) -> list[Op]:
    """A history's operations: a .jsonl or .jsonl.gz file, or a run directory (its history.jsonl). A
    gzipped history is decompressed to a temporary file read by `read_history` (same parser, same
    one-line errors, naming the .gz), then removed."""
    import gzip
    import os
    import shutil
    import tempfile
    from pathlib import Path

    from harness.errors import HarnessError
    from harness.history.store import read_history
    path = Path(path)
    if path.is_dir():
        for name in ("history.jsonl", "history.jsonl.gz"):
            if (path / name).is_file():
                return read_ops(path / name)
        raise HarnessError(f"{path} holds no history.jsonl: pass a run directory or a .jsonl / .jsonl.gz history")
    if path.suffix != ".gz":
        return read_history(path)
    if not path.is_file():
        raise HarnessError(f"history file {path} does not exist or is not a file")
    fd, tmp = tempfile.mkstemp(suffix=".jsonl", prefix="ksh-history-")
    try:
        with os.fdopen(fd, "wb") as out, gzip.open(path, "rb") as src:
            shutil.copyfileobj(src, out)
        try:
            return read_history(Path(tmp))
        except HarnessError as exc:
            raise HarnessError(str(exc).replace(tmp, str(path))) from None
    except (OSError, EOFError) as exc:  # not gzip, truncated
        raise HarnessError(f"cannot read gzipped history {path}: {exc}") from None
    finally:
        os.unlink(tmp)
