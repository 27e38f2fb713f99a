"""A random schedule from the seed: several faults of every group overlapping under the rules of
`harness.faults.schedule`, with consumers crashing and restarting meanwhile."""

import json

import pytest

from harness.faults import parse_faults
from harness.settings import reproduce_command
from ksh_fixtures.chaos import assert_chaos_verdict

pytestmark = [pytest.mark.real, pytest.mark.cluster, pytest.mark.local_only, pytest.mark.chaos]


def test_random_fault_schedule(chaos_run):
    """The schedule also leaves what a reader of the run needs: each fault started and healed in the
    history, the schedule with its seed, the run page, and a reproduce command naming both."""
    faults = parse_faults("leader,coordinator,partition,latency")
    outcome = chaos_run("crash", faults=faults, fault_interval=4.0)
    assert len(outcome.faults) >= 2, outcome.summary()
    assert_chaos_verdict(outcome)
    ops = [json.loads(line) for line in (outcome.run_dir / "history.jsonl").read_text().splitlines()]
    starts = {op["value"]["id"] for op in ops if op["f"] == "fault-start" and op["type"] == "ok"}
    heals = {op["value"]["id"] for op in ops if op["f"] == "fault-heal" and op["type"] == "ok"}
    assert starts == heals == {f.id for f in outcome.faults}
    schedule = json.loads((outcome.run_dir / "schedule.json").read_text())
    seed = outcome.spec.effective_fault_seed
    assert schedule["seed"] == seed and len(schedule["schedule"]) == len(outcome.faults)
    page = (outcome.run_dir / "run.html").read_text()  # the run's page: its plots and fault table
    assert 'class="plot"' in page and "Plotly.newPlot" in page and "<h2>Faults</h2>" in page
    assert f"--faults {','.join(faults)} --fault-seed {seed}" in reproduce_command(outcome.spec)
