"""Child processes that cannot outlive the harness.

Every process the harness starts (brokers, Toxiproxy, client drivers) is
spawned through `spawn`: in its own session/process group, with the Linux
parent-death signal set to SIGKILL, and registered with a reaper process
(`harness.reaper`) that kills the group and removes registered temp dirs
when the harness dies without cleaning up (SIGKILL, crash). Normal paths
(success, failure, Ctrl-C) stop them through `ManagedProcess.stop`.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Sequence

_PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None


def _child_setup() -> None:
    """Runs in the child between fork and exec: die with the parent."""
    if _libc is not None:
        _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


class _Reaper:
    """A watchdog process fed over a pipe; on EOF (our death) it kills and deletes what is registered."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()

    def _send(self, line: str) -> None:
        with self._lock:
            if self._proc is None or self._proc.poll() is not None:
                self._proc = subprocess.Popen(
                    [sys.executable, "-m", "harness.reaper"], stdin=subprocess.PIPE,
                    start_new_session=True, close_fds=True,
                    env=python_env())
            assert self._proc.stdin is not None
            try:
                self._proc.stdin.write((line + "\n").encode())
                self._proc.stdin.flush()
            except BrokenPipeError:  # reaper died: the next registration starts another
                self._proc = None

    def register_group(self, pgid: int) -> None:
        self._send(f"pgid {pgid}")

    def forget_group(self, pgid: int) -> None:
        self._send(f"forget-pgid {pgid}")

    def register_dir(self, path: Path) -> None:
        self._send(f"dir {path}")

    def forget_dir(self, path: Path) -> None:
        self._send(f"forget-dir {path}")


def python_env() -> dict[str, str]:
    """The environment for a Python child that must import `harness` (installed or not)."""
    root = str(Path(__file__).resolve().parent.parent)
    existing = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": f"{root}{os.pathsep}{existing}" if existing else root}


REAPER = _Reaper()
_live: dict[int, "ManagedProcess"] = {}
_live_lock = threading.Lock()


@dataclass
class ManagedProcess:
    """A child process in its own process group that is always stopped by the harness."""

    name: str
    popen: subprocess.Popen[bytes]
    log_path: Path | None = None
    _log: IO[bytes] | None = field(default=None, repr=False)

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def exit_code(self) -> int | None:
        return self.popen.poll()

    def state(self) -> str | None:
        """The kernel's state letter for the process (`T`: stopped by SIGSTOP), None once it is gone."""
        if not self.alive():
            return None
        try:
            stat = Path(f"/proc/{self.pid}/stat").read_text()
        except OSError:
            return None
        return stat.rsplit(")", 1)[1].split()[0]

    def signal(self, sig: int) -> None:
        """Send `sig` to the whole process group (no-op if already gone)."""
        try:
            os.killpg(self.popen.pid, sig)
        except ProcessLookupError:
            pass

    def stop(self, timeout: float = 15.0) -> int | None:
        """SIGTERM (after SIGCONT, in case it is paused), then SIGKILL after `timeout`. Idempotent."""
        if self.alive():
            self.signal(signal.SIGCONT)
            self.signal(signal.SIGTERM)
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                pass
        return self.kill()

    def kill(self) -> int | None:
        """SIGKILL the group and reap it. Idempotent."""
        self.signal(signal.SIGKILL)
        try:
            code = self.popen.wait(10)
        except subprocess.TimeoutExpired:  # pragma: no cover - D state
            code = None
        self._release()
        return code

    # Popen-like verbs, so code written against subprocess handles can use a managed process.
    def poll(self) -> int | None:
        return self.popen.poll()

    def wait(self, timeout: float | None = None) -> int:
        code = self.popen.wait(timeout)
        self.kill()  # reap the rest of the group and unregister
        return code

    def terminate(self) -> None:
        self.signal(signal.SIGTERM)

    def log_tail(self, lines: int = 20) -> str:
        if self.log_path is None or not self.log_path.exists():
            return ""
        text = self.log_path.read_text(errors="replace").splitlines()
        return "\n".join(f"  {self.name}| {line}" for line in text[-lines:])

    def _release(self) -> None:
        if self._log is not None and not self._log.closed:
            self._log.close()
        with _live_lock:
            if _live.pop(self.pid, None) is not None:
                REAPER.forget_group(self.pid)


def spawn(name: str, args: Sequence[str], *, log_path: Path | None = None,
          env: dict[str, str] | None = None, cwd: Path | None = None,
          stdout_pipe: bool = False, stdin_pipe: bool = False) -> ManagedProcess:
    """Start `args` as a managed child. Output goes to `log_path` (stderr always does)."""
    log = open(log_path, "ab") if log_path else None
    popen = subprocess.Popen(
        list(args), cwd=cwd, env=env, start_new_session=True, preexec_fn=_child_setup,
        stdin=subprocess.PIPE if stdin_pipe else subprocess.DEVNULL,
        stdout=subprocess.PIPE if stdout_pipe else (log or subprocess.DEVNULL),
        stderr=log or subprocess.DEVNULL, close_fds=True)
    proc = ManagedProcess(name, popen, log_path, log)
    with _live_lock:
        _live[popen.pid] = proc
    REAPER.register_group(popen.pid)
    return proc


def live_processes() -> list[ManagedProcess]:
    """Processes started by this harness and not yet stopped."""
    with _live_lock:
        return list(_live.values())


def stop_all() -> None:
    """Stop every live managed process (used on interpreter exit and by the plugin)."""
    for proc in live_processes():
        proc.kill()
