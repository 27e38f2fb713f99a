"""Which histories a check is asked for, and whether they can be read: before any engine runs.

`history_files` turns the paths a user names (history files, run directories, folders of runs)
into the histories to check; a run directory without a history stays in the list as itself, so its
check is unknown (`missing_history` says why), never dropped. Bad input is a one-line HarnessError
naming the path. `check_schema` (the Parquet footer) and `check_values` (what the replay reads,
sampled on the driver) vet a Parquet history before a Spark job reads it.
"""

from __future__ import annotations

from pathlib import Path

from harness.errors import HarnessError
from harness.history.events import check_arrow_schema, check_event_values
from harness.history.store import open_history, require_regular

#: What a run directory holds from its start on (`harness.report.rundir`): a directory with any of them
#: is a run, and must hold a history.
RUN_MARKS = ("spec.json", "verdict.json", "logs", "run.html", "schedule.json")


def history_files(paths: list[Path], parquet_only: bool = True) -> list[Path]:
    """The histories `paths` name: history files, run directories (their history.parquet, else
    history.jsonl) or folders of run directories. The spark engine reads Parquet only. A path that
    names none is a one-line error naming it.

    A run directory without a history (or with an empty history file) is in the list as itself (a
    directory; `missing_history` says why): its check is unknown, never dropped. In a folder of runs
    every subdirectory is a run (`is_run`), but hidden ones, links to a run already listed (`latest`)
    and a test session's cluster directory."""
    found: list[Path] = []
    for path in paths:
        found.extend(_histories_at(Path(path), parquet_only))
    for file in found:
        if file.suffix == ".parquet" and file.is_file() and missing_history(file) is None:
            check_schema(file)
    return found


def _histories_at(path: Path, parquet_only: bool) -> list[Path]:
    """The histories one named path holds (see `history_files`)."""
    if path.is_file():
        return [_history_file(path, parquet_only)]
    history = run_history(path, parquet_only)
    if history is not None:
        return [history]
    if path.is_dir() and is_run(path, explicit=True):
        if parquet_only and run_history(path, False) is not None:
            raise HarnessError(f"{path} holds no history.parquet, only {run_history(path, False).name}: "
                               f"check it with --engine inprocess")
        return [path]  # a run without its history: unknown
    if path.is_dir():
        return _folder_of_runs(path, parquet_only)
    if path.exists():  # a fifo, a device (a link to /dev/zero), a socket: never read (a read would block)
        raise HarnessError(f"{path} is not a regular file (a fifo, a device or a socket): pass a run directory, "
                           f"a history file or a folder of runs")
    raise HarnessError(f"{path} does not exist: pass a run directory, a history file or a folder of runs")


def _history_file(path: Path, parquet_only: bool) -> Path:
    """`path`, a history file named on its own: of a kind the engine reads, holding an operation."""
    if path.suffix != ".parquet" and (parquet_only or path.suffix != ".jsonl"):
        raise HarnessError(f"{path} is not a {'Parquet' if parquet_only else '.parquet or .jsonl'} history"
                           + (" (check a .jsonl with --engine inprocess)" if parquet_only else ""))
    if _holds_no_operation(path):  # named on its own: bad input (in a run directory: unknown)
        raise HarnessError(f"the history {path} holds no operation: pass the history of a run that "
                           f"wrote one (an empty history.jsonl is a run that did not finish)")
    return path


def _folder_of_runs(path: Path, parquet_only: bool) -> list[Path]:
    """The runs of folder `path`: each one's history, or the run itself if it has none."""
    runs: list[Path] = []
    seen: set[Path] = set()
    subdirs = sorted((d for d in path.iterdir() if d.is_dir() and not d.name.startswith(".")),
                     key=lambda d: (d.is_symlink(), d.name))  # `latest` after the run it names
    for d in subdirs:
        real = d.resolve()
        if real in seen:
            continue
        seen.add(real)
        history = run_history(d, parquet_only)
        if history is not None:
            runs.append(history)
        elif is_run(d):
            runs.append(d)
    if not runs:
        raise HarnessError(f"{path} holds no run with a history{'.parquet' if parquet_only else ''}: pass "
                           f"run directories, history files or a folder of runs (e.g. reports/runs)")
    return sorted(runs, key=lambda r: str(r))


