"""What a replay found, and how the findings of several replays merge.

`Findings` is what every part of the replay reports to: anomalies (capped, in history order),
allowance uses (counted, each with the op indexes that justified it), event counts, durable-state
stats and undecidable properties. `Partial` is one replay's findings before the verdicts (the
Spark engine replays share-partitions in separate tasks and ships Partials back as JSON);
`observation` merges Partials into the verdict-ready `Observation`, exactly as one replay of the
whole history would have found it.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Sequence

from harness.checkers import Anomaly
from harness.model.allowances import ALLOWANCES

NEVER = 1 << 62
ANOMALY_CAP = 1000
EVIDENCE_KEPT = 20  # uses of each allowance whose evidence a result lists
KNOWN_BUG_EVIDENCE = 5  # messages kept (in stats) of situations a known bug of the release explains


@dataclass
class Observation:
    """Everything the replay found, per property (`of`: one empty entry for each of the judges' properties)."""

    anomalies: dict[str, list[Anomaly]] = field(default_factory=dict)
    allowances: dict[str, dict[str, int]] = field(default_factory=dict)
    #: property -> allowance -> the first EVIDENCE_KEPT uses, each the op indexes that justified it
    allowance_evidence: dict[str, dict[str, list[list[int]]]] = field(default_factory=dict)
    stats: dict[str, dict[str, Any]] = field(default_factory=dict)
    unknown: dict[str, str] = field(default_factory=dict)  # property -> why it cannot be decided
    config: dict[str, Any] = field(default_factory=dict)

    @staticmethod
    def of(properties: Sequence[str], config: dict[str, Any] | None = None) -> "Observation":
        return Observation({p: [] for p in properties}, {p: {} for p in properties}, {p: {} for p in properties},
                           {p: {} for p in properties}, {}, {} if config is None else config)


class Findings:
    """Where the parts of one replay report: `anomaly`, `allow`, counts `n` and `obs` (the Observation)."""

    def __init__(self, config: dict[str, Any], properties: Sequence[str]) -> None:
        self.obs = Observation.of(properties, config)
        self.n: dict[str, int] = defaultdict(int)

    def anomaly(self, prop: str, kind: str, message: str, evidence: tuple[int, ...], **detail: Any) -> None:
        found = self.obs.anomalies[prop]
        if len(found) < ANOMALY_CAP:
            found.append(Anomaly(kind, message, tuple(i for i in evidence if i >= 0), detail))
        else:
            self.n[f"{prop}:more"] += 1

    def allow(self, prop: str, name: str, evidence: tuple[int, ...] | list[int] = ()) -> None:
        """Count one use of allowance `name`, keeping its evidence (the op indexes of the events that made
        the excused behaviour possible, then the op that needed it) so a reader can audit it."""
        assert name in ALLOWANCES
        counts = self.obs.allowances[prop]
        counts[name] = counts.get(name, 0) + 1
        kept = self.obs.allowance_evidence[prop].setdefault(name, [])
        if len(kept) < EVIDENCE_KEPT:
            kept.append(sorted({int(i) for i in evidence if i >= 0}))

    def known_bug(self, message: str) -> None:
        """Keep (a few of) the situations a known bug of the release explains, in the durable-state stats."""
        kept = self.obs.stats["durable-state"].setdefault("known_bug_evidence", [])
        if len(kept) < KNOWN_BUG_EVIDENCE:
            kept.append(message)

    def partial(self) -> "Partial":
        obs = self.obs
        return Partial(obs.anomalies, obs.allowances, dict(self.n), obs.stats["durable-state"], obs.unknown,
                       obs.config, obs.allowance_evidence)


@dataclass
class Partial:
    """One replay's findings before the verdicts: anomalies, allowance and event counts, the
    durable-state stats (counts and per-partition maps) and undecidable properties. Partials of
    disjoint share-partitions (each with the history's global rows) add up to the whole history's."""

    anomalies: dict[str, list[Anomaly]]
    allowances: dict[str, dict[str, int]]
    counts: dict[str, int]
    durable: dict[str, Any]
    unknown: dict[str, str]
    config: dict[str, Any]
    allowance_evidence: dict[str, dict[str, list[list[int]]]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"anomalies": {p: [[a.kind, a.message, list(a.evidence), a.detail] for a in found]
                              for p, found in self.anomalies.items()},
                "allowances": self.allowances, "counts": self.counts, "durable": self.durable,
                "unknown": self.unknown, "config": self.config, "allowance_evidence": self.allowance_evidence}

    @staticmethod
    def from_json(data: dict[str, Any]) -> "Partial":
        return Partial({p: [Anomaly(k, m, tuple(e), d) for k, m, e, d in found]
                        for p, found in data["anomalies"].items()},
                       data["allowances"], data["counts"], data["durable"], data["unknown"], data["config"],
                       data.get("allowance_evidence", {}))


def observation(partials: Sequence[Partial], judges: Sequence[Any], batches: int | None = None) -> Observation:
    """The verdict-ready Observation of the partials' history (one partial: a whole-history replay), with the
    stats and unknowns of each of `judges` (`harness.checkers.judge.Judge`; the registry's `JUDGES`).

    Anomalies are listed in history order (by evidence), at most ANOMALY_CAP per property; `batches`
    overrides the summed count of polls with records (a poll spanning partitions is in several partials)."""
    config = next((p.config for p in partials if p.config), {})
    obs = Observation.of([j.NAME for j in judges], config)
    n: dict[str, int] = defaultdict(int)
    for part in partials:
        _merge(obs, n, part)
    if batches is not None:
        n["batches"] = batches
    for prop, found in obs.anomalies.items():
        found.sort(key=lambda a: (a.evidence, a.kind, a.message))
        if len(partials) > 1:  # a judgement of a global row (every slot replays it) is listed once
            found[:] = {(a.kind, a.message, a.evidence): a for a in found}.values()
        if len(found) > ANOMALY_CAP:
            n[f"{prop}:more"] += len(found) - ANOMALY_CAP
            del found[ANOMALY_CAP:]
    for judge in judges:  # each property's stats and unknown from the merged counts: the judge's
        stats = judge.stats(n, config, obs.stats[judge.NAME])
        if n[f"{judge.NAME}:more"]:
            stats["anomalies_not_listed"] = n[f"{judge.NAME}:more"]
        obs.stats[judge.NAME] = stats
        why = judge.unknown(n, config, obs.unknown.get(judge.NAME))
        if why is not None:
            obs.unknown[judge.NAME] = why
    return obs


def _merge(obs: Observation, n: dict[str, int], part: Partial) -> None:
    """Add one partial's counts, anomalies, allowances (and their evidence), durable-state facts and
    unknowns to `obs` and `n`."""
    for key, value in part.counts.items():
        n[key] += value
    for prop, found in part.anomalies.items():
        obs.anomalies[prop].extend(found)
    for prop, counts in part.allowances.items():
        mine = obs.allowances[prop]
        for name, count in counts.items():
            mine[name] = mine.get(name, 0) + count
    for prop, uses in part.allowance_evidence.items():
        for name, found in uses.items():
            kept = obs.allowance_evidence[prop].setdefault(name, [])
            kept.extend(found)
            kept.sort()
            del kept[EVIDENCE_KEPT:]
    durable = obs.stats["durable-state"]
    for key, value in part.durable.items():
        if isinstance(value, dict):
            durable.setdefault(key, {}).update(value)
        elif isinstance(value, list):
            kept = durable.setdefault(key, [])
            kept.extend(value)
            kept.sort()
            del kept[KNOWN_BUG_EVIDENCE:]
        else:
            durable[key] = durable.get(key, 0) + value
    for prop, why in part.unknown.items():  # the earliest in the history, as one replay would keep
        if prop not in obs.unknown or _at_index(why) < _at_index(obs.unknown[prop]):
            obs.unknown[prop] = why


def _at_index(why: str) -> int:
    found = re.search(r"at index (\d+)", why)
    return int(found.group(1)) if found else NEVER


