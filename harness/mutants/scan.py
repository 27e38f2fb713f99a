"""The one pass over a history that fills a `Facts` (harness.mutants.facts) with what it shows.

`Delivery`, `AckInfo` and `End` are the rows the scan writes. `scan(facts)` walks `facts.ops` once,
handing each op to the handler for its function (poll, acknowledge, commit, close, fault-start...),
and fills the tables `Facts` declares: deliveries, acknowledgements and their first results, session
ends (as the `unobserved-acquisition` allowance counts them), disruption windows, start-offset reads,
consumer starts and stops, and what other allowances exclude. The rules mirror the allowances'
definitions, computed independently of the replay in `harness.checkers.replay`.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from harness.checkers.evidence import on_every_consumer
from harness.history.schema import Op
from harness.mutants.registry import DISRUPTING, NEVER, Key

if TYPE_CHECKING:
    from harness.mutants.facts import Facts


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


def scan(facts: Facts) -> None:
    """Fill `facts`' tables from `facts.ops`, in one pass."""
    HistoryScan(facts).run()


Handler = Callable[[int, Op, dict], None]


class HistoryScan:
    """The scan's state between ops (what is pending, open, in which session) and one handler per op
    function; each handler is called with (position, op, op value or {})."""

    def __init__(self, facts: Facts) -> None:
        self.f = facts
        self.pending: dict[str, dict[Key, AckInfo]] = defaultdict(dict)  # acknowledged, no result yet
        self.last_ack: dict[str, dict[Key, AckInfo]] = defaultdict(dict)
        self.uncommitted: dict[str, list[AckInfo]] = defaultdict(list)  # not yet carried by a commit
        self.open_commit: dict[str, tuple[int, list[AckInfo]]] = {}  # process -> (invoke, carried)
        self.session_no: dict[str, int] = defaultdict(int)
        self.session_faults: dict[Any, list[str]] = {}  # session-loss fault id -> its processes
        self.live: set[str] = set()  # consumers started and not closed or crashed since
        #: session-loss faults on the client links in place: a consumer starting under one loses its session too
        self.node_faults: dict[Any, None] = {}
        self.drain_end = NEVER
        self.handlers: dict[str, Handler] = {
            "poll": self.poll, "produce": self.produce, "acknowledge": self.acknowledge,
            "callback": self.callback, "commit": self.commit, "start": self.start, "drain": self.drain,
            "close": self.close, "crash": self.crash, "error": self.error,
            "fault-start": self.fault_start, "fault-heal": self.fault_heal,
            "share-offsets": self.share_offsets, "share-state": self.share_state,
            "truncated": self.truncated, "transaction": self.transaction, "reset-offsets": self.reset_offsets,
            "records-deleted": self.records_gone, "records-compacted": self.records_gone,
        }

    def run(self) -> None:
        for pos, op in enumerate(self.f.ops):
            handler = self.handlers.get(op.f)
            if handler is not None:
                handler(pos, op, op.value if isinstance(op.value, dict) else {})
        self.f.end_times = [e.time for e in self.f.ends]

    # -- shared steps -------------------------------------------------------------
    def end_session(self, time: int, pos: int, process: str, key: tuple, post_drain: bool = False) -> None:
        ends = self.f.ends
        if ends and time < ends[-1].time:
            time = ends[-1].time  # as the replay keeps them sorted
        ends.append(End(time, pos, process, key, post_drain))

    def lose_pending(self, process: str, pos: int) -> None:
        """`process`'s consumer is gone: its acknowledgements with no result yet are lost."""
        for a in self.pending.pop(process, {}).values():
            a.result, a.result_pos = "lost", pos

    def partition(self, topic: Any, partition: Any) -> None:
        """Note a topic and partition the history names."""
        if isinstance(partition, int):
            self.f.max_partition = max(self.f.max_partition, partition)
        if isinstance(topic, str) and topic not in self.f.topics:
            self.f.topics.append(topic)

    def stop(self, time: int, pos: int, process: str, post_drain: bool = False) -> None:
        """`process`'s session ended by a close or a crash."""
        self.end_session(time, pos, process, ("session", process, self.session_no[process]), post_drain)
        self.f.stops[process].append(pos)
        self.live.discard(process)

    # -- records delivered, produced, acknowledged -----------------------------------
    def poll(self, pos: int, op: Op, v: dict) -> None:
        if op.type != "ok":
            return
        for j, r in enumerate(v.get("records") or ()):
            key = (r["topic"], r["partition"], r["offset"])
            self.f.deliveries[key].append(Delivery(pos, j, op.process, op.time, r["delivery_count"], r))
            self.f.delivered_ids.add(r["id"])
            self.partition(r["topic"], r["partition"])

    def produce(self, pos: int, op: Op, v: dict) -> None:
        if op.type == "invoke":
            self.f.produce_invoke.setdefault(v.get("id"), pos)
        elif op.type == "ok":
            self.f.produce_ok.setdefault(v.get("id"), pos)
            self.partition(v.get("topic"), v.get("partition"))

    def acknowledge(self, pos: int, op: Op, v: dict) -> None:
        if op.type != "ok":
            return
        p = op.process
        for r in v.get("records") or ():
            key = (r["topic"], r["partition"], r["offset"])
            a = AckInfo(pos, p, key, r["type"], op.time)
            old = self.pending[p].get(key)
            if old is not None and old.result is None:
                old.result, old.result_pos = "missing", pos
            self.pending[p][key] = a
            self.last_ack[p][key] = a
            self.uncommitted[p].append(a)
            self.f.acks[key].append(a)
            self.f.ack_list.append(a)

    def callback(self, pos: int, op: Op, v: dict) -> None:
        if op.type != "ok":
            return
        p = op.process
        for part in v.get("partitions") or ():
            for o in part.get("offsets") or ():
                key = (part["topic"], part["partition"], o)
                a = self.pending[p].pop(key, None)
                if a is not None:
                    a.result, a.result_pos = ("ok" if v.get("error") is None else "error"), pos
                a = a or self.last_ack[p].get(key)
                if a is not None:
                    a.callbacks.append(pos)

    # -- commits --------------------------------------------------------------------
    def commit(self, pos: int, op: Op, v: dict) -> None:
        if op.type == "invoke":
            self.commit_invoke(pos, op.process)
        else:
            self.commit_end(pos, op, v)

    def commit_invoke(self, pos: int, p: str) -> None:
        """The commit carries what is pending and what got a result since the last commit."""
        self.f.commit_invokes[p].append(pos)
        carried = list(self.pending[p].values()) + [a for a in self.uncommitted[p] if a.result is not None]
        for a in carried:
            if a.commit_pos < 0:
                a.commit_pos = pos
        self.uncommitted[p] = []
        self.open_commit[p] = (pos, carried)

    def commit_end(self, pos: int, op: Op, v: dict) -> None:
        """A commit's ok gives results per partition; its fail or info leaves every pending one unknown."""
        p = op.process
        invoke, carried = self.open_commit.pop(p, (-1, []))
        if invoke >= 0:
            self.f.commit_ends[invoke] = pos
        for a in carried:
            if a.commit_pos == invoke:
                a.commit_end = pos
        if op.type == "ok":
            for r in v.get("results") or ():
                tp = (r["topic"], r["partition"])
                for key in [k for k in self.pending[p] if k[:2] == tp]:
                    a = self.pending[p].pop(key)
                    a.result, a.result_pos = ("ok" if r.get("error") is None else "error"), pos
        else:
            for a in self.pending.pop(p, {}).values():
                a.result, a.result_pos = "unknown", pos

    # -- sessions ---------------------------------------------------------------------
    def start(self, pos: int, op: Op, v: dict) -> None:
        if op.type != "ok":
            return
        self.session_no[op.process] += 1
        self.f.starts[op.process].append(pos)
        self.f.first_start = min(self.f.first_start, pos)
        self.live.add(op.process)
        for fault in self.node_faults:  # (as `Evidence.started`: it connects under a fault resetting its links)
            if op.process not in self.session_faults[fault]:
                self.session_faults[fault].append(op.process)
                self.end_session(op.time, pos, op.process, ("fault", op.process, fault))

    def drain(self, pos: int, op: Op, v: dict) -> None:
        if op.type in ("ok", "info"):
            self.drain_end = min(self.drain_end, op.time)

    def close(self, pos: int, op: Op, v: dict) -> None:
        if op.type == "invoke":
            self.stop(op.time, pos, op.process, op.time >= self.drain_end)
        elif op.type == "info":
            self.stop(op.time, pos, op.process)
            self.lose_pending(op.process, pos)

    def crash(self, pos: int, op: Op, v: dict) -> None:
        if op.type == "invoke":  # the signal sent: the replay ends the session at the recorded crash (`info`)
            return
        q = v.get("process", "")
        self.stop(op.time, pos, q)
        self.lose_pending(q, pos)

    def error(self, pos: int, op: Op, v: dict) -> None:
        self.end_session(op.time, pos, op.process, ("error", op.process, self.session_no[op.process]))

    # -- faults ---------------------------------------------------------------------
    def fault_start(self, pos: int, op: Op, v: dict) -> None:
        """A session-loss fault ends its processes' sessions (on nodes or the client links: every live
        consumer's, and on the client links those starting under it: `Evidence.fault_start`); a disrupting
        one opens a window."""
        if op.type == "fail":
            self.node_faults.pop(v.get("id"), None)
        if op.type not in ("invoke", "ok"):
            return
        effects = v.get("effects") or ()
        if "session-loss" in effects:
            processes = list(v.get("processes") or ())
            targets = [str(t) for t in v.get("targets") or ()]
            if on_every_consumer(targets):
                processes += sorted(self.live - set(processes))
                if any(t.startswith("client->") for t in targets):
                    self.node_faults[v.get("id")] = None
            if processes or v.get("id") in self.node_faults:
                self.session_faults[v.get("id")] = processes
                for q in processes:
                    self.end_session(op.time, pos, q, ("fault", q, v.get("id")))
        if set(effects) & set(DISRUPTING):
            parts = v.get("partitions")
            tps = None if parts is None else {(v.get("topic"), x) for x in parts}
            if not any(w[3] == v.get("id") for w in self.f.windows):
                self.f.windows.append([op.time, NEVER, tps, v.get("id")])

    def fault_heal(self, pos: int, op: Op, v: dict) -> None:
        """A heal ends the fault's sessions again; its window closes settle_ms later (a failed heal: consumers
        starting later are not under it)."""
        if op.type != "invoke":
            self.node_faults.pop(v.get("id"), None)
        if op.type != "ok":
            return
        for q in self.session_faults.pop(v.get("id"), ()):
            self.end_session(op.time, pos, q, ("fault", q, v.get("id")))
        for w in self.f.windows:
            if w[3] == v.get("id") and w[1] == NEVER:
                w[1] = op.time + self.f.settle_ns

    # -- start-offset reads ------------------------------------------------------------
    def share_offsets(self, pos: int, op: Op, v: dict) -> None:
        if op.type != "ok":
            return
        for part in v.get("partitions") or ():
            self.partition(part["topic"], part["partition"])
            self.f.reads[(part["topic"], part["partition"])].append((part["start_offset"], op.time, pos))

    def share_state(self, pos: int, op: Op, v: dict) -> None:
        if op.type != "ok":
            return
        for part in v.get("partitions") or ():
            tp = (part["topic"], part["partition"])
            self.partition(*tp)
            self.f.reads[tp].append((part["start_offset"], op.time, pos))
            self.f.state_entries[tp] = (pos, part)
            if "ever_written" in part:
                self.f.written_from[tp] = int(part.get("writes_from", 0))

    # -- what other allowances own ------------------------------------------------------
    def truncated(self, pos: int, op: Op, v: dict) -> None:
        if op.type == "ok":
            self.f.excluded_ids.update(r["id"] for r in v.get("records") or ())

    def transaction(self, pos: int, op: Op, v: dict) -> None:
        self.f.excluded_ids.update(v.get("ids") or ())

    def reset_offsets(self, pos: int, op: Op, v: dict) -> None:
        if op.type == "ok":
            self.f.excluded_tps.update((v.get("topic"), part["partition"]) for part in v.get("partitions") or ())

    def records_gone(self, pos: int, op: Op, v: dict) -> None:
        if op.type == "ok":
            self.f.excluded_tps.add((v.get("topic"), v.get("partition")))
