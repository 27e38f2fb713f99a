"""Client options: the properties a user of a library would set, passed to the driver and recorded.

`share-harness certify --client franz --client-option max.concurrent.fetches=0` (or a manifest's
`client_options`) certifies the configuration a user would actually run. Each driver takes Kafka-style
property names (docs/driver.md: the confluent driver hands them to librdkafka, the Java driver to
KafkaShareConsumer, the franz-go driver maps the ones franz-go has an equivalent of). A driver reports
the ones it ignores in its start event (`ignored_config`); a user's option that the driver ignores is
refused, never silently dropped: the certificate would name a configuration that did not run.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from harness.history.store import HistoryWriter
from harness.sys.wait import wait_until

#: Properties each test sets itself (the rule it decides needs them): a user's value would change the test.
HARNESS_SET = ("bootstrap.servers", "group.id", "share.acknowledgement.mode")


def parse_options(pairs: list[str] | tuple[str, ...]) -> dict[str, str]:
    """`KEY=VALUE` strings -> {key: value}; a HarnessError naming the fix for a malformed one."""
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise HarnessError(f"invalid client option {pair!r}: use KEY=VALUE (e.g. max.concurrent.fetches=0)")
        out[key] = value
    check_options(out)
    return out


def check_options(options: dict[str, Any]) -> None:
    if not isinstance(options, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in options.items()):
        raise HarnessError(f"invalid client options {options!r}: give an object of property name -> string value")
    taken = [k for k in options if k in HARNESS_SET]
    if taken:
        raise HarnessError(f"client option {', '.join(taken)} is set by each test (the rule it decides needs its own "
                           f"value): leave it out")


def label(options: dict[str, str]) -> str:
    """How a configuration is named on certificates: "default" or "k=v k=v" (sorted)."""
    return " ".join(f"{k}={options[k]}" for k in sorted(options)) or "default"


def refused(options: dict[str, str], start: dict[str, Any]) -> list[str]:
    """The user's options a started driver reports it ignored; all of them if it does not say which it
    ignores (no `ignored_config` in its start event: they cannot be shown to apply)."""
    if not options:
        return []
    if not isinstance(start.get("ignored_config"), list):
        return sorted(options)
    return sorted(k for k in options if k in start["ignored_config"])


def refusal(client: str, names: list[str], start: dict[str, Any] | None = None) -> str:
    if start is not None and not isinstance(start.get("ignored_config"), list):
        return (f"the {client} driver does not say which client properties it ignores (no `ignored_config` in its "
                f"start event: docs/driver.md), so client option {', '.join(names)} cannot be shown to apply: "
                f"leave the options out, or have the driver report them")
    return (f"the {client} driver does not apply client option {', '.join(names)} (its library has no equivalent "
            f"the driver knows; docs/driver.md): leave it out, or use the option's name for that library")


def probe(info, options: dict[str, str], dist=None, timeout: float = 60.0) -> dict[str, Any]:
    """Start `info`'s driver once with `options` (no broker: nothing connects before a poll) and read
    its start event: a HarnessError if it exits first or ignores one of them. Run before any test, so
    a bad option is one line at once, not an error in every test."""
    with tempfile.TemporaryDirectory(prefix="ksh-probe-") as tmp:
        history = HistoryWriter(Path(tmp) / "history.jsonl")
        (Path(tmp) / "logs").mkdir()
        config = {"group": "ksh-option-probe", "topics": ["ksh-option-probe"], "mode": "explicit", "seed": 1,
                  "bootstrap": "127.0.0.1:9", "client_config": dict(options)}
        driver = info.make("probe", config, history, Path(tmp) / "logs", dist)
        driver.start()
        try:
            wait_until(lambda: any(op.f == "start" for op in history.ops()) or not driver.alive(), timeout=timeout,
                       what=f"the {info.name} driver to start with the client options")
            starts = [op.value for op in history.ops() if op.f == "start" and op.type == "ok"]
            if not starts:
                refused_by = [op.value.get("error") for op in history.ops()  # driver contract 4: its library refused them
                              if op.f == "start" and op.type == "fail" and isinstance(op.value, dict)]
                log = driver.log_path.read_text(errors="replace").strip().splitlines() if driver.log_path.is_file() else []
                raise HarnessError(f"the {info.name} driver did not start with client options {json.dumps(options)}: "
                                   f"{str((refused_by or log or ['(no output)'])[-1])[:300]}")
        finally:
            driver.close(10)
        start = starts[0] if isinstance(starts[0], dict) else {}
        names = refused(options, start)
        if names:
            raise HarnessError(refusal(info.name, names, start))
        return starts[0]
