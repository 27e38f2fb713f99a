"""Cluster feature levels (KIP-584) read and finalised with the release's own `FeatureCommand`.

An operator finishes a rolling upgrade with `kafka-features.sh upgrade --release-version <line>`:
every feature (metadata.version, share.version, ...) is raised to the level that release sets by
default. `upgrade_release` runs exactly that (the `kafka-tools` jar of the new release, on its
classpath: `harness.kafka.jars.tools_classpath`); `describe` reads every feature's supported range
and finalised level, which is how an upgrade proves its effect.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from harness.errors import HarnessError
from harness.kafka.jars import KafkaDistribution, tools_classpath
from harness.sys import procs

TIMEOUT = 120.0  #: seconds one FeatureCommand may take
_LINE = re.compile(r"Feature:\s*(\S+)\s+SupportedMinVersion:\s*(\S+)\s+SupportedMaxVersion:\s*(\S+)\s+"
                   r"FinalizedVersionLevel:\s*(\S+)")


@dataclass(frozen=True)
class FeatureLevel:
    name: str
    supported_min: str
    supported_max: str
    finalized: str  # as FeatureCommand prints it: "4.3-IV0" for metadata.version, a number else

    def __str__(self) -> str:
        return f"{self.name}={self.finalized} (supported {self.supported_min}..{self.supported_max})"


def _run(dist: KafkaDistribution, cache: Path, bootstrap: str, args: list[str]) -> str:
    cmd = ["java", "-Xmx256m", "-XX:TieredStopAtLevel=1", "-cp", tools_classpath(dist, cache),
           "org.apache.kafka.tools.FeatureCommand", "--bootstrap-server", bootstrap, *args]
    try:
        proc = procs.run(f"kafka-features {args[0]}", cmd, timeout=TIMEOUT, env={**os.environ, "KAFKA_LOG4J_OPTS": ""})
    except subprocess.TimeoutExpired:
        raise HarnessError(f"kafka-features {' '.join(args)} ({dist.version}) took over {TIMEOUT:.0f} s: "
                           "check that the cluster serves") from None
    if proc.returncode != 0:
        tail = (proc.stderr.strip() or proc.stdout.strip() or "no output").splitlines()[-1]
        raise HarnessError(f"kafka-features {' '.join(args)} ({dist.version}) failed: {tail}")
    return proc.stdout


def describe(dist: KafkaDistribution, cache: Path, bootstrap: str) -> dict[str, FeatureLevel]:
    """Every feature the cluster reports: name -> its supported range and finalised level."""
    out = _run(dist, cache, bootstrap, ["describe"])
    found = parse_describe(out)
    if not found:
        raise HarnessError(f"kafka-features describe ({dist.version}) printed no feature: {out.strip()[:200]!r}")
    return found


def parse_describe(out: str) -> dict[str, FeatureLevel]:
    """`describe`'s output as name -> level."""
    return {m[1]: FeatureLevel(m[1], m[2], m[3], m[4]) for m in map(_LINE.search, out.splitlines()) if m}


def upgrade_release(dist: KafkaDistribution, cache: Path, bootstrap: str, release: str) -> str:
    """`upgrade --release-version <release>` with `dist`'s FeatureCommand; what it printed."""
    return _run(dist, cache, bootstrap, ["upgrade", "--release-version", release]).strip()
