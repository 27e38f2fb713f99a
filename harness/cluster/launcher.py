"""A launcher process: an implementation under test that runs as one child of ours, prints a ready line and
then answers one command per stdin line with one JSON line (kfake's `harness/go/kfakelauncher`, librdkafka's
mock in `harness.cluster.rdmock`).

`Launcher` owns the child, its pipes and the thread that reads its answers: `start` spawns it and returns
its ready line, `command` sends one line and returns its answer, `close` closes its stdin (a launcher exits
at the end of its input, so it never outlives the harness), stops it if it does not and closes its output.
One answer per command, in order: a command left unanswered in time makes the channel unusable (a late
answer would be read as the next command's), so every later command fails at once, naming why.
"""

from __future__ import annotations

import json
import queue
import shutil
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from harness.errors import HarnessError
from harness.sys.procs import ManagedProcess, spawn

if TYPE_CHECKING:
    from harness.cluster.inspect import ClusterInspector


class LaunchedCluster:
    """What a cluster run by a launcher shares (kfake's, the mock's): no controllers, an inspector once started,
    its launcher's log at `<run_dir>/<LOG>/<LOG>.log`, start and close as a context manager. A subclass sets
    `LOG`, `run_dir` and `_inspector`, and defines `start` and `close`."""

    LOG = ""
    run_dir: Path
    _inspector: ClusterInspector | None

    @property
    def controller_ids(self) -> list[int]:
        return []

    @property
    def inspector(self) -> ClusterInspector:
        if self._inspector is None:
            raise AttributeError(f"the {self.LOG} cluster has not started")
        return self._inspector

    @property
    def log_path(self) -> Path:
        return self.run_dir / self.LOG / f"{self.LOG}.log"

    def collect_logs(self, dest: Path) -> list[Path]:
        if not self.log_path.is_file():
            return []
        dest.mkdir(parents=True, exist_ok=True)
        return [Path(shutil.copy(self.log_path, dest / self.log_path.name))]

    def start(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()


class Launcher:
    """The child `name` (`what`: how messages name it, "the kfake launcher"), its output answered line by line."""

    def __init__(self, name: str, what: str, log_path: Path) -> None:
        self.name = name
        self.what = what
        self.log_path = log_path
        self._proc: ManagedProcess | None = None
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._reader: threading.Thread | None = None
        self._broken = ""  # why the command channel cannot be trusted any more (an answer came too late)
        self._lock = threading.Lock()

    def start(self, args: Sequence[str], timeout: float, env: dict[str, str] | None = None) -> dict[str, Any]:
        """Spawn the launcher and return its ready line ({"event": "ready", ...}); one line if it gives none."""
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._lines = queue.Queue()
        self._broken = ""
        self._proc = spawn(self.name, args, log_path=self.log_path, stdout_pipe=True, stdin_pipe=True, env=env)
        self._reader = threading.Thread(target=self._read_stdout, args=(self._proc, self._lines),
                                        name=f"{self.name}-stdout", daemon=True)
        self._reader.start()
        ready = self._next_answer(timeout, "its ready line")
        if ready.get("event") != "ready":
            raise HarnessError(f"{self.what}'s first line was not its ready line: {ready}")
        return ready

    @property
    def running(self) -> bool:
        return self._proc is not None

    def died(self) -> str | None:
        """Why the launcher is gone (it exited), or None while it runs: a wait's `fatal`."""
        proc = self._proc
        if proc is not None and not proc.alive():
            return f"{self.what} exited ({proc.exit_code()}); its log: {self.log_path}"
        return None

    def close(self) -> None:
        """Close its stdin (it exits), stop it if it does not, close its output. Safe to call twice."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        try:
            if proc.popen.stdin is not None:
                proc.popen.stdin.close()
        except OSError:
            pass
        proc.stop(timeout=10)
        if self._reader is not None:
            self._reader.join(5)  # it ends at the end of the launcher's output
        if proc.popen.stdout is not None:
            proc.popen.stdout.close()
        self._reader = None

    def command(self, line: str, key: str, refused: str | None = None) -> dict[str, Any]:
        """Send one command and return its answer, which must hold `key` (`refused`: how a refusal is named)."""
        proc = self._proc
        if proc is None or proc.popen.stdin is None:
            raise HarnessError(f"{self.what} does not run: cannot {line!r}")
        with self._lock:
            if self._broken:
                raise HarnessError(f"{self.what}'s commands are out of step ({self._broken}): cannot {line!r}")
            try:
                proc.popen.stdin.write(line.encode() + b"\n")
                proc.popen.stdin.flush()
            except OSError as exc:
                raise HarnessError(f"{self.what} did not take {line!r}: {exc}") from None
            try:
                answer = self._next_answer(10.0, f"an answer to {line!r}")
            except HarnessError as exc:
                self._broken = str(exc)
                raise
        if "error" in answer:
            raise HarnessError(f"{refused or self.what} refused {line!r}: {answer['error']}")
        if key not in answer:
            raise HarnessError(f"{self.what} answered {line!r} with {answer}, which has no {key!r}")
        return answer

    @staticmethod
    def _read_stdout(proc: ManagedProcess, lines: queue.Queue) -> None:
        assert proc.popen.stdout is not None
        try:
            for raw in proc.popen.stdout:
                lines.put(raw.decode(errors="replace").strip())
        except (OSError, ValueError):  # closed under us by `close`
            pass
        lines.put(None)  # end of output: the launcher exited

    def _next_answer(self, timeout: float, what: str) -> dict[str, Any]:
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            raise HarnessError(f"{self.what} gave no {what} within {timeout:g} s; its log: {self.log_path}") from None
        if line is None:
            self._lines.put(None)  # every later read sees the end too, at once
            raise HarnessError(f"{self.what} exited before {what}: {last_line(self.log_path)} "
                               f"(its log: {self.log_path})")
        try:
            answer = json.loads(line)
        except ValueError:
            raise HarnessError(f"{self.what} printed {line!r} where it should give {what}") from None
        return answer if isinstance(answer, dict) else {"error": f"not an object: {line}"}


def last_line(path: Path) -> str:
    """The last line of a log that says something (what a launcher said as it died)."""
    try:
        lines = [line for line in path.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return "no log"
    return lines[-1] if lines else "nothing in its log"
