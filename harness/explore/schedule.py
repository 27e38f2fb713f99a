"""A schedule: one generated run, as data (its setup and its steps), saved as JSON and replayed.

A `Schedule` is what the explorer generates, runs, shrinks and stores with a finding; `explore
--replay FILE` runs it again. Its `setup` is the group's configuration for the run (partitions, offset
reset, lock duration, delivery-count limit, isolation level, batch size); its `steps` are operations of
the surface (`harness.explore.surface`) and faults of the catalogue, in order. Every step names its
targets by slot (consumer 0, 1, ...) or partition index, never by a handle of one run, so any
subsequence of a schedule can run: a step whose target is not there when it comes (a consumer that was
closed, a fault to heal that never started) is skipped and recorded as skipped. The shrinker relies on
that.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from harness.sys.files import read_json

SCHEMA = "ksh-explore-schedule/1"

#: The setup a shrink tries first, field by field: the broker's defaults and the smallest topic (a
#: finding that still holds with them does not depend on the setting).
PLAIN_SETUP = {"partitions": 1, "auto_offset_reset": "earliest", "isolation_level": "read_uncommitted",
               "delivery_count_limit": None, "max_poll_records": 5, "dead_letter": "off"}


@dataclass(frozen=True)
class Setup:
    """The run's topic and share group, as generated (`harness.explore.surface.draw_setup`)."""

    partitions: int = 1
    auto_offset_reset: str = "earliest"
    lock_duration_ms: int = 5000
    delivery_count_limit: int | None = None  # None: the broker's (5)
    isolation_level: str = "read_uncommitted"
    max_poll_records: int = 5
    dead_letter: str = "off"  # the group's dead-letter queue (KIP-1191, 4.4+): off, headers or copy
    compression: str = "none"  # the producer's compression.type
    acquire_mode: str = "batch_optimized"  # the consumers' share.acquire.mode (KIP-1206, 4.2+ where the driver has it)

    def group_configs(self) -> dict[str, str]:
        return {"share.auto.offset.reset": self.auto_offset_reset, "share.isolation.level": self.isolation_level}


@dataclass(frozen=True)
class Step:
    op: str
    args: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"op": self.op, "args": dict(self.args)}

    def describe(self) -> str:
        args = ", ".join(f"{k}={v}" for k, v in sorted(self.args.items()))
        return f"{self.op}({args})"


@dataclass(frozen=True)
class Schedule:
    kafka_version: str
    client: str
    backend: str
    seed: int  # the run's seed (derived from the exploration's seed and the run's number)
    setup: Setup
    steps: tuple[Step, ...]

    def with_steps(self, steps) -> "Schedule":
        return replace(self, steps=tuple(steps))

    def to_json(self) -> dict[str, Any]:
        return {"schema": SCHEMA, "kafka_version": self.kafka_version, "client": self.client,
                "backend": self.backend, "seed": self.seed, "setup": asdict(self.setup),
                "steps": [s.to_json() for s in self.steps]}

    def save(self, path: Path) -> Path:
        path.write_text(json.dumps(self.to_json(), indent=1, sort_keys=True) + "\n")
        return path

    @staticmethod
    def from_json(data: Any, where: str = "schedule", known: tuple[str, ...] = ()) -> "Schedule":
        """A schedule from its JSON form; anything else is a one-line HarnessError naming what is wrong.
        `known`: the operation names a step may have (`harness.explore.surface.OPS`; empty: not checked)."""
        if not isinstance(data, dict) or data.get("schema") != SCHEMA:
            raise HarnessError(f"{where} is not an explorer schedule (schema {SCHEMA!r}): replay a schedule.json "
                               "that `share-harness explore` wrote (reports/findings/<signature>/schedule.json)")
        try:
            setup = Setup(**data["setup"])
            steps = tuple(Step(str(s["op"]), dict(s.get("args") or {})) for s in data["steps"])
            schedule = Schedule(str(data["kafka_version"]), str(data["client"]), str(data["backend"]),
                                int(data["seed"]), setup, steps)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise HarnessError(f"{where}: malformed explorer schedule ({type(exc).__name__}: {exc})") from None
        unknown = sorted({s.op for s in steps} - set(known)) if known else []
        if unknown:
            raise HarnessError(f"{where}: unknown operations {', '.join(unknown)} (known: {', '.join(known)})")
        return schedule

    @staticmethod
    def load(path: Path, known: tuple[str, ...] = ()) -> "Schedule":
        return Schedule.from_json(read_json(path, "explorer schedule"), str(path), known)

    def text(self) -> str:
        """The schedule as numbered lines (a finding's minimal steps)."""
        setup = ", ".join(f"{k}={v}" for k, v in asdict(self.setup).items())
        lines = [f"setup: {setup}"]
        lines += [f"{i + 1:>3}. {s.describe()}" for i, s in enumerate(self.steps)]
        return "\n".join(lines)
