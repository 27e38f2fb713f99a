"""The nemesis: runs faults on a cluster, records every step in the history, heals everything.

For each fault: `fault-start` invoke (intent: fault, targets, effects),
then ok (with the evidence that it took effect) or fail (not applied, and
why); later `fault-heal` invoke, then ok (evidence of recovery) or fail.
A fault that failed to apply is healed at once (it may have half-acted).
`heal_all` heals what is still active, then resets every proxy, resumes
paused nodes and starts stopped ones, so nothing outlives the fault phase.
"""

from __future__ import annotations

import threading
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from harness.cluster.base import Killable, Partitionable, Pausable, node_ids
from harness.faults import CATALOGUE
from harness.faults.base import FaultContext, NotApplied, Plan
from harness.faults.schedule import ScheduledFault


@dataclass
class FaultRecord:
    """One fault as it happened (seconds are relative to the nemesis's start)."""

    id: str
    fault: str
    group: str
    pick: int
    targets: list[str] = field(default_factory=list)
    effects: list[str] = field(default_factory=list)
    started: float | None = None
    healed: float | None = None
    applied: bool = False
    healed_ok: bool = False
    evidence: str = ""
    heal_evidence: str = ""
    reason: str = ""  # why it was not applied, or why the heal failed

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class Nemesis:
    """Applies catalogue faults to `ctx` and keeps their records."""

    def __init__(self, ctx: FaultContext, process: str = "nemesis") -> None:
        self.ctx = ctx
        self.process = process
        self.records: list[FaultRecord] = []
        self._active: dict[str, tuple[FaultRecord, Plan]] = {}
        self._t0 = time.monotonic()

    def _now(self) -> float:
        return round(time.monotonic() - self._t0, 3)

    def _append(self, type_: str, f: str, value: dict) -> None:
        self.ctx.history.append(self.process, type_, f, value)

    def start(self, name: str, pick: int = 0) -> FaultRecord:
        """Plan, apply and prove one fault; never raises for a fault that did not take effect."""
        fault = CATALOGUE[name]
        record = FaultRecord(f"{name}-{len(self.records) + 1}", name, fault.group, pick,
                             effects=list(fault.effects))
        self.records.append(record)
        intent = {"id": record.id, "fault": name, "effects": record.effects}
        missing = [cap.__name__ for cap in fault.needs if not isinstance(self.ctx.cluster, cap)]
        try:
            if missing:
                raise NotApplied(f"the cluster backend is not {', '.join(missing)}")
            plan = fault.plan(self.ctx, pick)
        except Exception as exc:  # noqa: BLE001 - any failure to plan means "not applied", recorded
            record.reason = _reason(exc)
            self._append("fail", "fault-start", {**intent, "targets": [], "error": record.reason})
            return record
        plan.id = record.id
        record.targets = list(plan.targets)
        intent.update(targets=plan.targets, topic=plan.topic, partitions=plan.partitions, processes=plan.processes)
        record.started = self._now()
        self._append("invoke", "fault-start", intent)
        self._active[record.id] = (record, plan)
        self.ctx.active_targets[record.id] = list(plan.targets)
        try:
            record.evidence = fault.apply(self.ctx, plan)
            record.applied = True
            self._append("ok", "fault-start", {**intent, "evidence": record.evidence})
        except Exception as exc:  # noqa: BLE001
            record.reason = _reason(exc)
            self._append("fail", "fault-start", {**intent, "error": record.reason})
            self.heal(record)
        return record

    def heal(self, record: FaultRecord) -> None:
        """Undo `record`'s fault and prove the recovery; a failed heal is recorded, not raised."""
        entry = self._active.pop(record.id, None)
        self.ctx.active_targets.pop(record.id, None)
        if entry is None:
            return
        _, plan = entry
        self._append("invoke", "fault-heal", {"id": record.id, "fault": record.fault})
        try:
            record.heal_evidence = CATALOGUE[record.fault].heal(self.ctx, plan)
            record.healed_ok = True
            self._append("ok", "fault-heal", {"id": record.id, "fault": record.fault,
                                              "evidence": record.heal_evidence})
        except Exception as exc:  # noqa: BLE001
            record.reason = (record.reason + "; " if record.reason else "") + f"heal failed: {_reason(exc)}"
            self._append("fail", "fault-heal", {"id": record.id, "fault": record.fault, "error": _reason(exc)})
        record.healed = self._now()
        late = plan.state.get("not_applied")
        if late and record.applied:  # the effect is only visible after the heal (truncation)
            record.applied = False
            record.reason = late
            self._append("fail", "fault-start", {"id": record.id, "fault": record.fault, "error": late})

    def run(self, schedule: list[ScheduledFault], stop: threading.Event | None = None) -> list[FaultRecord]:
        """Start and heal each scheduled fault at its time (or as soon as the previous step returns)."""
        stop = stop or threading.Event()
        steps = sorted([(s.at, 1, i) for i, s in enumerate(schedule)] +
                       [(s.at + s.duration, 0, i) for i, s in enumerate(schedule)])
        started: dict[int, FaultRecord] = {}
        for due, is_start, i in steps:
            if stop.wait(max(0.0, due - (time.monotonic() - self._t0))):
                break
            if is_start:
                started[i] = self.start(schedule[i].fault, schedule[i].pick)
            elif i in started:
                self.heal(started[i])
        self.heal_all()
        return self.records

    def heal_all(self) -> None:
        """Heal every active fault, newest first, then reset whatever a fault might have left."""
        for record, _ in reversed(list(self._active.values())):
            self.heal(record)
        cluster = self.ctx.cluster
        if isinstance(cluster, Partitionable):
            cluster.heal_all()  # every proxy enabled, no toxic left
        for node in node_ids(cluster):
            if isinstance(cluster, Pausable):
                cluster.resume_node(node)
            if isinstance(cluster, Killable) and not cluster.node_alive(node):
                cluster.start_node(node)


def _reason(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text if isinstance(exc, NotApplied) else f"{type(exc).__name__}: {text}"
