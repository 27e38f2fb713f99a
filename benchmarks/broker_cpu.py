"""Benchmark: the CPU a test cluster's brokers cost, with the harness's JVM flags and with C2 as well, in one run.

CI runs two 3-node clusters (one per pytest-xdist worker) on two cores, and its real tests wait on Kafka: the
seconds of CPU the brokers burn starting and idling are seconds the tests' own work waits for (issue 53).
For each variant, `LocalCluster.start()` (proxies, format, start, ready once a share group consumed a record),
then a quiet `--idle` seconds; prints the start's wall and CPU seconds and the idle CPU seconds per minute,
summed over the brokers' processes (/proc/<pid>/stat), median of `--repeat`, and the ratio of the harness's
flags (C1 only: `-XX:TieredStopAtLevel=1`, harness/cluster/local/node.py) to the JVM's default (C1 and C2).
Target: the harness's flags at most 0.7 of the default's CPU for the start and for an idle minute. A third row
runs the harness's flags with Kafka's own idle timers (`IDLE_TIMERS`: a follower's empty fetch waits 0.5 s, the
controller's NoOpRecord every 0.5 s) instead of the harness's (2 s, 5 s; harness/kafka/config.py).

    python benchmarks/broker_cpu.py [--version 4.4.0] [--repeat 1] [--idle 60]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

C1_ONLY = "-XX:TieredStopAtLevel=1"
#: Kafka's defaults for the idle timers harness/kafka/config.py's TEST_DEFAULTS lengthens
IDLE_TIMERS = {"replica.fetch.wait.max.ms": "500", "metadata.max.idle.interval.ms": "500"}


def cpu_seconds(pids: list[int]) -> float:
    """User and system CPU seconds of `pids` so far."""
    ticks = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


def measure(version: str, c2: bool, idle: float, kafka_timers: bool = False) -> tuple[float, float, float]:
    """(start wall s, start CPU s, idle CPU s per minute) of one cluster; `c2`: without the C1-only flag;
    `kafka_timers`: with Kafka's idle timers (`IDLE_TIMERS`) instead of the harness's."""
    from harness.cluster.base import node_ids
    from harness.kafka import config as kconfig
    from harness.cluster.local import node as local_node
    from harness.run.context import make_cluster
    from harness.spec import RunSpec
    original = local_node.LocalNode.java_command

    def command(self, heap_mb, classpath, jvm_flags=()):
        cmd = original(self, heap_mb, classpath, jvm_flags)
        return [arg for arg in cmd if not (c2 and arg == C1_ONLY)]
    local_node.LocalNode.java_command = command
    saved = dict(kconfig.TEST_DEFAULTS)
    if kafka_timers:
        kconfig.TEST_DEFAULTS.update(IDLE_TIMERS)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            cluster = make_cluster(RunSpec(kafka_version=version).validate(), Path(tmp))
            began = time.monotonic()
            cluster.start()
            try:
                wall = time.monotonic() - began
                pids = [p for n in node_ids(cluster) if (p := cluster.node_pid(n)) is not None]
                start_cpu = cpu_seconds(pids)
                time.sleep(idle)  # the measured quiet: nothing to wait for but the clock
                return wall, start_cpu, (cpu_seconds(pids) - start_cpu) * 60 / idle
            finally:
                cluster.close()
    finally:
        local_node.LocalNode.java_command = original
        kconfig.TEST_DEFAULTS.clear()
        kconfig.TEST_DEFAULTS.update(saved)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--version", default="4.4.0")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--idle", type=float, default=60.0)
    args = parser.parse_args()
    rows = {}
    variants = (("harness (C1 only)", False, False), ("JVM default (C1+C2)", True, False),
                ("harness, Kafka's timers", False, True))
    for label, c2, kafka_timers in variants:
        runs = [measure(args.version, c2, args.idle, kafka_timers) for _ in range(args.repeat)]
        rows[label] = [statistics.median(r[i] for r in runs) for i in range(3)]
        wall, cpu, idle = rows[label]
        print(f"{label:24s} start {wall:5.1f} s wall, {cpu:5.1f} s CPU; idle {idle:5.1f} s CPU per minute")
    ours, default = rows["harness (C1 only)"], rows["JVM default (C1+C2)"]
    print(f"ratio harness/default: start wall {ours[0] / default[0]:.2f}, start CPU {ours[1] / default[1]:.2f}, "
          f"idle CPU {ours[2] / default[2]:.2f} (target <= 0.70 for both CPU figures)")
    timers = rows["harness, Kafka's timers"]
    print(f"ratio harness/Kafka's idle timers: idle CPU {ours[2] / timers[2]:.2f} (target < 1.00)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
