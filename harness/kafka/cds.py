"""Class-data sharing (AppCDS) for the JVMs of local clusters: brokers and StorageTool start faster.

A JVM spends most of a Kafka node's start loading and verifying classes. A dynamic CDS archive
(JDK 13+, `-XX:ArchiveClassesAtExit`) holds those classes already parsed; a JVM started with
`-XX:SharedArchiveFile` maps it instead. Measured here (Kafka 4.4.0, 3 combined nodes, JDK 17,
2 cores): the bare start (format + start) went from 11.8 s to 8.5 s.

`share-harness setup` builds one archive per (Kafka jars, JVM) pair: it formats and starts one
combined node with `-XX:ArchiveClassesAtExit`, waits until it serves, stops it with SIGTERM (the
JVM writes the archive as it exits) and moves the archive into the cache under a name that holds
the jars' folder and the `java` binary, so a new JDK or another distribution never meets an
archive it did not make. `flags()` gives a program's flags when its archive is there and nothing
otherwise: a missing archive only costs speed. The JVM checks the archive's classpath and JDK
itself and, if they do not fit, starts without it (`-Xshare:auto`, the default).

Containers map an archive of their own image's JVM (`image_dir`), which the docker backend builds
the same way, with the same node in a container of the image, the first time it starts that image.
"""

from __future__ import annotations

import base64
import fcntl
import hashlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import Callable, Protocol

from harness.errors import HarnessError
from harness.kafka import config as kconfig
from harness.kafka.jars import KafkaDistribution
from harness.kafka.versions import ReleaseLine
from harness.sys import procs
from harness.sys.paths import cache_dir
from harness.sys.progress import progress
from harness.sys.ports import allocate
from harness.sys.wait import WaitTimeout, wait_until

#: The programs that have an archive: the broker (`kafka.Kafka`) and `kafka.tools.StorageTool`.
PROGRAMS = ("broker", "storage")
BUILD_TIMEOUT = 120.0  #: seconds the archive's node may take to serve and to stop


def _jvm_key() -> str:
    """The `java` on PATH: its real path, size and modification time (a new JDK is a new key)."""
    java = shutil.which("java")
    if java is None:
        return "no-java"
    real = os.path.realpath(java)
    st = os.stat(real)
    return f"{real}:{st.st_size}:{st.st_mtime_ns}"


def archive_dir(dist: KafkaDistribution) -> Path:
    """Where `dist`'s archives for this JVM live."""
    key = hashlib.sha256(f"{os.path.realpath(dist.libs)}|{_jvm_key()}".encode()).hexdigest()[:16]
    return cache_dir() / "cds" / f"{dist.version}-{key}"


def image_dir(image_id: str) -> Path:
    """Where the archives of a Kafka image (by its id: a rebuilt image is another) live."""
    return cache_dir() / "cds" / f"image-{image_id.removeprefix('sha256:')[:16]}"


def archive(dist: KafkaDistribution, program: str) -> Path:
    if program not in PROGRAMS:
        raise ValueError(f"no CDS archive for program {program!r}: one of {PROGRAMS}")
    return archive_dir(dist) / f"{program}.jsa"


def flags(dist: KafkaDistribution, program: str) -> list[str]:
    """The JVM flags that map `program`'s archive, or none when setup has not built it."""
    path = archive(dist, program)
    return [f"-XX:SharedArchiveFile={path}"] if path.is_file() else []


def ensure(dist: KafkaDistribution) -> Path:
    """Build `dist`'s archives for this JVM unless they are there; the folder holding them."""
    return ensure_in(archive_dir(dist), lambda work: build(work, dist.release_line, dist.classpath,
                                                           f"Kafka {dist.version}", LocalLauncher()))


