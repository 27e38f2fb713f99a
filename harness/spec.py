"""RunSpec: one plain, frozen description of a run (Jepsen's test map).

Built from defaults, then a profile, then CLI/ini options, then per-suite
overrides (`dataclasses.replace`). Serialised with sorted keys into the run
directory, so two runs can be diffed and any run reproduced from its seed.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from harness.certify.rules import RULES
from harness.clients.behaviours import BEHAVIOURS  # noqa: F401  (re-exported: the CLI's choices)
from harness.clients.options import check_options
from harness.clients.registry import driver_info
from harness.errors import HarnessError
from harness.kafka.dead_letter import MODES, group_config_names
from harness.kafka.group_configs import check_group_configs, check_number
from harness.kafka.implementations import KFAKE_VERSION, check_kfake_version
from harness.kafka.versions import (DEFAULT_VERSION, check_released, check_supported, normalize_version, parse_version,
                                    release_line)
from harness.workloads import WORKLOADS

FAULT_MODES = ("random", "once")
CHECK_ENGINES = ("auto", "inprocess", "spark")
#: Events above which the `auto` engine checks a history on Spark rather than in-process.
SPARK_THRESHOLD = 5_000_000
#: Backends of clusters the harness starts (`harness.run.context.make_cluster`): Apache Kafka as local
#: processes or containers, or another implementation of KIP-932 (kfake: `harness.cluster.kfake`).
BACKENDS = ("local", "docker", "kfake")
#: Where a Kafka image keeps its jars unless `--kafka-image-classpath` says otherwise (the apache/kafka layout).
IMAGE_CLASSPATH = "/opt/kafka/libs/*"
PROFILES: dict[str, dict[str, Any]] = {
    "ci": {"records": 300, "drain_timeout": 90.0},
    "nightly": {"records": 20000, "drain_timeout": 600.0},
}

#: One bootstrap server: a host name, an IPv4 address or a bracketed IPv6 address, then :PORT.
_SERVER_RE = re.compile(r"(?:[A-Za-z0-9_](?:[A-Za-z0-9_.-]*[A-Za-z0-9_])?|\[[0-9A-Fa-f:.]+\]):([0-9]{1,5})",
                        re.ASCII)


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


#: The most seeds one command runs a seeded scenario with (`certify --seeds`, the plugin's `--ksh-seeds`): a
#: typo of 10^18 would build a list (or a parametrization) that large.
MAX_SEEDS = 1000

#: Upper bounds of what one machine runs (24 GiB, 2 cores: a broker is a 512 MB JVM, a consumer a
#: process): a value beyond them is a typo, refused before anything starts (not minutes later).
_SIZE_LIMITS = {"brokers": 9, "log_dirs": 4, "topic_partitions": 10_000, "consumers": 64, "records": 100_000_000,
                "max_poll_records": 100_000}


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True)
class RunSpec:
    """Everything one run needs. Every random choice derives from `seed`."""

    name: str = "share-basic"
    seed: int = 1
    profile: str = "ci"
    # cluster
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
    # workload
    topic_partitions: int = 3
    consumers: int = 3
    behaviour: str = "accept-implicit"
    records: int = 300
    produce_rate: float = 200.0  # records per second, so consumers poll while records arrive
    max_poll_records: int = 20
    drain_timeout: float = 90.0
    group_configs: dict[str, str] = field(default_factory=dict)
    workload: str | None = None  # harness.workloads name; sets behaviour, consumers, partitions, events
    workload_events: tuple[str, ...] = ()  # consumer faults scheduled beside `faults` (crashes, joins)
    lock_duration_ms: int | None = None  # the group's acquisition lock (None: the broker's)
    delivery_count_limit: int | None = None  # the group's delivery-count limit, where the release has it
    #: the group's dead-letter queue (KIP-1191, 4.4+): off, headers (DLQ records carry the context headers
    #: only) or copy (and the record's key and value); its topic is `dlq.<topic>` (harness.kafka.dead_letter)
    dead_letter: str = "off"
    # faults (harness.faults): catalogue names, a seed for the schedule (default: `seed`), mean seconds apart
    faults: tuple[str, ...] = ()
    fault_seed: int | None = None
    fault_interval: float | None = None
    fault_mode: str = "random"  # random: a seeded schedule of `faults`; once: each of `faults` once, seeded times
    # the share-consumer library the consumers run: confluent, java, franz, or a driver manifest's path
    client: str = "confluent"
    # properties a user of that library would set (harness.clients.options): every consumer gets them
    client_options: dict[str, str] = field(default_factory=dict)
    # checking
    check_engine: str = "auto"  # inprocess, spark, or auto: spark above `spark_threshold` events
    spark_threshold: int = SPARK_THRESHOLD
    lock_tolerance_ms: int = 2000  # how early before its deadline a lock may end unseen (client-side prefetch)
    settle_ms: int = 10000  # how long after a fault heals its allowances still apply
    # certification (`share-harness certify`): the client rules to run (all when empty), where the
    # conformance report goes (default: reports/conformance/<time>)
    rules: tuple[str, ...] = ()
    conformance_out: str | None = None

    def __post_init__(self) -> None:
        # one spelling of the version for everything downstream (jar cache dir, configs, checkers, reports)
        object.__setattr__(self, "kafka_version", normalize_version(self.kafka_version))

    def validate(self) -> "RunSpec":
        """Reject invalid values with a one-line error naming the valid range (the CLI and the pytest plugin
        build a spec and call this; the CLI's run also calls `check_faults_hostable`)."""
        self._check_cluster()
        self._check_workload()
        self._check_faults()
        self._check_group()
        self._check_checking()
        return self

    def _check_cluster(self) -> None:
        if self.kafka_home is not None:
            parse_version(self.kafka_version)  # a distribution's jars still need a MAJOR.MINOR.PATCH
        elif self.kafka_image is not None:
            check_supported(self.kafka_version)  # an image of one's own may be a build of any release
        else:
            check_released(self.kafka_version)  # unknown lines and releases fail before anything is created
        if self.profile not in PROFILES:
            raise HarnessError(f"invalid profile {self.profile!r}: use one of {', '.join(PROFILES)}")
        if not _is_int(self.seed):
            raise HarnessError(f"invalid seed {self.seed!r}: use a whole number")
        if self.bootstrap_servers is not None:
            check_bootstrap_servers(self.bootstrap_servers)
        self._check_backend()
        if self.kafka_home is not None:
            self._check_kafka_home()
        for name, most in _SIZE_LIMITS.items():
            value = getattr(self, name)
            if not _is_int(value) or not 1 <= value <= most:
                raise HarnessError(f"invalid {name.replace('_', '-')} {value!r}: use 1..{most:,}")
        if self.controllers < 0:
            raise HarnessError(f"invalid controllers {self.controllers}: use 0 (combined) or more")
        if self.base_port is not None:
            need = local_ports_needed(self.brokers, self.controllers)
            if not _is_int(self.base_port) or not 1024 <= self.base_port <= 65536 - need:
                raise HarnessError(f"invalid base-port {self.base_port!r}: a local cluster of {self.brokers} brokers "
                                   f"takes {need} ports from it, so use 1024..{65536 - need}")

    def _check_kafka_home(self) -> None:
        """A distribution given by `kafka_home` must be a directory now, not when the cluster's nodes are laid
        out (its jars are read then: `harness.kafka.jars.from_kafka_home`)."""
        from pathlib import Path
        if not isinstance(self.kafka_home, str) or not self.kafka_home.strip():
            raise HarnessError(f"invalid kafka-home {self.kafka_home!r}: give the directory of an unpacked Kafka "
                               "distribution")
        if not Path(self.kafka_home).is_dir():
            raise HarnessError(f"kafka-home {self.kafka_home} is not a directory: give the directory of an unpacked "
                               "Kafka distribution (the one holding libs/), or leave it out for the release's jars")

    @property
    def harness_started(self) -> bool:
        """Whether the run's cluster is Apache Kafka started by the harness (local or docker backend), whose
        brokers' settings (and so the group configs' bounds) the harness chose."""
        return self.bootstrap_servers is None and self.backend in ("local", "docker")

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
        if self.backend == "kfake" and self.bootstrap_servers is not None:
            raise HarnessError("backend kfake starts its own cluster: leave out bootstrap-servers")
        if self.backend != "kfake" and self.kfake_version != KFAKE_VERSION:
            raise HarnessError(f"kfake-version {self.kfake_version!r} needs the kfake backend (backend kfake)")
        check_kfake_version(self.kfake_version)
        if self.kafka_image is not None and not self.kafka_image.strip():
            raise HarnessError("empty kafka-image: name an image, e.g. apache/kafka:4.4.0")

    def _check_workload(self) -> None:
        if self.behaviour not in BEHAVIOURS:
            raise HarnessError(f"invalid behaviour {self.behaviour!r}: use one of {', '.join(BEHAVIOURS)}")
        if self.produce_rate <= 0:
            raise HarnessError(f"invalid produce-rate {self.produce_rate}: use a positive number of records per second")
        if self.workload is not None:
            if self.workload not in WORKLOADS:
                raise HarnessError(f"invalid workload {self.workload!r}: use one of {', '.join(WORKLOADS)}")
        driver_info(self.client)  # a bad name or manifest is a one-line error naming the valid ones
        if self.drain_timeout <= 0:
            raise HarnessError(f"invalid drain-timeout {self.drain_timeout}: use a positive number of seconds")
        self._check_dead_letter()

    def _check_dead_letter(self) -> None:
        if self.dead_letter not in MODES:
            raise HarnessError(f"invalid dead-letter {self.dead_letter!r}: use one of {', '.join(MODES)}")
        if self.dead_letter != "off":
            group_config_names(self.kafka_version, self.dead_letter)

    def _check_faults(self) -> None:
        if self.fault_seed is not None and not _is_int(self.fault_seed):
            raise HarnessError(f"invalid fault-seed {self.fault_seed!r}: use a whole number")
        if self.faults or self.workload_events:
            from harness.faults import parse_faults  # (deferred: loads confluent_kafka)
            for names in (self.faults, self.workload_events):
                if names:
                    parse_faults(",".join(names))  # a bad name is a one-line error listing the valid ones
        if self.bootstrap_servers is None:
            self._check_faults_fit_backend()
        if self.fault_mode not in FAULT_MODES:
            raise HarnessError(f"invalid fault-mode {self.fault_mode!r}: use one of {', '.join(FAULT_MODES)}")
        if self.fault_interval is not None:
            self._check_fault_interval(self.fault_interval)

    def _check_faults_fit_backend(self) -> None:
        """A fault the backend cannot apply is refused now, not recorded as not applied after a whole run:
        kfake offers leader moves only (no process or link control); Apache Kafka's backends move leaders by
        taking brokers down, never by the implementation's own hooks."""
        from harness.faults import CATALOGUE  # (deferred: loads confluent_kafka)
        for name in (*self.faults, *self.workload_events):
            needs = {cap.__name__ for cap in CATALOGUE[name].needs}
            if self.backend == "kfake" and needs - {"LeaderMoves"}:
                raise HarnessError(f"fault {name} needs {', '.join(sorted(needs))}, which the kfake backend has not "
                                   "(one in-memory process, no proxies): on kfake use the consumer faults, "
                                   "leader-move or leader-shuffle")
            if self.backend != "kfake" and "LeaderMoves" in needs:
                raise HarnessError(f"fault {name} moves leaders with the implementation's own hooks, which only the "
                                   f"kfake backend has: on the {self.backend} backend use leader-stop, leader-kill "
                                   "or leader-pause")

    def check_faults_hostable(self) -> "RunSpec":
        """The spec, if its cluster can host its faults: an external cluster (bootstrap-servers) is one the
        harness has no process, disk or link of, so only the consumer faults (which act on the harness's own
        consumers) can be applied there; any other would end "not applied" after a whole run. For the spec of a
        run (the CLI's `run`, `run --suite`), not `validate`'s: a session's spec on an external cluster takes
        the suites' fault specs, whose tests are skipped there (`local_only`)."""
        if self.bootstrap_servers is not None:
            self._check_faults_fit_external()
        return self

    def _check_faults_fit_external(self) -> None:
        from harness.faults import CATALOGUE  # (deferred: loads confluent_kafka)
        for name in (*self.faults, *self.workload_events):
            needs = sorted(cap.__name__ for cap in CATALOGUE[name].needs)
            if needs:
                hosted = [n for n, f in CATALOGUE.items() if not f.needs]
                raise HarnessError(f"fault {name} needs {', '.join(needs)}, which an external cluster "
                                   f"(bootstrap-servers) does not give the harness (no process, disk or link "
                                   f"control): drop bootstrap-servers to run it on a cluster the harness starts, or "
                                   f"use the consumer faults {', '.join(hosted)}")

    def _check_fault_interval(self, interval: Any) -> None:
        # (deferred: the harness.faults package loads confluent_kafka; the spec is read by every pytest session)
        from harness.faults.schedule import TIMINGS, shortest_interval
        phase = TIMINGS[self.profile].phase
        if isinstance(interval, bool) or not isinstance(interval, (int, float)) or not math.isfinite(interval) \
                or interval <= 0:
            raise HarnessError(f"invalid fault-interval {interval!r}: use a positive, finite number of seconds")
        least = shortest_interval(TIMINGS[self.profile])
        if interval < least:  # faults could not start that often: the schedule would only pile them up
            timing = TIMINGS[self.profile]
            raise HarnessError(f"invalid fault-interval {interval:g}: the {self.profile} profile's faults last at "
                               f"least {timing.min_duration:g} s and at most {timing.max_overlap} run at once, so "
                               f"one can start at most every {least:g} s: use {least:g} <= interval <= {phase:g}")
        if interval > phase:  # the schedule would be empty: a run with no chaos that passes
            longer = " (or the nightly profile for longer ones)" if interval <= TIMINGS["nightly"].phase else ""
            raise HarnessError(f"invalid fault-interval {interval:g}: the {self.profile} profile starts faults "
                               f"during its first {phase:g} s, so use 0 < interval <= {phase:g}{longer}")

    def _check_group(self) -> None:
        """The share group's settings: the lock duration and delivery-count limit within the bounds the release
        (and, on a cluster the harness starts, its brokers) accept; every group config a config of the release
        with a value it takes. An INVALID_CONFIG after the cluster started would waste it."""
        started = self.harness_started
        if self.lock_duration_ms is not None:
            check_number("share.record.lock.duration.ms", self.lock_duration_ms, started, "lock-duration-ms")
        if self.delivery_count_limit is not None:
            check_number("share.delivery.count.limit", self.delivery_count_limit, started, "delivery-count-limit")
        check_group_configs(self.group_configs, self.kafka_version, started)

    def _check_checking(self) -> None:
        if self.lock_tolerance_ms < 0 or self.settle_ms < 0:
            raise HarnessError("invalid lock-tolerance-ms/settle-ms: use 0 or more milliseconds")
        if self.check_engine not in CHECK_ENGINES:
            raise HarnessError(f"invalid check engine {self.check_engine!r}: use one of {', '.join(CHECK_ENGINES)}")
        if not _is_int(self.spark_threshold) or self.spark_threshold < 0:
            raise HarnessError(f"invalid spark-threshold {self.spark_threshold!r}: use a number of events, 0 or more")
        check_options(self.client_options)
        if self.rules:
            unknown = [r for r in self.rules if r not in RULES]
            if unknown:
                raise HarnessError(f"unknown rules {', '.join(unknown)}; valid: {', '.join(RULES)}")

    def with_profile(self) -> "RunSpec":
        """Apply the profile's defaults (explicit options applied afterwards win)."""
        return replace(self, **PROFILES[self.profile])

    @property
    def effective_fault_seed(self) -> int:
        return self.seed if self.fault_seed is None else self.fault_seed

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True, indent=2)

    def _has_limit_config(self) -> bool:
        """Whether the release has the group-level delivery-count limit (else the brokers' applies)."""
        try:
            return release_line(self.kafka_version).group_config("delivery_count_limit") is not None
        except HarnessError:
            return True  # a version the harness does not know: say what the spec holds

