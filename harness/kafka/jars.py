"""Kafka broker jars: resolved from Maven Central with `mvn`, or taken from KAFKA_HOME.

The Maven path writes a tiny POM that depends on `org.apache.kafka:kafka_2.13`
at runtime scope plus log4j2 (api, core and the SLF4J 1.x binding Kafka uses),
copies the resolved jars into `<cache>/kafka/<version>/libs` and marks the
directory complete. A complete cache is reused as is: nothing is downloaded again.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from harness.errors import HarnessError
from harness.kafka.versions import KNOWN_VERSIONS, ReleaseLine, normalize_version, parse_version, release_line
from harness.sys import procs
from harness.sys.progress import progress

LOG4J_VERSION = "2.25.3"
MVN_TIMEOUT = 900  #: seconds one `mvn` resolution may take
COMPLETE = ".complete"  #: the marker of a resolved jar directory (written last)


@dataclass(frozen=True)
class KafkaDistribution:
    """A set of jars that can run `kafka.Kafka` and `kafka.tools.StorageTool`."""

    version: str
    libs: Path
    source: str  # "maven" or "KAFKA_HOME"

    @property
    def classpath(self) -> str:
        return os.pathsep.join(str(p) for p in sorted(self.libs.glob("*.jar")))

    @property
    def release_line(self) -> ReleaseLine:
        return release_line(self.version)


def require_tool(name: str, fix: str) -> str:
    """Path of executable `name`, or a one-line error naming the fix."""
    path = shutil.which(name)
    if path is None:
        raise HarnessError(f"`{name}` not found on PATH: {fix}")
    return path


def resolve(version: str, cache: Path, kafka_home: str | None = None) -> KafkaDistribution:
    """Jars for `version`: from `kafka_home` if given, else the Maven cache (filled on first use)."""
    require_tool("java", "install a Java 17+ JDK (e.g. apt-get install openjdk-17-jdk-headless)")
    if kafka_home:
        return from_kafka_home(Path(kafka_home))
    version = normalize_version(version)  # one cache directory per version, however it was typed
    release_line(version)  # unknown lines fail before any download
    target = cache / "kafka" / version
    if (target / COMPLETE).exists():
        return KafkaDistribution(version, target / "libs", "maven")
    target.mkdir(parents=True, exist_ok=True)
    with open(target / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be resolving the same version
        if not (target / COMPLETE).exists():
            progress(f"fetching Kafka {version}'s jars from Maven Central into {target} (first use; reused after)")
            _download(version, target)
    return KafkaDistribution(version, target / "libs", "maven")


def from_kafka_home(home: Path) -> KafkaDistribution:
    """An unpacked Apache Kafka distribution; its version is read from its core jar."""
    libs = home / "libs"
    cores = sorted(libs.glob("kafka_2.13-*.jar"))
    cores = [p for p in cores if not re.search(r"-(test|sources|javadoc)", p.name)]
    if not cores:
        raise HarnessError(f"KAFKA_HOME={home} has no libs/kafka_2.13-<version>.jar: point it at an unpacked Kafka distribution")
    version = cores[0].name[len("kafka_2.13-"):-len(".jar")]
    parse_version(version)
    return KafkaDistribution(version, libs, "KAFKA_HOME")


def render_pom(version: str, line: ReleaseLine) -> str:
    """The POM whose runtime dependencies are exactly what a broker needs."""
    exclusions = "".join(
        f"<exclusion><groupId>{g}</groupId><artifactId>{a}</artifactId></exclusion>"
        for g, a in line.maven_exclusions)
    deps = [("org.apache.kafka", "kafka_2.13", version, exclusions)] + [
        ("org.apache.logging.log4j", a, LOG4J_VERSION, "")
        for a in ("log4j-api", "log4j-core", "log4j-slf4j-impl")]
    body = "\n".join(
        f"    <dependency><groupId>{g}</groupId><artifactId>{a}</artifactId><version>{v}</version>"
        f"<scope>runtime</scope>{'<exclusions>' + x + '</exclusions>' if x else ''}</dependency>"
        for g, a, v, x in deps)
    return f"""<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>kafka-share-harness</groupId><artifactId>kafka-jars</artifactId><version>{version}</version>
  <packaging>pom</packaging>
  <dependencies>
{body}
  </dependencies>
