"""The Spark engine embedded (`local[2]`) beside a real standalone cluster (2 workers x 1 core).

    python benchmarks/spark_cluster.py [--events 2000000] [--seed 1] [--workers 2] [--cores 1] [--repeat 1]

1. generates (or reuses) a model history of at least `--events` event rows
   (`benchmarks/checkers_throughput.py`'s generator), as Parquet;
2. starts a standalone master and workers from the pyspark package's launcher on loopback
   (`harness.spark.standalone`), and checks the history in a fresh process with embedded Spark
   (`local[<workers x cores>]`), then in another with `--master spark://...` (the cluster).
   Each figure is `benchmarks/spark_pipeline.py`'s Spark figure (its child mode, run by its `measure`):
   wall time from the session's start (JVM, and on the cluster the executors' start, included) to
   the results, events/s, peak RSS of the driver's process tree (the cluster's daemons and executors
   are not in it).
   The embedded checks run while the (idle) cluster is up, alternating with the cluster's when
   `--repeat N` checks each N times; the fastest of each counts;
3. prints the ratio cluster/embedded (wall time), whether the verdicts and anomaly counts agree, and
   the load average (on a shared machine the figures move with it).
Drivers and executors get 1g heaps (`KSH_SPARK_MEMORY`, the worker memory); everything on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from checkers_throughput import generate  # noqa: E402
from spark_pipeline import measure  # noqa: E402

PIPELINE = Path(__file__).resolve().parent / "spark_pipeline.py"


def spark_figure(path: Path, master: str) -> dict:
    """`spark_pipeline.py`'s Spark figure for `path` on `master`, in a fresh process."""
    return measure([sys.executable, str(PIPELINE), "--engine", "spark", "--path", str(path), "--master", master])


def show(label: str, f: dict) -> None:
    print(f"  {label:9}: {f['events']:,} events in {f['seconds']} s = {f['events_per_s']:,} events/s, "
          f"driver peak RSS {f['peak_tree_rss_mb']} MB, verdict {f['verdict']}, anomalies {f['anomalies'] or 'none'}",
          flush=True)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=2_000_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--cores", type=int, default=1, help="cores per worker")
    parser.add_argument("--memory", default="1g", help="per worker (each worker runs one executor of this heap)")
    parser.add_argument("--repeat", type=int, default=1, help="check N times each; the fastest counts")
    parser.add_argument("--dir", type=Path, default=Path("/tmp/ksh-bench"))
    args = parser.parse_args()
    from harness.errors import HarnessError
    from harness.spark.standalone import DRIVER_ENV, applications, standalone_cluster
    from harness.sys.wait import wait_until
    os.environ.update(DRIVER_ENV)  # the drivers (children) bind and advertise loopback only
    os.environ.setdefault("KSH_SPARK_MEMORY", "1g")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    args.dir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    path = generate(args.events, args.seed, args.dir / f"history-{args.events}-s{args.seed}.parquet")
    print(f"history of ~{args.events:,} events ready in {time.perf_counter() - t0:.1f} s: {path}", flush=True)
    cores = args.workers * args.cores
    load = os.getloadavg()[0]
    try:
        runs: dict[str, list[dict]] = {"embedded": [], "cluster": []}
        t0 = time.perf_counter()
        with standalone_cluster(args.workers, args.cores, args.memory) as cluster:
            print(f"  standalone cluster {cluster.url} ({args.workers} workers x {args.cores} core, {args.memory}) "
                  f"ready in {time.perf_counter() - t0:.1f} s", flush=True)
            for _ in range(args.repeat):
                runs["embedded"].append(spark_figure(path, f"local[{cores}]"))
                show(f"local[{cores}]", runs["embedded"][-1])
                runs["cluster"].append(spark_figure(path, cluster.url))
                show("cluster", runs["cluster"][-1])
            def names() -> list[str]:
                return [a["name"] for a in applications(cluster.status())]
            completed = wait_until(lambda: len(names()) >= args.repeat and names(), timeout=30,
                                   what=f"the master to list {args.repeat} checks as completed applications")
    except HarnessError as exc:
        raise SystemExit(f"spark_cluster: {exc}") from None
    embedded, on_cluster = (min(runs[k], key=lambda f: f["seconds"]) for k in ("embedded", "cluster"))
    outcomes = {(f["verdict"], json.dumps(f["anomalies"], sort_keys=True)) for f in runs["embedded"] + runs["cluster"]}
    same = len(outcomes) == 1
    on_master = completed == ["share-harness-check"] * args.repeat
    print(f"the master lists each cluster check as a completed application: {on_master}")
    print(f"same verdict and anomaly counts: {same}")
    print(f"cluster/embedded wall time: {on_cluster['seconds'] / embedded['seconds']:.2f}x "
          f"({on_cluster['events_per_s']:,} vs {embedded['events_per_s']:,} events/s; fastest of {args.repeat}); "
          f"load average {load:.1f} before, {os.getloadavg()[0]:.1f} after ({os.cpu_count()} cores)")
    return 0 if same and on_master else 1


if __name__ == "__main__":
    sys.exit(main())
