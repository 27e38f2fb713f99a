"""Version profiles: what differs between Apache Kafka release lines for share groups.

Every entry was checked against the release's own jars/sources on Maven Central
(`GroupConfig`, `ShareGroupConfig`, `GroupCoordinatorConfig`, `ShareVersion`):

| line | share groups enabled by                                   | group-level configs added                 |
|------|------------------------------------------------------------|-------------------------------------------|
| 4.0  | `group.coordinator.rebalance.protocols=...,share` + `unstable.api.versions.enable=true` (early access) | lock duration, auto offset reset |
| 4.1  | `share.version=1` feature at format time (preview)         | + isolation level                         |
| 4.2  | on by default (`ShareVersion.LATEST_PRODUCTION = SV_1`)    | same as 4.1                               |
| 4.3  | on by default                                              | + `share.delivery.count.limit`, `share.partition.max.record.locks`, `share.renew.acknowledge.enable` |
| 4.4  | on by default (`share.version=2`: dead-letter queues)       | + `errors.deadletterqueue.topic.name`, `errors.deadletterqueue.copy.record.enable` (KIP-1191) |

4.4.0 is complete on Maven Central since November 2026 (`kafka-tools-api:4.4.0`, which its POM
names, was missing before; the harness excluded it then): it resolves with every dependency and is
the default. A version whose artifacts are missing still fails resolution with one line naming the
artifact (`harness.kafka.jars`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from harness.errors import HarnessError

#: The default Kafka version: the newest release, whose full artifact set resolves from Maven Central.
DEFAULT_VERSION = "4.4.0"

#: Release lines the harness supports: the preview line 4.1 and every GA line. A client that cannot talk to
#: a line says so (`harness.clients.registry.unsupported_release`).
SUPPORTED_LINES = ("4.1", "4.2", "4.3", "4.4")

#: Lines with share groups the harness knows but cannot check, and why (the one-line error names it).
#: Measured on 4.0.2 with its own KafkaShareConsumer: a workload runs and six checkers pass, but the
#: durable state cannot be read, so every verdict would be unknown.
UNCHECKABLE_LINES = {
    "4.0": "4.0 is early access (no upgrade path): its brokers do not serve the DescribeShareGroupOffsets "
           "version any later Admin client sends (UnsupportedVersionException), its Admin API has no "
           "listShareGroupOffsets, and its __share_group_state records predate the format later releases "
           "decode (\"Could not read record with version 0\"), so the durable-state checker could never "
           "decide",
}

#: Versions known to exist on Maven Central (checked 2026-11). A run of another version (on a
#: supported line) is refused before anything starts (`check_released`): its jars would be looked for on
#: Maven Central after the run began; a build of one's own is run from its jars (`--kafka-home`) or
#: image (`--kafka-image`).
KNOWN_VERSIONS = ("4.0.0", "4.0.1", "4.0.2", "4.1.0", "4.1.1", "4.1.2",
                  "4.2.0", "4.2.1", "4.2.2", "4.3.0", "4.3.1", "4.4.0")



def newest_known(line: str) -> str:
    """The newest known release of `line` ("4.2" -> "4.2.2")."""
    versions = [v for v in KNOWN_VERSIONS if v.rsplit(".", 1)[0] == line]
    if not versions:
        raise HarnessError(f"no known release of line {line}: known are {', '.join(KNOWN_VERSIONS)}")
    return max(versions, key=lambda v: tuple(int(x) for x in v.split(".")))


#: ASCII digits only (`\d` and str.isdigit() also take "²" or "٤").
_VERSION_RE = re.compile(r"([0-9]+)\.([0-9]+)\.([0-9]+)")


@dataclass(frozen=True)
class ReleaseLine:
    """What the harness must do differently for one Kafka release line."""

    line: str
    #: "unstable" (4.0), "feature" (4.1), "default" (4.2+).
    share_enablement: str
    #: group-level (dynamic) configs the line accepts, by role.
    group_configs: dict[str, str] = field(default_factory=dict)
    #: maven (groupId, artifactId) pairs to exclude from kafka_2.13's dependencies.
    maven_exclusions: tuple[tuple[str, str], ...] = ()
    #: whether the confluent-kafka ShareConsumer can talk to it (needs 4.2+).
    python_share_consumer: bool = True
    #: whether the harness's own Java tools (admin reads, `__share_group_state` decoding: `harness/java`)
    #: compile against this release's jars. The 4.0/4.1 Admin API lacks what they call (4.1:
    #: `SharePartitionOffsetInfo`, KIP-1226's lag, is 4.2; 4.0 also `ShareGroupDescription`'s later
    #: accessors and the coordinator record serde), so on those lines they run from the default
    #: release's jars, whose Admin client negotiates the broker's API versions; the client under test
    #: (the Java driver) always uses the release's own jars.
    own_tools: bool = True

    def broker_share_config(self) -> dict[str, str]:
        """Broker properties needed to turn share groups on for this line."""
        if self.share_enablement == "unstable":
            return {"group.coordinator.rebalance.protocols": "classic,consumer,share",
                    "unstable.api.versions.enable": "true"}
        return {}

    def format_features(self) -> list[str]:
        """`--feature` arguments for `StorageTool format`."""
        return ["share.version=1"] if self.share_enablement == "feature" else []

    def group_config(self, role: str) -> str | None:
        """The group-level config name for `role`, or None if the line has none."""
        return self.group_configs.get(role)


_BASE_GROUP = {"lock_duration": "share.record.lock.duration.ms",
               "auto_offset_reset": "share.auto.offset.reset",
               "session_timeout": "share.session.timeout.ms",
               "heartbeat_interval": "share.heartbeat.interval.ms"}
_GROUP_41 = {**_BASE_GROUP, "isolation_level": "share.isolation.level"}
_GROUP_43 = {**_GROUP_41, "delivery_count_limit": "share.delivery.count.limit",
             "max_record_locks": "share.partition.max.record.locks",
             "renew_acknowledge": "share.renew.acknowledge.enable"}
#: 4.4: the share-group dead-letter queue (KIP-1191; `harness.kafka.dead_letter`)
_GROUP_44 = {**_GROUP_43, "dead_letter_topic": "errors.deadletterqueue.topic.name",
             "dead_letter_copy": "errors.deadletterqueue.copy.record.enable"}

RELEASE_LINES: dict[str, ReleaseLine] = {
    "4.0": ReleaseLine("4.0", "unstable", _BASE_GROUP, python_share_consumer=False, own_tools=False),
    "4.1": ReleaseLine("4.1", "feature", _GROUP_41, python_share_consumer=False, own_tools=False),
    "4.2": ReleaseLine("4.2", "default", _GROUP_41),
    "4.3": ReleaseLine("4.3", "default", _GROUP_43),
    "4.4": ReleaseLine("4.4", "default", _GROUP_44),
}

#: Broker-level share-group config names (identical in 4.0-4.4).
BROKER_CONFIGS = {
    "delivery_count_limit": "group.share.delivery.count.limit",
    "lock_duration": "group.share.record.lock.duration.ms",
    "min_lock_duration": "group.share.min.record.lock.duration.ms",
    "max_record_locks": "group.share.partition.max.record.locks",
    "session_timeout": "group.share.session.timeout.ms",
    "min_session_timeout": "group.share.min.session.timeout.ms",
    "heartbeat_interval": "group.share.heartbeat.interval.ms",
    "min_heartbeat_interval": "group.share.min.heartbeat.interval.ms",
    "state_rf": "share.coordinator.state.topic.replication.factor",
    "state_min_isr": "share.coordinator.state.topic.min.isr",
    "state_partitions": "share.coordinator.state.topic.num.partitions",
}


def normalize_version(version: str) -> str:
    """The one spelling of `version` everything uses (jar cache, configs, checkers): surrounding
    whitespace removed. Validity is `parse_version`'s business."""
    return version.strip() if isinstance(version, str) else version


