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
from harness.model.profiles import model_profile

PROPERTIES = ("no-loss", "delivery-count", "batch-order", "exclusive-acquisition", "no-redelivery-after-ack",
              "ack-results", "durable-state")
NEVER = 1 << 62
ANOMALY_CAP = 1000
EVIDENCE_KEPT = 20  # uses of each allowance whose evidence a result lists
KNOWN_BUG_EVIDENCE = 5  # messages kept (in stats) of situations a known bug of the release explains


@dataclass
class Observation:
    """Everything the replay found, per property."""

    anomalies: dict[str, list[Anomaly]] = field(default_factory=lambda: {p: [] for p in PROPERTIES})
    allowances: dict[str, dict[str, int]] = field(default_factory=lambda: {p: {} for p in PROPERTIES})
    #: property -> allowance -> the first EVIDENCE_KEPT uses, each the op indexes that justified it
    allowance_evidence: dict[str, dict[str, list[list[int]]]] = field(
        default_factory=lambda: {p: {} for p in PROPERTIES})
    stats: dict[str, dict[str, Any]] = field(default_factory=lambda: {p: {} for p in PROPERTIES})
    unknown: dict[str, str] = field(default_factory=dict)  # property -> why it cannot be decided
    config: dict[str, Any] = field(default_factory=dict)


class Findings:
    """Where the parts of one replay report: `anomaly`, `allow`, counts `n` and `obs` (the Observation)."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.obs = Observation(config=config)
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


def observation(partials: Sequence[Partial], batches: int | None = None) -> Observation:
    """The verdict-ready Observation of the partials' history (one partial: a whole-history replay).

    Anomalies are listed in history order (by evidence), at most ANOMALY_CAP per property; `batches`
    overrides the summed count of polls with records (a poll spanning partitions is in several partials)."""
    config = next((p.config for p in partials if p.config), {})
    obs = Observation(config=config)
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
    _stats(obs, n, config)
    _unknowns(obs, n, config)
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


def _stats(obs: Observation, n: dict[str, int], config: dict[str, Any]) -> None:
    """Each property's stats from the merged counts."""
    profile = model_profile(config.get("model_profile") or config.get("kafka_version") or "4.3")
    limit = int(config.get("delivery_count_limit", 5))
    s = obs.stats
    s["no-loss"] = {"produced_ok": n["produced"], "deliveries": n["deliveries"], "accepted_or_rejected": n["accepted"],
                    "archived_at_limit": n["archived-at-limit"] + n["archived"], "unknown_outcome": n["unresolved-maybe"],
                    "resolved_by_durable_state": n["resolved-by-durable-state"] + n["resolved-by-state-topic"],
                    "truncated": n["truncated"], "deleted": n["deleted"], "compacted": n["compacted"],
                    "skipped_by_latest": n["skipped-by-latest"], "aborted": n["aborted"],
                    "skipped_after_unclean_election": n["skipped-after-unclean-election"],
                    "duplicate_writes": n["duplicate-writes"], "acks_refused": n["acks-refused"]}
    if config.get("dead_letter_topic"):  # KIP-1191 (harness.checkers.dead_letter)
        s["no-loss"]["dead_letter_queue"] = {
            "topic": config["dead_letter_topic"], "accounted": n["dead-letters-accounted"],
            "duplicates": n["dead-letter-duplicates"], "of_unsettled_records": n["dead-letters-unsettled"],
            "pending_at_the_read": n["dead-letters-pending"]}
    s["delivery-count"] = {"deliveries": n["deliveries"], "limit": limit, "profile": profile.line,
                           "session_release_decrements": n["session-release-decrements"]}
    s["batch-order"] = {"batches": n["batches"]}
    s["exclusive-acquisition"] = {"deliveries": n["deliveries"],
                                  "lock_duration_ms": int(config.get("lock_duration_ms", 30000)),
                                  "tolerance_ms": int(config.get("lock_tolerance_ms", 2000))}
    s["no-redelivery-after-ack"] = {"deliveries": n["deliveries"], "offset_resets": n["offset-resets"]}
    s["ack-results"] = {"acks": n["acks"]}
    s["durable-state"] = {"start_offset_reads": n["durable-reads"], **s["durable-state"]}
    for prop in PROPERTIES:
        if n[f"{prop}:more"]:
            s[prop]["anomalies_not_listed"] = n[f"{prop}:more"]


def _unknowns(obs: Observation, n: dict[str, int], config: dict[str, Any]) -> None:
    """Why a property cannot be decided: nothing of what it judges is in the history."""
    u = obs.unknown
    if n["unresolved-maybe"]:
        u["no-loss"] = (f"{n['unresolved-maybe']} records' acknowledgements have an unknown outcome and no later "
                        f"start-offset read settles them")
    if not n["produced"]:
        u["no-loss"] = "no produce was acknowledged: nothing to check"
    if not n["batches"]:
        for prop in ("batch-order", "delivery-count", "exclusive-acquisition", "no-redelivery-after-ack"):
            u[prop] = "no poll delivered records: nothing to check"
    if not n["acks"]:
        u["ack-results"] = "no acknowledgement in the history: nothing to check"
    if not n["durable-reads"]:
        u["durable-state"] = "the history holds no read of durable state (share-offsets): nothing to check"
    if not config:
        for prop in ("delivery-count", "exclusive-acquisition"):
            u.setdefault(prop, "the history has no config operation (version 0): the delivery-count limit and "
                               "lock duration in force are unknown")


def _at_index(why: str) -> int:
    found = re.search(r"at index (\d+)", why)
    return int(found.group(1)) if found else NEVER


