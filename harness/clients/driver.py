"""The harness's side of a share-consumer driver: start it, feed its events into the history.

A driver is a separate process (so faults can kill and pause it for real) that
prints one JSON operation per line. Lines that are not JSON are kept in the
driver's log and recorded as `info` errors: never dropped, never trusted.
Drivers may be started from any thread: `harness.sys.procs` forks every child from
one long-lived spawner thread, to which the parent-death signal is tied.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from harness.clients.contract import CONTRACT_VERSIONS, speaks
from harness.cluster.java_admin import compiled
from harness.errors import HarnessError
from harness.history.store import HistoryWriter
from harness.kafka.spring_jars import SPRING_KAFKA_VERSION, spring_classpath
from harness.sys.paths import cache_dir
from harness.sys.procs import ManagedProcess, python_env, spawn
from harness.timing import timed


class ConsumerDriver:
    """One share consumer in its own process, recording into `history` as `name`."""

    module = "harness.clients.confluent_share_driver"
    cwd: Path | None = None  # the driver's working directory (a manifest's directory)

    def __init__(self, name: str, config: dict[str, Any], history: HistoryWriter, log_dir: Path) -> None:
        self.name = name
        self.config = config
        self.history = history
        self.log_path = log_dir / f"{name}.log"
        self.proc: ManagedProcess | None = None
        self._reader: threading.Thread | None = None
        self.closed = threading.Event()
        self.contract_error: str | None = None  # set when the driver's start event names another contract

    def command_line(self) -> list[str]:
        return [sys.executable, "-m", self.module, json.dumps(self.config)]

    def start(self) -> None:
        args = self.command_line()
        self.proc = spawn(self.name, args, log_path=self.log_path, env=python_env(), cwd=self.cwd,
                          stdout_pipe=True, stdin_pipe=True)
        self._reader = threading.Thread(target=self._read, name=f"{self.name}-reader", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc is not None and self.proc.popen.stdout is not None
        for raw in self.proc.popen.stdout:
            line = raw.decode(errors="replace").strip()
            if not line:
                continue
            try:
                event = json.loads(line)
                if event.get("f") == "step" and self._on_step(event.get("value")):
                    continue
                if event.get("f") == "start" and event.get("type") == "ok":
                    self._check_contract(event.get("value"))  # before anyone sees the start in the history
                op = self.history.append(self.name, event["type"], event["f"], event.get("value"))
                self._on_op(op)
            except (ValueError, KeyError, TypeError):
                self.history.append(self.name, "info", "error",
                                    {"code": None, "message": f"unparsable driver output: {line[:200]}"})
                continue
            if op.f == "close" and op.type != "invoke":
                self.closed.set()
        self.closed.set()

    def _check_contract(self, value: Any) -> None:
        """The `start` event must name a contract this harness speaks; else the driver is refused."""
        got = value.get("contract") if isinstance(value, dict) else None
        if not speaks(got):
            self.contract_error = (f"driver {self.name} speaks contract {got!r} (its start event's `contract`); "
                                   f"this harness speaks contracts {', '.join(map(str, CONTRACT_VERSIONS))}: "
                                   "see docs/driver.md")

    def _on_step(self, value: Any) -> bool:
        """A command's end marker (step mode): not history. Plain drivers print none."""
        return False

    def _on_op(self, op) -> None:
        """Each operation recorded from this driver (step mode collects a command's)."""

    def alive(self) -> bool:
        return self.proc is not None and self.proc.alive()

    def send(self, command: str) -> bool:
        """Write one command line (`close`, `abandon`) to the driver; False if it is gone."""
        if self.proc is None or not self.proc.alive():
            return False
        try:
            assert self.proc.popen.stdin is not None
            self.proc.popen.stdin.write(command.encode() + b"\n")
            self.proc.popen.stdin.flush()
            return True
        except (BrokenPipeError, OSError, ValueError):  # ValueError: stdin already closed by close()
            return False

    #: What asks the driver to close: a plain line for autonomous behaviours, a JSON command in step mode.
    close_command = "close"

    def _end_input(self) -> None:
        """Close the driver's stdin: end of input means close (docs/driver.md)."""
        try:
            if self.proc is not None and self.proc.popen.stdin is not None:
                self.proc.popen.stdin.close()
        except OSError:
            pass

    def crash(self) -> None:
        """SIGKILL the driver (no close, no goodbye) and record the crash in the history, after what
        the driver printed before it died (still in the pipe when it was killed): the history must not
        show operations of a process after its crash. The moment the signal goes is recorded first (a
        `crash` invoke): from then on the broker may see the connection drop and release what the driver
        held, before the pipe is drained (an in-memory broker does so within milliseconds)."""
        if self.proc is None:
            return
        self.history.append("nemesis", "invoke", "crash", {"process": self.name})
        self.proc.kill()
        if self._reader is not None:
            self._reader.join(5)
        self.history.append("nemesis", "info", "crash", {"process": self.name})

    def close(self, timeout: float = 30.0) -> int | None:
        """Ask the driver to close its consumer cleanly; kill it if it does not exit in time."""
        if self.proc is None:
            return None
        stuck = False
        if self.proc.alive():
            self.proc.signal(signal.SIGCONT)  # a paused driver cannot close
            self.send(self.close_command)
            self._end_input()
            try:
                self.proc.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                stuck = True
        code = self.proc.kill()
        if self._reader is not None:
            self._reader.join(5)
        if stuck:  # the driver's close ends unknown, after what it printed (as a crash: `crash`)
            self.history.append(self.name, "info", "close", {"error": f"no exit within {timeout}s; killed"})
        return code


