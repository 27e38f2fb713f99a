"""Slot planning: how many slots (Python tasks) replay each history, and which rows go to which slot.

A slot replays some share-partitions of a run together with all of the run's global rows; the rows
of one share-partition always go to the same slot. `SlotSizes` holds the knobs (the front,
`harness.spark.engine`, owns their values): at most `slot_rows` rows per slot; a file needing at
most `direct_slots` slots takes the direct layout (each of its slots reads the whole file), and is
split further to use idle cores only down to `min_slot_rows` rows per slot. Bigger files take the
shuffle layout, in whole waves of tasks.

Two ways to name a row's slot, one per layout: `row_slots` (the direct layout, in numpy: a CRC of
the topic, the same in every process) and `slot_values` (the shuffle layout: for each slot, a value
Spark's hash partitioning sends to that slot's task, so no two slots share a task).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class SlotSizes:
    """The knobs of slot planning (see the module docstring)."""

    slot_rows: int
    direct_slots: int
    min_slot_rows: int


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def by_layout(sizes: list[int], layout: str, knobs: SlotSizes) -> tuple[list[int], list[int]]:
    """The positions of the files (of `sizes` rows each) that take the direct layout, and those that
    take the shuffle: `layout` "direct" or "shuffle" sends all one way, "auto" by their size."""
    direct = [i for i, rows in enumerate(sizes)
              if layout == "direct" or (layout == "auto" and _ceil_div(rows, knobs.slot_rows) <= knobs.direct_slots)]
    shuffled = sorted(set(range(len(sizes))) - set(direct))
    return direct, shuffled


def direct_tasks(files: list[Path], direct: list[int], sizes: list[int], cores: int,
                 knobs: SlotSizes) -> list[tuple[int, str, int, int]]:
    """The direct layout's tasks: (run, path, slot, slots) for every slot of each file at `direct`. A
    file gets the slots its rows need, more to use idle `cores` while a slot keeps `min_slot_rows`."""
    return [(i, str(files[i].resolve()), slot, n) for i in direct
            for n in [max(_ceil_div(sizes[i], knobs.slot_rows),
                          min(cores, _ceil_div(sizes[i], knobs.min_slot_rows)), 1)]
            for slot in range(n)]


def shuffle_slot_count(rows: int, cores: int, knobs: SlotSizes) -> int:
    """The shuffle layout's slots for `rows` rows in all: whole waves of `cores` tasks."""
    return cores * max(1, _ceil_div(rows, cores * knobs.slot_rows))


def slot_values(spark, n: int) -> list[int]:
    """For each slot 0..n-1, a value that Spark's hash partitioning into n partitions sends to that
    partition (so slots map one to one onto tasks instead of colliding)."""
    from pyspark.sql import functions as F
    found: dict[int, int] = {}
    for row in spark.range(64 * n).select("id", F.pmod(F.hash("id"), F.lit(n)).alias("p")).collect():
        found.setdefault(row["p"], row["id"])
    return [found[i] for i in range(n)]


def row_slots(topic, partition, slots: int):
    """Each row's slot (0..slots-1) by its share-partition, -1 for a row naming none: the same
    in every process (a CRC of the topic name, not Python's salted hash)."""
    import zlib

    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    if isinstance(topic, pa.ChunkedArray):
        topic = topic.combine_chunks()
    encoded = topic if pa.types.is_dictionary(topic.type) else pc.dictionary_encode(topic)
    crcs = np.array([zlib.crc32(t.encode()) for t in encoded.dictionary.to_pylist()] or [0], dtype=np.int64)
    named = crcs[pc.fill_null(encoded.indices, 0).to_numpy(zero_copy_only=False)]
    part = pc.fill_null(partition, -1).to_numpy(zero_copy_only=False).astype(np.int64)
    keyed = pc.is_valid(topic).to_numpy(zero_copy_only=False) & (part >= 0)
    return np.where(keyed, (part + named * 7919) % slots, -1)
