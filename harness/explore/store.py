"""The findings store and the coverage of explorations: `reports/findings/`.

Layout (one store per machine; `explore --merge` folds other machines' stores into this one):

    reports/findings/
      <signature dir>/            one per distinct failure (`harness.explore.triage.dir_name`)
        finding.json              signature, parts, triage, release, client, every occurrence (machine, seed, run)
        schedule.json             the minimal schedule (`explore --replay` runs it)
        original.json             the schedule as generated, before shrinking
        report.md                 the upstream bug report: title, release, configuration, minimal steps,
                                  expected (with its sentence), observed (with the history excerpt), reproduce
        run/                      the minimal schedule's run: history, steps, verdict, run page
      coverage/<machine>-<stamp>-s<seed>.json
                                  one exploration's counts of (operation kind, fault kind in place)

Deduplication is by signature, across machines: the same signature found again adds an occurrence, and
the smaller schedule is kept.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import time
from collections import Counter
from pathlib import Path
from typing import Any, Iterable, Sequence

from harness.errors import HarnessError
from harness.explore.schedule import Schedule
from harness.explore.triage import Triage, dir_name
from harness.model.profiles import KNOWN_BUGS
from harness.sys.files import read_json

#: The sentence each property of the oracle decides (KIP-932), for a report's "expected".
PROPERTY_SENTENCES = {
    "no-loss": "KIP-932: if the delivery count has not reached the limit, the record moves back into Available "
               "state and can be delivered again. This means that the delivery behavior is at-least-once.",
    "delivery-count": "KIP-932: Every time that a record is acquired by a consumer in a share group, its delivery "
                      "count increments by 1. The first time a record is acquired, its delivery count is 1.",
    "batch-order": "KIP-932: The records returned in a batch for particular share-partition are guaranteed to be "
                   "in order of increasing offset.",
    "exclusive-acquisition": "KIP-932: an acquired record is locked to the consumer that acquired it until it is "
                             "acknowledged or its acquisition lock times out.",
    "no-redelivery-after-ack": "KIP-932: The delivery attempt completes successfully and the records move into "
                               "Acknowledged state (ACCEPT and REJECT are final; the cluster records this durably).",
    "ack-results": "KIP-932: Acknowledgements errors are delivered to a new kind of callback called an acknowledge "
                   "commit callback; commitSync returns the result of each partition's acknowledgements.",
    "durable-state": "KIP-932: The share-partition leader persists the states and delivery counts. The cluster "
                     "records this information durably.",
}


def machine() -> str:
    return os.environ.get("KSH_MACHINE") or socket.gethostname() or "machine"


# -- coverage ---------------------------------------------------------------------------------------
class Coverage:
    """Counts of (operation kind, fault kind in place or "none")."""

    def __init__(self, pairs: Counter | None = None, runs: int = 0) -> None:
        self.pairs: Counter = pairs or Counter()
        self.runs = runs

    def add(self, pairs: Iterable[tuple[str, str]]) -> None:
        self.pairs.update(pairs)
        self.runs += 1

    def merge(self, other: "Coverage") -> "Coverage":
        return Coverage(self.pairs + other.pairs, self.runs + other.runs)

    def to_json(self) -> dict[str, Any]:
        return {"runs": self.runs, "pairs": [{"op": op, "fault": f, "count": n}
                                             for (op, f), n in sorted(self.pairs.items())]}

    @staticmethod
    def from_json(data: Any, where: str) -> "Coverage":
        try:
            return Coverage(Counter({(str(p["op"]), str(p["fault"])): int(p["count"]) for p in data["pairs"]}),
                            int(data["runs"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise HarnessError(f"{where}: not an explorer coverage file ({type(exc).__name__}: {exc})") from None

    def table(self, ops: Sequence[str], faults: Sequence[str]) -> str:
        """A text table: a row per op kind, a column per fault kind seen (and "none"); untried cells are '.'."""
        seen = sorted({f for _, f in self.pairs if f != "none"})
        columns = ["none"] + seen
        width = max([len(o) for o in ops] + [8])
        lines = [f"{'op':<{width}} " + " ".join(f"{c[:14]:>14}" for c in columns)]
        for op in ops:
            lines.append(f"{op:<{width}} " + " ".join(f"{self.pairs.get((op, c), 0) or '.':>14}" for c in columns))
        never = sorted(set(faults) - set(seen))
        if never:
            lines.append(f"faults never in place while an operation ran: {', '.join(never)}")
        return "\n".join(lines)


# -- the store --------------------------------------------------------------------------------------
class FindingsStore:
    def __init__(self, root: Path) -> None:
        self.root = root

    def coverage_files(self) -> list[Path]:
        folder = self.root / "coverage"
        return sorted(folder.glob("*.json")) if folder.is_dir() else []

    def save_coverage(self, coverage: Coverage, seed: int) -> Path:
        folder = self.root / "coverage"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{machine()}-{time.strftime('%Y%m%d-%H%M%S')}-s{seed}.json"
        _write_json(path, {"machine": machine(), "seed": seed, **coverage.to_json()})
        return path

    def total_coverage(self) -> Coverage:
        total = Coverage()
        for path in self.coverage_files():
            total = total.merge(Coverage.from_json(read_json(path, "explorer coverage"), str(path)))
        return total

    def findings(self) -> list[dict[str, Any]]:
        out = []
        if self.root.is_dir():
            for path in sorted(self.root.glob("*/finding.json")):
                out.append(read_json(path, "explorer finding"))
        return out

    def record(self, signature: str, parts: Sequence[str], triage: Triage, minimal: Schedule, original: Schedule,
               run_dir: Path, reasons: Sequence[str], evidence: Sequence[int], ops: Sequence[Any],
               exploration_seed: int,
               reproduce: str) -> tuple[Path, bool]:
        """Store a finding (or a new occurrence of one); (its directory, whether the signature is new)."""
        folder = self.root / dir_name(signature)
        occurrence = {"machine": machine(), "exploration_seed": exploration_seed, "run_seed": original.seed,
                      "run": str(run_dir), "when": time.strftime("%Y-%m-%dT%H:%M:%S"),
                      "steps": len(original.steps), "minimal_steps": len(minimal.steps)}
        existing = read_json(folder / "finding.json", "explorer finding") if (folder / "finding.json").exists() else None
        new = existing is None
        keep_new_schedule = new or len(minimal.steps) < int(existing.get("minimal_steps", 1 << 30))
        data = existing or {"signature": signature, "parts": list(parts), "occurrences": []}
        data["occurrences"].append(occurrence)
        data.update(triage={"kind": triage.kind, "known_bug": triage.known_bug, "why": triage.why},
                    kafka_version=minimal.kafka_version, client=minimal.client, backend=minimal.backend)
        folder.mkdir(parents=True, exist_ok=True)
        if keep_new_schedule:
            data.update(minimal_steps=len(minimal.steps), reproduce=reproduce)
            minimal.save(folder / "schedule.json")
            original.save(folder / "original.json")
            if (folder / "run").exists():
                shutil.rmtree(folder / "run")
            _copy_run(run_dir, folder / "run")
            (folder / "report.md").write_text(report_md(signature, parts, triage, minimal, reasons, evidence, ops,
                                                              reproduce))
        _write_json(folder / "finding.json", data)
        return folder, new

    def merge(self, others: Sequence[Path]) -> tuple[int, int, int]:
        """Fold the stores `others` (other machines' reports/findings) into this one: (new findings, occurrences
        added, coverage files added)."""
        new = added = files = 0
        for other in others:
            if not other.is_dir():
                raise HarnessError(f"{other} is not a directory: name another machine's reports/findings")
            if other.resolve() == self.root.resolve():
                continue
            for path in sorted(other.glob("*/finding.json")):
                theirs = read_json(path, "explorer finding")
                mine_path = self.root / path.parent.name / "finding.json"
                if not mine_path.exists():
                    shutil.copytree(path.parent, self.root / path.parent.name)
                    new += 1
                    continue
                mine = read_json(mine_path, "explorer finding")
                known = {json.dumps(o, sort_keys=True) for o in mine["occurrences"]}
                extra = [o for o in theirs["occurrences"] if json.dumps(o, sort_keys=True) not in known]
                mine["occurrences"] += extra
                added += len(extra)
                if int(theirs.get("minimal_steps", 1 << 30)) < int(mine.get("minimal_steps", 1 << 30)):
                    for name in ("schedule.json", "original.json", "report.md"):
                        if (path.parent / name).exists():
                            shutil.copy2(path.parent / name, mine_path.parent / name)
                    mine["minimal_steps"], mine["reproduce"] = theirs["minimal_steps"], theirs.get("reproduce")
                _write_json(mine_path, mine)
            for cov in sorted((other / "coverage").glob("*.json")) if (other / "coverage").is_dir() else []:
                target = self.root / "coverage" / cov.name
                if not target.exists():
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(cov, target)
                    files += 1
        return new, added, files


def _write_json(path: Path, data: Any) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True, default=str) + "\n")
    tmp.replace(path)


def _copy_run(run_dir: Path, target: Path) -> None:
    """The run's files a reader needs (history, steps, verdict, page, spec, schedule), not its node logs."""
    target.mkdir(parents=True)
    for name in ("history.jsonl", "steps.jsonl", "verdict.json", "run.html", "spec.json", "schedule.json"):
        if (run_dir / name).exists():
            shutil.copy2(run_dir / name, target / name)
    (target / "ORIGIN").write_text(f"{run_dir}\n")


