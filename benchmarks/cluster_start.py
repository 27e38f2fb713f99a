"""Benchmark: cluster start, harness vs bare brokers, measured in the same run.

- bare: format storage (StorageTool) for 3 combined nodes and start them as
  `java ... kafka.Kafka` with direct listeners (no proxies), until every node
  logged "Kafka Server started";
- bare with archives: the same, its JVMs mapping the harness's class-data archives;
- harness: `LocalCluster.start()`: Toxiproxy + 15 proxies, format, start, and
  ready only once a share group has consumed a first record (its JVMs map the
  class-data archives `share-harness setup` builds: `harness.kafka.cds`).
Prints both times (median of --repeat runs) and the ratios. Readiness asks a broker for a group and a
share coordinator first (FindCoordinator), so Kafka creates `__consumer_offsets` and
`__share_group_state` beside the probe's topic instead of lazily in the middle of the first share
fetch (where the share-state persister waits out a fixed 1 s backoff).
Targets: harness ready within 25 s; overhead within 20% of the bare start.

    python benchmarks/cluster_start.py [--version 4.3.1] [--repeat 3]
"""

from __future__ import annotations

import argparse
import base64
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from harness.cluster.local import LocalCluster, LocalClusterSpec  # noqa: E402
from harness.kafka import cds  # noqa: E402
from harness.kafka import config as kconfig  # noqa: E402
from harness.kafka.jars import resolve  # noqa: E402
from harness.sys.paths import cache_dir  # noqa: E402
from harness.sys.ports import allocate  # noqa: E402
from harness.sys.procs import spawn  # noqa: E402
from harness.sys.wait import wait_until  # noqa: E402


def bare_start(version: str, workdir: Path, heap_mb: int = 512, cds_archives: bool = False) -> float:
    """Seconds to format and start 3 bare nodes; with `cds_archives`, their JVMs map the class-data
    archives the harness's nodes map (`harness.kafka.cds`), so the two starts differ only in what
    the harness adds."""
    dist = resolve(version, cache_dir())
    storage_flags = cds.flags(dist, "storage") if cds_archives else []
    broker_flags = cds.flags(dist, "broker") if cds_archives else []
    ids = [1, 2, 3]
    ports = iter(allocate(3 * 5))
    real = {i: kconfig.NodePorts(client=next(ports), peers={k: next(ports) for k in ids}, controller=next(ports))
            for i in ids}
    t0 = time.monotonic()
    cluster_id = base64.urlsafe_b64encode(os.urandom(16)).decode().rstrip("=")
    procs, logs = [], []
    for i in ids:
        home = workdir / f"n{i}"
        (home / "logs").mkdir(parents=True)
        cfg = kconfig.NodeConfig(node_id=i, roles=("broker", "controller"), ports=real[i],
                                 advertised_client=real[i].client, advertised_peers=dict(real[i].peers),
                                 voters={j: real[j].controller for j in ids}, data_dir=home / "data")
        (home / "server.properties").write_text(kconfig.render(cfg, dist.release_line))
        (home / "log4j2.properties").write_text(kconfig.render_log4j2(home / "logs"))
    fmt = [subprocess.Popen(["java", *storage_flags, "-Xmx256m", "-XX:TieredStopAtLevel=1", "-cp", dist.classpath,
                             "kafka.tools.StorageTool", "format", f"--cluster-id={cluster_id}", "-c",
                             str(workdir / f"n{i}" / "server.properties")], stdout=subprocess.DEVNULL) for i in ids]
    assert all(p.wait() == 0 for p in fmt), "format failed"
    for i in ids:
        home = workdir / f"n{i}"
        procs.append(spawn(f"bare-n{i}", ["java", *broker_flags, f"-Xms{heap_mb}m", f"-Xmx{heap_mb}m", "-XX:+UseG1GC",
                                          f"-Dlog4j2.configurationFile={home / 'log4j2.properties'}", "-cp",
                                          dist.classpath, "kafka.Kafka", str(home / "server.properties")],
                           log_path=home / "logs" / "stdout.log"))
        logs.append(home / "logs" / "server.log")
    try:
        wait_until(lambda: all(p.exists() and "Kafka Server started" in p.read_text() for p in logs),
                   timeout=120, what="bare nodes to log 'Kafka Server started'", interval=0.05)
        return time.monotonic() - t0
    finally:
        for p in procs:
            p.kill()


def harness_start(version: str, workdir: Path) -> tuple[float, dict[str, float]]:
    """The harness's start: (seconds to ready, seconds per step)."""
    cluster = LocalCluster(LocalClusterSpec(version=version), workdir)
    t0 = time.monotonic()
    marks: list[tuple[str, float]] = []
    try:
        cluster.start(steps=lambda step: marks.append((step, time.monotonic())))
        total = time.monotonic() - t0
    finally:
        cluster.close()
    steps, last = {}, t0
    for step, at in marks:
        steps[step] = at - last
        last = at
    return total, steps


#: readiness's steps after the brokers registered (`harness.cluster.readiness`)
PROOF_STEPS = ("topic created and led, group configured", "record produced (acks=all)", "record share-consumed")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--version", default="4.3.1")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    cds.ensure(resolve(args.version, cache_dir()))  # downloads and archives are not part of any figure
    bare, bare_cds, harness, breakdown = [], [], [], defaultdict(list)
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory(prefix="ksh-bench-") as tmp:
            bare.append(bare_start(args.version, Path(tmp) / "bare"))
            bare_cds.append(bare_start(args.version, Path(tmp) / "bare-cds", cds_archives=True))
            total, steps = harness_start(args.version, Path(tmp) / "harness")
            harness.append(total)
            for step, seconds in steps.items():
                breakdown[step].append(seconds)
    b, bc, h = statistics.median(bare), statistics.median(bare_cds), statistics.median(harness)
    print(f"kafka {args.version}, 3 combined nodes, {args.repeat} runs, cores={os.cpu_count()}")
    print(f"bare start (format + kafka.Kafka until 'started'): median {b:.2f} s  runs {[round(x, 2) for x in bare]}")
    print(f"bare start with the harness's class-data archives: median {bc:.2f} s  "
          f"runs {[round(x, 2) for x in bare_cds]}")
    print(f"harness ready (proxies + first share-consumed record): median {h:.2f} s  runs {[round(x, 2) for x in harness]}")
    for step, seconds in breakdown.items():
        print(f"  {statistics.median(seconds):6.2f} s  {step}")
    proof = sum(statistics.median(breakdown[step]) for step in PROOF_STEPS if step in breakdown)
    print(f"  of which the proof that a share group consumes (Kafka's own work, none of it in the bare start: "
          f"topic created with a full ISR, an acks=all produce, the group's join, assignment and first "
          f"share fetch): {proof:.2f} s")
    print(f"ratio harness/bare: {h / b:.2f}  (target <= 1.20);  harness within 25 s: {'yes' if h <= 25 else 'no'}")
    print(f"ratio harness/bare with the same archives (what the harness adds beyond the JVM): {h / bc:.2f}")
    print(f"ratio with the same archives, before that proof (start to brokers registered): {(h - proof) / bc:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
