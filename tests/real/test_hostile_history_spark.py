"""Issue 20 on the Spark engine: runs without a history stay out of the Spark job but are in the
returned checks as unknown; a hostile share-state batch is checked as a range on the workers too."""

from __future__ import annotations


import pytest

from harness.check import check_histories
from harness.check.inprocess import check_inprocess
from harness.checkers import compose, verdict_word
from harness.history.events import EventTable
from harness.spark.engine import check_files
from tests.support.builders import T, base  # noqa: E402

pytestmark = [pytest.mark.spark, pytest.mark.real]


@pytest.fixture(scope="module", autouse=True)
def spark():
    from harness.spark.session import spark_session, stop
    yield spark_session("local[2]")
    stop()


def test_spark_folder_check_reports_runs_without_history_as_unknown(tmp_path):
    runs = tmp_path / "runs"
    good = runs / "20260101-000000-good"
    good.mkdir(parents=True)
    EventTable.from_ops(base().ops).write_parquet(good / "history.parquet")
    (runs / "20260101-000001-empty").mkdir()
    (runs / "20260101-000002-crashed" / "logs").mkdir(parents=True)
    (runs / "latest").symlink_to(good.name)
    checks, engine = check_histories([runs], "spark")
    assert engine == "spark"
    assert [verdict_word(c.valid) for c in checks] == ["PASS", "UNKNOWN", "UNKNOWN"]
    assert compose([r for c in checks for r in c.results]) == "unknown"
    assert (good / "check-spark.json").is_file()
    assert not list((runs / "20260101-000001-empty").iterdir())


@pytest.mark.parametrize("layout", ["direct", "shuffle"])
def test_spark_checks_a_three_billion_offset_state_batch_as_a_range(tmp_path, layout):
    h = base()
    h.add("admin", "invoke", "share-state", {"group": "g"})
    h.add("admin", "ok", "share-state", {"group": "g", "partitions": [
        {"topic": T, "partition": 0, "start_offset": 0, "batches": [[0, 3_000_000_000, 2, 1]]},
        {"topic": T, "partition": 1, "start_offset": 1, "batches": []}]})
    file = EventTable.from_ops(h.ops).write_parquet(tmp_path / "history.parquet")
    [check] = check_files([file], layout=layout)
    assert check.valid is True and check_inprocess(file).valid is True
