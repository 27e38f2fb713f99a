"""Progress of a long run in the terminal: its phase, records produced and settled, faults applied and
healed, what the drain still waits for.

A thread reads the run's history as it grows (only the operations new since its last look) once a
second. On a terminal, a `rich` progress bar (settled of produced) with the other figures beside it,
redrawn in place; elsewhere (a CI log, a pipe) one plain line when the phase changes and every
`plain_every_s` seconds. `share-harness run` shows it unless `--quiet`; pytest shows nothing beyond
its own lines (a run inside a test writes no progress).
"""

from __future__ import annotations

import sys
import threading
import time
from dataclasses import dataclass
from typing import IO

from harness.history.store import HistoryWriter

#: the harness's phase operations -> the phase they start
_PHASES = {"drain": "drain", "recover": "recover", "produce-flush": "flush"}


@dataclass
class Figures:
    phase: str = "produce"
    produced: int = 0  # acknowledged by the broker
    settled: int = 0  # final acknowledgements (ACCEPT, REJECT) the consumers sent
    faults_applied: int = 0
    faults_not_applied: int = 0
    faults_healed: int = 0

    def line(self) -> str:
        faults = (f", faults {self.faults_applied} applied / {self.faults_healed} healed"
                  + (f" / {self.faults_not_applied} NOT applied" if self.faults_not_applied else "")
                  if self.faults_applied or self.faults_not_applied else "")
        left = max(0, self.produced - self.settled)
        return (f"{self.phase}: produced {self.produced}, settled {self.settled}{faults}"
                + (f", {left} to settle" if self.phase == "drain" else ""))


class RunProgress:
    """`with RunProgress(history, name): ...` shows the run's progress while the block runs."""

    def __init__(self, history: HistoryWriter, name: str, out: IO[str] | None = None,
                 tty: bool | None = None, interval_s: float = 1.0, plain_every_s: float = 15.0) -> None:
        self.history, self.name = history, name
        self.out = out or sys.stderr
        self.tty = self.out.isatty() if tty is None else tty
        self.interval_s, self.plain_every_s = interval_s, plain_every_s
        self.figures = Figures()
        self._seen = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def update(self) -> Figures:
        """Fold the operations written since the last update into the figures."""
        new = self.history.ops_since(self._seen)
        f = self.figures
        for op in new:
            v = op.value if isinstance(op.value, dict) else {}
            if op.f == "produce" and op.type == "ok":
                f.produced += 1
            elif op.f == "acknowledge" and op.type == "ok":
                f.settled += sum(1 for r in v.get("records", ()) if r.get("type") in ("ACCEPT", "REJECT"))
            elif op.f == "fault-start":
                f.phase = "faults" if f.phase == "produce" else f.phase
                f.faults_applied += op.type == "ok"
                f.faults_not_applied += op.type == "fail"
            elif op.f == "fault-heal" and op.type == "ok":
                f.faults_healed += 1
            elif op.f in _PHASES and op.type == "invoke" and op.process == "harness":
                f.phase = _PHASES[op.f]
        self._seen += len(new)
        return f

    def __enter__(self) -> RunProgress:
        self._thread = threading.Thread(target=self._show, name="ksh-progress", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def _show(self) -> None:
        if self.tty:
            self._show_live()
        else:
            self._show_plain()

    def _show_plain(self) -> None:
        last_phase, last_at = None, 0.0
        while True:
            stopped = self._stop.wait(self.interval_s)
            f = self.update()
            now = time.monotonic()
            if stopped or f.phase != last_phase or now - last_at >= self.plain_every_s:
                print(f"{self.name}: {f.line()}", file=self.out, flush=True)
                last_phase, last_at = f.phase, now
            if stopped:
                return

    def _show_live(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
        columns = (TextColumn("[bold]{task.fields[phase]:8}"), BarColumn(), MofNCompleteColumn(),
                   TextColumn("settled of produced{task.fields[faults]}"), TimeElapsedColumn())
        with Progress(*columns, console=Console(file=self.out), transient=False) as bar:
            task = bar.add_task(self.name, total=None, phase="produce", faults="")
            while True:
                stopped = self._stop.wait(self.interval_s)
                f = self.update()
                faults = (f" | faults {f.faults_applied} applied, {f.faults_healed} healed"
                          + (f", {f.faults_not_applied} NOT applied" if f.faults_not_applied else "")
                          if f.faults_applied or f.faults_not_applied else "")
                bar.update(task, completed=f.settled, total=max(f.produced, 1), phase=f.phase, faults=faults)
                if stopped:
                    return
