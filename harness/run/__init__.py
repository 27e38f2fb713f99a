"""A run's life, written once.

Every run goes through one `RunContext` (`harness.run.context`): open (spec stored, history opened,
cluster started unless one is given, a fresh topic and share group with its configs, the `config`
op), the run's own steps, the durable read after the consumers closed, close (node logs, an owned
cluster stopped, history closed), check (every checker, in-process or on Spark as the spec says)
and verdict.json.

A chaos run (`run`: `share-harness run`, the `share_run` fixture, the chaos suites) fills the
middle with its traffic (`harness.run.traffic`): consumers of the spec's client, the seeded
producer, the nemesis beside it, then the drain (`harness.run.drain`). A conformance session
(`harness.conformance.ShareSession`) fills it with a test's steps instead.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from harness.checkers import compose
from harness.cluster.base import Cluster
from harness.report.page import write_run_page
from harness.report.progress import RunProgress
from harness.run.context import RunContext, kafka_version_of, make_cluster
from harness.run.drain import drain
from harness.run.outcome import RunOutcome
from harness.run.traffic import produce, produce_under_faults, start_consumers
from harness.spec import RunSpec

__all__ = ["RunContext", "RunOutcome", "kafka_version_of", "make_cluster", "run"]


def run(spec: RunSpec, cluster: Cluster | None = None, run_dir: Path | None = None,
        progress: bool = False) -> RunOutcome:
    """Run `spec` end to end and store it: open, consumers, produce (under faults), drain, close the
    consumers, durable read, close, check, verdict. Never returns a pass for a run it could not check.
    `progress`: show the run's progress on stderr while it runs (harness.report.progress)."""
    ctx = RunContext.open(spec, cluster, run_dir)
    chaos = bool(spec.faults or spec.workload_events)
    pool, faults, finished = None, [], False
    shown = contextlib.ExitStack()
    try:
        if progress:
            shown.enter_context(RunProgress(ctx.history, spec.name))
        pool = start_consumers(ctx)
        if chaos:
            faults = produce_under_faults(ctx, pool)
        else:
            produce(ctx)
        drain(ctx.history, ctx.limits, spec.lock_tolerance_ms, spec.drain_timeout, lambda: len(pool.live()))
        pool.close_all()  # closed before the durable read, so every acknowledgement is in
        ctx.read_durable_state()
        finished = True
    finally:
        shown.close()
        try:
            if pool is not None:
                pool.close_all()  # only on failure: the ones not closed yet
        finally:
            try:
                ctx.close()
            finally:
                if not finished:  # the run broke off: its page shows what the history holds (no verdict)
                    _page(ctx, spec)
    results, engine = ctx.check()
    outcome = RunOutcome(spec, compose(results), results, ctx.run_dir, tuple(faults), ctx.unchecked)
    ctx.write_verdict(results, engine, outcome.overall, outcome.chaos_missing, outcome.faults)
    if chaos or outcome.overall is not True:  # the page of every chaos run and of every run that did not pass
        _page(ctx, spec)
    return outcome


def _page(ctx: RunContext, spec: RunSpec) -> None:
    """The run's page (`run.html`). A report never decides a run: a page that cannot be drawn is one line
    on stderr, and the verdict (or the error that broke the run off) stands."""
    try:
        write_run_page(ctx.run_dir, ctx.history.ops(), f"{spec.name} seed {spec.seed}")
    except Exception as exc:  # noqa: BLE001 - see above
        import sys
        print(f"share-harness: the run page of {ctx.run_dir} could not be drawn ({type(exc).__name__}: {exc}); "
              "`share-harness page` draws it again", file=sys.stderr)
