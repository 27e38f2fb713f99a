"""Find (or build once) a real Toxiproxy server binary and run it as a child process.

The binary comes from, in order: ``$TOXIPROXY_SERVER``, ``toxiproxy-server`` on
PATH, the per-version cache, or ``go install`` into that cache (never rebuilt
once cached). The server (and the build) is started through `harness.sys.procs`:
in its own session, registered with the reaper, with the parent-death signal
armed on the harness's long-lived spawner thread, so a crashed or killed
harness leaves no orphan behind, whichever thread started it.
"""

from __future__ import annotations

import errno
import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path
from types import TracebackType
from typing import Callable, Protocol, Sequence

from harness.errors import HarnessError
from harness.proxy.client import ToxiproxyClient
from harness.sys import procs
from harness.sys.progress import progress
from harness.sys.wait import wait_until

DEFAULT_VERSION = "v2.12.0"
GO_PACKAGE = "github.com/Shopify/toxiproxy/v2/cmd/server"
BINARY_NAME = "toxiproxy-server"


class ProcessHandle(Protocol):
    """The part of `subprocess.Popen` the server needs from whatever `spawn` returns."""

    @property
    def pid(self) -> int: ...
    def poll(self) -> int | None: ...
    def wait(self, timeout: float | None = None) -> int: ...
    def terminate(self) -> None: ...
    def kill(self) -> None: ...


Spawn = Callable[[Sequence[str], Path], ProcessHandle]
"""Start `argv` with stdout and stderr appended to the log file; return a handle."""


def find_or_build_toxiproxy(cache_dir: Path, version: str = DEFAULT_VERSION) -> Path:
    """Return a toxiproxy-server binary, building it with Go into the cache if needed."""
    env_path = os.environ.get("TOXIPROXY_SERVER")
    if env_path:
        path = Path(env_path).expanduser()
        if not path.is_file():
            raise HarnessError(f"TOXIPROXY_SERVER={env_path} does not exist: point it at a toxiproxy-server binary")
        if not os.access(path, os.X_OK):
            raise HarnessError(f"TOXIPROXY_SERVER={env_path} is not executable: chmod +x it or fix the path")
        return path
    on_path = shutil.which(BINARY_NAME)
    if on_path:
        return Path(on_path)
    cached = Path(cache_dir) / "toxiproxy" / version / BINARY_NAME
    if cached.is_file() and os.access(cached, os.X_OK):
        return cached
    progress(f"building Toxiproxy {version} with go install into {cached.parent} (first use; reused after)")
    return _build(cached, version)


