"""Which share-consumer drivers the harness can run, in step mode and in chaos runs, and what each supports.

A driver is named either by a built-in name (`confluent`, `java`, `franz`) or by the path of a
driver manifest, a JSON file that lets a driver in any language take part without changing the
harness (`docs/driver.md`):

    {"name": "my-client", "contract": 1, "command": ["{python}", "my_driver.py"],
     "features": ["ack:ACCEPT", "ack:RELEASE", "ack:REJECT", "explicit", "implicit", "commit_sync"]}

`client_options` (optional) are client properties the driver gets, like `--client-option`.
`command` is run, in the manifest's directory, with the driver's JSON config appended as its last
argument; `{python}` stands for the harness's own interpreter and a relative path that exists there is
made absolute.
`features` are what the driver declares it supports (`FEATURES`): a rule needing another is
reported "not supported", never pass or fail.

Step mode (`DriverInfo.make`: conformance tests, certification) is what every driver has. Chaos runs
(`harness.clients.pool.DriverPool`) need consumers that run a behaviour on their own
(`DriverInfo.make_autonomous`: accept-implicit, accept-explicit, mix, poison, slow): the confluent
driver runs it in its process; the Java and franz-go drivers run it from the harness through their
step mode (`harness.clients.stepped`); a manifest's driver runs it itself (docs/driver.md).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from harness.clients.behaviours import commits_async
from harness.clients.contract import (CONTRACT_VERSION, CONTRACT_VERSIONS, FEATURE_SINCE,  # (also imported from here)
                                      older_contract, speaks)
from harness.clients.driver import ConsumerDriver, ExternalStepDriver, JavaStepDriver, SpringStepDriver, StepDriver
from harness.clients.franz import FRANZ_FEATURES, FranzStepDriver
from harness.clients.options import check_options, probe
from harness.clients.stepped import stepped
from harness.errors import HarnessError
from harness.kafka import jars
from harness.kafka.versions import release_line
from harness.sys.files import read_json_object
from harness.sys.paths import cache_dir

#: What a driver may declare: acknowledgement types, acknowledgement modes, commit flavours, the
#: acknowledgement commit callback, `acquire_mode` (it passes `share.acquire.mode` to its client),
#: `rack_id` (it passes `client.rack` to its client, which sends it as the member's rack id), and three
#: client-API contracts of KafkaShareConsumer a library may have (harness.certify.rules): `ack_mode_setting`
#: (a `share.acknowledgement.mode` setting whose implicit mode refuses acknowledge()), `renew_hand_back`
#: (a renewed record is returned again by the next poll) and `implicit_batch_held` (in implicit mode the last
#: batch stays unacknowledged until the application's next poll, commit or close: not so in a framework that
#: commits after each batch its listener returned, as spring-kafka's container does). Contract 2 adds
#: `unsubscribe` (the `unsubscribe` command calls the library's unsubscribe(); the franz-go and spring drivers
#: do not implement it). `subscribe_none`: a consumer can be started with `topics: []`, subscribed to nothing (a
#: framework whose container refuses to be built without topics, as spring-kafka's does, cannot). Contract 3 adds
#: `subscribe` (the `subscribe` and `subscription` commands), `ack_default` (an `ack` record without `type`: the
#: library's one-argument acknowledge), `ack_by_offset` (`ack` with `"by": "offset"`: its library acknowledges by
#: topic, partition and offset any record the last poll returned, as confluent-kafka's acknowledge_offset does;
#: KafkaShareConsumer takes its by-offset overload only for a record whose delivery failed, ShareFetch.acknowledge,
#: so the Java driver does not declare it), `mode_default` (`mode: "default"`: the driver sets no mode) and
#: `lock_timeout` (the `lock_timeout` command: KafkaShareConsumer's acquisitionLockTimeoutMs(), which confluent-kafka
#: has not). `ack_local` (any contract): acknowledge() only records the acknowledgement in the client, which sends
#: it with the next poll, commit or close, as KafkaShareConsumer and confluent-kafka do (franz-go sends it in the
#: background within about a second; spring-kafka's container commits after each batch its listener returned).
#: Contract 3 also: `default_timeouts` (`commit_sync` and `close` with `"timeout": null` call the library's overloads
#: without a timeout), `poll_once` (the `poll_once` command: one library poll, timed) and `negative_timeout_refused`
#: (a negative `timeout` is passed to the library, whose poll, commitSync and close refuse it, as KafkaShareConsumer's
#: do; confluent-kafka takes -1 as "wait forever", so its driver does not declare it), `wakeup` (the `wakeup` command:
#: KafkaShareConsumer's wakeup(), called on the driver's thread between two calls; confluent-kafka has none).
#: Contract 4: `config_refusal` (a configuration the library refuses at construction is printed as a `start` `fail`
#: event with its error, the driver then exits 0), `client_instance_id` (the `client_instance_id` command:
#: KafkaShareConsumer's clientInstanceId(Duration); confluent-kafka has none) and `wakeup_thread` (`poll_once`'s
#: `wakeup_after`: wakeup() from a second thread while the poll blocks; KafkaShareConsumer only) and `close_timeout`
#: (`close`'s `timeout` is passed to the library's close(Duration), and a close that ran out its timeout, force
#: closed, is printed as `info`: confluent-kafka's close takes no timeout), `interrupt_thread` (`poll_once`'s
#: `interrupt_after`: a second thread interrupts the polling one, the JVM's InterruptException) and `thread_guard` (the
#: `poll_concurrent` command: poll on two threads at once, which KafkaShareConsumer refuses with
#: ConcurrentModificationException).
FEATURES = ("ack:ACCEPT", "ack:RELEASE", "ack:REJECT", "ack:RENEW", "explicit", "implicit",
            "commit_sync", "commit_async", "callback", "acquire_mode", "rack_id", "ack_mode_setting",
            "renew_hand_back", "implicit_batch_held", "unsubscribe", "subscribe_none", "subscribe", "ack_default",
            "ack_by_offset", "mode_default", "lock_timeout", "ack_local", "default_timeouts", "poll_once",
            "negative_timeout_refused", "wakeup", "config_refusal", "client_instance_id", "wakeup_thread",
            "close_timeout", "interrupt_thread", "thread_guard")


@dataclass(frozen=True)
class DriverInfo:
    """A driver the harness can start: its name, declared features and how to build one."""

    name: str
    features: tuple[str, ...]
    make: Callable[..., Any]  # (name, config, history, log_dir, dist) -> a StepDriver, not started
    source: str = "built-in"  # or the manifest's path
    #: (name, config, history, log_dir, dist) -> a ConsumerDriver running `config["behaviour"]` on its own
    #: (chaos runs), not started; None: the driver runs step mode only, and `lacks` says what it misses
    autonomous: Callable[..., Any] | None = None
    lacks: str = ""
    #: client properties the manifest sets (`client_options`; harness.clients.options): the configuration
    #: certified, under any given on the command line
    options: dict[str, str] = field(default_factory=dict)
    #: a manifest's command as it is run (before the config argument); () for the built-in drivers
    argv: tuple[str, ...] = ()
    #: it runs on the release under test's jars (its kafka-clients): `make` needs the distribution
    jvm: bool = False
    #: the driver contract it speaks (harness.clients.contract): a rule needing a newer one is not run
    contract: int = CONTRACT_VERSION

    def older_contract(self, feature: str) -> str | None:
        """Why this driver's contract cannot serve `feature` (a skip reason), or None."""
        return older_contract(feature, self.contract)

    def supports(self, feature: str) -> bool:
        return feature in self.features

    def check_autonomous(self) -> None:
        """HarnessError naming what the driver lacks, if it cannot run a chaos run's behaviours."""
        if self.autonomous is None:
            raise HarnessError(f"the {self.name} driver runs step mode only, so a chaos run cannot use it "
                               f"(use the confluent driver): {self.lacks}")

    def make_autonomous(self, name: str, config: dict[str, Any], history, log_dir: Path, dist=None):
        """A driver running `config["behaviour"]` on its own (a chaos run's consumer), not started."""
        self.check_autonomous()

        if commits_async(config.get("behaviour", "")) and not self.supports("commit_async"):
            raise HarnessError(f"the {self.name} driver declares no commit_async, which behaviour "
                               f"{config['behaviour']} needs: use another behaviour or driver")
        return self.autonomous(name, config, history, log_dir, dist)

    def ack_types(self) -> tuple[str, ...]:
        return tuple(f.split(":", 1)[1] for f in self.features if f.startswith("ack:"))


