"""The exploration loop: generated runs until the budget is spent, each checked by the oracle; a failing
run shrunk to a minimal schedule and stored as a finding; the coverage of (operation, fault) pairs.

Every run's schedule comes from the exploration's seed and the run's number (`run_seed`), so
`explore --seed S` draws the same schedules again; `explore --replay FILE` runs one schedule.
"""

from __future__ import annotations

import shlex
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from harness.clients.registry import driver_info
from harness.explore.runner import RunRecord, execute
from harness.explore.schedule import Schedule
from harness.explore.shrink import shrink
from harness.explore.store import Coverage, FindingsStore
from harness.explore.surface import OPS, Env, faults_for, generate
from harness.explore.triage import dir_name, triage
from harness.report.rundir import new_run_dir
from harness.spec import RunSpec


@dataclass(frozen=True)
class ExploreOptions:
    seed: int = 1
    budget_s: float = 120.0
    steps: int = 12  # per generated run
    shrink: bool = True
    shrink_runs: int = 24  # the most runs one shrink may take
    min_runs: int = 1  # runs made even if the budget is spent (a smoke makes one)


@dataclass
class ExploreOutcome:
    runs: int = 0
    outcomes: dict[str, int] = field(default_factory=lambda: {"pass": 0, "known": 0, "fail": 0, "unknown": 0})
    findings: list[dict] = field(default_factory=list)  # each: signature, triage kind, known bug, folder, new
    coverage: Coverage = field(default_factory=Coverage)
    seconds: float = 0.0
    unknown_reasons: list[str] = field(default_factory=list)
    interrupted: bool = False  # Ctrl-C (or SIGTERM) stopped it: what ran before is kept

    @property
    def new_bugs(self) -> list[dict]:
        return [f for f in self.findings if f["triage"] != "known-bug"]


def run_seed(seed: int, n: int) -> int:
    """The seed of the exploration's run number `n` (0, 1, ...)."""
    return (seed * 1_000_003 + n * 7_919) % (1 << 31)


def env_of(spec: RunSpec) -> Env:
    line = ".".join(spec.kafka_version.split(".")[:2]) if spec.kafka_version[:1].isdigit() else "4.4"
    return Env(line, driver_info(spec.client).features, spec.backend)


def reproduce_command(base: RunSpec, options: ExploreOptions, budget: str) -> str:
    parts = ["share-harness", "explore", "--kafka-version", base.kafka_version, "--client", base.client,
             "--backend", base.backend, "--seed", str(options.seed), "--budget", budget, "--steps", str(options.steps)]
    if not options.shrink:
        parts.append("--no-shrink")
    return shlex.join(parts)


def replay_command(folder: Path) -> str:
    return shlex.join(["share-harness", "explore", "--replay", str(folder / "schedule.json")])