def ensure_in(target: Path, make: Callable[[Path], dict[str, Path]]) -> Path:
    """`target` holding an archive of every program, made by `make(work folder)` unless there."""
    target.mkdir(parents=True, exist_ok=True)
    with open(target / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be building the same archives
        if not all((target / f"{p}.jsa").is_file() for p in PROGRAMS):
            progress(f"building the brokers' class-data archives in {target} (first use of this release and JVM; "
                     "reused after)")
            with tempfile.TemporaryDirectory(prefix="ksh-cds-", dir=target) as tmp:
                for program, path in make(Path(tmp)).items():
                    os.replace(path, target / f"{program}.jsa")  # a JVM never maps a half-written archive
    return target


class Running(Protocol):
    def alive(self) -> bool: ...
    def stop(self, timeout: float) -> int | None: ...  # SIGTERM, then SIGKILL after `timeout`
    def kill(self) -> None: ...


class Launcher(Protocol):
    """Where the archive's JVMs run: local processes, or containers of an image."""
    def run(self, name: str, cmd: list[str], what: str) -> None: ...  # to its end; HarnessError if it failed
    def start(self, name: str, cmd: list[str], home: Path) -> Running: ...


class LocalLauncher:
    def run(self, name: str, cmd: list[str], what: str) -> None:
        procs.run_checked(name, cmd, BUILD_TIMEOUT, what, last_line=True)

    def start(self, name: str, cmd: list[str], home: Path) -> Running:
        return procs.spawn(name, cmd, log_path=home / "logs" / "stdout.log", cwd=home)


def build(work: Path, line: ReleaseLine, classpath: str, label: str, launcher: Launcher) -> dict[str, Path]:
    """One combined node formatted and started with `-XX:ArchiveClassesAtExit`, stopped by SIGTERM
    (its JVM writes the archive as it exits): `{program: archive}` in `work`."""
    client, peer, controller = allocate(3)
    home = work / "n1"
    (home / "logs").mkdir(parents=True)
    node = kconfig.NodeConfig(node_id=1, roles=("broker", "controller"),
                              ports=kconfig.NodePorts(client=client, peers={1: peer}, controller=controller),
                              advertised_client=client, advertised_peers={1: peer}, voters={1: controller},
                              data_dir=home / "data", replication_factor=1, min_insync_replicas=1,
                              internal_partitions=1)
    config = home / "server.properties"
    config.write_text(kconfig.render(node, line))
    (home / "log4j2.properties").write_text(kconfig.render_log4j2(home / "logs"))
    out = {p: work / f"{p}.jsa" for p in PROGRAMS}
    cluster_id = base64.urlsafe_b64encode(os.urandom(16)).decode().rstrip("=")
    features = [arg for f in line.format_features() for arg in ("--feature", f)]
    launcher.run("cds-storage-format", ["java", f"-XX:ArchiveClassesAtExit={out['storage']}", "-Xmx256m",
                                        "-XX:TieredStopAtLevel=1", "-cp", classpath, "kafka.tools.StorageTool",
                                        "format", f"--cluster-id={cluster_id}", "-c", str(config), *features],
                 f"building the CDS archive of {label}: StorageTool format")
    server_log = home / "logs" / "server.log"
    broker = launcher.start("cds-broker", ["java", f"-XX:ArchiveClassesAtExit={out['broker']}", "-Xms512m",
                                           "-Xmx512m", "-XX:+UseG1GC",
                                           f"-Dlog4j2.configurationFile={home / 'log4j2.properties'}",
                                           f"-Dkafka.logs.dir={home / 'logs'}", "-cp", classpath,
                                           "kafka.Kafka", str(config)], home)
    try:
        wait_until(lambda: server_log.is_file() and "Kafka Server started" in server_log.read_text(errors="replace"),
                   timeout=BUILD_TIMEOUT, what="the CDS archive's node to log 'Kafka Server started'",
                   interval=0.1, fatal=lambda: None if broker.alive() else "its JVM exited")
        code = broker.stop(timeout=BUILD_TIMEOUT)
    except WaitTimeout as exc:
        raise HarnessError(f"building the CDS archive of {label}: {exc} (its log: {home / 'logs'})") from None
    finally:
        broker.kill()
    missing = [p for p, path in out.items() if not path.is_file()]
    if missing:
        raise HarnessError(f"building the CDS archive of {label}: the JVM wrote no archive for "
                           f"{', '.join(missing)} (exit {code}); it needs JDK 13+")
    return out
