"""Child processes that cannot outlive the harness.

Every process the harness starts is spawned here: long-lived ones (brokers,
Toxiproxy, client drivers) through `spawn`, short-lived tools (StorageTool,
javac, the Java admin programs, mvn, go) through `run`. Each child gets its own
session/process group, the Linux parent-death signal set to SIGKILL, and is
registered with a reaper process (`harness.sys.reaper`) that kills the group and
removes registered temp dirs when the harness dies without cleaning up
(SIGKILL, crash). Normal paths (success, failure, Ctrl-C) stop them through
`ManagedProcess.stop`/`kill`; `run` kills its group on a timeout or an interrupt.

The parent-death signal fires when the *thread* that forked the child exits,
not the process. So every fork happens on one long-lived daemon thread (the
spawner); callers on any thread (thread pools included) hand it their request
and wait for the result. Its children die when the harness process does.

Longer than most modules (about 320 lines): spawning, the spawner thread, the reaper registration
and short-lived runs share the process-group and parent-death rules that make them safe; split,
those rules would be written twice.
"""

from __future__ import annotations

import ctypes
import os
import queue
import signal
import subprocess
import sys
import threading
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Callable, Sequence

from harness.errors import HarnessError

_PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None


def child_setup_for(parent: int, sig: int = signal.SIGKILL) -> Callable[[], None]:
    """The function run in the child between fork and exec: get `sig` when the forking thread
    ends (the parent's spawner thread, or its main thread), and exit at once if the parent is
    already gone, before the signal was armed."""
    prctl = None if _libc is None else _libc.prctl  # resolved before fork, not in the child

    def setup() -> None:
        if prctl is not None:
            prctl(_PR_SET_PDEATHSIG, sig, 0, 0, 0)
            if os.getppid() != parent:
                os._exit(1)
    return setup


class _Spawner:
    """One long-lived daemon thread that performs every fork of the harness.

    `PR_SET_PDEATHSIG` is bound to the forking thread: a child forked on a pool thread would be
    killed when that thread exits. Forking on a thread that lives as long as the process makes
    the signal mean what it should: the harness died.
    """

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    def submit(self, fn: Callable[[], Any]) -> Future:
        """Run `fn` on the spawner thread; its future."""
        future: Future = Future()
        if threading.current_thread() is self._thread:
            try:
                future.set_result(fn())
            except BaseException as exc:
                future.set_exception(exc)
            return future
        with self._guard:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._loop, args=(self._queue,), name="ksh-spawner",
                                                daemon=True)
                self._thread.start()
            self._queue.put((future, fn))
        return future

    @staticmethod
    def _loop(requests: queue.SimpleQueue) -> None:
        while True:
            future, fn = requests.get()
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(fn())
            except BaseException as exc:  # handed to the caller
                future.set_exception(exc)

    def _after_fork_in_child(self) -> None:
        self._guard = threading.Lock()
        self._queue = queue.SimpleQueue()
        self._thread = None


_SPAWNER = _Spawner()
os.register_at_fork(after_in_child=_SPAWNER._after_fork_in_child)


class _Reaper:
    """A watchdog process fed over a pipe; on EOF (our death) it kills and deletes what is registered."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()

    def _send(self, line: str) -> None:
        with self._lock:
            if self._proc is None or self._proc.poll() is not None:
                # Unbuffered: stdin is a raw FileIO, which has no lock. A buffered writer's lock, held
                # by a thread writing here when another thread forks (preexec_fn runs the at-fork
                # hooks in the child), would hang the child's close below before exec, forever.
                self._proc = subprocess.Popen(
                    [sys.executable, "-m", "harness.sys.reaper"], stdin=subprocess.PIPE, bufsize=0,
                    start_new_session=True, close_fds=True,
                    env=python_env())
            assert self._proc.stdin is not None
            try:
                self._proc.stdin.write((line + "\n").encode())  # one write(2) of < PIPE_BUF bytes: atomic
            except BrokenPipeError:  # reaper died: the next registration starts another
                self._proc = None

    def register_group(self, pgid: int) -> None:
        self._send(f"pgid {pgid}")

    def forget_group(self, pgid: int) -> None:
        self._send(f"forget-pgid {pgid}")

    def register_container(self, container_id: str) -> None:
        self._send(f"container {container_id}")

    def forget_container(self, container_id: str) -> None:
        self._send(f"forget-container {container_id}")

    def register_dir(self, path: Path) -> None:
        self._send(f"dir {path}")

    def forget_dir(self, path: Path) -> None:
        self._send(f"forget-dir {path}")

    def _after_fork_in_child(self) -> None:
        """A forked child starts its own reaper if it spawns; its copy of our pipe must not keep ours open."""
        self._lock = threading.Lock()
        if self._proc is not None and self._proc.stdin is not None:
            try:
                self._proc.stdin.close()
            except OSError:
                pass
        self._proc = None


def python_env() -> dict[str, str]:
    """The environment for a Python child that must import `harness` (installed or not)."""
    root = str(Path(__file__).resolve().parents[2])
    existing = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": f"{root}{os.pathsep}{existing}" if existing else root}


REAPER = _Reaper()
_live: dict[int, "ManagedProcess"] = {}
_live_lock = threading.Lock()


def _after_fork_in_child() -> None:
    """A forked child (e.g. multiprocessing) owns none of its parent's processes."""
    global _live_lock
    _live_lock = threading.Lock()
    _live.clear()
    REAPER._after_fork_in_child()