class Explorer:
    def __init__(self, base: RunSpec, options: ExploreOptions, cluster, store: FindingsStore,
                 say: Callable[[str], None] = lambda line: print(line, file=sys.stderr, flush=True)) -> None:
        self.base, self.options, self.cluster, self.store, self.say = base, options, cluster, store, say
        self.env = env_of(base)
        self.runs_made = 0
        #: failing runs met while shrinking another failure, with a signature of their own (kept, not shrunk)
        self.met_while_shrinking: list[RunRecord] = []
        self.interrupted = False  # an interrupt came while shrinking (the finding is kept before stopping)

    def _run(self, schedule: Schedule, label: str) -> RunRecord:
        self.runs_made += 1
        run_dir = new_run_dir(f"explore-{label}")
        record = execute(schedule, self.cluster, self.base, run_dir, f"explore-{label}")
        if record.finding.outcome == "pass" and (run_dir / "logs").is_dir():
            shutil.rmtree(run_dir / "logs", ignore_errors=True)  # a passing run keeps its history and verdict
        return record

    def explore(self) -> ExploreOutcome:
        """Generate, run and shrink until the budget is spent (or an interrupt: the outcome says so)."""
        out = ExploreOutcome()
        started = time.monotonic()
        deadline = started + self.options.budget_s
        try:
            self._loop(out, deadline)
        except KeyboardInterrupt:  # the run it was in cleaned up after itself; keep what the others found
            out.interrupted = True
        out.seconds = time.monotonic() - started
        return out

    def _loop(self, out: ExploreOutcome, deadline: float) -> None:
        opts = self.options
        shrunk: set[str] = set()
        n = 0
        while n < opts.min_runs or time.monotonic() < deadline:
            seed = run_seed(opts.seed, n)
            schedule = generate(self.env, self.base.kafka_version, self.base.client, seed, opts.steps)
            record = self._run(schedule, f"s{seed}")
            n += 1
            out.runs += 1
            out.outcomes[record.finding.outcome] += 1
            out.coverage.add(record.pairs())
            out.unknown_reasons += record.finding.unknown[:2]
            self.say(f"run {n} (seed {seed}, {len(schedule.steps)} steps, {record.seconds:.0f} s): "
                     f"{record.finding.outcome.upper()}" + (f" {record.finding.signature}" if record.finding.parts else "")
                     + f"  {record.run_dir}")
            if not record.finding.interesting:
                continue
            signature = record.finding.signature
            minimal = record
            if opts.shrink and signature not in shrunk:
                minimal = self.shrink(record, deadline)
                shrunk.add(signature)
            out.findings.append(self.keep(record, minimal))
            for other in self.met_while_shrinking:  # another failure the shrink ran into: a finding too
                out.findings.append(self.keep(other, other))
            self.met_while_shrinking.clear()
            if self.interrupted:
                raise KeyboardInterrupt

    def shrink(self, failing: RunRecord, deadline: float) -> RunRecord:
        """The smallest failing run found within the shrink's share of the budget (its runs count and the
        exploration's deadline, with at least one confirming run past it)."""
        signature = failing.finding.signature
        best = failing
        runs = 0

        def fails(candidate: Schedule) -> bool:
            nonlocal best, runs
            runs += 1
            record = self._run(candidate, f"shrink-s{candidate.seed}-{runs}")
            same = record.finding.signature == signature
            if record.finding.interesting and not same:
                self.met_while_shrinking.append(record)
            self.say(f"  shrink {runs}: {len(candidate.steps)} steps -> "
                     f"{record.finding.outcome.upper()} {record.finding.signature or ''}{' (same)' if same else ''}")
            if same and len(candidate.steps) <= len(best.schedule.steps):
                best = record
            return same

        def can_test() -> bool:
            return runs < self.options.shrink_runs and (runs == 0 or time.monotonic() < deadline)
        try:
            shrink(failing.schedule, fails, can_test, failing.skipped, failing.finding.last_step)
            if best.skipped and len(best.schedule.steps) > len(best.skipped):
                # steps skipped in the smallest run did nothing there: one run without them (also past the budget)
                fails(best.schedule.with_steps(s for i, s in enumerate(best.schedule.steps)
                                               if i not in set(best.skipped)))
        except KeyboardInterrupt:  # the finding is kept as small as it got; the loop stops after keeping it
            self.interrupted = True
            self.say("  shrink interrupted: keeping the smallest failing run so far")
        self.say(f"  shrunk {len(failing.schedule.steps)} -> {len(best.schedule.steps)} steps in {runs} runs")
        return best

    def keep(self, original: RunRecord, minimal: RunRecord) -> dict:
        t = triage(minimal.finding.parts, minimal.version, self.base.backend, minimal.ops, minimal.schedule.setup,
                   minimal.finding.lost_produces)
        folder = self.store.root / dir_name(minimal.finding.signature)
        reproduce = replay_command(folder)
        folder, new = self.store.record(minimal.finding.signature, minimal.finding.parts, t, minimal.schedule,
                                        original.schedule, minimal.run_dir, minimal.finding.reasons,
                                        minimal.finding.evidence, minimal.ops, self.options.seed, reproduce)
        self.say(f"  finding {'NEW' if new else 'again'}: {t.kind}{f' ({t.known_bug})' if t.known_bug else ''}: {folder}")
        return {"signature": minimal.finding.signature, "triage": t.kind, "known_bug": t.known_bug,
                "folder": str(folder), "new": new, "steps": len(minimal.schedule.steps)}


def summary(outcome: ExploreOutcome, store: FindingsStore, env: Env, reproduce: str) -> str:
    lines = [f"explored {outcome.runs} runs in {outcome.seconds:.0f} s: " +
             ", ".join(f"{k} {v}" for k, v in outcome.outcomes.items())
             + (" (interrupted: the run in progress was dropped)" if outcome.interrupted else "")]
    if outcome.findings:
        lines.append("findings:")
        seen = set()
        for f in outcome.findings:
            if f["signature"] in seen:
                continue
            seen.add(f["signature"])
            lines.append(f"  {f['triage']}{' (' + f['known_bug'] + ')' if f['known_bug'] else ''}: {f['signature']} "
                         f"({f['steps']} steps) {f['folder']}")
    else:
        lines.append("findings: none")
    if outcome.unknown_reasons:
        lines.append("undecided: " + "; ".join(sorted(set(outcome.unknown_reasons))[:5]))
    lines.append("coverage (steps that acted, by the fault in place):")
    lines.append(outcome.coverage.table(list(OPS), faults_for(env)))
    lines.append(f"reproduce: {reproduce}")
    return "\n".join(lines)
