"""What a property's judges may read of the one replay: `ReplayView`.

The replay (`harness.checkers.replay.Replay`) walks a history once and calls each property's judges
at the events they judge (a delivery, a settled acknowledgement, a start-offset read, the end). A judge
is handed the replay as a `ReplayView`: the run's settings as the history's `config` states them, the
records' ledger, the evidence of faults and sessions, the findings it reports into, and the few tables
the replay keeps for the judges. A judge reads these and reports findings; `start_read` is the one
call that moves the replay (a start-offset read the judge has passed). `tests/unit/checkers/test_view.py`
proves the replay offers all of it and that no judge reads anything else.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:  # (annotations only: the view adds no import between the checkers' modules)
    from harness.checkers.evidence import Evidence
    from harness.checkers.findings import Findings
    from harness.checkers.ledger import Ledger, Rec
    from harness.checkers.no_redelivery import AfterTerminal
    from harness.model.profiles import PhasedProfile


class ReplayView(Protocol):
    # the run's settings (its history's `config` operation)
    config: dict[str, Any]
    limit: int  # the delivery-count limit
    lock_ns: int  # the acquisition lock's duration
    tol_ns: int  # how early before its deadline a lock may end unseen
    latest: bool  # the group starts at the latest offset (or by duration): what came before is not owed
    by_duration_ns: int | None  # share.auto.offset.reset by_duration:<d>, in ns (None: not by duration)
    wall_clock_ms: Any  # the wall clock at the history's time 0 (None: not recorded)
    profile: PhasedProfile  # the release's reference model, as a rolling upgrade moves it
    # what the replay knows and the judges report into
    ledger: Ledger
    evidence: Evidence
    findings: Findings
    after_terminal: AfterTerminal
    # tables the replay keeps for the judges
    offset_reads: dict[str, dict[tuple, int]]
    added_partitions: dict[str, int]
    excused_reads: dict[tuple, str]
    final_start: dict[tuple, tuple[int, int]]
    pending_skips: dict[tuple, list]

    def session_released(self, rec: Rec) -> bool: ...

    def start_read(self, index: int, time: int, tp: tuple, start: int) -> None: ...