</project>
"""


def _download(version: str, target: Path) -> None:
    mvn = require_tool("mvn", "install Apache Maven 3.8+ (e.g. apt-get install maven) or set KAFKA_HOME")

    def check(proc: subprocess.CompletedProcess[str], out: Path) -> None:
        if proc.returncode != 0:
            raise HarnessError(_mvn_failure(version, proc.stdout + proc.stderr))
        if not list(out.glob("kafka_2.13-*.jar")):
            raise HarnessError(f"mvn resolved no kafka_2.13 jar for Kafka {version}: check ~/.m2 settings")
    copy_dependencies(mvn, render_pom(version, release_line(version)), target, target.parent,
                      f"resolve Kafka {version}", check)


def copy_dependencies(mvn: str, pom_text: str, target: Path, lock_dir: Path, what: str,
                      check: Callable[[subprocess.CompletedProcess[str], Path], None]) -> None:
    """`mvn dependency:copy-dependencies` of `pom_text`'s runtime dependencies into `target/libs`, marked
    complete: resolved in a temp dir beside it (removed whatever happens) and renamed into place once
    `check(proc, out)` accepts mvn's result (it raises a HarnessError naming the fix otherwise)."""
    tmp = Path(tempfile.mkdtemp(prefix=".mvn-", dir=target))  # beside the result: the move is a rename
    procs.REAPER.register_dir(tmp)  # removed even if we are killed mid-download
    try:
        pom = tmp / "pom.xml"
        pom.write_text(pom_text)
        out = tmp / "libs"
        cmd = [mvn, "-B", "-q", "-f", str(pom), "dependency:copy-dependencies",
               "-DincludeScope=runtime", f"-DoutputDirectory={out}"]
        check(_run_mvn(cmd, lock_dir, what), out)
        final = target / "libs"
        if final.exists():
            shutil.rmtree(final)
        os.rename(out, final)
        (target / COMPLETE).write_text(target.name + "\n")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        procs.REAPER.forget_dir(tmp)


def _run_mvn(cmd: list[str], kafka_cache: Path, what: str) -> subprocess.CompletedProcess[str]:
    """`cmd` run to its end, one mvn at a time: runs for different versions share ~/.m2, whose writes
    Maven does not lock (`kafka_cache`: `<cache>/kafka`, which holds the lock file)."""
    with open(kafka_cache / ".m2.lock", "w") as m2_lock:
        fcntl.flock(m2_lock, fcntl.LOCK_EX)
        try:
            return procs.run("mvn", cmd, timeout=MVN_TIMEOUT)
        except subprocess.TimeoutExpired:
            raise HarnessError(f"mvn did not {what} within {MVN_TIMEOUT // 60} minutes: "
                               "check network access to Maven Central (or set KAFKA_HOME)") from None


def _mvn_failure(version: str, output: str) -> str:
    if "Could not find artifact org.apache.kafka:kafka_2.13" in output:
        return (f"Kafka {version} is not on Maven Central: choose a released version "
                f"(known: {', '.join(KNOWN_VERSIONS[-4:])})")
    missing = re.search(r"Could not find artifact (\S+)", output)
    if missing:
        return f"mvn could not resolve {missing[1]} for Kafka {version}: the release is incomplete on Maven Central; use KAFKA_HOME"
    errors = [line for line in output.splitlines() if "ERROR" in line]
    first = errors[0].replace("[ERROR]", "").strip() if errors else output.strip()[-300:]
    return f"mvn failed to resolve Kafka {version} ({first}): check network access to Maven Central"


def tools_classpath(dist: KafkaDistribution, cache: Path) -> str:
    """`dist`'s classpath plus its `kafka-tools` jar (FeatureCommand and the other admin tools), which the
    broker's dependencies do not pull in: fetched once per version into `<cache>/kafka/<version>/tools`
    (a KAFKA_HOME distribution has it in libs already)."""
    if list(dist.libs.glob("kafka-tools-[0-9]*.jar")):
        return dist.classpath
    jar = cache / "kafka" / dist.version / "tools" / f"kafka-tools-{dist.version}.jar"
    if not jar.is_file():
        progress(f"fetching kafka-tools {dist.version} from Maven Central (first use; reused after)")
        _fetch_tools_jar(dist.version, jar)
    return dist.classpath + os.pathsep + str(jar)


def _fetch_tools_jar(version: str, jar: Path) -> None:
    mvn = require_tool("mvn", "install Apache Maven 3.8+ (e.g. apt-get install maven) or set KAFKA_HOME")
    jar.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".mvn-", dir=jar.parent))
    procs.REAPER.register_dir(tmp)
    try:
        cmd = [mvn, "-B", "-q", "dependency:copy", f"-Dartifact=org.apache.kafka:kafka-tools:{version}",
               f"-DoutputDirectory={tmp}"]
        proc = _run_mvn(cmd, jar.parent.parent.parent, f"fetch kafka-tools {version}")
        got = tmp / jar.name
        if proc.returncode != 0 or not got.is_file():
            missing = re.search(r"Could not find artifact (\S+)", proc.stdout + proc.stderr)
            raise HarnessError(f"mvn could not fetch org.apache.kafka:kafka-tools:{version}"
                               + (f" ({missing[1]} missing)" if missing else "")
                               + ": check network access to Maven Central (or set KAFKA_HOME)")
        os.replace(got, jar)  # atomic: a concurrent fetch of the same jar ends with the same file
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        procs.REAPER.forget_dir(tmp)