def is_run(d: Path, explicit: bool = False) -> bool:
    """Whether directory `d` is a run that must hold a history: it holds a run's files (`RUN_MARKS`, a
    history.* or check-*.json), or, in a folder of runs (not `explicit`), it is empty (a run that wrote
    nothing). Not a run: a test session's cluster directory (`nodes/`, no spec.json)."""
    try:
        names = {p.name for p in d.iterdir()}
    except OSError:
        return not explicit  # unreadable: in a folder of runs, a run we cannot check
    if "nodes" in names and "spec.json" not in names:
        return False
    if any(n in names for n in RUN_MARKS) or any(n.startswith("history.") or
                                                 (n.startswith("check-") and n.endswith(".json")) for n in names):
        return True
    return not explicit and not names


def _holds_no_operation(path: Path) -> bool:
    """A history file without one operation: 0 bytes, only blank lines, or a Parquet file of no rows."""
    try:
        if path.stat().st_size == 0:
            return True
        if path.suffix == ".parquet":
            import pyarrow.parquet as pq
            return pq.ParquetFile(path).metadata.num_rows == 0
        with open_history(path) as handle:  # a regular file, opened without blocking
            return all(not line.strip() for line in handle)
    except OSError:
        return False  # unreadable: the loader names it
    except Exception:  # not Parquet at all: the schema check names it
        return False


def missing_history(path: Path) -> str | None:
    """Why `path` (from `history_files`) holds no history to check, or None if it holds one: a run
    directory without a history, an empty history file."""
    path = Path(path)
    if path.is_dir():
        if (path / "history.jsonl").is_file():  # the Spark engine reads Parquet only
            return f"no history.parquet in {path}, only history.jsonl: check it with --engine inprocess"
        return f"no history in {path}: the run did not finish writing it"
    try:
        if path.stat().st_size == 0:
            return f"the history {path} is empty (0 bytes): the run did not finish writing it"
    except OSError:
        return f"no history at {path}: the run did not finish writing it"
    return None


def run_history(run_dir: Path, parquet_only: bool) -> Path | None:
    """The history file of run directory `run_dir` (history.parquet, else history.jsonl unless
    `parquet_only`), or None."""
    for name in ("history.parquet",) if parquet_only else ("history.parquet", "history.jsonl"):
        if (run_dir / name).is_file():
            return run_dir / name
        if (run_dir / name).exists() and not (run_dir / name).is_dir():  # a fifo, a device: bad input, not
            raise HarnessError(f"the history {run_dir / name} is not a regular file (a fifo, a device or a "  # missing
                               f"socket): replace it with the run's history, or remove it")
    return None


def check_schema(file: Path) -> None:
    """The footer's schema: every column, of its type (`check_arrow_schema`)."""
    import pyarrow.parquet as pq

    require_regular(file)  # a fifo or a device: one line, never a read that blocks
    try:
        schema = pq.read_schema(file)
    except Exception as exc:  # ArrowInvalid, OSError
        raise HarnessError(f"unreadable Parquet history {file}: {str(exc).splitlines()[0]}") from None
    check_arrow_schema(schema, file)


def check_values(file: Path) -> None:
    """The values the replay reads, checked on the driver before a Spark job (`check_event_values`): a
    scan of the `f` column, a few rows decoded, and every row's op (`OpRows`: indexes, times,
    partitions), as the in-process engine checks them. Damaged data pages are left to the job (it names
    the file)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        handle = pq.ParquetFile(file, read_dictionary=["f"])
        batches = handle.iter_batches(batch_size=262_144, columns=["index", "time", "process", "type", "f",
                                                                   "topic", "partition", "offset", "value"])
        check_event_values(batches, file)
    except (OSError, pa.ArrowException):
        return


def events_in(files: list[Path]) -> int:
    """The rows of the Parquet histories `files`, from their footers."""
    import pyarrow.parquet as pq  # (deferred: pyarrow is loaded only when a Parquet history is sized)
    return sum(pq.ParquetFile(f).metadata.num_rows for f in files)
