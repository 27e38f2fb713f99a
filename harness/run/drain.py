"""The drain: wait until every record the workload produced is settled, and the one test of "settled".

While consumers run, `drain` polls `all_settled` on the live history (twice a second, so it is a
cheap forward pass over the ops: `settlement`). It decides only when to stop waiting; the verdict
on every record comes afterwards from the checkers' replay (`harness.checkers.replay`), which
judges what the history proves, record by record.
"""

from __future__ import annotations

from typing import Sequence

from harness.history.schema import Op
from harness.history.store import HistoryWriter
from harness.sys.wait import WaitTimeout, wait_until


def settlement(history: Sequence[Op]) -> tuple[set[tuple[str, int, int]], dict[tuple[str, int, int], int]]:
    """(records settled for sure, {record settled only by an unknown outcome: time of that outcome}).

    Settled: an ACCEPT or REJECT, or a RELEASE of the delivery at the delivery-count limit (the broker
    archives it), that a commit made durable. A cheap forward pass `drain` polls twice a second on the live
    history; the verdict itself comes from the checkers' replay (`harness.checkers.replay`).

    Unknown: the commit carrying its final acknowledgement raised, returned an error for its
    partition, or never returned (the consumer crashed or failed to close), or the acknowledgement's
    own result (the commit callback, which may come before the commit returns) was an error.

    If the broker never got such an acknowledgement, the record's lock expires and it is delivered
    again, so the drain waits a lock duration past that time before it trusts the durable read."""
    limit: int | None = None
    counts: dict[tuple[str, tuple[str, int, int]], int] = {}  # (process, record) -> its latest delivery count
    pending: dict[str, set[tuple[str, int, int]]] = {}  # process -> final acknowledgements awaiting a commit
    sure: set[tuple[str, int, int]] = set()
    maybe: dict[tuple[str, int, int], int] = {}
    for op in history:
        if op.f == "config" and op.type == "ok":
            limit = op.value.get("delivery_count_limit")
        elif op.f == "poll" and op.type == "ok":
            for r in op.value["records"]:
                counts[(op.process, (r["topic"], r["partition"], r["offset"]))] = r["delivery_count"]
        elif op.f == "acknowledge" and op.type == "ok":
            for r in op.value["records"]:
                key = (r["topic"], r["partition"], r["offset"])
                if r["type"] in ("ACCEPT", "REJECT") or (
                        r["type"] == "RELEASE" and limit is not None and counts.get((op.process, key), 0) >= limit):
                    pending.setdefault(op.process, set()).add(key)
        elif op.f == "callback" and op.type == "ok" and op.process in pending:
            # the acknowledgement's own result: the replay takes the first result an acknowledgement gets
            acks = pending[op.process]
            for part in op.value.get("partitions", ()):
                for offset in part.get("offsets", ()):
                    key = (part["topic"], part["partition"], offset)
                    if key in acks:
                        acks.discard(key)
                        if op.value.get("error") is None:
                            sure.add(key)
                        else:
                            maybe[key] = op.time
        elif op.f == "commit" and op.type in ("ok", "fail", "info"):
            acks = pending.pop(op.process, set())
            if op.type == "ok":
                ok_parts = {(r["topic"], r["partition"]) for r in op.value["results"] if r.get("error") is None}
                sure |= {key for key in acks if key[:2] in ok_parts}
                # An error for its partition (e.g. the leader moved): if the broker did not apply it, the
                # lock expires and the record comes back; if it did, only the durable read can tell.
                maybe.update((key, op.time) for key in acks if key[:2] not in ok_parts)
            else:
                maybe.update((key, op.time) for key in acks)
        elif (op.f == "crash" and op.type != "invoke") or (op.f == "close" and op.type == "info"):
            process = op.value.get("process", op.process) if op.f == "crash" else op.process
            maybe.update((key, op.time) for key in pending.pop(process, set()))
    return sure, {key: t for key, t in maybe.items() if key not in sure}


def all_settled(ops: Sequence[Op], wait_ns: int = 0, now_ns: int | None = None, rejoin_ns: int = 0) -> bool:
    """Every record produced by the workload (not the nemesis) is settled: accepted, rejected or archived
    by a committed acknowledgement, or by one whose outcome only the durable read after the drain can
    tell (`settlement`) and which had `wait_ns` (a lock duration) to come back if the broker
    never got it, and `rejoin_ns` (a session timeout) since the last consumer crash: until the group
    drops a crashed member, its partitions may be fetched by no one, so nothing comes back."""
    truncated = {r["id"] for o in ops if o.f == "truncated" and o.type == "ok" for r in o.value.get("records", ())}
    produced = {(o.value["topic"], o.value["partition"], o.value["offset"]) if o.value["offset"] >= 0
                else o.value["id"] for o in ops if o.f == "produce" and o.type == "ok" and o.process != "nemesis"
                and o.value["id"] not in truncated}  # the log lost those: nothing to settle
    unplaced = {key for key in produced if isinstance(key, str)}  # acknowledged without an offset
    if unplaced:  # placed by their deliveries; one never delivered is not settled
        placed = {r["id"]: (r["topic"], r["partition"], r["offset"]) for o in ops if o.f == "poll" and o.type == "ok"
                  for r in o.value["records"] if r["id"] in unplaced}
        produced = (produced - unplaced) | {placed.get(rid, rid) for rid in unplaced}
    sure, maybe = settlement(ops)
    if not produced <= sure | set(maybe):
        return False
    now_ns = now_ns if now_ns is not None else (ops[-1].time if ops else 0)
    waiting = [t for key, t in maybe.items() if key in produced]
    if not waiting:
        return True
    crashes = [op.time for op in ops if op.f == "crash" or (op.f == "close" and op.type == "info")]
    if crashes and now_ns - max(crashes) < rejoin_ns:
        return False
    return all(now_ns - t >= wait_ns for t in waiting)


def drain(history: HistoryWriter, limits: dict[str, int], lock_tolerance_ms: int, timeout: float,
          live_consumers) -> None:
    """Wait until every acknowledged produce is settled; a timeout is recorded, not raised.

    A record settled only by an acknowledgement of unknown outcome (its consumer crashed before the
    commit result) or one that failed gets its lock duration, the tolerance and a poll to be delivered
    again, and after the last consumer crash the session timeout as well (the group must drop the
    crashed member before its partitions are fetched again). `live_consumers()`: how many consumer
    drivers still run (none left ends the wait early)."""
    slack_ms = lock_tolerance_ms + 2000
    wait_ns = (limits.get("lock_duration_ms", 30000) + slack_ms) * 1_000_000
    rejoin_ns = (limits.get("session_timeout_ms", 45000) + slack_ms) * 1_000_000

    def drained() -> bool:
        return all_settled(history.ops(), wait_ns, history.now_ns(), rejoin_ns)

    history.append("harness", "invoke", "drain", {"timeout": timeout})
    try:
        wait_until(drained, timeout=timeout, what="every produced record to be settled", interval=0.5,
                   fatal=lambda: "every consumer driver exited" if not live_consumers() else None)
        history.append("harness", "ok", "drain", {})
    except WaitTimeout as exc:
        history.append("harness", "info", "drain", {"error": str(exc).splitlines()[0]})
