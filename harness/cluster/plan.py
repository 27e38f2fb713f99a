"""The cluster part of a run's spec (`harness.spec.RunSpec.cluster`): which implementation and release, how
many nodes and disks, where it is (started by the harness, or external), validated here, by the room that
starts clusters.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from harness.kafka.implementations import HOSTED, KFAKE_VERSION, check_kfake_version
from harness.kafka.versions import DEFAULT_VERSION, check_released, check_supported, normalize_version, parse_version

#: Backends of clusters the harness starts (`harness.run.context.make_cluster`): Apache Kafka as local
#: processes or containers, or another implementation of KIP-932 (kfake: `harness.cluster.kfake`; librdkafka's
#: mock cluster: `harness.cluster.mock`).
BACKENDS = ("local", "docker", "kfake", "mock")
#: Where a Kafka image keeps its jars unless `--kafka-image-classpath` says otherwise (the apache/kafka layout).
IMAGE_CLASSPATH = "/opt/kafka/libs/*"

#: One bootstrap server: a host name, an IPv4 address or a bracketed IPv6 address, then :PORT.
_SERVER_RE = re.compile(r"(?:[A-Za-z0-9_](?:[A-Za-z0-9_.-]*[A-Za-z0-9_])?|\[[0-9A-Fa-f:.]+\]):([0-9]{1,5})",
                        re.ASCII)

#: Upper bounds of what one machine runs (24 GiB, 2 cores: a broker is a 512 MB JVM): a value beyond them is
#: a typo, refused before anything starts (not minutes later).
SIZE_LIMITS = {"brokers": 9, "log_dirs": 4}


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_sizes(part: Any, limits: dict[str, int]) -> None:
    """Each of `limits`' fields of `part` a whole number in 1..its limit; else one line naming the range."""
    for name, most in limits.items():
        value = getattr(part, name)
        if not is_int(value) or not 1 <= value <= most:
            raise HarnessError(f"invalid {name.replace('_', '-')} {value!r}: use 1..{most:,}")


def local_ports_needed(brokers: int, controllers: int) -> int:
    """How many consecutive ports a local cluster of the runner's takes from --base-port on
    (`LocalClusterSpec.port_count`, the count the cluster allocates)."""
    from harness.cluster.local import LocalClusterSpec  # (deferred: loads confluent_kafka)
    return LocalClusterSpec(version=DEFAULT_VERSION, brokers=brokers, controllers=controllers).port_count()


def check_bootstrap_servers(servers: str) -> str:
    """`servers` if it is HOST:PORT[,HOST:PORT...] with ports 1..65535 (no spaces, no empty entries);
    else a one-line HarnessError naming the bad entry."""
    if not isinstance(servers, str) or not servers:
        raise HarnessError(f"invalid bootstrap-servers {servers!r}: use HOST:PORT[,HOST:PORT...], "
                           "e.g. localhost:9092")
    for entry in servers.split(","):
        match = _SERVER_RE.fullmatch(entry)
        if match is None or not 1 <= int(match[1]) <= 65535:
            raise HarnessError(f"invalid bootstrap-servers {servers!r}: entry {entry!r} is not HOST:PORT with a "
                               "port 1..65535; use HOST:PORT[,HOST:PORT...] without spaces, e.g. localhost:9092")
    return servers


