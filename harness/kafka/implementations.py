"""Implementations of KIP-932 the harness can start, beside Apache Kafka: their names, pinned versions and
the Kafka API level each serves. Light (no client library): the spec, the CLI and the plugin read it.

- `apache`: Apache Kafka's own brokers (the local and docker backends, or an external cluster).
- `kfake`: franz-go's in-memory cluster (`harness.cluster.kfake`), the `kfake` backend. kfake has no
  tags: its versions are Go pseudo-versions of franz-go's main branch. The launcher's go.mod pins
  `KFAKE_VERSION`; `--kfake-version` builds the launcher against another one (`go get`).
- `librdkafka-mock`: librdkafka's mock cluster (`harness.cluster.mock`), the `mock` backend: the library
  confluent-kafka's wheel bundles, so its version is that librdkafka's (`mock_version`); nothing to pin.

A backend in `HOSTED` starts its implementation itself: no bootstrap servers, no Kafka jars for its brokers.
"""

from __future__ import annotations

import re

from harness.errors import HarnessError
from harness.kafka.versions import DEFAULT_VERSION

KFAKE_MODULE = "github.com/twmb/franz-go/pkg/kfake"
#: Versions the harness has run, newest first: the first serves share groups with KIP-1222's RENEW; the
#: second is the first pseudo-version with share groups at all.
KFAKE_VERSIONS = ("v0.0.0-20260918054303-01f206a7e32c", "v0.0.0-20260515175617-8268a5d078c0")
#: The pinned version (the launcher's go.mod).
KFAKE_VERSION = KFAKE_VERSIONS[0]
#: The Kafka release whose share-group API kfake serves: ShareFetch v2 with RENEW, the 4.3 line's group
#: config names, no dead-letter queue (4.4). On the kfake backend `--kafka-version` defaults to it: it
#: sets what the harness expects of the API and which release's jars the Java client uses.
KFAKE_KAFKA_LEVEL = "4.3.1"
#: The implementation the `mock` backend runs (its page: docs/implementations/librdkafka-mock.md).
MOCK = "librdkafka-mock"
#: The Kafka release whose share-group API the mock serves: ShareGroupHeartbeat, ShareFetch and
#: ShareAcknowledge v1 (no RENEW, KIP-1222's, which came with 4.2), no group configs and no dead-letter queue; the
#: harness expects the 4.3 line's client API of it (as of kfake: its clients' jars, its config names).
MOCK_KAFKA_LEVEL = "4.3.1"
#: Backends that start an implementation other than Apache Kafka, and the Kafka API level each serves.
HOSTED = {"kfake": KFAKE_KAFKA_LEVEL, "mock": MOCK_KAFKA_LEVEL}
#: The fault capabilities (`harness.cluster.base`, `harness.cluster.kfake.LeaderMoves`) each hosted backend has:
#: a fault that needs another is refused before the run, in one line.
HOSTED_FAULTS = {"kfake": frozenset({"LeaderMoves"}), "mock": frozenset({"LeaderMoves", "InjectedFaults"})}
_MODULE_VERSION = re.compile(r"v\d+\.\d+\.\d+(?:-[0-9A-Za-z.]+)*")


def check_kfake_version(version: str) -> str:
    """`version` if it is a Go module version (`v0.0.0-20260918054303-01f206a7e32c`); else one line."""
    if not isinstance(version, str) or not _MODULE_VERSION.fullmatch(version):
        raise HarnessError(f"invalid kfake-version {version!r}: give a Go module version of {KFAKE_MODULE}, e.g. "
                           f"{KFAKE_VERSION} (run by the harness: {', '.join(KFAKE_VERSIONS)})")
    return version


def default_kafka_version(backend: str) -> str:
    """The Kafka release a run targets when none is named: the harness default, or the API level a hosted
    implementation (kfake, the mock) serves."""
    return HOSTED.get(backend, DEFAULT_VERSION)


def mock_version() -> str:
    """The librdkafka whose mock the `mock` backend runs: the one confluent-kafka loads."""
    import confluent_kafka  # (deferred: this module is light)
    return confluent_kafka.libversion()[0]


def implementation(backend: str, kfake_version: str = KFAKE_VERSION) -> tuple[str, str | None]:
    """(name, version) of the implementation under test on `backend`: ("kfake", its version), ("librdkafka-mock",
    the librdkafka version) or ("apache", None: the Kafka version says it)."""
    if backend == "kfake":
        return "kfake", kfake_version
    if backend == "mock":
        return MOCK, mock_version()
    return "apache", None
