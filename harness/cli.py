"""`share-harness`: run | check | certify | tally | nightly-report | setup.

Every user error is one line on stderr (`share-harness: error: ...`) and exit
code 2; no traceback. Ctrl-C and SIGTERM stop everything the run started.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from dataclasses import replace
from pathlib import Path

from harness.errors import HarnessError
from harness.kafka.versions import DEFAULT_VERSION
from harness.spark.engine import SPARK_THRESHOLD
from harness.spec import BEHAVIOURS, FAULT_MODES, PROFILES, RunSpec


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be 1 or more")
    return value


def _workload_names() -> list[str]:
    from harness.workloads import WORKLOADS
    return list(WORKLOADS)


class _OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage error is one line naming the fix (no usage block)."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _OneLineParser(prog="share-harness", description="Kafka share-group (KIP-932) test harness")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_OneLineParser)
    run = sub.add_parser("run", help="start a cluster, run a workload, check the history, write a report")
    run.add_argument("--suite", choices=SUITES, default=None,
                     help="run a pytest suite of the repository instead of one workload (JUnit XML, allure "
                          "results and, for conformance, the area report go under reports/)")
    run.add_argument("--name", default="share-basic")
    run.add_argument("--seed", type=int, default=1)
    run.add_argument("--profile", choices=sorted(PROFILES), default="ci")
    run.add_argument("--kafka-version", default=DEFAULT_VERSION)
    run.add_argument("--kafka-home", default=None, help="use jars of an unpacked Kafka distribution")
    run.add_argument("--bootstrap-servers", default=None, help="run against an existing cluster")
    run.add_argument("--brokers", type=_positive_int, default=3)
    run.add_argument("--partitions", type=_positive_int, default=3)
    run.add_argument("--consumers", type=_positive_int, default=3)
    run.add_argument("--behaviour", choices=BEHAVIOURS, default="accept-implicit")
    run.add_argument("--workload", default=None, help="a named consumer workload (sets behaviour, consumers, "
                     "partitions, short locks and a low delivery limit): " + ", ".join(_workload_names()))
    run.add_argument("--records", type=_positive_int, default=None)
    run.add_argument("--base-port", type=_positive_int, default=None)
    run.add_argument("--faults", default=None, help="fault groups or names, comma-separated: "
                     "leader,coordinator,partition,truncate,latency,consumer,restart (or all)")
    run.add_argument("--fault-seed", type=int, default=None, help="seed of the fault schedule (default: --seed)")
    run.add_argument("--fault-interval", type=float, default=None, help="mean seconds between fault starts")
    run.add_argument("--fault-mode", choices=FAULT_MODES, default="random",
                     help="random: a seeded schedule drawn from --faults; once: each of --faults once")
    check = sub.add_parser("check", help="check run directories, history files (.jsonl or .parquet) or folders "
                                          "of runs again")
    check.add_argument("history", type=Path, nargs="+")
    check.add_argument("--json", action="store_true", help="print the results as JSON instead of a table")
    check.add_argument("--engine", choices=("auto", "inprocess", "spark"), default="auto",
                       help="inprocess: one Python replay per history; spark: one Spark job for all (Parquet "
                            "only); auto: spark when the histories hold more than --spark-threshold events")
    check.add_argument("--spark-master", default=None,
                       help="Spark master URL (default: $SPARK_MASTER, else embedded local[*])")
    check.add_argument("--spark-threshold", type=_positive_int, default=SPARK_THRESHOLD,
                       help=f"events above which auto picks spark (default {SPARK_THRESHOLD:,})")
    check.add_argument("--nightly", type=Path, default=None,
                       help="append one row per run to this nightly table (a directory of Parquet files)")
    nightly = sub.add_parser("nightly-report", help="HTML report of a nightly table: pass rate and anomalies "
                                                    "per scenario and night")
    nightly.add_argument("table", type=Path)
    nightly.add_argument("--out", type=Path, default=None, help="default: <table>/report.html")
    nightly.add_argument("--spark-master", default=None)
    tally = sub.add_parser("tally", help="per scenario: runs passed/failed/unknown and allowances used")
    tally.add_argument("runs", type=Path, nargs="+", help="run directories or folders of them (reports/runs)")
    tally.add_argument("--json", action="store_true")
    certify = sub.add_parser("certify", help="run the client rules of KIP-932 with one share-consumer driver and "
                                              "write its certificate (and the comparison page of all certificates)")
    certify.add_argument("--client", required=True, help="confluent, java, franz, or the path of a driver "
                                                         "manifest (docs/driver.md)")
    certify.add_argument("--kafka-version", default=DEFAULT_VERSION)
    certify.add_argument("--kafka-home", default=None, help="use jars of an unpacked Kafka distribution")
    certify.add_argument("--bootstrap-servers", default=None, help="certify against an existing cluster "
                                                                   "(rules needing faults are not applicable)")
    certify.add_argument("--seed", type=int, default=1)
    certify.add_argument("--rules", default=None, help="comma-separated rule ids (default: all)")
    certify.add_argument("--out", type=Path, default=None, help="certificates root (default: reports/certificates)")
    certify.add_argument("--quiet", action="store_true", help="pytest's output to pytest.log only")
    setup = sub.add_parser("setup", help="download Kafka jars and build Toxiproxy into the cache")
    setup.add_argument("--kafka-version", action="append", default=None)
    return parser


def _terminate(signum, frame):  # SIGTERM -> the same clean-up path as Ctrl-C
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    signal.signal(signal.SIGTERM, _terminate)
    try:
        return {"run": cmd_run, "check": cmd_check, "setup": cmd_setup, "tally": cmd_tally,
                "nightly-report": cmd_nightly_report, "certify": cmd_certify}[args.command](args)
    except HarnessError as exc:
        print(f"share-harness: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("share-harness: interrupted; everything it started was stopped", file=sys.stderr)
        return 130


SUITES = ("conformance", "chaos", "basic")


def run_suite(args: argparse.Namespace) -> int:
    """`run --suite NAME`: pytest on suites/NAME with the run's options; pytest's exit status, except
    that "no tests ran" is a failure (a gate that checked nothing must not pass)."""
    import subprocess
    import time

    from harness.report.rundir import reports_root
    repo = Path(__file__).resolve().parents[1]
    target = repo / "suites" / ("" if args.suite == "basic" else args.suite)
    if not target.is_dir():
        raise HarnessError(f"{target} not found: run suites from a clone of the repository (pip install -e .)")
    out = reports_root() / "suites" / f"{time.strftime('%Y%m%d-%H%M%S')}-{args.suite}"
    out.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pytest", str(target / "test_share_basic.py") if args.suite == "basic" else str(target),
           "-q", "-rfEsx", "--ksh-profile", args.profile, "--ksh-seed", str(args.seed),
           "--kafka-version", args.kafka_version, "--junitxml", str(out / "junit.xml")]
    if args.bootstrap_servers:
        cmd += ["--bootstrap-servers", args.bootstrap_servers]
    if args.kafka_home:
        cmd += ["--kafka-home", args.kafka_home]
    try:
        import allure_pytest  # noqa: F401
        cmd += ["--alluredir", str(out / "allure")]
    except ImportError:
        pass
    print(f"suite {args.suite}: {' '.join(cmd)}", flush=True)
    rc = subprocess.call(cmd, cwd=repo)
    print(f"suite {args.suite}: exit {rc}; JUnit XML {out / 'junit.xml'}")
    if rc == 5:
        print(f"suite {args.suite}: no tests ran: failing", flush=True)
        return 1
    return rc


def cmd_run(args: argparse.Namespace) -> int:
    if args.suite:
        return run_suite(args)
    from harness.faults import parse_faults
    from harness.runner import run
    faults = parse_faults(args.faults)
    spec = RunSpec(profile=args.profile).with_profile()
    spec = replace(spec, name=args.name, seed=args.seed, kafka_version=args.kafka_version,
                   kafka_home=args.kafka_home, bootstrap_servers=args.bootstrap_servers, brokers=args.brokers,
                   replication_factor=min(3, args.brokers), min_insync_replicas=min(2, args.brokers),
                   topic_partitions=args.partitions, consumers=args.consumers, behaviour=args.behaviour,
                   base_port=args.base_port, records=args.records or spec.records, faults=faults,
                   fault_seed=args.fault_seed, fault_interval=args.fault_interval, fault_mode=args.fault_mode)
    if args.workload:
        from harness.workloads import apply_workload
        spec = apply_workload(spec, args.workload)
    outcome = run(spec.validate())
    print(outcome.summary())
    return {True: 0, False: 1}.get(outcome.valid, 3)


def cmd_certify(args: argparse.Namespace) -> int:
    """Exit 0 when CERTIFIED, 1 when NOT CERTIFIED, 3 when UNKNOWN (the rules could not be run)."""
    from harness.certify import RESULT_WORDS, certify
    rules = [r.strip() for r in args.rules.split(",") if r.strip()] if args.rules else None
    cert, out = certify(args.client, kafka_version=args.kafka_version, bootstrap_servers=args.bootstrap_servers,
                        kafka_home=args.kafka_home, seed=args.seed, rules=rules, out_root=args.out, quiet=args.quiet)
    for r in cert["rules"]:
        print(f"{RESULT_WORDS[r['result']]:>32}  {r['rule']}" + (f": {r['evidence'][:160]}" if r["evidence"] else ""))
    print(f"{cert['verdict']}: {cert['driver']} ({cert.get('client', '?')} {cert.get('client_version', '?')}) on "
          f"Kafka {cert['kafka_version']}; certificate {out / 'certificate.md'}; comparison {out.parent / 'index.md'}")
    return {"CERTIFIED": 0, "NOT CERTIFIED": 1}.get(cert["verdict"], 3)


def cmd_tally(args: argparse.Namespace) -> int:
    """Exit 0 when every run passed, 1 otherwise (also when there is no run at all)."""
    from harness.report.tally import render, tally
    rows = tally(args.runs)
    if args.json:
        print(json.dumps(rows, indent=2, sort_keys=True))
    else:
        print(render(rows) if rows else "no runs found")
    return 0 if rows and all(r["pass"] == r["runs"] for r in rows.values()) else 1


def cmd_check(args: argparse.Namespace) -> int:
    """Exit 0 (every property of every history holds), 1 (a violation), 2 (unknown, or bad input)."""
    from harness.checkers import compose, verdict_word
    from harness.spark.engine import check_histories
    checks, engine = check_histories(args.history, args.engine, args.spark_master, args.spark_threshold)
    if args.nightly is not None:
        from harness.spark.nightly import append, row_for
        append(args.nightly, [row_for(c, engine) for c in checks])
    valid = compose([r for c in checks for r in c.results])
    if args.json:
        print(json.dumps({"engine": engine, "verdict": verdict_word(valid), "histories": [
            {"history": str(c.path), "verdict": verdict_word(c.valid), "results": [r.to_json() for r in c.results]}
            for c in checks]}, indent=2))
    else:
        for c in checks:
            if len(checks) > 1:
                print(f"== {c.path}")
            print(results_table(c.results, c.valid, c.events) + f" [{engine}]")
    return {True: 0, False: 1}.get(valid, 2)


def cmd_nightly_report(args: argparse.Namespace) -> int:
    from harness.spark.nightly import report
    out = report(args.table, args.out or args.table / "report.html", args.spark_master)
    print(f"nightly report: {out}")
    return 0


def results_table(results, valid, events: int) -> str:
    """property | verdict | anomalies | allowances used, then the first anomalies and unknown reasons."""
    from harness.checkers import verdict_word
    rows = [("property", "verdict", "anomalies", "allowances used")]
    for r in results:
        allowances = ", ".join(f"{k}={v}" for k, v in sorted(r.allowances.items())) or "-"
        rows.append((r.checker, verdict_word(r.valid), str(len(r.anomalies)), allowances))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row[:3], widths)) + "  " + row[3] for row in rows]
    lines.insert(1, "-" * max(len(line) for line in lines))
    for r in results:
        if r.reason:
            lines.append(f"{r.checker}: {verdict_word(r.valid)}: {r.reason}")
        for a in r.anomalies[:5]:
            lines.append(f"{r.checker}: {a.kind}: {a.message} (ops {', '.join(map(str, a.evidence))})")
        if len(r.anomalies) > 5:
            lines.append(f"{r.checker}: ... {len(r.anomalies) - 5} more (use --json)")
    lines.append(f"verdict: {verdict_word(valid)} ({events} events)")
    return "\n".join(lines)


def cmd_setup(args: argparse.Namespace) -> int:
    from harness.kafka.jars import resolve
    from harness.paths import cache_dir
    from harness.proxy.server import find_or_build_toxiproxy
    from harness.clients.franz import build_franz_driver
    from harness.cluster.java_admin import compiled
    for version in args.kafka_version or [DEFAULT_VERSION]:
        dist = resolve(version, cache_dir())
        print(f"kafka {dist.version}: {dist.libs}")
        print(f"java driver (KafkaShareConsumer {dist.version}): {compiled(dist, cache_dir(), 'ShareDriver')}")
    print(f"toxiproxy: {find_or_build_toxiproxy(cache_dir())}")
    print(f"franz-go driver: {build_franz_driver(cache_dir())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
