"""In-process checker throughput on a synthetic history generated from the reference model.

    python benchmarks/checkers_throughput.py [--events 5000000] [--seed 1]

1. generates a history of at least `--events` event rows by driving the model
   (`harness.model.simulate`, 8 partitions, 8 consumers, releases, rejects,
   lock expiries, closes, crashes), written to Parquet (cached per size/seed);
2. in a fresh process, replays it through all seven checkers, streaming the
   Parquet file batch by batch, and reports events/s and peak RSS;
3. does the same for a history a fifth of the size, so the memory figure can
   be compared: memory should follow the records in flight, not the length.
Target (issues 3, 21): >= 300,000 events/s on a 2-core machine; the bare read of the same rows
(Parquet to row tuples, no checking) is measured in the same process as the baseline.

    python benchmarks/checkers_throughput.py --baseline-rev a4aede8^ [--rounds 3]

also checks the big history with the harness at another revision (a git worktree in a temp dir,
removed after), alternating with this checkout `--rounds` times, and prints both medians and their
ratio: "throughput holds" measured in one run on one machine (issue 21: its oracle rework began at
a4aede8; the machine's own speed varies by 2x between days, the ratio does not).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

TARGET = 300_000


def generate(events: int, seed: int, out: Path) -> Path:
    from harness.history.events import EventTable, _flatten
    from harness.model.simulate import config_for_events, simulate
    if out.exists():
        return out
    table = EventTable()
    simulate(config_for_events(events, seed), sink=lambda op: _flatten(table, op))
    tmp = out.with_suffix(".tmp")
    table.write_parquet(tmp)
    tmp.rename(out)
    return out


def bare_read(path: Path) -> float:
    """Seconds to stream the same rows without checking them: the baseline measured in the same run."""
    import collections

    from harness.history.events import EventTable
    start = time.perf_counter()
    collections.deque(EventTable.stream_parquet(path), maxlen=0)
    return time.perf_counter() - start


def check(path: Path) -> dict:
    from harness.checkers.replay import PROPERTIES, replay_parquet
    import pyarrow.parquet as pq
    rows = pq.ParquetFile(path).metadata.num_rows
    read_s = bare_read(path)
    start = time.perf_counter()
    obs = replay_parquet(path)
    elapsed = time.perf_counter() - start
    bad = {p: len(obs.anomalies[p]) for p in PROPERTIES if obs.anomalies[p]}
    return {"events": rows, "seconds": round(elapsed, 2), "events_per_s": int(rows / elapsed),
            "read_seconds": round(read_s, 2), "vs_bare_read": round(elapsed / read_s, 2),
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
            "anomalies": bad, "unknown": obs.unknown}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=5_000_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--check", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--dir", type=Path, default=Path("/tmp/ksh-bench"))
    parser.add_argument("--baseline-rev", default=None, help="also check with the harness at this git revision")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if args.check:
        print(json.dumps(check(args.check)))
        return 0
    args.dir.mkdir(parents=True, exist_ok=True)
    figures = {}
    for size in (args.events // 5, args.events):
        t0 = time.perf_counter()
        path = generate(size, args.seed, args.dir / f"history-{size}-s{args.seed}.parquet")
        print(f"history of ~{size:,} events ready in {time.perf_counter() - t0:.1f} s: {path}", flush=True)
        out = subprocess.run([sys.executable, __file__, "--check", str(path)], capture_output=True, text=True,
                             check=True)
        figures[size] = json.loads(out.stdout)
        f = figures[size]
        print(f"  {f['events']:,} events checked in {f['seconds']} s: {f['events_per_s']:,} events/s, "
              f"{f['vs_bare_read']}x the bare read of the same rows ({f['read_seconds']} s), "
              f"peak RSS {f['peak_rss_mb']} MB, anomalies {f['anomalies'] or 'none'}, "
              f"unknown {f['unknown'] or 'none'}", flush=True)
    small, big = figures[args.events // 5], figures[args.events]
    print(f"throughput: {big['events_per_s']:,} events/s (target {TARGET:,}; ratio "
          f"{big['events_per_s'] / TARGET:.2f})")
    print(f"memory: {small['peak_rss_mb']} MB for {small['events']:,} events, {big['peak_rss_mb']} MB for "
          f"{big['events']:,} ({big['events'] / small['events']:.1f}x the events, "
          f"{big['peak_rss_mb'] / max(1, small['peak_rss_mb']):.2f}x the memory)")
    if args.baseline_rev:
        compare(args.baseline_rev, args.dir / f"history-{args.events}-s{args.seed}.parquet", args.rounds)
    return 0


def compare(rev: str, path: Path, rounds: int) -> None:
    """Median events/s of this checkout and of the harness at `rev` on `path`, alternating `rounds` times."""
    import shutil
    import statistics
    import tempfile
    here = Path(__file__).resolve().parents[1]
    tree = Path(tempfile.mkdtemp(prefix="ksh-baseline-")) / "tree"
    subprocess.run(["git", "-C", str(here), "worktree", "add", "--detach", "-q", str(tree), rev], check=True)
    try:
        rates: dict[str, list[int]] = {"this checkout": [], rev: []}
        for _ in range(rounds):
            for label, root in (("this checkout", here), (rev, tree)):
                out = subprocess.run([sys.executable, str(root / "benchmarks" / "checkers_throughput.py"), "--check",
                                      str(path)], capture_output=True, text=True, check=True, cwd=root,
                                     env={**__import__("os").environ, "PYTHONPATH": str(root)})
                rates[label].append(json.loads(out.stdout)["events_per_s"])
        mine, base = statistics.median(rates["this checkout"]), statistics.median(rates[rev])
        print(f"baseline {rev}: {base:,.0f} events/s (median of {rates[rev]}); this checkout {mine:,.0f} "
              f"(median of {rates['this checkout']}): ratio {mine / base:.2f}")
    finally:
        subprocess.run(["git", "-C", str(here), "worktree", "remove", "--force", str(tree)], check=False)
        shutil.rmtree(tree.parent, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
