"""The share-group configs a run may set, and the values each release accepts: checked before anything
starts, so `--group-config k=banana` or `--lock-duration-ms 1` is one line, not an INVALID_CONFIG from the
cluster after its brokers, the topic and the consumers' set-up.

Read from the releases' own config definitions (`GroupConfig`, `ShareGroupConfig` and
`GroupCoordinatorConfig` of 4.1.2, 4.3.1 and 4.4.0: their `ConfigDef` validators and
`GroupConfig.validateValues`). A group config's value must be of its type and within the bounds the
brokers enforce (`group.share.min/max.*`). Two ranges per number:

- `accepted`: what any cluster of the release can accept: the group config's own validator, and the
  widest range the brokers' bound configs may themselves take (e.g. `share.record.lock.duration.ms` is
  at least 1000, and `group.share.max.record.lock.duration.ms` at most 3600000). Used for external
  clusters (whose bounds the harness cannot know before it connects) and kfake (which has none).
- `started`: the bounds on a cluster the harness starts (the local and docker backends): its brokers'
  settings (`harness.kafka.config.TEST_DEFAULTS`), else Kafka's defaults.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from harness import parse
from harness.errors import HarnessError
from harness.kafka.dead_letter import MODES, group_config_names
from harness.kafka.versions import release_line

_INT_MAX = 2**31 - 1


@dataclass(frozen=True)
class GroupConfigRule:
    """One share-group config: from which release line on, its type and the values it takes."""

    name: str
    since: str  # the first release line that has it
    kind: str  # "int", "bool", "choice" or "reset" (share.auto.offset.reset)
    accepted: tuple[int, int] | None = None  # int: on any cluster of the release
    started: tuple[int, int] | None = None  # int: on a cluster the harness starts
    choices: tuple[str, ...] = ()
    #: the harness's own option that sets it: given as a group config, the run would record another value
    #: in force than the cluster applies, so it is refused and the option named
    option: str | None = None


RULES: dict[str, GroupConfigRule] = {r.name: r for r in (
    GroupConfigRule("share.record.lock.duration.ms", "4.0", "int", (1000, 3_600_000), (1000, 60_000),
                    option="--lock-duration-ms"),
    GroupConfigRule("share.session.timeout.ms", "4.0", "int", (1, _INT_MAX), (6000, 60_000)),
    GroupConfigRule("share.heartbeat.interval.ms", "4.0", "int", (1, _INT_MAX), (200, 15_000)),
    GroupConfigRule("share.auto.offset.reset", "4.0", "reset"),
    GroupConfigRule("share.isolation.level", "4.1", "choice", choices=("read_committed", "read_uncommitted")),
    GroupConfigRule("share.delivery.count.limit", "4.3", "int", (2, 25), (2, 10), option="--delivery-count-limit"),
    GroupConfigRule("share.partition.max.record.locks", "4.3", "int", (100, 10_000), (100, 4000)),
    GroupConfigRule("share.renew.acknowledge.enable", "4.3", "bool"),
    GroupConfigRule("share.assignment.interval.ms", "4.3", "int", (0, _INT_MAX), (0, 15_000)),
    GroupConfigRule("share.assignor.offload.enable", "4.3", "bool"),
    GroupConfigRule("errors.deadletterqueue.topic.name", "4.4", "choice", option="--dead-letter"),
    GroupConfigRule("errors.deadletterqueue.copy.record.enable", "4.4", "bool", option="--dead-letter"),
)}

#: `by_duration:` then an ISO-8601 duration as java.time.Duration parses it (PnDTnHnMn.nS, not negative).
_BY_DURATION = re.compile(r"by_duration:P(?=[0-9T])([0-9]{1,9}D)?(T(?=[0-9])([0-9]{1,9}H)?([0-9]{1,9}M)?"
                          r"([0-9]{1,9}(\.[0-9]{1,9})?S)?)?", re.IGNORECASE)


def _line_key(line: str) -> tuple[int, ...]:
    return tuple(int(x) for x in line.split("."))


def names_of(line: str) -> list[str]:
    """The group configs of release line `line` (e.g. "4.2") a run may set."""
    return [name for name, rule in RULES.items() if _line_key(rule.since) <= _line_key(line)]


def bounds(name: str, started: bool) -> tuple[int, int]:
    """(least, most) of the integer group config `name`: on a cluster the harness starts, or on any."""
    rule = RULES[name]
    assert rule.accepted is not None and rule.started is not None, name
    return rule.started if started else rule.accepted


def where(started: bool) -> str:
    return ("on a cluster the harness starts (its brokers' group.share.min/max bounds)" if started
            else "on any cluster of the release")


def check_number(name: str, value: Any, started: bool, what: str) -> int:
    """`value` of the integer group config `name` if it is a whole number within its bounds; else one line
    naming `what` (the option that gave it) and the range."""
    least, most = bounds(name, started)
    if isinstance(value, bool) or not isinstance(value, int) or not least <= value <= most:
        raise HarnessError(f"invalid {what} {value!r}: {name} takes {least}..{most:,} {where(started)}; use a "
                           f"value in that range")
    return value


def check_group_configs(configs: Any, version: str, started: bool) -> None:
    """Every `--group-config KEY=VALUE` of a run on Kafka `version`: a share-group config of the release, not
    one a harness option sets, with a value of its type within its bounds; else one line naming the fix."""
    if not isinstance(configs, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in configs.items()):
        raise HarnessError(f"invalid group configs {configs!r}: give KEY=VALUE strings, e.g. "
                           "share.isolation.level=read_committed")
    if not configs:
        return
    line = release_line(version).line
    for key, value in configs.items():
        rule = RULES.get(key)
        if rule is None or _line_key(rule.since) > _line_key(line):
            newer = f" ({key} is a group config of Kafka {rule.since}+)" if rule is not None else ""
            raise HarnessError(f"unknown group config {key!r} for Kafka {version}{newer}: the share-group configs "
                               f"of {line} are {', '.join(names_of(line))}")
        if rule.option is not None:
            raise HarnessError(f"--group-config {key} is set by the harness's option {rule.option}: use that option "
                               "(the run records the value in force from it)")
        _check_value(rule, value, started)


def _check_value(rule: GroupConfigRule, value: str, started: bool) -> None:
    fix = ""
    if rule.kind == "int":
        least, most = bounds(rule.name, started)
        try:
            parse.count(value, least=least, most=most)
            return
        except ValueError:
            fix = f"a whole number {least}..{most:,} {where(started)}"
    elif rule.kind == "bool":
        if value.strip().lower() in ("true", "false"):
            return
        fix = "true or false"
    elif rule.kind == "choice":
        if value in rule.choices:
            return
        fix = "one of " + ", ".join(rule.choices)
    elif rule.kind == "reset":
        if value in ("earliest", "latest") or _BY_DURATION.fullmatch(value):
            return
        fix = "earliest, latest or by_duration:<ISO-8601 duration>, e.g. by_duration:PT10M"
    raise HarnessError(f"invalid --group-config {rule.name}={value!r}: use {fix}")


@dataclass(frozen=True)
class GroupPlan:
    """The share group part of a run's spec (`harness.spec.RunSpec.group`): the group's configs, its lock
    and delivery-count limit, its dead-letter queue; validated against the release and the cluster's bounds."""

    group_configs: dict[str, str] = field(default_factory=dict)
    lock_duration_ms: int | None = None  # the group's acquisition lock (None: the broker's)
    delivery_count_limit: int | None = None  # the group's delivery-count limit, where the release has it
    #: the group's dead-letter queue (KIP-1191, 4.4+): off, headers (DLQ records carry the context headers
    #: only) or copy (and the record's key and value); its topic is `dlq.<topic>` (harness.kafka.dead_letter)
    dead_letter: str = "off"

    def validate(self, kafka_version: str, started: bool) -> "GroupPlan":
        """Within the bounds the release (and, on a cluster the harness starts, `started`, its brokers) accept;
        every group config a config of the release with a value it takes. An INVALID_CONFIG after the cluster
        started would waste it."""
        if self.dead_letter not in MODES:
            raise HarnessError(f"invalid dead-letter {self.dead_letter!r}: use one of {', '.join(MODES)}")
        if self.dead_letter != "off":
            group_config_names(kafka_version, self.dead_letter)
        if self.lock_duration_ms is not None:
            check_number("share.record.lock.duration.ms", self.lock_duration_ms, started, "lock-duration-ms")
        if self.delivery_count_limit is not None:
            check_number("share.delivery.count.limit", self.delivery_count_limit, started, "delivery-count-limit")
        check_group_configs(self.group_configs, kafka_version, started)
        return self

    def has_limit_config(self, kafka_version: str) -> bool:
        """Whether the release has the group-level delivery-count limit (else the brokers' applies)."""
        try:
            return release_line(kafka_version).group_config("delivery_count_limit") is not None
        except HarnessError:
            return True  # a version the harness does not know: say what the spec holds
