"""Benchmark: cluster start on the docker backend beside the local backend, measured in the same run.

Both start the same 3-node cluster (`LocalClusterSpec` defaults) until it is ready (a share group
consumed a first record), alternating local and docker `--repeat` times, and close it. Prints each
step's time (median over the repeats), both totals and the ratio docker/local. The docker backend's
extra work: a container per node and per StorageTool run (the engine's create/start, the image's
JVM) instead of a forked `java`.

    python benchmarks/docker_start.py [--version 4.3.1] [--repeat 3] [--image apache/kafka:4.3.1]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from harness.cluster.docker import DockerCluster  # noqa: E402
from harness.cluster.local import LocalCluster, LocalClusterSpec  # noqa: E402
from harness.errors import HarnessError  # noqa: E402
from harness.kafka.versions import DEFAULT_VERSION  # noqa: E402


def timed_start(make) -> tuple[float, dict[str, float]]:
    """(seconds until ready, seconds at the end of each step) of one start; the cluster is closed."""
    steps: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="ksh-bench-") as tmp:
        cluster = make(Path(tmp))
        t0 = time.monotonic()
        try:
            cluster.start(steps=lambda step: steps.setdefault(step, time.monotonic() - t0))
            total = time.monotonic() - t0
        finally:
            cluster.close()
    return total, steps


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--version", default=DEFAULT_VERSION)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--image", default=None, help="default apache/kafka:<version>")
    args = parser.parse_args()
    spec = LocalClusterSpec(version=args.version)
    makers = {"local": lambda run_dir: LocalCluster(spec, run_dir),
              "docker": lambda run_dir: DockerCluster(spec, run_dir, image=args.image)}
    totals: dict[str, list[float]] = defaultdict(list)
    steps: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    try:
        for _ in range(args.repeat):
            for backend, make in makers.items():
                total, marks = timed_start(make)
                totals[backend].append(total)
                for step, at in marks.items():
                    steps[backend][step].append(at)
                print(f"{backend}: ready in {total:.2f} s", flush=True)
    except HarnessError as exc:
        print(f"docker_start.py: error: {exc}", file=sys.stderr)
        return 2
    print(f"\nmedian of {args.repeat}, Kafka {args.version}, 3 combined nodes (seconds from start)")
    for backend in makers:
        print(f"  {backend}:")
        for step, values in steps[backend].items():
            print(f"    {statistics.median(values):6.2f}  {step}")
    local, docker = (statistics.median(totals[b]) for b in ("local", "docker"))
    print(f"local ready {local:.2f} s, docker ready {docker:.2f} s, docker/local {docker / local:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