def parse_version(version: str) -> tuple[int, int, int]:
    """Parse "4.3.1" (surrounding whitespace ignored); reject anything else with a one-line error."""
    match = _VERSION_RE.fullmatch(normalize_version(version)) if isinstance(version, str) else None
    if not match:
        raise HarnessError(f"invalid Kafka version {version!r}: use MAJOR.MINOR.PATCH, e.g. {DEFAULT_VERSION}")
    return int(match[1]), int(match[2]), int(match[3])


def release_line(version: str) -> ReleaseLine:
    """What the harness knows of `version`'s release line; unknown lines are a user error."""
    major, minor, _ = parse_version(version)
    line = f"{major}.{minor}"
    profile = RELEASE_LINES.get(line)
    if profile is None:
        raise HarnessError(
            f"unknown Kafka version {version}: supported release lines are {', '.join(SUPPORTED_LINES)} "
            f"(e.g. --kafka-version {DEFAULT_VERSION})")
    return profile


def check_supported(version: str) -> ReleaseLine:
    """Like `release_line`, but also require a line the harness supports end to end."""
    profile = release_line(version)
    if profile.line in UNCHECKABLE_LINES:
        raise HarnessError(f"Kafka {version} is not supported: {UNCHECKABLE_LINES[profile.line]}; use "
                           f"{'/'.join(SUPPORTED_LINES)} (e.g. --kafka-version {DEFAULT_VERSION})")
    if profile.line not in SUPPORTED_LINES:
        raise HarnessError(
            f"Kafka {version} is not supported: share consumers need a {'/'.join(SUPPORTED_LINES)} "
            f"release (e.g. --kafka-version {DEFAULT_VERSION})")
    return profile


def check_released(version: str) -> ReleaseLine:
    """`check_supported`, and `version` must be a release the harness knows exists (`KNOWN_VERSIONS`):
    "4.4.99" is refused here, in one line, not after a cluster's set-up began looking for its jars."""
    profile = check_supported(version)
    version = normalize_version(version)
    if version not in KNOWN_VERSIONS:
        known = [v for v in KNOWN_VERSIONS if v.rsplit(".", 1)[0] in SUPPORTED_LINES]
        raise HarnessError(f"Kafka {version} is not a release the harness knows (released: {', '.join(known)}): "
                           f"use one of them (e.g. --kafka-version {DEFAULT_VERSION}), or run a build of your own "
                           "from its jars (--kafka-home) or image (--kafka-image)")
    return profile


#: The release CI's smoke of the oldest supported line runs (`tests/real/test_oldest_release_real.py`); `share-harness
#: setup` installs it beside the default.
OLDEST_SUPPORTED = newest_known(SUPPORTED_LINES[0])