def _confluent(name, config, history, log_dir, dist=None):
    return StepDriver(name, config, history, log_dir)


def _confluent_autonomous(name, config, history, log_dir, dist=None):
    return ConsumerDriver(name, config, history, log_dir)


def _java(name, config, history, log_dir, dist=None):
    if dist is None:
        raise HarnessError("the java driver needs the Kafka release's jars: run `share-harness setup`")
    return JavaStepDriver(name, config, history, log_dir, dist)


def _spring(name, config, history, log_dir, dist=None):
    if dist is None:
        raise HarnessError("the spring driver needs the Kafka release's jars: run `share-harness setup`")
    return SpringStepDriver(name, config, history, log_dir, dist)


def _franz(name, config, history, log_dir, dist=None):
    return FranzStepDriver(name, config, history, log_dir, dist)


def _franz_features() -> tuple[str, ...]:
    return tuple(FRANZ_FEATURES)


_BASIC = ("ack:ACCEPT", "ack:RELEASE", "ack:REJECT", "explicit", "implicit", "commit_sync", "commit_async",
          "callback", "implicit_batch_held")
#: what driver contract 3 brought, as the confluent and Java drivers serve it
_CONTRACT_3 = ("subscribe", "ack_default", "mode_default", "default_timeouts", "poll_once")
#: drivers whose library keeps an acknowledgement local until the next poll, commit or close (rule `ack-is-local`)
_LOCAL = ("ack_local",)


