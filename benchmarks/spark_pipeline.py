"""The Spark engine beside the in-process engine on one synthetic history.

    python benchmarks/spark_pipeline.py [--events 10000000] [--seed 1] [--master local[*]]

1. generates (or reuses) a model history of at least `--events` event rows (8 partitions, 8
   consumers: `benchmarks/checkers_throughput.py`'s generator), as Parquet;
2. in a fresh process each: the in-process engine (`check --engine inprocess`: the history loaded,
   then replayed), the in-process replay streamed batch by batch from Parquet, and the Spark engine
   (embedded local Spark, one job, its start included); wall time, events/s and peak memory (the Python process's
   peak RSS, and for Spark the peak RSS of the whole process tree: JVM and Python workers);
3. checks both gave the same verdict and anomaly counts, and prints the ratios.
Targets (issue 6): Spark >= 200,000 events/s, and faster than the in-process engine at this size.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

TARGET = 200_000


def tree_rss_mb(pid: int) -> int:
    """RSS of `pid` and its descendants now, in MB (from /proc)."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/status") as fh:
                for line in fh:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
            with open(f"/proc/{p}/task/{p}/children") as fh:
                todo.extend(int(c) for c in fh.read().split())
        except (OSError, ValueError):
            continue
    return total // 1024


def measure(argv: list[str]) -> dict:
    """Run `argv` (prints one JSON line), sampling its process tree's RSS every 0.2 s."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = [0]

    def sample():
        while proc.poll() is None:
            peak[0] = max(peak[0], tree_rss_mb(proc.pid))
            time.sleep(0.2)
    watcher = threading.Thread(target=sample, daemon=True)
    watcher.start()
    out, err = proc.communicate()
    watcher.join()
    if proc.returncode != 0:
        raise SystemExit(f"{argv[-2:]} failed: {err.strip().splitlines()[-1] if err.strip() else proc.returncode}")
    figures = json.loads(out.strip().splitlines()[-1])
    figures["peak_tree_rss_mb"] = peak[0]
    return figures


def run_engine(engine: str, path: Path, master: str) -> dict:
    import pyarrow.parquet as pq

    from harness.checkers import verdict_word
    rows = pq.ParquetFile(path).metadata.num_rows
    start = time.perf_counter()
    if engine == "spark":
        from harness.spark.engine import check_files
        from harness.spark.session import spark_session
        spark_session(master)  # the JVM start is part of the figure (a user's check pays it too)
        [check] = check_files([path], master)
        results = check.results
    elif engine == "inprocess":  # what `share-harness check --engine inprocess` and the runner do
        from harness.check.inprocess import check_inprocess
        results = check_inprocess(path).results
    else:  # the in-process replay streamed batch by batch from Parquet (benchmarks/checkers_throughput.py)
        from harness.checkers import observed_result
        from harness.checkers.replay import PROPERTIES, replay_parquet
        obs = replay_parquet(path)
        results = [observed_result(p, obs) for p in PROPERTIES]
    elapsed = time.perf_counter() - start
    from harness.checkers import compose
    return {"engine": engine, "events": rows, "seconds": round(elapsed, 2), "events_per_s": int(rows / elapsed),
            "verdict": verdict_word(compose(results)),
            "anomalies": {r.checker: len(r.anomalies) for r in results if r.anomalies}}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--master", default="local[*]")
    parser.add_argument("--dir", type=Path, default=Path("/tmp/ksh-bench"))
    parser.add_argument("--engine", help=argparse.SUPPRESS)
    parser.add_argument("--path", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.engine:
        print(json.dumps(run_engine(args.engine, args.path, args.master)))
        return 0
    from checkers_throughput import generate
    args.dir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    path = generate(args.events, args.seed, args.dir / f"history-{args.events}-s{args.seed}.parquet")
    print(f"history of ~{args.events:,} events ready in {time.perf_counter() - t0:.1f} s: {path}", flush=True)
    figures = {}
    for engine in ("inprocess", "streaming", "spark"):
        f = figures[engine] = measure([sys.executable, __file__, "--engine", engine, "--path", str(path),
                                       "--master", args.master])
        print(f"  {engine:9}: {f['events']:,} events in {f['seconds']} s = {f['events_per_s']:,} events/s, "
              f"peak RSS {f['peak_tree_rss_mb']} MB (process tree), verdict {f['verdict']}, "
              f"anomalies {f['anomalies'] or 'none'}", flush=True)
    spark, local, streaming = figures["spark"], figures["inprocess"], figures["streaming"]
    same = len({(f["verdict"], json.dumps(f["anomalies"], sort_keys=True)) for f in figures.values()}) == 1
    print(f"same verdict and anomaly counts in all three: {same}")
    print(f"spark: {spark['events_per_s']:,} events/s (target {TARGET:,}; ratio {spark['events_per_s'] / TARGET:.2f}); "
          f"speed-up over the in-process engine: {local['seconds'] / spark['seconds']:.2f}x, over the streamed "
          f"replay: {streaming['seconds'] / spark['seconds']:.2f}x; memory: "
          f"{spark['peak_tree_rss_mb'] / max(1, local['peak_tree_rss_mb']):.2f}x the in-process peak")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
