"""The merge: what the slots of both layouts found, made into one check per history.

Each slot returns, per run among its rows, the facts of the rows it counts (events, deliveries,
produced records, first and last time), the indexes of its polls with records and its partial
findings (`replay.Partial`, as JSON). `SlotOutput` gathers them, with what the driver found itself
(the shuffle layout's global rows: their facts, each run's config and global rows; unreadable
configs). `merge` adds the facts up, counts a poll spanning share-partitions once (polls are merged
by index), and finishes each run's partials with `replay.observation`, the same code that finishes
an in-process replay: the merge is exact because the replay keeps no state that links two
share-partitions except through global rows, which every slot of a run replays.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.check.results import RunCheck
from harness.checkers import Result, observed_result
from harness.checkers.judges import JUDGES, PROPERTIES
from harness.checkers.replay import Observation, Partial, Replay, observation
from harness.spark.tables import replay_rows


@dataclass
class SlotOutput:
    """What the slots found, by run (a run is a history's position in the list checked)."""

    #: one dict per (slot, run): run, events, deliveries, produced, t0, t1, polls (int64 bytes), partial
    rows: list[Any] = field(default_factory=list)
    #: facts counted on the driver (the shuffle layout's global rows), added to the slots'
    facts: dict[int, dict[str, Any]] = field(default_factory=dict)
    #: runs whose config the replay cannot read: the crash reason (every property unknown)
    bad_config: dict[int, str] = field(default_factory=dict)
    #: the shuffle layout's runs: (config, global rows as an Arrow table)
    global_rows: dict[int, Any] = field(default_factory=dict)


def merge(files: list[Path], found: SlotOutput) -> list[RunCheck]:
    """The checks of `files` from what the slots `found` (both layouts): facts added up, partials
    merged by `replay.observation`, polls with records counted once across slots."""
    partials, batches = _gather(found)
    return [_check(file, found.facts.get(key, {}), found.bad_config.get(key), partials.get(key, []),
                   batches.get(key, 0)) for key, file in enumerate(files)]


def _gather(found: SlotOutput) -> tuple[dict[int, list], dict[int, int]]:
    """Add each slot's facts to `found.facts`; per run, the partials and the polls with records."""
    import numpy as np

    polls: dict[int, list] = {}
    partials: dict[int, list[Partial]] = {}
    for r in found.rows:
        run = r["run"]
        fact = found.facts.setdefault(run, {"events": 0, "deliveries": 0, "produced": 0, "t0": None, "t1": None})
        _add_facts(fact, r)
        if r["partial"] is not None:
            partials.setdefault(run, []).append(Partial.from_json(json.loads(r["partial"])))
        polls.setdefault(run, []).append(np.frombuffer(r["polls"], dtype=np.int64))
    for run, (config, rows) in found.global_rows.items():  # a shuffled run whose rows are all global: replayed here
        if run not in partials:
            partials[run] = [Replay(config).run_partial(replay_rows(rows))]
    batches = {run: len(np.unique(np.concatenate(seen))) for run, seen in polls.items()}
    return partials, batches


def _add_facts(fact: dict[str, Any], r: dict[str, Any]) -> None:
    """Add a slot's row `r` to a run's facts: counts summed, the time span widened."""
    fact["events"] += r["events"]
    fact["deliveries"] += r["deliveries"]
    fact["produced"] += r["produced"]
    for end, pick in (("t0", min), ("t1", max)):
        if r[end] is not None:
            fact[end] = r[end] if fact[end] is None else pick(fact[end], r[end])


def _check(file: Path, fact: dict[str, Any], bad_config: str | None, partials: list, batches: int) -> RunCheck:
    """One history's check from its facts and partials."""
    if bad_config is not None:
        results = tuple(Result(p, "unknown", reason=bad_config) for p in PROPERTIES)
    elif not fact.get("events"):
        obs = Observation.of(PROPERTIES)
        obs.unknown["*"] = "the history is empty"
        results = tuple(observed_result(p, obs) for p in PROPERTIES)
    else:
        obs = observation(partials, JUDGES, batches=batches)
        results = tuple(observed_result(p, obs) for p in PROPERTIES)
    span_s = max((fact.get("t1") or 0) - (fact.get("t0") or 0), 1) / 1e9
    return RunCheck(file, results, int(fact.get("events") or 0), {
        "deliveries": int(fact.get("deliveries") or 0), "produced": int(fact.get("produced") or 0),
        "span_s": round(span_s, 3), "throughput_rps": round((fact.get("deliveries") or 0) / span_s, 1)})