def builtin_drivers() -> dict[str, DriverInfo]:
    """The drivers that ship with the harness: confluent-kafka's ShareConsumer (librdkafka), the Java
    KafkaShareConsumer of the release under test (it adds RENEW and the acquire mode), franz-go, and Spring
    for Apache Kafka's share listener container over that KafkaShareConsumer (its commits: on the ShareConsumer the
    container hands its listeners, on the container's thread; docs/design/spring-driver.md)."""
    return {
        "confluent": DriverInfo("confluent", _BASIC + ("rack_id", "ack_mode_setting", "unsubscribe", "subscribe_none",
                                                       "ack_by_offset", "config_refusal") + _CONTRACT_3 + _LOCAL,
                                _confluent,
                                autonomous=_confluent_autonomous),
        "java": DriverInfo("java", _BASIC + ("ack:RENEW", "acquire_mode", "rack_id", "ack_mode_setting",
                                             "renew_hand_back", "unsubscribe", "subscribe_none", "lock_timeout",
                                             "negative_timeout_refused", "wakeup", "config_refusal",
                                             "client_instance_id", "wakeup_thread", "close_timeout",
                                             "interrupt_thread", "thread_guard")
                            + _CONTRACT_3 + _LOCAL,
                            _java,
                            autonomous=stepped(_java), jvm=True),
        "franz": DriverInfo("franz", _franz_features(), _franz, autonomous=stepped(_franz)),
        "spring": DriverInfo("spring", ("ack:ACCEPT", "ack:RELEASE", "ack:REJECT", "ack:RENEW", "explicit", "implicit",
                                        "commit_sync", "commit_async", "callback", "acquire_mode", "rack_id",
                                        "renew_hand_back"), _spring,
                             autonomous=stepped(_spring),
                             jvm=True),
    }


