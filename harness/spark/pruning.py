"""Vectorised pruning: the "commit returned" rows a slot can leave out without changing its replay.

Every slot replays its run's global rows, and among them a "commit returned" row for each commit
that returned results anywhere (a commit per poll is common: millions of rows). Such a row only
marks its process's last commit as returned, and the replay reads that mark only when the process
crashes or fails to close before its next commit starts; `idle_returns` finds the others with a few
numpy passes, `without_idle_commit_returns` drops them from an Arrow table of global rows (the
shuffle layout), and the direct layout calls `idle_returns` on the codes it reads in its first pass.
Processes are compared as int codes (`string_codes`), crash rows by the process they name
(`crash_owners`).
"""

from __future__ import annotations

import json


def without_idle_commit_returns(rows):
    """`rows` (a run's global rows, in order) without the "commit returned" rows that change nothing
    (`idle_returns`)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    f, type_ = rows["f"], rows["type"]
    is_commit = pc.equal(f, "commit")
    invoke = pc.and_(is_commit, pc.equal(type_, "invoke")).to_numpy(zero_copy_only=False)
    ok = pc.and_(is_commit, pc.equal(type_, "ok")).to_numpy(zero_copy_only=False)
    crash = pc.equal(f, "crash").to_numpy(zero_copy_only=False)
    failed_close = pc.and_(pc.equal(f, "close"), pc.equal(type_, "info")).to_numpy(zero_copy_only=False)
    if not ok.any():
        return rows
    names: dict = {}
    who = crash_owners(string_codes(rows["process"], names), crash, rows["value"], names)
    idle = idle_returns(invoke, ok, crash, failed_close, who, ok)
    return rows.filter(pa.array(~idle)) if idle.any() else rows


def idle_returns(invoke, ok, crash, failed_close, who, droppable, crashes_named: bool = True):
    """Which rows (of those `droppable` marks) are "commit returned" rows that change nothing.

    Such a row (a commit `ok` naming no share-partition, or the marker of one that did) only marks
    its process's last commit as returned, and the replay reads that mark only when the process
    crashes or fails to close, until its next commit starts. So of a process's (`who`: a code per
    row) commit invokes, commit returns, crashes and failed closes, a return is kept only when the
    next of them is a crash or failed close: the replay is the same, with a fraction of the rows (a
    commit per poll is common). Vectorised: a history holds millions of them.

    `crashes_named=False`: `who` of the crash rows is not known (their values were not read); a return is
    then also kept when any crash comes between it and its process's next event, or after it if
    there is none (keeping a return is always safe: it only repeats the mark)."""
    import numpy as np
    idle = np.zeros(len(ok), dtype=bool)
    events = invoke | ok | failed_close | (crash if crashes_named else False)
    at = np.flatnonzero(events)
    if not (ok & droppable).any() or len(at) == 0:
        return idle
    who = who[at]
    order = np.lexsort((at, who))  # by process, then position
    ends = (crash | failed_close)[at[order]]
    same_next = np.zeros(len(order), dtype=bool)
    same_next[:-1] = who[order][1:] == who[order][:-1]
    drop = (ok & droppable)[at[order]] & ~(same_next & np.append(ends[1:], False))
    if not crashes_named and crash.any():
        drop &= _no_crash_until_next(crash, at[order], same_next, len(ok))
    idle[at[order][drop]] = True
    return idle


def _no_crash_until_next(crash, here, same_next, rows: int):
    """For each event at `here` (by process, then position), whether no crash comes after it up to
    its process's next event (`same_next`: the next entry is that event), or to the end if none."""
    import numpy as np
    crashes = np.cumsum(crash)  # crashes at or before each row
    following = np.append(here[1:], rows - 1)
    following = np.where(same_next, following, rows - 1)  # the process's next event, else the end
    return crashes[following] == crashes[here]


def string_codes(column, names: dict):
    """A string column as int64 codes, the same string the same code across calls sharing `names`
    (which they extend); null is -1. Via the column's dictionary: no string is compared twice."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if not pa.types.is_dictionary(column.type):
        column = pc.dictionary_encode(column)
    words = column.dictionary.to_pylist()
    remap = np.array([names.setdefault(w, len(names)) for w in words] + [-1], dtype=np.int64)
    return remap[pc.fill_null(column.indices, len(words)).to_numpy(zero_copy_only=False)]


def crash_owners(who, crash, values, names: dict):
    """`who` (process codes from `string_codes` with `names`) with each crash row's code replaced by
    the code of the process it names in its value (a crash row is the harness's, not the process's)."""
    for row in crash.nonzero()[0]:
        value = values[int(row)].as_py()
        name = (json.loads(value) if value else {}).get("process") or None
        who[row] = -1 if name is None else names.setdefault(name, len(names))  # -1: as a null process
    return who
