"""The settings of a run a user can set, each declared once: `SETTINGS`.

A `Setting` names the `RunSpec` field it sets, its flag on the command line (and which commands take
it), its flag and ini key in the pytest plugin, how its text is read and how a value is written back.
Everything that turns flags into a spec or a spec into flags is generated from the table:
  - `add_options(parser, command)`: the argparse options of `share-harness run`, `certify`, `explore`;
  - `given(args, command)`: the values a command line gave (absent: not given);
  - `plugin_settings()`: the plugin's options and ini keys (`ksh_fixtures.plugin`);
  - `spec_from_values(values)`: the validated spec those values make, each refusal naming its setting;
  - `to_argv(spec, dialect, command)`: the flags that make `spec` again, for the reproduce commands
    (`reproduce_command`, certify's, the plugin's) and the suite, certify and matrix children.
`tests/unit/cli/test_settings.py` proves that every CLI option, every pytest option and every reproduce
command goes through a spec and back unchanged.

Settings of one command that no run carries (`check --engine`, `clean --keep`, `explore --budget`,
`matrix --versions`) stay with their command (`harness.cli.parser`): nothing translates them.
"""

from __future__ import annotations

import argparse
import json
import shlex
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterable

from harness import parse
from harness.clients.behaviours import BEHAVIOURS
from harness.clients.options import check_options, parse_options
from harness.errors import HarnessError
from harness.kafka.dead_letter import MODES
from harness.kafka.implementations import HOSTED, default_kafka_version
from harness.spec import BACKENDS, CHECK_ENGINES, FAULT_MODES, IMAGE_CLASSPATH, MAX_SEEDS, PROFILES, SPARK_THRESHOLD, RunSpec
from harness.workloads import WORKLOADS, apply_workload

#: Commands whose options come from the table ("suite": what `run --suite` passes on to pytest).
COMMANDS = ("run", "suite", "certify", "explore")
_CLUSTER = ("run", "suite", "certify", "explore")


def _pairs(what: str, example: str) -> Callable[[list[str]], dict[str, str]]:
    """`KEY=VALUE` texts (a repeatable option) -> {key: value}; a malformed one is one line."""
    def read(texts: list[str]) -> dict[str, str]:
        out: dict[str, str] = {}
        for pair in texts:
            key, sep, value = pair.partition("=")
            if not sep or not key.strip():
                raise HarnessError(f"invalid {what} {pair!r}: use KEY=VALUE, e.g. {example}")
            out[key.strip()] = value.strip()
        return out
    return read


def _client_options(texts: list[str]) -> dict[str, str]:
    return parse_options(texts)


def _client_options_json(text: str) -> dict[str, str]:
    try:
        options = json.loads(text)
    except ValueError:
        raise ValueError(f"not JSON: {text!r}; give an object, e.g. '{{\"max.concurrent.fetches\": \"0\"}}'") from None
    check_options(options)
    return options


def _faults(text: str) -> tuple[str, ...]:
    if not text.strip():  # "" is a mistake, not "no faults"
        raise ValueError("empty --faults: name fault groups or faults (e.g. --faults leader), or leave --faults "
                         "out for a run without faults")
    from harness.faults import parse_faults  # (deferred: loads confluent_kafka)
    return parse_faults(text)


def _rules(text: str) -> tuple[str, ...]:
    rules = tuple(r.strip() for r in text.split(",") if r.strip())
    if not rules:
        raise ValueError(f"no rule named: {text!r} names no rule; give rule ids, comma-separated, or leave the "
                         "option out for all of them")
    return rules


def _started(spec: RunSpec) -> bool:
    return not spec.bootstrap_servers  # (an external cluster is what it is: no brokers, disks or ports to choose)


def _scheduled(spec: RunSpec) -> bool:
    return bool(spec.faults or spec.workload_events)  # (a workload's consumer events are scheduled too)


def _workloads() -> str:
    return ", ".join(WORKLOADS)


