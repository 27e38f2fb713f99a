"""`share-harness explore`: generated runs until the budget is spent (`--replay FILE`: one schedule again;
`--merge DIR...`: fold other machines' findings into this store).

Exit codes: exploring, 1 if a finding is not a known bug of the release (a harness, client, broker or
backend bug to look at), 3 if no run could be decided, else 0 (nothing found, or only known bugs, each
listed). Replaying, 1 if the schedule's run broke a property or met a known bug again (the finding
reproduced), 0 if it passed clean, 3 if it could not be decided.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace

from harness import exitcodes
from harness.errors import HarnessError
from harness.spec import RunSpec


def cmd_explore(args: argparse.Namespace) -> int:
    from harness.explore.store import FindingsStore  # (deferred: loaded only when this command or fixture runs)
    from harness.report.rundir import reports_root  # (deferred: loaded only when this command or fixture runs)
    store = FindingsStore(args.findings or reports_root() / "findings")
    if args.merge:
        if args.replay:
            raise HarnessError("--merge folds stores and runs nothing: leave out --replay")
        new, added, files = store.merge(args.merge)
        total = store.total_coverage()
        print(f"merged into {store.root}: {new} new findings, {added} occurrences added, {files} coverage files; "
              f"the store now holds {len(store.findings())} findings and the coverage of {total.runs} runs")
        return exitcodes.PASS
    schedule = None
    if args.replay:
        from harness.explore.schedule import Schedule  # (deferred: loaded only when this command or fixture runs)
        from harness.explore.surface import OPS  # (deferred: loaded only when this command or fixture runs)
        schedule = Schedule.load(args.replay, tuple(OPS))
    base = _base_spec(args, schedule)
    from harness.report.rundir import new_run_dir  # (deferred: loaded only when this command or fixture runs)
    from harness.run.context import make_cluster  # (deferred: loaded only when this command or fixture runs)
    cluster = make_cluster(base, new_run_dir("explore-cluster"))
    try:
        cluster.start()
        if schedule is not None:
            return _replay(base, schedule, cluster)
        return _explore(args, base, cluster, store)
    finally:
        cluster.close()


def _base_spec(args: argparse.Namespace, schedule) -> RunSpec:
    # (deferred: loaded only when this command or fixture runs)
    from harness.clients.registry import \
        unsupported_by_spec  # (deferred: loaded only when this command or fixture runs)
    from harness.kafka.versions import DEFAULT_VERSION  # (deferred: loaded only when this command or fixture runs)
    version = args.kafka_version or (schedule.kafka_version if schedule else DEFAULT_VERSION)
    client = args.client or (schedule.client if schedule else "confluent")
    backend = args.backend if (schedule is None or args.backend != "local") else schedule.backend
    if backend == "mock":  # its surface draws what the mock serves not: every such run would be a false finding
        raise HarnessError("explore does not run on the mock backend: its operations include Admin API requests "
                           "(alter-offsets, delete-records, add-partitions) and by_duration resets the mock serves "
                           "not; gate the mock with `share-harness matrix --versions mock`")
    spec = replace(RunSpec(profile="ci").with_profile(), name="explore", seed=args.seed, kafka_version=version,
                   client=client, backend=backend, kafka_home=str(args.kafka_home) if args.kafka_home else None,
                   kafka_image=args.kafka_image, kafka_image_classpath=args.kafka_image_classpath,
                   kfake_version=args.kfake_version, base_port=args.base_port).validate()
    why = unsupported_by_spec(spec)
    if why:
        raise HarnessError(f"client {spec.client} on Kafka {spec.kafka_version}: {why}")
    return spec


def _replay(base: RunSpec, schedule, cluster) -> int:
    from harness.explore.runner import execute  # (deferred: loaded only when this command or fixture runs)
    from harness.explore.triage import triage  # (deferred: loaded only when this command or fixture runs)
    from harness.report.rundir import new_run_dir  # (deferred: loaded only when this command or fixture runs)
    schedule = replace(schedule, kafka_version=base.kafka_version, client=base.client, backend=base.backend)
    record = execute(schedule, cluster, base, new_run_dir(f"explore-replay-s{schedule.seed}"), "explore-replay")
    f = record.finding
    print(f"replayed {len(schedule.steps)} steps on Kafka {record.version} ({base.client}): {f.outcome.upper()}"
          + (f" {f.signature}" if f.parts else ""))
    for reason in f.reasons[:10]:
        print(f"  {reason}")
    if f.parts:
        t = triage(f.parts, record.version, base.backend, record.ops, schedule.setup, f.lost_produces)
        print(f"triage: {t.kind}{f' ({t.known_bug})' if t.known_bug else ''}: {t.why}")
    for line in f.unknown[:5]:
        print(f"  undecided: {line}")
    print(f"run: {record.run_dir}")
    if f.parts:
        return exitcodes.VIOLATION
    return exitcodes.PASS if f.outcome == "pass" else exitcodes.UNKNOWN


def _explore(args: argparse.Namespace, base: RunSpec, cluster, store) -> int:
    # (deferred: loaded only when this command or fixture runs)
    from harness.explore.explorer import ExploreOptions, Explorer, reproduce_command, summary
    # (deferred: loaded only when this command or fixture runs)
    from harness.report.rundir import new_stamped_dir, reports_root
    options = ExploreOptions(seed=args.seed, budget_s=args.budget, steps=args.steps, shrink=args.shrink,
                             shrink_runs=args.shrink_runs)
    explorer = Explorer(base, options, cluster, store)
    outcome = explorer.explore()
    coverage_file = store.save_coverage(outcome.coverage, options.seed)
    budget = f"{int(args.budget)}s"
    text = summary(outcome, store, explorer.env, reproduce_command(base, options, budget))
    folder = new_stamped_dir(reports_root() / "explore", f"s{options.seed}")
    (folder / "summary.txt").write_text(text + "\n")
    (folder / "summary.json").write_text(json.dumps({
        "seed": options.seed, "kafka_version": base.kafka_version, "client": base.client, "backend": base.backend,
        "runs": outcome.runs, "seconds": round(outcome.seconds, 1), "outcomes": outcome.outcomes,
        "findings": outcome.findings, "coverage": outcome.coverage.to_json(), "coverage_file": str(coverage_file),
        "interrupted": outcome.interrupted,
        "when": time.strftime("%Y-%m-%dT%H:%M:%S")}, indent=1, sort_keys=True) + "\n")
    print(text)
    print(f"exploration: {folder}")
    if outcome.interrupted:
        raise KeyboardInterrupt  # after saving: the exit code and clean-up of an interrupt
    if outcome.new_bugs:
        return exitcodes.VIOLATION
    decided = outcome.runs - outcome.outcomes["unknown"]
    return exitcodes.PASS if decided > 0 else exitcodes.UNKNOWN

