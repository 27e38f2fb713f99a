"""One node of a local cluster: its `java ... kafka.Kafka` process and what can be done to it.

A `LocalNode` knows its id, roles, home directory, config file and listener ports, and holds its
managed process (`harness.sys.procs`) once started: start, stop, kill, pause (SIGSTOP), resume
(SIGCONT), whether it lives, why it died. `wait_listening` waits until nodes answer ApiVersions
on every listener they bind. What goes into the node's home before it starts is
`harness.cluster.local.files`.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from harness.kafka import config as kconfig
from harness.kafka.wire import probe
from harness.sys.procs import ManagedProcess, spawn
from harness.sys.wait import wait_until


@dataclass
class LocalNode:
    node_id: int
    roles: tuple[str, ...]
    home: Path
    config: Path
    ports: kconfig.NodePorts
    proc: ManagedProcess | None = None

    @property
    def listener_ports(self) -> list[int]:
        p = self.ports
        return [port for port in (p.client, p.controller, *p.peers.values(), *p.lanes.values(), p.sasl)
                if port is not None]

    @property
    def logs(self) -> Path:
        return self.home / "logs"

    def java_command(self, heap_mb: int, classpath: str, jvm_flags: Sequence[str] = ()) -> list[str]:
        # C1 only (-XX:TieredStopAtLevel=1): a test cluster serves a few thousand records, never long enough for
        # C2's code to repay its compiling. Measured on a 3-node cluster (benchmarks/broker_cpu.py, one run of
        # both): the start takes 12.6 s of CPU instead of 20.3 and 10.4 s of wall time instead of 12.1, an idle
        # minute 12.3 s of CPU instead of 18.0; CI runs two such clusters on two cores.
        return ["java", *jvm_flags, f"-Xms{heap_mb}m", f"-Xmx{heap_mb}m", "-XX:TieredStopAtLevel=1", "-XX:+UseG1GC",
                "-XX:MaxGCPauseMillis=20", "-XX:+ExitOnOutOfMemoryError", "-Djava.awt.headless=true",
                f"-Dlog4j2.configurationFile={self.home / 'log4j2.properties'}", f"-Dkafka.logs.dir={self.logs}",
                "-cp", classpath, "kafka.Kafka", str(self.config)]

    def start(self, heap_mb: int, classpath: str, jvm_flags: Sequence[str] = ()) -> None:
        """Start a new process (the caller checks that none runs: `alive`); `jvm_flags` go first
        (the class-data archive: `harness.kafka.cds`)."""
        self.proc = spawn(f"n{self.node_id}", self.java_command(heap_mb, classpath, jvm_flags),
                          log_path=self.logs / "stdout.log", cwd=self.home)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.alive()

    def pid(self) -> int | None:
        return self.proc.pid if self.alive() else None

    def stop(self, timeout: float = 30) -> None:
        if self.proc is not None:
            self.proc.stop(timeout=timeout)

    def terminate(self) -> None:
        """SIGTERM (after SIGCONT, in case it is paused) without waiting: `stop` waits."""
        if self.proc is not None and self.proc.alive():
            self.proc.signal(signal.SIGCONT)
            self.proc.signal(signal.SIGTERM)

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.kill()

    def pause(self) -> None:
        if self.proc is not None:
            self.proc.signal(signal.SIGSTOP)

    def resume(self) -> None:
        if self.proc is not None:
            self.proc.signal(signal.SIGCONT)

    def death(self) -> str | None:
        """Why the node is not running when it was started and exited since, else None."""
        if self.proc is not None and not self.proc.alive():
            return f"node {self.node_id} exited with code {self.proc.exit_code()} (see {self.logs})"
        return None


def wait_listening(nodes: list[LocalNode], timeout: float, fatal: Callable[[], str | None],
                   log_tails: Callable[[], str]) -> None:
    """Block until every node answers ApiVersions on every listener it binds (`fatal` ends the wait)."""
    ports = [(node.node_id, port) for node in nodes for port in node.listener_ports]

    def answered(port: int) -> bool:
        return probe(port, timeout=1.0)[0] == "answered"

    def silent() -> str:
        return "not answering: " + ", ".join(f"n{i}:{port}" for i, port in ports if not answered(port))
    wait_until(lambda: all(answered(port) for _, port in ports), timeout=timeout,
               what=f"nodes {[node.node_id for node in nodes]} to answer on every listener", interval=0.2,
               fatal=fatal, diagnostics=lambda: f"{silent()}\n{log_tails()}")