@dataclass(frozen=True)
class Setting:
    """One setting: `key` is the RunSpec field it sets (`seeds` alone is no field: how many seeds a seeded
    scenario runs with, a session's and a certification's)."""

    key: str
    help: str
    cli: str | None = None          # its flag on the command line (None: the plugin's only)
    plugin: str | None = None       # its flag in the pytest plugin; ini key: the same name, `ksh_` first
    commands: tuple[str, ...] = ()  # the commands whose command line takes `cli`
    read: Callable[[str], Any] | None = None  # text -> value (ValueError or HarnessError: one line); None: the text
    choices: tuple[str, ...] | None = None
    #: repeatable on the command line (KEY=VALUE each): `read_many` makes the value of all of them
    read_many: Callable[[list[str]], Any] | None = None
    plugin_read: Callable[[str], Any] | None = None  # the plugin's text -> value, where it differs (JSON)
    write: Callable[[Any], str] = str  # value -> text `read` takes back
    plugin_write: Callable[[Any], str] | None = None
    always: bool = False  # written by `to_argv` even at its default (what a reader of a reproduce looks for)
    #: written by `to_argv` only where this holds of the spec (else the CLI would refuse it as not honoured)
    written_if: Callable[[RunSpec], bool] | None = None
    #: the value a command line writes, where it is not the field's (the fault schedule's seed in effect)
    value_of: Callable[[RunSpec], Any] | None = None
    metavar: str | None = None

    @property
    def ini(self) -> str | None:
        if self.plugin is None:
            return None
        name = self.plugin.lstrip("-").replace("-", "_")
        return name if name.startswith("ksh_") else "ksh_" + name

    @property
    def dest(self) -> str:
        """The plugin's option dest (pytest's `config.getoption`)."""
        assert self.plugin is not None
        return self.plugin.lstrip("-").replace("-", "_")

    def from_text(self, text: str, dialect: str = "cli") -> Any:
        reader = self.plugin_read if dialect == "pytest" and self.plugin_read is not None else self.read
        if reader is None:
            return text
        return reader(text)

    def default(self) -> Any:
        if self.key == "seeds":
            return None
        return RunSpec.default(self.key)


