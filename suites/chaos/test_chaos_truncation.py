"""Log truncation: records a leader acknowledged (acks=1) but never replicated are cut from the log
when another replica takes over. They must not count as lost; no record may be delivered from a
truncated offset unless the history shows why (an unclean election, a named allowance)."""

import json

import pytest

from ksh_fixtures.chaos import assert_chaos_verdict

pytestmark = [pytest.mark.real, pytest.mark.cluster, pytest.mark.local_only, pytest.mark.chaos]


@pytest.mark.parametrize("fault", ["truncate", pytest.param("truncate-unclean", marks=pytest.mark.nightly)])
def test_truncation(chaos_run, fault):
    outcome = chaos_run("accept-explicit", fault=fault)
    assert_chaos_verdict(outcome, fault)
    ops = [json.loads(line) for line in (outcome.run_dir / "history.jsonl").read_text().splitlines()]
    truncated = [op for op in ops if op["f"] == "truncated"]
    assert truncated and all(op["value"]["records"] for op in truncated), "no truncated records were recorded"
    no_loss = next(r for r in outcome.results if r.checker == "no-loss")
    assert no_loss.stats["truncated"] == sum(len(op["value"]["records"]) for op in truncated), outcome.summary()
