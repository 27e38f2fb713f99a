"""What a chaos run produced (`RunOutcome`): its verdict as a gate, each checker's result, the faults,
and a summary a person can read from a CI log alone (the stories of the first anomalous records)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.checkers import Result, verdict_word
from harness.errors import HarnessError
from harness.history.store import read_history
from harness.history.story import record_named, story
from harness.settings import reproduce_command
from harness.spec import RunSpec


@dataclass(frozen=True)
class RunOutcome:
    """What a run produced: the composed verdict, each checker's result, and where it is stored."""

    spec: RunSpec
    valid: Any
    results: tuple[Result, ...]
    run_dir: Path
    faults: tuple = ()  # harness.faults.nemesis.FaultRecord, in start order
    #: properties the implementation gives nothing to check (property -> why): not in `results`, never a pass
    not_checked: dict = field(default_factory=dict)

    @property
    def faults_not_applied(self) -> list:
        return [f for f in self.faults if not f.applied or not f.healed_ok]

    @property
    def chaos_missing(self) -> str | None:
        """Why the chaos asked for did not happen as asked (None when it did, or none was asked): a
        schedule that came out empty, a fault not applied, a heal that failed. Such a run is unknown."""
        if not (self.spec.faults or self.spec.workload_events):
            return None
        if not self.faults:
            return "faults were asked for but none was scheduled or applied (the schedule came out empty)"
        missing = self.faults_not_applied
        if missing:
            return f"{len(missing)} of {len(self.faults)} faults not applied or not healed: " + "; ".join(
                f"{f.id} {'NOT APPLIED' if not f.applied else 'HEAL FAILED'}: {f.reason}" for f in missing[:3])
        return None

    @property
    def overall(self) -> Any:
        """The run's verdict as a gate: the checkers' (a violation stays a violation), made unknown
        when the chaos asked for did not happen (`chaos_missing`)."""
        if self.valid is False or self.chaos_missing is None:
            return self.valid
        return "unknown"

    def summary(self) -> str:
        lines = [f"verdict: {verdict_word(self.overall)}  ({self.spec.name}, seed {self.spec.seed})"]
        if self.chaos_missing is not None:
            lines.append(f"  chaos: UNKNOWN - {self.chaos_missing}")
        for r in self.results:
            lines.append(f"  {r.checker}: {verdict_word(r.valid)} {r.stats}" + (f" - {r.reason}" if r.reason else ""))
            lines += [f"    {a.kind}: {a.message}" for a in r.anomalies[:5]]
        lines += [f"  {name}: NOT CHECKED - {why}" for name, why in self.not_checked.items()]
        lines += self._stories()
        if self.faults:
            applied = sum(1 for f in self.faults if f.applied)
            lines.append(f"faults: {len(self.faults)} scheduled, {applied} applied (seed {self.spec.effective_fault_seed})")
            lines += [f"  {f.id} {','.join(f.targets)}: NOT APPLIED: {f.reason}" for f in self.faults if not f.applied]
            lines += [f"  {f.id}: HEAL FAILED: {f.reason}" for f in self.faults if f.applied and not f.healed_ok]
        lines.append(f"run directory: {self.run_dir}")
        lines.append(f"reproduce: {reproduce_command(self.spec)}")
        return "\n".join(lines)

    def _stories(self, most: int = 2) -> list[str]:
        """The history of the records the first anomalies name (`harness.history.story`), so a failure
        can be read from a log alone (in CI the run directory goes with the clone)."""
        keys = []
        for r in self.results:
            for a in r.anomalies[:1]:
                key = record_named(a.message)
                if key is not None and key not in keys:
                    keys.append(key)
        if not keys:
            return []
        try:
            ops = read_history(self.run_dir / "history.jsonl")
        except (OSError, HarnessError) as exc:
            return [f"  (no record histories: {exc})"]
        lines = []
        for key in keys[:most]:
            lines.append(f"  history of {key[0]}-{key[1]}@{key[2]}:")
            lines += [f"    {line}" for line in story(ops, key)]
        return lines