@dataclass(frozen=True)
class ClusterPlan:
    """The cluster a run uses."""

    kafka_version: str = DEFAULT_VERSION
    brokers: int = 3
    controllers: int = 0
    #: log directories (disks) per broker, each `data/disk<k>`, the metadata log apart in `data/meta`: with
    #: two, a disk can fail without halting its broker (JBOD; the `disk-fail` faults)
    log_dirs: int = 2
    heap_mb: int = 512
    replication_factor: int = 3
    min_insync_replicas: int = 2
    bootstrap_servers: str | None = None  # external cluster: no process or link faults
    kafka_home: str | None = None
    base_port: int | None = None
    # backend of a cluster the harness starts: local (java processes) or docker (containers of an image)
    backend: str = "local"
    kafka_image: str | None = None  # docker: the image under test (default apache/kafka:<kafka_version>)
    kafka_image_classpath: str = IMAGE_CLASSPATH  # docker: where the image keeps Kafka's jars
    kfake_version: str = KFAKE_VERSION  # kfake: the Go module version of franz-go's kfake under test

    def __post_init__(self) -> None:
        # one spelling of the version for everything downstream (jar cache dir, configs, checkers, reports)
        object.__setattr__(self, "kafka_version", normalize_version(self.kafka_version))

    @property
    def harness_started(self) -> bool:
        """Whether the cluster is Apache Kafka started by the harness (local or docker backend), whose
        brokers' settings (and so the group configs' bounds) the harness chose."""
        return self.bootstrap_servers is None and self.backend in ("local", "docker")

    def validate(self) -> "ClusterPlan":
        if self.kafka_home is not None:
            parse_version(self.kafka_version)  # a distribution's jars still need a MAJOR.MINOR.PATCH
        elif self.kafka_image is not None:
            check_supported(self.kafka_version)  # an image of one's own may be a build of any release
        else:
            check_released(self.kafka_version)  # unknown lines and releases fail before anything is created
        if self.bootstrap_servers is not None:
            check_bootstrap_servers(self.bootstrap_servers)
        self._check_backend()
        if self.kafka_home is not None:
            self._check_kafka_home()
        check_sizes(self, SIZE_LIMITS)
        if self.controllers < 0:
            raise HarnessError(f"invalid controllers {self.controllers}: use 0 (combined) or more")
        if self.base_port is not None:
            need = local_ports_needed(self.brokers, self.controllers)
            if not is_int(self.base_port) or not 1024 <= self.base_port <= 65536 - need:
                raise HarnessError(f"invalid base-port {self.base_port!r}: a local cluster of {self.brokers} brokers "
                                   f"takes {need} ports from it, so use 1024..{65536 - need}")
        return self

    def _check_kafka_home(self) -> None:
        """A distribution given by `kafka_home` must be a directory now, not when the cluster's nodes are laid
        out (its jars are read then: `harness.kafka.jars.from_kafka_home`)."""
        if not isinstance(self.kafka_home, str) or not self.kafka_home.strip():
            raise HarnessError(f"invalid kafka-home {self.kafka_home!r}: give the directory of an unpacked Kafka "
                               "distribution")
        if not Path(self.kafka_home).is_dir():
            raise HarnessError(f"kafka-home {self.kafka_home} is not a directory: give the directory of an unpacked "
                               "Kafka distribution (the one holding libs/), or leave it out for the release's jars")

    def _check_backend(self) -> None:
        if self.backend not in BACKENDS:
            raise HarnessError(f"invalid backend {self.backend!r}: use one of {', '.join(BACKENDS)}")
        if self.backend == "docker" and self.bootstrap_servers is not None:
            raise HarnessError("backend docker starts its own cluster: leave out bootstrap-servers "
                               "(an external cluster needs no backend)")
        if self.backend == "docker" and self.kafka_home is not None:
            raise HarnessError("backend docker runs the image's jars: leave out kafka-home and name the image "
                               "(kafka-image)")
        if self.backend != "docker" and self.kafka_image is not None:
            raise HarnessError(f"kafka-image {self.kafka_image!r} needs the docker backend (backend docker)")
        if not self.kafka_image_classpath.startswith("/"):
            raise HarnessError(f"invalid kafka-image-classpath {self.kafka_image_classpath!r}: an absolute path "
                               "inside the image, e.g. /opt/kafka/libs/*")
        if self.backend in HOSTED and self.bootstrap_servers is not None:
            raise HarnessError(f"backend {self.backend} starts its own cluster: leave out bootstrap-servers")
        if self.backend != "kfake" and self.kfake_version != KFAKE_VERSION:
            raise HarnessError(f"kfake-version {self.kfake_version!r} needs the kfake backend (backend kfake)")
        check_kfake_version(self.kfake_version)
        if self.kafka_image is not None and not self.kafka_image.strip():
            raise HarnessError("empty kafka-image: name an image, e.g. apache/kafka:4.4.0")