class StepDriver(ConsumerDriver):
    """A driver in step mode (`docs/driver.md`): it runs the commands it is sent, one at a time.

    `command({"cmd": "poll", "timeout": 5})` waits for the command's end marker and returns
    (the marker's value, the operations the command recorded). Every operation still goes into
    the history; a driver that dies or does not answer in time is a HarnessError naming its log."""

    close_command = json.dumps({"cmd": "close"})

    def __init__(self, name: str, config: dict[str, Any], history: HistoryWriter, log_dir: Path) -> None:
        super().__init__(name, {**config, "behaviour": "step"}, history, log_dir)
        self._lock = threading.Condition()
        self._ops: list = []
        self._done: dict[int, Any] = {}
        self._sent = 0

    def _on_step(self, value: Any) -> bool:
        with self._lock:
            if isinstance(value, dict) and isinstance(value.get("n"), int):
                self._done[value["n"]] = value
            self._lock.notify_all()
        return True

    def _on_op(self, op) -> None:
        with self._lock:
            self._ops.append(op)

    @timed("client")
    def command(self, cmd: dict[str, Any], timeout: float = 60.0) -> tuple[dict[str, Any], list]:
        import time

        with self._lock:
            self._ops = []
            self._sent += 1
            n = self._sent
        if not self.send(json.dumps(cmd)):
            raise HarnessError(f"driver {self.name} is not running (see {self.log_path})")
        deadline = time.monotonic() + timeout
        with self._lock:
            while n not in self._done:
                left = deadline - time.monotonic()
                if left <= 0 or (self.proc is not None and not self.proc.alive() and self.closed.is_set()):
                    state = "did not answer in time" if left <= 0 else "exited"
                    raise HarnessError(f"driver {self.name} {state} on {json.dumps(cmd)} (see {self.log_path})")
                self._lock.wait(min(left, 0.2))
            return self._done[n], list(self._ops)


class JavaStepDriver(StepDriver):
    """The Java `KafkaShareConsumer` of the release under test in step mode (harness/java/ShareDriver.java,
    compiled at first use against the release's jars with javac)."""

    def __init__(self, name: str, config: dict[str, Any], history: HistoryWriter, log_dir: Path, dist) -> None:
        super().__init__(name, {**config, "client_version": dist.version}, history, log_dir)
        self.dist = dist

    def command_line(self) -> list[str]:
        import os

        classes = compiled(self.dist, cache_dir(), "ShareDriver")
        return ["java", "-Xmx192m", "-XX:TieredStopAtLevel=1", "-cp", f"{classes}{os.pathsep}{self.dist.classpath}",
                "ShareDriver", json.dumps(self.config)]


class SpringStepDriver(StepDriver):
    """Spring for Apache Kafka's share listener container (harness/java/SpringShareDriver.java: its
    `ShareKafkaMessageListenerContainer` unchanged, MANUAL or IMPLICIT acknowledgement mode) over the
    release under test's `KafkaShareConsumer`, in step mode; spring-kafka's jars from Maven Central
    (`harness.kafka.spring_jars`). Design: docs/design/spring-driver.md."""

    def __init__(self, name: str, config: dict[str, Any], history: HistoryWriter, log_dir: Path, dist) -> None:
        super().__init__(name, config, history, log_dir)
        self.dist = dist

    def command_line(self) -> list[str]:
        import os
        from importlib import resources


        # KSH_SPRING_KAFKA_VERSION: a spring-kafka release other than the pinned one (the drift job's, docs/drift.md)
        version = os.environ.get("KSH_SPRING_KAFKA_VERSION") or SPRING_KAFKA_VERSION
        spring = spring_classpath(cache_dir(), version)
        classes = compiled(self.dist, cache_dir(), "SpringShareDriver", spring, f"spring{version}")
        logging = resources.files("harness.java").joinpath("log4j2-stderr.properties")
        return ["java", "-Xmx192m", "-XX:TieredStopAtLevel=1", f"-Dlog4j2.configurationFile={logging}",
                "-cp", os.pathsep.join((str(classes), spring, self.dist.classpath)),
                "SpringShareDriver", json.dumps(self.config)]


class ManifestCommand:
    """The command of a driver named by a manifest (`harness.clients.registry.load_manifest`), in any
    language: its argv, run in the manifest's directory, with the JSON config appended."""

    def __init__(self, name: str, config: dict[str, Any], history: HistoryWriter, log_dir: Path,
                 argv: list[str], cwd: Path | None = None) -> None:
        super().__init__(name, config, history, log_dir)  # type: ignore[call-arg]  (the driver class after it)
        self.argv = list(argv)
        self.cwd = cwd

    def command_line(self) -> list[str]:
        return [*self.argv, json.dumps(self.config)]  # type: ignore[attr-defined]


class ExternalDriver(ManifestCommand, ConsumerDriver):
    """A manifest's driver running an autonomous behaviour (chaos runs)."""


class ExternalStepDriver(ManifestCommand, StepDriver):
    """A manifest's driver in step mode."""