#: Why confluent-kafka cannot drive share groups on 4.0/4.1 (`ReleaseLine.python_share_consumer`), as seen
#: on 4.1.2: librdkafka's member ids are standard base64 (e.g. "kwQUwgK2Qd+gdWGfA4Y4rA"), which those
#: brokers' ShareFetch handler parses as a URL-safe Uuid, failing the request ("Unexpected error handling
#: request ... IllegalArgumentException: Illegal base64 character 2b"), so fetches fail at random.
CONFLUENT_BEFORE_42 = ("confluent-kafka's ShareConsumer (librdkafka) needs Kafka 4.2+: its member ids are "
                       "standard base64 and a {line} broker's ShareFetch parses them as URL-safe Uuids "
                       "(IllegalArgumentException: Illegal base64 character), so its fetches fail; use "
                       "--client java (the release's own KafkaShareConsumer) or franz")


#: Why the spring driver cannot run on Kafka 4.1 (docs/design/spring-driver.md, F12): spring-kafka 4.1's
#: ShareAcknowledgment reads AcknowledgeType.RENEW, which kafka-clients 4.1 lacks.
SPRING_BEFORE_42 = ("spring-kafka 4.1's share container needs kafka-clients 4.2+ (AcknowledgeType.RENEW): its "
                    "ShareAcknowledgment calls throw NoSuchFieldError on 4.1; use --client java")


def unsupported_release(client: str, version: str) -> str:
    """Why `client` cannot drive share groups on Kafka `version` ("" if it can): one line for the CLI,
    the reason of a "not supported on <line>" skip in the suites."""
    line = release_line(version)
    if client == "confluent" and not line.python_share_consumer:
        return f"not supported on {line.line}: " + CONFLUENT_BEFORE_42.format(line=line.line)
    if client == "spring" and line.line == "4.1":
        return f"not supported on {line.line}: " + SPRING_BEFORE_42
    return ""


def unsupported_by_spec(spec) -> str:
    """`unsupported_release` for a RunSpec's client and release; "" for a distribution given by
    `kafka_home` (its version is whatever its jars say, and only their syntax is checked)."""
    return "" if spec.kafka_home is not None else unsupported_release(spec.client, spec.kafka_version)


#: What a driver manifest may weigh: a few hundred bytes in practice (harness.sys.files reads it).
MANIFEST_LIMIT = 1024 * 1024


