"""Peak memory and throughput of the in-process engine on a large Parquet history: streamed vs whole load.

    python benchmarks/inprocess_memory.py [--events 12000000] [--seed 1]

1. generates a history of at least `--events` event rows from the reference model (as
   benchmarks/checkers_throughput.py does, sharing its cache under /tmp/ksh-bench);
2. in a fresh process each, checks it with `harness.check.inprocess.check_inprocess`:
   (a) the whole-load path (`stream=False`: `load_history`, then the seven checkers on the table),
       the baseline, measured in the same run;
   (b) the default, streamed path (batch by batch, one replay, the facts counted per batch);
   and reports seconds, events/s and peak RSS (`ru_maxrss`) of each, and whether their results agree
   (this process stays small: a child's `ru_maxrss` starts from its parent's RSS).
Target (issue 23): the streamed path peaks at <= 1 GiB for 12M events, at no less than the
whole load's events/s (ratios printed; the exit status is 1 if a target is missed or the results differ).
With `--repeat N` each path runs N times, alternating; the fastest run counts, the highest peak RSS.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

TARGET_MB = 1024


def measure(path: Path, mode: str) -> dict:
    """One check of `path` in this (fresh) process: "whole" (the old path) or "streamed"."""
    from harness.check.inprocess import check_inprocess
    start = time.perf_counter()
    check = check_inprocess(path, stream=mode == "streamed")
    elapsed = time.perf_counter() - start
    usage = resource.getrusage(resource.RUSAGE_SELF)
    digest = hashlib.sha256(json.dumps([[r.to_json() for r in check.results], check.events, check.facts],
                                       sort_keys=True, default=str).encode()).hexdigest()[:16]
    return {"mode": mode, "events": check.events, "seconds": round(elapsed, 2),
            "events_per_s": int(check.events / elapsed),
            "cpu_seconds": round(usage.ru_utime + usage.ru_stime, 2), "peak_rss_mb": usage.ru_maxrss // 1024,
            "verdicts": {r.checker: r.valid for r in check.results}, "digest": digest}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=12_000_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--dir", type=Path, default=Path("/tmp/ksh-bench"))
    parser.add_argument("--repeat", type=int, default=1, help="runs of each path, alternating; the fastest counts")
    parser.add_argument("--measure", nargs=2, metavar=("MODE", "PATH"), help=argparse.SUPPRESS)
    parser.add_argument("--generate", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(Path(args.measure[1]), args.measure[0])))
        return 0
    if args.generate:
        from checkers_throughput import generate
        generate(args.events, args.seed, args.generate)
        return 0
    args.dir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    path = args.dir / f"history-{args.events}-s{args.seed}.parquet"
    # generated in a child too: on Linux a child's ru_maxrss starts from its parent's RSS (fork, exec keep
    # the high-water mark), so this process stays small for the measuring children
    subprocess.run([sys.executable, __file__, "--events", str(args.events), "--seed", str(args.seed),
                    "--generate", str(path)], check=True)
    print(f"history of ~{args.events:,} events ready in {time.perf_counter() - t0:.1f} s: {path} "
          f"({path.stat().st_size / 2**20:.0f} MiB)", flush=True)
    figures: dict[str, dict] = {}
    for _ in range(max(1, args.repeat)):
        for mode in ("whole", "streamed"):  # the baseline first, each in a fresh process
            out = subprocess.run([sys.executable, __file__, "--measure", mode, str(path)], capture_output=True,
                                 text=True, check=True)
            f = json.loads(out.stdout)
            print(f"  {mode:8}: {f['events']:,} events checked in {f['seconds']} s ({f['cpu_seconds']} s CPU): "
                  f"{f['events_per_s']:,} events/s, peak RSS {f['peak_rss_mb']:,} MB, verdicts "
                  f"{sorted(set(map(str, f['verdicts'].values())))}", flush=True)
            best = figures.get(mode)
            if best is None or f["seconds"] < best["seconds"]:
                figures[mode] = {**f, "peak_rss_mb": max(f["peak_rss_mb"], (best or f)["peak_rss_mb"]),
                                 "digests": {f["digest"]} | (best or {}).get("digests", set())}
            else:
                best["peak_rss_mb"] = max(best["peak_rss_mb"], f["peak_rss_mb"])
                best["digests"].add(f["digest"])
    old, new = figures["whole"], figures["streamed"]
    same = len(old["digests"] | new["digests"]) == 1
    speed = new["events_per_s"] / max(1, old["events_per_s"])
    memory = new["peak_rss_mb"] / max(1, old["peak_rss_mb"])
    print(f"memory: streamed {new['peak_rss_mb']:,} MB vs whole load {old['peak_rss_mb']:,} MB "
          f"(ratio {memory:.2f}; target <= {TARGET_MB:,} MB: {new['peak_rss_mb'] / TARGET_MB:.2f} of it)")
    print(f"throughput: streamed {new['events_per_s']:,} events/s vs whole load {old['events_per_s']:,} "
          f"(ratio {speed:.2f}; target >= 1.00); CPU {new['cpu_seconds']} s vs {old['cpu_seconds']} s "
          f"(ratio {new['cpu_seconds'] / max(0.01, old['cpu_seconds']):.2f})")
    print(f"results: {'identical' if same else 'DIFFERENT'} (digests {sorted(new['digests'])} vs "
          f"{sorted(old['digests'])})")
    return 0 if same and new["peak_rss_mb"] <= TARGET_MB and speed >= 1.0 else 1


if __name__ == "__main__":
    sys.exit(main())
