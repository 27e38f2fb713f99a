"""First suite: real share consumers on real topics, each run drained and checked record by record.

Every run is checked by all seven checkers (no loss, delivery counts, batch
order, exclusive acquisition, no redelivery after acknowledgement, one result
per acknowledgement, durable start offsets) and must pass all of them.
"""

import pytest

pytestmark = [pytest.mark.real, pytest.mark.cluster]


def _assert_verdict(outcome, consumers: int) -> None:
    results = {r.checker: r for r in outcome.results}
    assert outcome.overall is True, outcome.summary()  # the checkers, and the chaos asked for happened
    assert results["no-loss"].stats["accepted_or_rejected"] == results["no-loss"].stats["produced_ok"] > 0
    # (an implementation with no durable state to read names durable-state NOT CHECKED: not among the results)
    assert len(results) == 7 - len(outcome.not_checked) and all(r.valid is True for r in results.values())
    if "durable-state" not in outcome.not_checked:
        assert results["durable-state"].stats["start_offset_reads"] >= 1
    processes = {op.process for op in _ops(outcome) if op.f == "start" and op.type == "ok"}
    assert len(processes) == consumers, f"expected {consumers} consumers to start, saw {sorted(processes)}"


def _ops(outcome):
    from harness.history.store import read_history
    return read_history(outcome.run_dir / "history.jsonl")


def test_three_consumers_one_partition(share_run):
    outcome = share_run(topic_partitions=1, consumers=3)
    _assert_verdict(outcome, 3)


def test_three_consumers_three_partitions(share_run):
    outcome = share_run(topic_partitions=3, consumers=3, behaviour="accept-explicit")
    _assert_verdict(outcome, 3)


def test_more_consumers_than_partitions(share_run):
    # The records arrive over 6 s (50 a second, not 200): at 200 a second the 300 were produced in 1.5 s, and the
    # two consumers that joined first could take them all before the other three joined (seen once in CI).
    outcome = share_run(topic_partitions=2, consumers=5, produce_rate=50.0)
    _assert_verdict(outcome, 5)
    polled = {op.process for op in _ops(outcome) if op.f == "poll" and op.type == "ok"}
    # Share groups let several consumers share a partition: more than 2 must have made progress.
    assert len(polled) > 2, f"only {sorted(polled)} received records from 2 partitions"