def load_manifest(path: Path) -> DriverInfo:
    """The driver a manifest describes; a HarnessError naming the file and the fix if it is not one. Read
    with `harness.sys.files` (a regular file of at most `MANIFEST_LIMIT` bytes: a fifo or a link to /dev/zero is
    one line, not a hang)."""
    path = Path(path)
    if not path.exists() and not path.is_symlink():
        raise HarnessError(f"driver manifest {path} does not exist: give a built-in client "
                           f"({', '.join(builtin_drivers())}) or the path of a manifest JSON file")
    data = read_json_object(path, "driver manifest", MANIFEST_LIMIT)
    name, command, features = data.get("name"), data.get("command"), data.get("features", [])
    if not isinstance(name, str) or not name:
        raise HarnessError(f"driver manifest {path}: `name` must be a non-empty string")
    if not (isinstance(command, list) and command and all(isinstance(c, str) for c in command)):
        raise HarnessError(f"driver manifest {path}: `command` must be a non-empty list of strings")
    contract = data.get("contract")
    if not speaks(contract):
        raise HarnessError(f"driver manifest {path} declares contract {contract!r}; this harness speaks contracts "
                           f"{', '.join(map(str, CONTRACT_VERSIONS))} (docs/driver.md)")
    unknown = [f for f in features if f not in FEATURES] if isinstance(features, list) else ["(not a list)"]
    if unknown:
        raise HarnessError(f"driver manifest {path}: unknown features {', '.join(map(str, unknown))}; "
                           f"valid: {', '.join(FEATURES)}")
    newer = [f for f in features if older_contract(f, contract)]
    if newer:  # a word the driver's contract does not have: it could not be sent the command
        raise HarnessError(f"driver manifest {path}: features {', '.join(newer)} need contract "
                           f"{max(FEATURE_SINCE[f] for f in newer)}; the manifest declares contract {contract}")
    options = data.get("client_options", {})
    try:
        check_options(options)
    except HarnessError as exc:
        raise HarnessError(f"driver manifest {path}: `client_options`: {exc}") from None
    base = path.resolve().parent
    argv = [sys.executable if c == "{python}" else
            str(base / c) if not Path(c).is_absolute() and (base / c).exists() else c for c in command]

    def make(driver_name, config, history, log_dir, dist=None):
        return ExternalStepDriver(driver_name, config, history, log_dir, argv, cwd=base)

    def autonomous(driver_name, config, history, log_dir, dist=None):
        from harness.clients.driver import ExternalDriver  # a driver without the behaviour exits 2 (its log says)
        return ExternalDriver(driver_name, config, history, log_dir, argv, cwd=base)
    return DriverInfo(name, tuple(features), make, source=str(path), autonomous=autonomous, options=dict(options),
                      argv=tuple(argv), contract=contract)


def driver_info(client: str) -> DriverInfo:
    """The driver named `client`: a built-in name or a manifest path (HarnessError if neither)."""
    builtins = builtin_drivers()
    if client in builtins:
        return builtins[client]
    if client.endswith(".json") or "/" in client:
        return load_manifest(Path(client))
    raise HarnessError(f"unknown client {client!r}: use one of {', '.join(builtins)} or the path of a "
                       f"driver manifest (docs/driver.md)")


def effective_options(spec) -> dict[str, str]:
    """The client options a spec's consumers get: the driver manifest's, then the spec's own (which win)."""
    return {**driver_info(spec.client).options, **spec.client_options}


def probe_spec(spec) -> dict[str, Any] | None:
    """`harness.clients.options.probe` of the spec's driver with its effective options (None when there are
    none): a HarnessError naming an option the driver would not apply."""
    options = effective_options(spec)
    if not options:
        return None
    info = driver_info(spec.client)
    dist = None
    if info.jvm:
        dist = jars.resolve(spec.kafka_version, cache_dir(), spec.kafka_home)
    return probe(info, options, dist)


def check_manifest_driver(info: DriverInfo, options: dict[str, str] | None = None, *, certify: bool = False) -> None:
    """A manifest's driver shown to start before anything else does (no cluster, no download): its program
    exists, and started once (`harness.clients.options.probe`: no broker is contacted) it prints its `start`
    event with every option applied. For certification it must also declare a feature: with none, every rule
    is "not supported" and nothing can be certified. A built-in driver is not checked here."""
    import os
    import shutil
    if info.source == "built-in":
        return
    if certify and not info.features:
        raise HarnessError(f"driver manifest {info.source} declares no features, so every rule would be \"not "
                           f"supported\" and nothing certified: list what the driver supports in `features` "
                           f"({', '.join(FEATURES)}; docs/driver.md)")
    program = info.argv[0] if info.argv else ""
    found = (os.path.isfile(program) and os.access(program, os.X_OK)) if "/" in program else shutil.which(program)
    if not found:
        raise HarnessError(f"driver manifest {info.source}: its command's program {program!r} is not an executable "
                           f"file{'' if '/' in program else ' on PATH'}: install the driver or fix `command` "
                           "(docs/driver.md)")
    try:
        probe(info, dict(options or {}), None, timeout=60.0)
    except HarnessError as exc:
        raise HarnessError(f"driver manifest {info.source}: {exc}") from None