def report_md(signature: str, parts: Sequence[str], triage: Triage, schedule: Schedule, reasons: Sequence[str],
              evidence: Sequence[int], ops: Sequence[Any], reproduce: str) -> str:
    """The finding as an upstream bug report."""
    what = ", ".join(p for p in parts)
    title = f"Share group on Kafka {schedule.kafka_version}: {what}"
    expected = []
    for part in parts:
        head, _, kind = part.partition(":")
        if head in PROPERTY_SENTENCES:
            expected.append(f"- `{part}`: {PROPERTY_SENTENCES[head]}")
        elif head == "known" and kind in KNOWN_BUGS:
            bug = KNOWN_BUGS[kind]
            expected.append(f"- `{part}`: the KIP-932 behaviour; Kafka {schedule.kafka_version} deviates (known bug "
                            f"`{kind}`: {bug.known.on(schedule.kafka_version)}; fixed in {bug.fixed}): {bug.evidence}")
        elif head == "step":
            expected.append(f"- `{part}`: " + next((r.split(" (", 1)[-1].rstrip(")") for r in reasons
                                                    if r.startswith("step ") and kind.split("-")[0] in r), "see below"))
        else:
            expected.append(f"- `{part}`: the harness runs the schedule to its end and checks it")
    excerpt = _excerpt(ops, evidence)
    s = schedule.setup
    return f"""# {title}

Triage: **{triage.kind}**{f" (`{triage.known_bug}`)" if triage.known_bug else ""}: {triage.why}.
{"" if triage.kind == "known-bug" else "This triage is the harness's suspicion from the signature: confirm it before filing."}

## Release and configuration
- Kafka {schedule.kafka_version}, backend {schedule.backend}, share consumer: {schedule.client}
- topic: {s.partitions} partition(s), replication factor 3 on 3 brokers
- share group: share.auto.offset.reset={s.auto_offset_reset}, share.record.lock.duration.ms={s.lock_duration_ms},
  share.delivery.count.limit={s.delivery_count_limit if s.delivery_count_limit is not None else "(broker default)"},
  share.isolation.level={s.isolation_level}, max.poll.records={s.max_poll_records}, dead-letter queue {s.dead_letter}

## Minimal steps
```
{schedule.text()}
```
(consumer slots are numbered in join order; `partition` wraps at the topic's partition count; the run ends with
every fault healed, every consumer closed and a fresh consumer accepting what is left.)

## Expected
{chr(10).join(expected)}

## Observed
{chr(10).join(f"- {r}" for r in reasons[:12])}

History excerpt (the operations the anomalies name):
```
{excerpt}
```

## Reproduce
```
{reproduce}
```
Signature: `{signature}`
"""


def _excerpt(ops: Sequence[Any], evidence: Sequence[int], limit: int = 20) -> str:
    """The history operations the anomalies name (their op indexes), else the run's last ones."""
    wanted = set(evidence)
    chosen = [op for op in ops if op.index in wanted] or [op for op in ops if op.f != "config"][-limit:]
    return "\n".join(json.dumps(op.to_json(), sort_keys=True)[:300] for op in chosen[:limit]) or "(no history)"
