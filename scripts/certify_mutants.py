"""Mutation testing of certification: certify every deliberately faulty driver (tests/faulty_drivers/*.json,
one per bug class a client library can have) and print, per class, the fraction caught (NOT CERTIFIED with
the rule the bug breaks failed). A certificate that cannot fail is worthless; this says which bugs it fails.

    python scripts/certify_mutants.py [--all-rules] [--only a,b] [--kafka-version V] [--seed N]

Default: each driver against the rules its manifest says it breaks (`breaks`: CI's subset, as
tests/real/test_certify_real.py and tests/real/test_certify_real_more.py); `--all-rules`: every rule (nightly: which
other rules also catch it). Caught means what CI asserts: every rule of `breaks` failed, with the manifest's
`evidence` in the first one's message. Exit 0 when
every driver was caught, 1 when one was not, 3 when a certificate was not decided.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FAULTY = ROOT / "tests" / "faulty_drivers"


def mutants(only: list[str] | None = None) -> list[tuple[Path, dict]]:
    """(manifest path, manifest) of the faulty drivers named in `only` (all if None), as CI's tests list them."""
    sys.path.insert(0, str(FAULTY.parent))
    from faulty_drivers import faulty_drivers
    return [(FAULTY / f"{stem}.json", m) for stem, m in faulty_drivers() if only is None or stem in only]


def caught(cert: dict, breaks: list[str], evidence: str | None = None) -> tuple[bool | None, list[str]]:
    """(caught, the rules that failed). Caught, as CI's tests/real/test_certify_real.py has it: NOT CERTIFIED with
    every rule of `breaks` failed, the first one's evidence holding `evidence`; None (undecided) when the
    certificate decided nothing and the rules it broke did not all fail."""
    results = {r["rule"]: r for r in cert["rules"]}
    failed = [rule for rule, r in results.items() if r["result"] == "fail"]
    hit = bool(breaks) and all(results.get(rule, {}).get("result") == "fail" for rule in breaks) and \
        (evidence is None or evidence in results[breaks[0]].get("evidence", ""))
    if cert["verdict"] not in ("CERTIFIED", "NOT CERTIFIED"):
        return (True if hit else None), failed
    return cert["verdict"] == "NOT CERTIFIED" and hit, failed


def summary(rows: list[tuple[str, str, bool | None, list[str]]]) -> list[str]:
    """One line per bug class (caught / drivers) and one per driver."""
    lines, classes = [], {}
    for name, cls, got, failed in rows:
        classes.setdefault(cls, []).append(got)
        lines.append(f"  {name:<16} {cls:<48} {'caught' if got else 'UNDECIDED' if got is None else 'MISSED'}"
                     f" (rules failed: {', '.join(failed) or 'none'})")
    head = [f"{cls:<48} {sum(1 for g in gots if g)}/{len(gots)} caught" for cls, gots in classes.items()]
    total = sum(1 for *_, got, _ in rows if got)
    return head + [f"all classes: {total}/{len(rows)} caught"] + lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--all-rules", action="store_true")
    parser.add_argument("--only", default=None, help="faulty drivers by file stem, comma-separated")
    parser.add_argument("--kafka-version", default=None)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    from harness.certify.certificate import Certification, certify
    from harness.errors import HarnessError
    from harness.kafka.implementations import default_kafka_version
    from harness.report.rundir import reports_root
    from harness.spec import RunSpec
    out = args.out or reports_root() / "certificates" / "mutants"
    rows = []
    chosen = mutants(args.only.split(",") if args.only else None)
    if not chosen:
        print(f"share-harness: no faulty driver named {args.only} in {FAULTY}", file=sys.stderr)
        return 2
    for path, manifest in chosen:
        breaks = manifest.get("breaks") or []
        if not breaks:
            print(f"share-harness: {path} names no rule it breaks: add \"breaks\" to its manifest", file=sys.stderr)
            return 2
        try:
            spec = RunSpec(client=str(path), kafka_version=args.kafka_version or default_kafka_version("local"),
                           seed=args.seed, rules=() if args.all_rules else tuple(breaks))
            cert, _ = certify(Certification(spec, seeds=1, out_root=out, quiet=True))
        except HarnessError as exc:
            print("\n".join(summary(rows)) if rows else "", flush=True)
            print(f"share-harness: {exc}", file=sys.stderr)
            return 2
        got, failed = caught(cert, breaks, manifest.get("evidence"))
        rows.append((path.stem, manifest.get("bug_class", "?"), got, failed))
        print(f"{path.stem}: {cert['verdict']} ({'caught' if got else 'not caught'})", flush=True)
    print("\n".join(summary(rows)))
    if any(got is None for *_, got, _ in rows):
        return 3
    return 0 if all(got for *_, got, _ in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
