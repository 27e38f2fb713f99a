"""The Spark engine's pure parts, without Spark: how rows are spread to slots and which "commit
returned" rows a slot may leave out (the differential tests in test_spark_engine.py compare whole
verdicts; these pin the corner cases those histories rarely reach)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from harness.spark.pruning import idle_returns as _idle_returns
from harness.spark.slots import row_slots as _slots
from harness.spark.tables import distinct as _unique


def _rows(*events):
    """(kind, process) per row -> the masks and codes `_idle_returns` takes."""
    kinds = [k for k, _ in events]
    who = np.array([p for _, p in events], dtype=np.int64)
    mask = lambda kind: np.array([k == kind for k in kinds])  # noqa: E731
    return mask("invoke"), mask("ok"), mask("crash"), mask("failed-close"), who


def test_a_return_is_kept_only_when_a_crash_or_failed_close_of_its_process_comes_next():
    invoke, ok, crash, failed, who = _rows(("invoke", 0), ("ok", 0), ("invoke", 0), ("ok", 0), ("crash", 0),
                                           ("invoke", 1), ("ok", 1), ("failed-close", 1), ("ok", 1))
    idle = _idle_returns(invoke, ok, crash, failed, who, ok)
    assert idle.tolist() == [False, True, False, False, False, False, False, False, True]


def test_with_crashes_of_unknown_process_a_return_before_any_crash_is_kept():
    """A direct slot does not read crash rows' values (which process crashed): a return followed by
    any crash before its process's next event (or the end) is kept; keeping one is always safe."""
    invoke, ok, crash, failed, who = _rows(("invoke", 0), ("ok", 0), ("crash", 9), ("invoke", 0),
                                           ("ok", 0), ("invoke", 0), ("ok", 1), ("crash", 9))
    idle = _idle_returns(invoke, ok, crash, failed, who, ok, crashes_named=False)
    assert idle.tolist() == [False, False, False, False, True, False, False, False]
    # knowing the crashes were of another process (9), the first return changes nothing either
    idle = _idle_returns(invoke, ok, crash, failed, who, ok)
    assert idle.tolist() == [False, True, False, False, True, False, True, False]


def test_only_droppable_returns_are_left_out():
    invoke, ok, crash, failed, who = _rows(("invoke", 0), ("ok", 0), ("ok", 0), ("invoke", 0))
    droppable = np.array([False, False, True, False])  # a slot's own commit results are never left out
    assert _idle_returns(invoke, ok, crash, failed, who, droppable).tolist() == [False, False, True, False]


def test_slots_are_stable_across_processes_and_name_no_slot_for_global_rows():
    topic = pa.array(["a", "b", None, "a", "a"])
    partition = pa.array([0, 1, 0, -1, 3], pa.int32())
    where = _slots(topic, partition, 4)
    assert where[2] == -1 and where[3] == -1  # no topic; no partition
    assert all(0 <= w < 4 for w in where[[0, 1, 4]])
    # the same share-partition gets the same slot whatever else is in the batch (a CRC, not hash())
    assert _slots(pa.array(["a"]), pa.array([3], pa.int32()), 4)[0] == where[4]
    assert _slots(pa.array(["a"]).dictionary_encode(), pa.array([3], pa.int32()), 4)[0] == where[4]


def test_unique_of_sorted_and_unsorted_indexes():
    assert _unique(np.array([], dtype=np.int64)).tolist() == []
    assert _unique(np.array([5])).tolist() == [5]
    assert _unique(np.array([1, 1, 2, 5, 5])).tolist() == [1, 2, 5]
    assert _unique(np.array([5, 1, 5, 2])).tolist() == [1, 2, 5]
