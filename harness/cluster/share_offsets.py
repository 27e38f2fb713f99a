"""Reading a share group's start offsets (SPSO per partition) through Kafka's Java Admin API.

confluent-kafka has no share-group admin calls yet, so a 30-line Java program
(`harness/java/ShareOffsets.java`) is compiled once per Kafka version with
`javac` against that version's jars (cached) and run as a short-lived process.
The result goes into the history as `share-offsets` invoke/ok/fail, which the
durable-state checker compares with the model.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from importlib import resources
from pathlib import Path

from harness.errors import HarnessError
from harness.history.store import HistoryWriter
from harness.kafka.jars import KafkaDistribution, require_tool


def compiled(dist: KafkaDistribution, cache: Path) -> Path:
    """Directory holding ShareOffsets.class for `dist` (compiled on first use)."""
    target = cache / "java" / f"share-offsets-{dist.version}"
    if (target / "ShareOffsets.class").is_file():
        return target
    javac = require_tool("javac", "install a JDK, not only a JRE (e.g. apt-get install openjdk-17-jdk-headless)")
    tmp = target.with_name(target.name + f".tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    source = resources.files("harness.java").joinpath("ShareOffsets.java")
    (tmp / "ShareOffsets.java").write_text(source.read_text())
    proc = subprocess.run([javac, "-cp", dist.classpath, "-d", str(tmp), str(tmp / "ShareOffsets.java")],
                          capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        raise HarnessError(f"compiling ShareOffsets.java against Kafka {dist.version} failed: "
                           f"{(proc.stderr or proc.stdout).strip().splitlines()[0]}")
    shutil.rmtree(target, ignore_errors=True)
    tmp.rename(target)
    return target


def read_share_offsets(dist: KafkaDistribution, cache: Path, bootstrap: str, group: str,
                       history: HistoryWriter, process: str = "admin") -> list[dict] | None:
    """Record one read of `group`'s start offsets in `history`; None (and a `fail`) if it did not work."""
    classes = compiled(dist, cache)
    history.append(process, "invoke", "share-offsets", {"group": group})
    try:
        proc = subprocess.run(["java", "-Xmx128m", "-XX:TieredStopAtLevel=1",
                               "-cp", f"{classes}{os.pathsep}{dist.classpath}", "ShareOffsets", bootstrap, group],
                              capture_output=True, text=True, timeout=60)
        if proc.returncode != 0:
            raise RuntimeError((proc.stderr.strip().splitlines() or ["exit " + str(proc.returncode)])[-1])
        partitions = json.loads(proc.stdout.strip().splitlines()[-1])["partitions"]
    except (RuntimeError, subprocess.TimeoutExpired, ValueError, IndexError, KeyError) as exc:
        history.append(process, "fail", "share-offsets", {"group": group, "error": str(exc)[:300]})
        return None
    history.append(process, "ok", "share-offsets", {"group": group, "partitions": partitions})
    return partitions
