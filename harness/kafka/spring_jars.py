"""Spring for Apache Kafka's jars for the `spring` driver: resolved from Maven Central with `mvn`, once per version.

The POM depends on `org.springframework.kafka:spring-kafka` at runtime scope without kafka-clients (the
driver runs on the release under test's own kafka-clients, `harness.kafka.jars`, so that a certificate
names one client); `mvn dependency:copy-dependencies` copies spring-{kafka,core,beans,context,aop,
expression,messaging,tx}, micrometer and commons-logging into `<cache>/spring-kafka/<version>/libs`, which
is marked complete and reused as is (docs/design/spring-driver.md, 2.6).
"""

from __future__ import annotations

import fcntl
import os
import subprocess
from pathlib import Path

from harness.errors import HarnessError
from harness.kafka.jars import COMPLETE, copy_dependencies, require_tool
from harness.sys.progress import progress

#: the spring-kafka release the driver is built against (its share container: 4.0+; ShareAckMode and
#: ShareAcknowledgment.renew(): 4.1)
SPRING_KAFKA_VERSION = "4.1.2"


def render_pom(version: str) -> str:
    return f"""<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>kafka-share-harness</groupId><artifactId>spring-kafka-jars</artifactId><version>{version}</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.springframework.kafka</groupId><artifactId>spring-kafka</artifactId>
      <version>{version}</version><scope>runtime</scope>
      <exclusions><exclusion><groupId>org.apache.kafka</groupId><artifactId>kafka-clients</artifactId></exclusion></exclusions>
    </dependency>
  </dependencies>
</project>
"""


def spring_libs(cache: Path, version: str = SPRING_KAFKA_VERSION) -> Path:
    """The directory of spring-kafka `version`'s runtime jars (without kafka-clients), resolved on first use."""
    target = cache / "spring-kafka" / version
    if (target / COMPLETE).exists():
        return target / "libs"
    target.mkdir(parents=True, exist_ok=True)
    with open(target / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be resolving it
        if not (target / COMPLETE).exists():
            progress(f"fetching spring-kafka {version}'s jars from Maven Central into {target} (first use; reused "
                     "after)")
            _download(version, target)
    return target / "libs"


def spring_classpath(cache: Path, version: str = SPRING_KAFKA_VERSION) -> str:
    return os.pathsep.join(str(p) for p in sorted(spring_libs(cache, version).glob("*.jar")))


def _download(version: str, target: Path) -> None:
    mvn = require_tool("mvn", "install Apache Maven 3.8+ (e.g. apt-get install maven): the spring driver's jars "
                              "come from Maven Central")

    def check(proc: subprocess.CompletedProcess[str], out: Path) -> None:
        if proc.returncode != 0 or not list(out.glob("spring-kafka-*.jar")):
            errors = [line for line in (proc.stdout + proc.stderr).splitlines() if "ERROR" in line]
            first = errors[0].replace("[ERROR]", "").strip() if errors else "no spring-kafka jar"
            raise HarnessError(f"mvn could not resolve org.springframework.kafka:spring-kafka:{version} ({first}): "
                               "check network access to Maven Central")
    lock_dir = target.parent.parent / "kafka"  # (where the ~/.m2 lock lives)
    lock_dir.mkdir(parents=True, exist_ok=True)
    copy_dependencies(mvn, render_pom(version), target, lock_dir, f"resolve spring-kafka {version}", check)
