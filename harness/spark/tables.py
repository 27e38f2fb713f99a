"""Arrow tables of history rows, as the Spark layouts hand them to the replay.

The small helpers both layouts and the merge share: whether an int array is sorted, its distinct
values, a table put back in the history's own order, its rows as replay tuples (a chunk at a time)
and a table as Arrow IPC bytes (how the shuffle layout broadcasts each run's global rows).
Everything imports lazily: the module is loaded by the front, which must not need Arrow to start.
"""

from __future__ import annotations

from harness.history.events import EventTable


def is_sorted(values) -> bool:
    """Whether the int array `values` never decreases."""
    import numpy as np
    return len(values) < 2 or bool(np.all(values[1:] >= values[:-1]))


def distinct(values):
    """The distinct values of an int array (in one pass when sorted, as a history's indexes are)."""
    import numpy as np
    if len(values) < 2 or not is_sorted(values):
        return np.unique(values)
    return values[np.concatenate(([True], values[1:] != values[:-1]))]


def in_order(table):
    """`table`'s rows by (index, seq): the history's own order. The rows come as runs already in
    `seq` order (each file split's, and the global rows), which a stable sort merges cheaply."""
    import numpy as np
    seq = table["seq"].to_numpy()
    if len(seq) < 2 or (np.all(seq[1:] > seq[:-1]) and is_sorted(table["index"].to_numpy())):
        return table  # already in order (e.g. one file's global rows): no copy
    order = np.argsort(seq, kind="stable")
    index = table["index"].to_numpy()[order]
    if not is_sorted(index):  # not in index order: sort by both
        order = order[np.argsort(index, kind="stable")]
    return table.take(order)


def replay_rows(table, chunk: int = 65_536):
    """The rows of an Arrow event table as replay tuples, converted a chunk at a time (bounded memory)."""
    import pyarrow as pa

    for batch in table.to_batches(max_chunksize=chunk):
        yield from EventTable.from_arrow(pa.Table.from_batches([batch])).rows()


def ipc_bytes(table) -> bytes:
    """`table` as one Arrow IPC stream."""
    import pyarrow as pa
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()
