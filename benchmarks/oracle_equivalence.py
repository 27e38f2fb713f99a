"""The oracle's decisions on a corpus, compared with another revision's: a speed change must not change one.

    python benchmarks/oracle_equivalence.py [--baseline-rev HEAD] [--seeds 5] [--events 200000 1000000]

Replays, with this checkout and with the harness at `--baseline-rev` (a git worktree in a temp dir, removed
after), each committed history (tests/histories), each of its mutants (`harness.mutants`, seeds 1 to
`--seeds`: the changes the oracle must catch) and the synthetic model histories of `--events` events
(generated as benchmarks/checkers_throughput.py generates them, cached in `--dir`). Each replay's whole
Observation (anomalies with their evidence, allowances and their evidence, counts, unknowns) is compared;
it prints how many differ, naming the first few, and exits 1 if any does. The default baseline, HEAD,
compares a working tree's change with the commit it starts from (issue 53: the oracle's speed work).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]


def observations(histories: Path, seeds: int, synthetic: list[Path]) -> dict[str, str]:
    """Each replay's Observation as canonical JSON, by history (and mutant class and seed)."""
    from harness.checkers.replay import replay, replay_parquet
    from harness.history.events import EventTable
    from harness.mutants import MUTANTS, read_ops

    def canonical(obs) -> str:
        return json.dumps(dataclasses.asdict(obs), sort_keys=True, default=repr)

    found = {}
    for path in sorted(histories.glob("*.jsonl.gz")):
        ops = read_ops(path)
        found[path.name] = canonical(replay(EventTable.from_ops(ops)))
        for cls, mutate in MUTANTS.items():
            for seed in range(1, seeds + 1):
                mutant = mutate(ops, random.Random(seed))
                if mutant is not None:
                    found[f"{path.name} {cls} seed {seed}"] = canonical(replay(EventTable.from_ops(mutant.ops)))
    for path in synthetic:
        found[path.name] = canonical(replay_parquet(path))
    return found


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--baseline-rev", default="HEAD")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--events", type=int, nargs="*", default=[200_000, 1_000_000])
    parser.add_argument("--dir", type=Path, default=Path("/tmp/ksh-bench"))
    parser.add_argument("--observe", nargs="+", help=argparse.SUPPRESS)  # (a child: out, histories, seeds, files)
    args = parser.parse_args()
    if args.observe:
        out, histories, seeds, *synthetic = args.observe
        Path(out).write_text(json.dumps(observations(Path(histories), int(seeds), [Path(p) for p in synthetic])))
        return 0
    sys.path.insert(0, str(HERE / "benchmarks"))
    sys.path.insert(0, str(HERE))
    from checkers_throughput import generate

    args.dir.mkdir(parents=True, exist_ok=True)
    synthetic = [str(generate(n, 1, args.dir / f"history-{n}-s1.parquet")) for n in args.events]
    work = Path(tempfile.mkdtemp(prefix="ksh-equivalence-"))
    tree = work / "tree"
    subprocess.run(["git", "-C", str(HERE), "worktree", "add", "--detach", "-q", str(tree), args.baseline_rev],
                   check=True)
    try:
        seen = {}
        for label, root in (("this checkout", HERE), (args.baseline_rev, tree)):
            out = work / f"{len(seen)}.json"
            subprocess.run([sys.executable, str(HERE / "benchmarks" / "oracle_equivalence.py"), "--observe", str(out),
                            str(HERE / "tests" / "histories"), str(args.seeds), *synthetic],
                           check=True, cwd=root, env={**__import__("os").environ, "PYTHONPATH": str(root)})
            seen[label] = json.loads(out.read_text())
    finally:
        subprocess.run(["git", "-C", str(HERE), "worktree", "remove", "--force", str(tree)], check=False)
        shutil.rmtree(work, ignore_errors=True)
    mine, base = seen["this checkout"], seen[args.baseline_rev]
    differ = sorted(k for k in mine.keys() | base.keys() if mine.get(k) != base.get(k))
    print(f"{len(mine)} replays (committed histories, their mutants of seeds 1-{args.seeds}, synthetic "
          f"{', '.join(f'{n:,}' for n in args.events)} events): {len(differ)} observations differ from "
          f"{args.baseline_rev}'s{': ' + '; '.join(differ[:5]) if differ else ''}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