SETTINGS: tuple[Setting, ...] = (
    Setting("name", "the run's name (its run directory's)", cli="--name", commands=("run",), always=True),
    Setting("seed", "the seed of every random choice", cli="--seed", plugin="--ksh-seed",
            commands=("run", "suite", "certify", "explore"), read=parse.whole, always=True),
    Setting("profile", "run profile: ci or nightly", cli="--profile", plugin="--ksh-profile",
            commands=("run", "suite"), choices=tuple(sorted(PROFILES)), always=True),
    Setting("seeds", f"seeds each seeded scenario (chaos) runs with, from the seed on (default: 1, nightly profile "
                     f"3; certify: 3; at most {MAX_SEEDS})", cli="--seeds", plugin="--ksh-seeds",
            commands=("certify",), read=lambda text: parse.count(text, least=1, most=MAX_SEEDS)),
    # the cluster (the backend first: the default release and what the others may be depend on it; a
    # distribution's directory before the release: with one, a release of no supported line is taken)
    Setting("backend", "start the cluster as local java processes (default), as containers (docker), or start "
                       "franz-go's kfake (kfake) or librdkafka's mock cluster (mock) instead of Apache Kafka", cli="--backend", plugin="--backend",
            commands=_CLUSTER, choices=BACKENDS),
    Setting("kafka_home", "use the jars of an unpacked Kafka distribution", cli="--kafka-home", plugin="--kafka-home",
            commands=_CLUSTER),
    Setting("kafka_version", "the Kafka release (default: the harness's; on the kfake and mock backends: the "
                             "release whose API they serve)", cli="--kafka-version", plugin="--kafka-version",
            commands=_CLUSTER, always=True),
    Setting("bootstrap_servers", "run against an existing cluster at these servers (HOST:PORT,...)",
            cli="--bootstrap-servers", plugin="--bootstrap-servers", commands=("run", "suite", "certify")),
    Setting("kafka_image", "docker backend: the Kafka image under test (default apache/kafka:<--kafka-version>)",
            cli="--kafka-image", plugin="--kafka-image", commands=_CLUSTER),
    Setting("kafka_image_classpath", f"docker backend: where the image keeps Kafka's jars (default {IMAGE_CLASSPATH})",
            cli="--kafka-image-classpath", plugin="--kafka-image-classpath", commands=_CLUSTER),
    Setting("kfake_version", "kfake backend: the Go module version of franz-go's kfake (default: the pinned one)",
            cli="--kfake-version", plugin="--kfake-version", commands=_CLUSTER),
    Setting("brokers", f"brokers of a cluster the harness starts (default {RunSpec.brokers})", cli="--brokers",
            commands=("run",), read=lambda text: parse.count(text, least=1), written_if=_started),
    Setting("log_dirs", "log directories (disks) per broker of a local or docker cluster; 2 or more lets a disk fail "
                        f"without halting the broker (fault disk-fail; default {RunSpec.log_dirs})",
            cli="--log-dirs", commands=("run",), read=lambda text: parse.count(text, least=1),
            written_if=lambda spec: _started(spec) and spec.backend not in HOSTED),
    Setting("base_port", "the first of the consecutive ports a local cluster takes", cli="--base-port",
            commands=("run", "explore"), read=lambda text: parse.count(text, least=1), written_if=_started),
    # the workload
    Setting("topic_partitions", f"partitions of the run's topic (default {RunSpec.topic_partitions}, or the "
                                "workload's)", cli="--partitions", commands=("run",),
            read=lambda text: parse.count(text, least=1)),
    Setting("consumers", f"share consumers (default {RunSpec.consumers}, or the workload's)", cli="--consumers",
            commands=("run",), read=lambda text: parse.count(text, least=1)),
    Setting("behaviour", f"what the consumers do (default {RunSpec.behaviour}, or the workload's)",
            cli="--behaviour", commands=("run",), choices=tuple(BEHAVIOURS)),
    Setting("records", "records produced (default: the profile's)", cli="--records", commands=("run",),
            read=lambda text: parse.count(text, least=1)),
    Setting("workload", "a named consumer workload (sets behaviour, consumers, partitions, short locks and a low "
                        "delivery limit)", cli="--workload", commands=("run",)),
    # the share group (after the workload, whose own lock and limit a value given replaces)
    Setting("dead_letter", "the share group's dead-letter queue (KIP-1191, Kafka 4.4+): off, headers (DLQ records "
                           "carry the context headers only) or copy (and the record); checked by no-loss",
            cli="--dead-letter", commands=("run",), choices=tuple(MODES)),
    Setting("lock_duration_ms", "the share group's acquisition lock (share.record.lock.duration.ms; default: the "
                                "broker's)", cli="--lock-duration-ms", commands=("run",),
            read=lambda text: parse.count(text, least=1)),
    Setting("delivery_count_limit", "the share group's delivery-count limit where the release has the group config "
                                    "(4.3+)", cli="--delivery-count-limit", commands=("run",),
            read=lambda text: parse.count(text, least=1), written_if=lambda spec: spec._has_limit_config()),
    Setting("group_configs", "a group config of the share group (repeatable), e.g. "
                             "share.isolation.level=read_committed", cli="--group-config", commands=("run",),
            read_many=_pairs("--group-config", "share.isolation.level=read_committed"), metavar="KEY=VALUE"),
    # faults
    Setting("faults", "fault groups or names, comma-separated: leader,coordinator,partition,truncate,latency,"
                      "consumer,restart (or all)", cli="--faults", plugin="--faults", commands=("run", "suite"),
            read=_faults, write=",".join),
    Setting("fault_seed", "seed of the fault schedule (default: the seed)", cli="--fault-seed", plugin="--fault-seed",
            commands=("run", "suite"), read=parse.whole, written_if=_scheduled, always=True,
            value_of=lambda spec: spec.effective_fault_seed),
    Setting("fault_interval", "mean seconds between fault starts (default: the profile's)", cli="--fault-interval",
            plugin="--fault-interval", commands=("run", "suite"), read=parse.seconds, write=repr,
            written_if=_scheduled),
    Setting("fault_mode", "random: a seeded schedule drawn from --faults; once: each of --faults once",
            cli="--fault-mode", commands=("run",), choices=FAULT_MODES, written_if=lambda spec: bool(spec.faults)),
    # the client
    Setting("client", "the share-consumer library the consumers run: confluent, java, franz, spring, or the path of "
                      "a driver manifest (docs/driver.md)", cli="--client", plugin="--ksh-client",
            commands=("run", "suite", "certify", "explore")),
    Setting("client_options", "a client property a user of the library would set (repeatable), passed to every "
                              "consumer and recorded, e.g. max.concurrent.fetches=0 for franz-go's fetch-on-poll; a "
                              "property the driver does not apply is refused (plugin: a JSON object)",
            cli="--client-option", plugin="--ksh-client-options", commands=("run", "suite", "certify"),
            read_many=_client_options, plugin_read=_client_options_json, metavar="KEY=VALUE",
            plugin_write=lambda options: json.dumps(options, sort_keys=True)),
    # checking
    Setting("check_engine", "engine that checks each run's history: inprocess, spark, or auto (spark above the "
                            "spark threshold)", plugin="--ksh-engine", choices=CHECK_ENGINES),
    Setting("spark_threshold", f"events above which auto checks on Spark (default {SPARK_THRESHOLD:,})",
            plugin="--ksh-spark-threshold", read=parse.count),
    Setting("rules", "only the client rules named, comma-separated (default: all)", cli="--rules",
            plugin="--ksh-rules", commands=("certify",), read=_rules, write=",".join),
    Setting("conformance_out", "directory of the conformance report (default: reports/conformance/<time>)",
            plugin="--ksh-conformance-out"),
)