os.register_at_fork(after_in_child=_after_fork_in_child)


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

    def _release(self) -> None:
        if self._log is not None and not self._log.closed:
            self._log.close()
        with _live_lock:
            if _live.pop(self.pid, None) is not None:
                REAPER.forget_group(self.pid)


def _start(name: str, args: Sequence[str], *, env: dict[str, str] | None, cwd: Path | None,
           stdin: Any, stdout: Any, stderr: Any, log_path: Path | None = None,
           log: IO[bytes] | None = None) -> ManagedProcess:
    """Fork on the spawner thread; the child is tracked (live set and reaper) before anyone else sees it."""
    argv = list(args)
    parent = os.getpid()

    def fork() -> ManagedProcess:
        popen = subprocess.Popen(argv, cwd=cwd, env=env, start_new_session=True,
                                 preexec_fn=child_setup_for(parent), stdin=stdin, stdout=stdout,
                                 stderr=stderr, close_fds=True)
        proc = ManagedProcess(name, popen, log_path, log)
        with _live_lock:
            _live[popen.pid] = proc
        REAPER.register_group(popen.pid)
        return proc

    future = _SPAWNER.submit(fork)
    try:
        return future.result()
    except BaseException:  # the fork failed, or we were interrupted waiting: a child started anyway is killed
        future.add_done_callback(_kill_abandoned)
        if log is not None:
            log.close()
        raise


def _kill_abandoned(future: Future) -> None:
    if not future.cancelled() and future.exception() is None:
        future.result().kill()


def spawn(name: str, args: Sequence[str], *, log_path: Path | None = None,
          env: dict[str, str] | None = None, cwd: Path | None = None,
          stdout_pipe: bool = False, stdin_pipe: bool = False) -> ManagedProcess:
    """Start `args` as a managed child (from any thread). Output goes to `log_path` (stderr always does)."""
    log = open(log_path, "ab") if log_path else None
    return _start(name, args, env=env, cwd=cwd, log_path=log_path, log=log,
                  stdin=subprocess.PIPE if stdin_pipe else subprocess.DEVNULL,
                  stdout=subprocess.PIPE if stdout_pipe else (log or subprocess.DEVNULL),
                  stderr=log or subprocess.DEVNULL)


def run(name: str, args: Sequence[str], timeout: float, *, env: dict[str, str] | None = None,
        cwd: Path | None = None, input: str | None = None) -> subprocess.CompletedProcess[str]:
    """Like `subprocess.run(args, capture_output=True, text=True, timeout=timeout)`, but managed.

    The child is spawned like every other (own group, parent-death signal, reaper), and its whole
    group is killed when it finishes, times out (`subprocess.TimeoutExpired`, as `subprocess.run`
    raises) or the caller is interrupted (KeyboardInterrupt re-raised after the kill).
    """
    proc = _start(name, args, env=env, cwd=cwd, stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    popen = proc.popen
    try:
        try:
            out, err = popen.communicate(None if input is None else input.encode(), timeout=timeout)
        except subprocess.TimeoutExpired:
            raise subprocess.TimeoutExpired(list(args), timeout) from None
    finally:
        proc.kill()  # the group: anything the tool left running, or the tool itself on timeout/interrupt
        for pipe in (popen.stdin, popen.stdout, popen.stderr):
            if pipe is not None:
                pipe.close()
    return subprocess.CompletedProcess(list(args), popen.returncode, out.decode(errors="replace"),
                                       err.decode(errors="replace"))


def run_checked(name: str, args: Sequence[str], timeout: float, what: str, *, last_line: bool = False,
                **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """`run`, with one-line `HarnessError`s naming `what`: it took over `timeout` s, or it exited
    non-zero (then the first line of its error output, or the last with `last_line`)."""
    try:
        proc = run(name, args, timeout, **kwargs)
    except subprocess.TimeoutExpired:
        raise HarnessError(f"{what} took over {timeout:.0f} s: check the machine's load") from None
    if proc.returncode != 0:
        lines = (proc.stderr or proc.stdout).strip().splitlines() or ["no output"]
        raise HarnessError(f"{what} failed (exit {proc.returncode}): {lines[-1] if last_line else lines[0]}")
    return proc


def live_processes() -> list[ManagedProcess]:
    """Processes started by this harness and not yet stopped."""
    with _live_lock:
        return list(_live.values())


def stop_all() -> None:
    """Stop every live managed process (used on interpreter exit and by the plugin)."""
    for proc in live_processes():
        proc.kill()
