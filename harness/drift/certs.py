"""A client's certificate on the newest set against the one published for the tested set (pure).

The published certificates (docs/certificates/<time>-<client>/certificate.json, the `tox -e certify-clients` run
of the tested set) are the baseline: a rule whose result changed is drift, and a rule that fails on the newest set
and did not on the tested one newly fails. A certification that did not run, or ended without a verdict on its
rules (UNKNOWN, INCONCLUSIVE), decides nothing: it is said so, never counted as unchanged.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: verdicts that decided every rule run
DECIDED = ("CERTIFIED", "NOT CERTIFIED")
_STAMPED = re.compile(r"^[0-9]{8}-[0-9]{6}-(.+)$")


@dataclass(frozen=True)
class CertDrift:
    """One client's certification on the newest set: `tested` and `newest` say verdict and versions (or why there
    is none); `changed` the rules whose result differs (rule, tested, newest); `newly_failed` those that fail only
    on the newest set; `decided` whether the newest certification decided its rules."""

    client: str
    tested: str
    newest: str
    changed: tuple[tuple[str, str, str], ...] = ()
    newly_failed: tuple[str, ...] = ()
    decided: bool = False


def describe(cert: dict[str, Any]) -> str:
    """"NOT CERTIFIED (confluent-kafka 2.16.2 on Kafka 4.4.0)"."""
    return (f"{cert.get('verdict', '?')} ({cert.get('client', '?')} {cert.get('client_version', '?')} on Kafka "
            f"{cert.get('kafka_version', '?')})")


def compare(client: str, tested: dict[str, Any] | None, newest: dict[str, Any] | None, why: str = "") -> CertDrift:
    """The drift of `client`'s certificate; `why` says why there is no newest one (not run, failed to start)."""
    if newest is None:
        return CertDrift(client, describe(tested) if tested else "none published", f"not certified: {why}")
    decided = newest.get("verdict") in DECIDED
    if tested is None:
        return CertDrift(client, "none published", describe(newest), decided=decided)
    before = {r["rule"]: r["result"] for r in tested.get("rules", [])}
    after = {r["rule"]: r["result"] for r in newest.get("rules", [])}
    changed = tuple((rule, before.get(rule, "-"), after.get(rule, "-")) for rule in sorted(set(before) | set(after))
                    if before.get(rule) != after.get(rule))
    newly = tuple(rule for rule, was, now in changed if now == "fail" and was != "fail")
    return CertDrift(client, describe(tested), describe(newest), changed, newly, decided)


def published(root: Path, client: str) -> tuple[dict[str, Any] | None, str]:
    """The newest certificate published under `root` for `client` with no client option (directory
    <time>-<client>), and its path; (None, why) if there is none or it cannot be read."""
    found = sorted(p for p in root.glob("*/certificate.json")
                   if (m := _STAMPED.match(p.parent.name)) and m.group(1) == client)
    if not found:
        return None, f"no published certificate of {client} under {root}"
    try:
        return json.loads(found[-1].read_text()), str(found[-1])
    except (OSError, ValueError) as exc:
        return None, f"{found[-1]} cannot be read ({exc})"