BY_KEY = {s.key: s for s in SETTINGS}


def for_command(command: str) -> tuple[Setting, ...]:
    return tuple(s for s in SETTINGS if s.cli is not None and command in s.commands)


# -- the command line ------------------------------------------------------------------------------------------

def _argparse_type(setting: Setting):
    def convert(text: str):
        try:
            return setting.from_text(text)
        except (ValueError, HarnessError) as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    convert.__name__ = setting.key
    return convert


def add_options(parser: argparse.ArgumentParser, command: str, **changed: dict[str, Any]) -> None:
    """`command`'s options of the table on `parser`, each defaulting to None (not given: `spec_from_values`
    applies the spec's default); `changed` maps a key to argparse arguments that command differs in (e.g.
    certify's required `--client`)."""
    for s in for_command(command):
        kwargs: dict[str, Any] = {"dest": s.key, "default": None, "help": s.help}
        if s.read_many is not None:
            kwargs.update(action="append", metavar=s.metavar)
        elif s.choices is not None:
            kwargs.update(choices=s.choices)
        elif s.read is not None:
            kwargs.update(type=_argparse_type(s))
        if s.key == "workload":
            kwargs["help"] = f"{s.help}: {_workloads()}"
        kwargs.update(changed.get(s.key, {}))
        parser.add_argument(s.cli, **kwargs)


def given(args: argparse.Namespace, command: str) -> dict[str, Any]:
    """The values `command`'s command line gave, by key (a setting not given is absent); a malformed
    repeatable one (KEY=VALUE) is one line naming it."""
    values: dict[str, Any] = {}
    for s in for_command(command):
        value = getattr(args, s.key, None)
        if value is None:
            continue
        values[s.key] = s.read_many(value) if s.read_many is not None else value
    return values


# -- the pytest plugin -------------------------------------------------------------------------------------------

def plugin_settings() -> tuple[Setting, ...]:
    """The plugin's settings (`--ksh-seed`, `--faults`, ...), in the table's order."""
    return tuple(s for s in SETTINGS if s.plugin is not None)


# -- values -> spec ----------------------------------------------------------------------------------------------

class SettingRefused(HarnessError):
    """A value the spec refused, with the setting it was given for (`setting`)."""

    def __init__(self, setting: Setting, message: str) -> None:
        super().__init__(message)
        self.setting = setting