def _build(target: Path, version: str) -> Path:
    go = shutil.which("go")
    if go is None:
        raise HarnessError(
            "toxiproxy server not found and `go` is not on PATH: "
            "install Go 1.22+ or set TOXIPROXY_SERVER=/path/to/toxiproxy-server"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    gobin = Path(tempfile.mkdtemp(prefix=".build-", dir=target.parent))  # same filesystem: atomic rename
    procs.REAPER.register_dir(gobin)  # removed even if we are killed mid-build
    try:
        env = dict(os.environ, GOBIN=str(gobin))
        try:
            result = procs.run("go install", [go, "install", f"{GO_PACKAGE}@{version}"], timeout=900, env=env)
        except subprocess.TimeoutExpired:
            raise HarnessError(f"building toxiproxy {version} with go took over 15 minutes: "
                               "check network access or set TOXIPROXY_SERVER") from None
        if result.returncode != 0:
            lines = [line for line in result.stderr.splitlines() if line.strip()]
            last = lines[-1].strip() if lines else f"exit code {result.returncode}"
            raise HarnessError(f"building toxiproxy {version} failed: {last} (or set TOXIPROXY_SERVER)")
        built = gobin / "server"
        if not built.is_file():
            raise HarnessError(f"go install of toxiproxy {version} produced no binary in {gobin}: set TOXIPROXY_SERVER")
        os.replace(built, target)
        return target
    finally:
        shutil.rmtree(gobin, ignore_errors=True)
        procs.REAPER.forget_dir(gobin)


def spawn_process(argv: Sequence[str], log_path: Path) -> procs.ManagedProcess:
    """Default `Spawn`: a managed child (`harness.sys.procs.spawn`): own session, output appended to
    `log_path`, registered with the reaper, dies with the harness process on Linux."""
    return procs.spawn(BINARY_NAME, argv, log_path=log_path)


class ToxiproxyServer:
    """One running toxiproxy-server: ``with ToxiproxyServer().start(binary) as srv: ...``."""

    def __init__(self, spawn: Spawn | None = None) -> None:
        self._spawn: Spawn = spawn or spawn_process
        self._proc: ProcessHandle | None = None
        self._pid: int | None = None
        self._owned_log = False
        self.host = "127.0.0.1"
        self.port = 0
        self.log_path: Path | None = None

    @property
    def pid(self) -> int:
        if self._pid is None:
            raise HarnessError("toxiproxy server was never started: call start() first")
        return self._pid

    @property
    def api_url(self) -> str:
        if self._proc is None:
            raise HarnessError("toxiproxy server is not running: call start() first")
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def client(self, timeout: float = 5.0) -> ToxiproxyClient:
        return ToxiproxyClient(self.api_url, timeout=timeout)

    def start(
        self, binary: Path, host: str = "127.0.0.1", port: int = 0,
        log_path: Path | None = None, ready_timeout: float = 15.0,
    ) -> ToxiproxyServer:
        """Start the server and return once ``GET /version`` answers."""
        if self._proc is not None:
            raise HarnessError(f"toxiproxy server already running (pid {self._pid}): stop() it first")
        self.host, self._owned_log = host, log_path is None
        if log_path is None:
            fd, name = tempfile.mkstemp(prefix="toxiproxy-", suffix=".log")
            os.close(fd)
            log_path = Path(name)
        self.log_path = Path(log_path)
        attempts_left = 3 if port == 0 else 1  # a picked free port can be taken before the server binds it
        try:
            while True:
                attempts_left -= 1
                self.port = _free_port(host) if port == 0 else _check_port_free(host, port)
                try:
                    self._launch(binary, ready_timeout)
                    return self
                except HarnessError:
                    if attempts_left == 0 or "address already in use" not in self._log_tail():
                        raise
                    self.stop(keep_log=True)
        except BaseException:
            self.stop()  # removes a temporary log; the error already carries its tail
            raise

    def _launch(self, binary: Path, ready_timeout: float) -> None:
        assert self.log_path is not None
        argv = [str(binary), "-host", self.host, "-port", str(self.port)]
        try:
            self._proc = self._spawn(argv, self.log_path)
        except OSError as exc:
            raise HarnessError(f"cannot run toxiproxy server {binary}: {exc.strerror or exc}") from None
        self._pid = self._proc.pid
        probe = ToxiproxyClient(self.api_url, timeout=1.0)
        where = "" if self._owned_log else f", log {self.log_path}"
        wait_until(
            probe.version, timeout=ready_timeout, interval=0.05,
            what=f"toxiproxy API at {self.api_url} (pid {self._pid}{where})",
            fatal=self._exit_reason, diagnostics=self._log_tail,
        )
        reason = self._exit_reason()  # someone else may have answered on that port
        if reason:
            raise HarnessError(f"toxiproxy on port {self.port}: {reason}")

    def _exit_reason(self) -> str | None:
        code = None if self._proc is None else self._proc.poll()
        return None if code is None else f"toxiproxy server exited early with code {code}"

    def _log_tail(self, lines: int = 10) -> str:
        if self.log_path is None:
            return ""
        try:
            with open(self.log_path, "rb") as log:
                log.seek(0, os.SEEK_END)
                log.seek(max(0, log.tell() - 8192))
                tail = log.read().decode("utf-8", "replace").splitlines()[-lines:]
        except OSError:
            return ""
        return f"last lines of {self.log_path}:\n" + "\n".join(tail) if tail else ""

    def stop(self, timeout: float = 5.0, keep_log: bool = False) -> None:
        """SIGTERM, then SIGKILL after `timeout`; waits for the exit. Idempotent."""
        proc, self._proc = self._proc, None
        if proc is not None:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout)
                except subprocess.TimeoutExpired:
                    pass
            proc.kill()  # also when it exited by itself: a managed handle then unregisters its group
            proc.wait()
        if self._owned_log and not keep_log and self.log_path is not None:
            self.log_path.unlink(missing_ok=True)
            self._owned_log = False

    def __enter__(self) -> ToxiproxyServer:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def _free_port(host: str) -> int:
    with socket.socket(_family(host), socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, 0))
        except OSError as exc:
            raise HarnessError(f"cannot listen on {host}: {exc.strerror}; use a local address such as 127.0.0.1") from None
        return int(sock.getsockname()[1])


def _check_port_free(host: str, port: int) -> int:
    with socket.socket(_family(host), socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as Go does: TIME_WAIT is not "in use"
        try:
            sock.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise HarnessError(f"port {port} is in use: {host}:{port} is taken; stop what listens there or use port=0") from None
            raise HarnessError(f"cannot bind {host}:{port}: {exc.strerror}") from None
    return port


def _family(host: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ":" in host else socket.AF_INET
