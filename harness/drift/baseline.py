"""The tested set's counterpart of a drift run, for the tests the run failed: are they drift, or did they fail before?

A run on the newest set that fails a test no deviation or known-bug row explains is run again, those tests only,
with what the tested set pins: the client at its tested version (franz-go and spring-kafka told so explicitly),
the newest Kafka release the harness knows of the same line, and the job's own interpreter (in `tox -e latest`,
the lock's packages; the note says when it is not). A test that fails there too is not drift; one that passes
there newly fails. A run nothing of which moved is its own baseline and is not run again.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Sequence

from harness.drift import outcomes, runner
from harness.drift.versions import line_of
from harness.errors import HarnessError
from harness.kafka.spring_jars import SPRING_KAFKA_VERSION
from harness.kafka.versions import newest_known
from harness.tested_set import go_pins, locked_python, python_drift

FRANZ_GO = "github.com/twmb/franz-go"


def to_rerun(run: outcomes.Run, rows: Sequence[outcomes.Row]) -> list[str]:
    """The tests of `run` that failed with no row to explain them and a verdict (its worker did not die), if
    anything under the run moved; none otherwise."""
    if run.moved == ():
        return []
    return sorted({f.nodeid for f in outcomes.failures([run], rows, None) if f.kind == outcomes.NEW})


def tested_target(client: str, kafka_version: str) -> runner.Target:
    """`client` at the version the tested set pins, on the newest release the harness knows of `kafka_version`'s
    line (one of the tested set's)."""
    kafka = newest_known(line_of(kafka_version))
    env: tuple[tuple[str, str], ...] = ()
    if client == "confluent":
        version = locked_python().get("confluent-kafka", "unknown")
    elif client == "franz":
        version = go_pins()[FRANZ_GO]
        env = ((runner.FRANZ_ENV, version),)
    elif client == "spring":
        version = SPRING_KAFKA_VERSION
        env = ((runner.SPRING_ENV, version),)
    else:
        version = kafka
    return runner.Target(client, version, kafka, ("--kafka-version", kafka), env, ())


def environment_note() -> str:
    """How far the job's interpreter is from the lock (the baseline's Python set)."""
    try:
        drift = python_drift()
    except HarnessError as exc:
        return f"its Python set unknown ({exc})"
    if not drift:
        return "with the lock's Python packages"
    shown = ", ".join(f"{name} {have or 'missing'}" for name, _, have in drift[:3])
    return f"with Python packages that differ from the lock in {len(drift)} ({shown}{', ...' if len(drift) > 3 else ''})"


def with_baseline(run: outcomes.Run, rows: Sequence[outcomes.Row], workers: int, out: Path,
                  repo: Path) -> outcomes.Run:
    """`run` with the baseline of the tests it failed (`to_rerun`), run on the tested set; `run` unchanged if
    there is none to run. A baseline that could not be run leaves the failures compared with nothing."""
    tests = to_rerun(run, rows)
    if not tests:
        return run
    target = tested_target(run.client, run.kafka_version)
    print(f"drift: {len(tests)} failed test(s) of {run.label} run again on the tested set ({target.client} "
          f"{target.client_version} on Kafka {target.kafka_version})", flush=True)
    try:
        base = runner.conformance(Path(sys.executable), target, tuple(tests), min(workers, len(tests)), out, repo,
                                  suffix="-tested")
    except HarnessError as exc:
        return dataclasses.replace(run, baseline_note=f"the tested set's run of its failures could not be made: {exc}")
    note = (f"the same tests on the tested set: {target.client} {target.client_version} on Kafka "
            f"{target.kafka_version}, {environment_note()}")
    if base.why:
        return dataclasses.replace(run, baseline_note=f"{note}: incomplete ({base.why})")
    return dataclasses.replace(run, baseline=base.outcomes, baseline_note=note)