def spec_from_values(values: dict[str, Any], base: RunSpec | None = None) -> RunSpec:
    """The validated spec `values` make (key -> value, as `given` or the plugin reads them): the profile's
    defaults first, then each value in the table's order, validated as it is applied, so a refusal
    (`SettingRefused`) names the setting whose value broke a rule; a setting not given keeps the spec's
    default, except the Kafka release, which defaults to the backend's (`default_kafka_version`)."""

    def apply(spec: RunSpec, key: str, **changes: Any) -> RunSpec:
        try:
            return replace(spec, **changes).validate()
        except HarnessError as exc:
            if isinstance(exc, SettingRefused):
                raise
            raise SettingRefused(BY_KEY[key], str(exc)) from None

    profile = values.get("profile", (base or RunSpec()).profile)
    if profile not in PROFILES:
        raise SettingRefused(BY_KEY["profile"], f"invalid profile {profile!r}: use one of {', '.join(PROFILES)}")
    spec = apply(base or RunSpec(profile=profile).with_profile(), "profile", profile=profile)
    for s in SETTINGS:
        if s.key in ("profile", "seeds"):
            continue
        if s.key == "kafka_version" and s.key not in values:
            spec = apply(spec, s.key, kafka_version=default_kafka_version(spec.backend))
        if s.key not in values:
            continue
        value = values[s.key]
        if s.key == "workload":
            try:
                spec = apply_workload(spec, value).validate()
            except HarnessError as exc:
                raise SettingRefused(s, str(exc)) from None
        elif s.key == "brokers":  # replicas follow the brokers a cluster has (3 and 2 at most)
            spec = apply(spec, s.key, brokers=value, replication_factor=min(3, value),
                         min_insync_replicas=min(2, value))
        else:
            spec = apply(spec, s.key, **{s.key: value})
    return spec


# -- spec -> flags -----------------------------------------------------------------------------------------------

#: The settings that change other settings' defaults: a reproduce command writes a setting only where the spec
#: differs from what these alone make (a workload's own consumers are not written beside it).
_SHAPING = ("profile", "backend", "kafka_version", "kafka_home", "kafka_image", "bootstrap_servers", "workload")


def baseline(spec: RunSpec) -> RunSpec:
    """The spec the shaping settings of `spec` alone make (every other setting at its default; not validated:
    a reproduce command is written for whatever spec a run had)."""
    base = replace(RunSpec(profile=spec.profile).with_profile(),
                   **{key: getattr(spec, key) for key in _SHAPING if key not in ("profile", "workload")})
    if spec.workload is not None:
        base = apply_workload(base, spec.workload)
    return base


def to_argv(spec: RunSpec, dialect: str = "cli", command: str = "run", *, seeds: int | None = None,
            only: Iterable[str] | None = None) -> list[str]:
    """The flags that make `spec` again through `dialect` ("cli": `share-harness <command>`; "pytest": the
    plugin's): every setting `command` (or the plugin) takes whose value differs from the baseline's
    (`baseline`), and those read first (`always`); `seeds` for the settings' `seeds`; `only`: these keys alone."""
    if dialect not in ("cli", "pytest"):
        raise ValueError(f"dialect {dialect!r}: cli or pytest")
    base = baseline(spec)
    args: list[str] = []
    for s in SETTINGS:
        flag = s.cli if dialect == "cli" else s.plugin
        if flag is None or (dialect == "cli" and command not in s.commands) or (only is not None and s.key not in only):
            continue
        if s.key == "seeds":
            if seeds is not None:
                args += [flag, str(seeds)]
            continue
        cli = dialect == "cli"
        value = s.value_of(spec) if cli and s.value_of is not None else getattr(spec, s.key)
        against = s.default() if s.key in _SHAPING else getattr(base, s.key)
        if value is None or value == () or value == {} or (value == against and not s.always):
            continue
        if cli and s.written_if is not None and not s.written_if(spec):
            continue  # (the plugin refuses none of these: a suite's tests set their own faults, workloads, brokers)
        if s.read_many is not None and dialect == "cli":
            for key, item in sorted(value.items()):
                args += [flag, f"{key}={item}"]
            continue
        write = s.plugin_write if dialect == "pytest" and s.plugin_write is not None else s.write
        args += [flag, write(value)]
    return args


def shell(argv: list[str]) -> str:
    return shlex.join(argv)


def reproduce_command(spec: RunSpec) -> str:
    """A shell command that runs `spec` again: `share-harness run` with the flags that make it (one the CLI
    takes back: no option it would refuse as not honoured)."""
    return shell(["share-harness", "run", *to_argv(spec)])


#: The settings that choose a cluster's backend (the same flags on the command line and in the plugin).
BACKEND_KEYS = ("backend", "kfake_version", "kafka_image", "kafka_image_classpath")


def backend_args(spec: RunSpec) -> list[str]:
    """The flags that choose `spec`'s backend, image and image classpath, or kfake's version; none for the
    local default."""
    return to_argv(spec, "cli", only=BACKEND_KEYS)
