"""`share-harness`: run | check | certify | tally | nightly-report | clean | setup.

Exit codes (`harness.exitcodes`, the same for every command): 0 pass, 1 violation,
2 bad input, 3 unknown or incomplete, 130 interrupted. Every user error is one line
on stderr (`share-harness: error: ...`) and exit code 2; no traceback. Ctrl-C and
SIGTERM stop everything the run started.
"""

from __future__ import annotations

import argparse
import errno
import json
import signal
import sys
from dataclasses import replace
from pathlib import Path

from harness import exitcodes, parse
from harness.errors import HarnessError, Inconclusive, first_line
from harness.kafka.versions import DEFAULT_VERSION
from harness.spec import SPARK_THRESHOLD
from harness.spec import BEHAVIOURS, FAULT_MODES, PROFILES, RunSpec


def _argument(parse):
    """An argparse type from a `harness.parse` parser (one set of rules for every number typed)."""
    def convert(text: str):
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    convert.__name__ = parse.__name__
    return convert


_whole = _argument(parse.whole)
_positive_int = _argument(lambda text: parse.count(text, least=1))
_non_negative_int = _argument(parse.count)
_seconds = _argument(parse.seconds)


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
    run.add_argument("--suite", choices=tuple(SUITES), default=None,
                     help="run a pytest suite of the repository instead of one workload (JUnit XML, allure "
                          "results and, for conformance, the area report go under reports/)")
    run.add_argument("--name", default="share-basic")
    run.add_argument("--seed", type=_whole, default=1)
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
    run.add_argument("--fault-seed", type=_whole, default=None, help="seed of the fault schedule (default: --seed)")
    run.add_argument("--fault-interval", type=_seconds, default=None, help="mean seconds between fault starts")
    run.add_argument("--fault-mode", choices=FAULT_MODES, default="random",
                     help="random: a seeded schedule drawn from --faults; once: each of --faults once")
    run.add_argument("--client", default="confluent",
                     help="the share-consumer library the consumers run: confluent, java, franz, or the path "
                          "of a driver manifest (docs/driver.md)")
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
    certify.add_argument("--seed", type=_whole, default=1)
    certify.add_argument("--rules", default=None, help="comma-separated rule ids (default: all)")
    certify.add_argument("--out", type=Path, default=None, help="certificates root (default: reports/certificates)")
    certify.add_argument("--quiet", action="store_true", help="pytest's output to pytest.log only")
    clean = sub.add_parser("clean", help="delete old run directories, suite reports and certificates under "
                                          "reports/ (keeps the newest --keep and, unless --all, every one that "
                                          "did not pass)")
    clean.add_argument("--keep", type=_non_negative_int, default=20, help="newest entries kept per kind (default 20)")
    clean.add_argument("--all", action="store_true", help="delete failed and unknown runs too (beyond --keep)")
    clean.add_argument("--dry-run", action="store_true", help="list what would be deleted, delete nothing")
    clean.add_argument("--root", type=Path, default=None, help="reports root (default: $KSH_REPORTS_DIR or ./reports)")
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
                "nightly-report": cmd_nightly_report, "certify": cmd_certify, "clean": cmd_clean}[args.command](args)
    except Inconclusive as exc:
        print(f"share-harness: inconclusive, nothing was decided: {exc}", file=sys.stderr)
        return exitcodes.UNKNOWN
    except HarnessError as exc:
        print(f"share-harness: error: {exc}", file=sys.stderr)
        return exitcodes.BAD_INPUT
    except KeyboardInterrupt:
        print("share-harness: interrupted; everything it started was stopped", file=sys.stderr)
        return exitcodes.INTERRUPTED
    except OSError as exc:
        if exc.filename is None or exc.errno not in _PATH_ERRORS:  # a full disk, a socket: not the user's input
            return _internal_error(exc)
        print(f"share-harness: error: {exc.strerror or exc}: {exc.filename}: use a path that exists and is writable "
              "(reports go under $KSH_REPORTS_DIR, else ./reports)", file=sys.stderr)
        return exitcodes.BAD_INPUT
    except Exception as exc:  # noqa: BLE001 - a bug is not a verdict: never 1 (violation), never a traceback
        return _internal_error(exc)


_PATH_ERRORS = {errno.ENOENT, errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOTDIR, errno.EISDIR, errno.EEXIST}


def _internal_error(exc: BaseException) -> int:
    """An exception nobody expected: unknown (3), one line; KSH_DEBUG=1 shows the traceback."""
    import os
    if os.environ.get("KSH_DEBUG"):
        import traceback
        traceback.print_exc()
    first = first_line(exc)
    print(f"share-harness: internal error, nothing was decided: {type(exc).__name__}: {first} (a harness bug: "
          "rerun with KSH_DEBUG=1 for the traceback and report it)", file=sys.stderr)
    return exitcodes.UNKNOWN


#: suite -> the backends it can run on ("local": clusters the harness starts, with process and link
#: control; "external": --bootstrap-servers). A suite is refused up front on any other.
SUITES = {"conformance": ("local", "external"), "chaos": ("local",), "basic": ("local", "external")}


def _spec_from_args(args: argparse.Namespace) -> RunSpec:
    """The run's spec from the command line, validated (every bad value is one line, before anything starts)."""
    from harness.faults import parse_faults
    spec = RunSpec(profile=args.profile).with_profile()
    spec = replace(spec, name=args.name, seed=args.seed, kafka_version=args.kafka_version,
                   kafka_home=args.kafka_home, bootstrap_servers=args.bootstrap_servers, brokers=args.brokers,
                   replication_factor=min(3, args.brokers), min_insync_replicas=min(2, args.brokers),
                   topic_partitions=args.partitions, consumers=args.consumers, behaviour=args.behaviour,
                   base_port=args.base_port, records=args.records or spec.records, faults=parse_faults(args.faults),
                   fault_seed=args.fault_seed, fault_interval=args.fault_interval, fault_mode=args.fault_mode,
                   client=args.client)
    if args.workload:
        from harness.workloads import apply_workload
        spec = apply_workload(spec, args.workload)
    return spec.validate()


#: The options `run --suite` passes on to pytest (the plugin's); any other given with it is refused.
_SUITE_OPTIONS = ("command", "suite", "seed", "profile", "kafka_version", "kafka_home", "bootstrap_servers",
                  "faults", "fault_seed", "fault_interval", "client")


def run_suite(args: argparse.Namespace) -> int:
    """`run --suite NAME`: pytest on suites/NAME with the run's options, its exit status in the table of
    `harness.exitcodes` (no test passed: unknown). A suite that cannot run on the chosen backend is
    refused before anything starts."""
    from harness.pytest_child import run_pytest
    from harness.report.rundir import new_stamped_dir, reports_root
    defaults = vars(build_parser().parse_args(["run"]))
    ignored = [f"--{name.replace('_', '-')}" for name, value in vars(args).items()
               if name not in _SUITE_OPTIONS and value != defaults.get(name)]
    if ignored:  # taken and then silently not applied would be a pass of something not asked for
        raise HarnessError(f"{', '.join(ignored)} cannot be used with --suite (each suite sets its own workloads): "
                           f"with --suite, give only {', '.join('--' + o.replace('_', '-') for o in _SUITE_OPTIONS[2:])}")
    spec = _spec_from_args(args)
    backend = "external" if spec.bootstrap_servers else "local"
    if backend not in SUITES[args.suite]:
        raise HarnessError(f"suite {args.suite} cannot run on an external cluster (--bootstrap-servers): its faults "
                           f"need process and link control; run it on the {' or '.join(SUITES[args.suite])} backend "
                           "(drop --bootstrap-servers)")
    repo = Path(__file__).resolve().parents[1]
    target = repo / "suites" / ("" if args.suite == "basic" else args.suite)
    if not target.is_dir():
        raise HarnessError(f"{target} not found: run suites from a clone of the repository (pip install -e .)")
    out = new_stamped_dir(reports_root() / "suites", args.suite)
    cmd = [sys.executable, "-m", "pytest", str(target / "test_share_basic.py") if args.suite == "basic" else str(target),
           "-q", "-rfEsx", "--ksh-profile", spec.profile, "--ksh-seed", str(spec.seed),
           "--kafka-version", spec.kafka_version, "--junitxml", str(out / "junit.xml")]
    if spec.bootstrap_servers:
        cmd += ["--bootstrap-servers", spec.bootstrap_servers]
    if spec.kafka_home:
        cmd += ["--kafka-home", spec.kafka_home]
    if spec.faults:
        cmd += ["--faults", ",".join(spec.faults)]
    if spec.client != "confluent":  # a manifest's path as the pytest child (run from the repository) finds it
        from harness.clients.registry import driver_info
        builtin = driver_info(spec.client).source == "built-in"
        cmd += ["--ksh-client", spec.client if builtin else str(Path(spec.client).resolve())]
    if spec.fault_seed is not None:
        cmd += ["--fault-seed", str(spec.fault_seed)]
    if spec.fault_interval is not None:
        cmd += ["--fault-interval", repr(spec.fault_interval)]
    try:
        import allure_pytest  # noqa: F401
        cmd += ["--alluredir", str(out / "allure")]
    except ImportError:
        pass
    print(f"suite {args.suite}: {' '.join(cmd)}", flush=True)
    rc = run_pytest(cmd, cwd=repo)
    code = exitcodes.from_pytest(rc)  # an interrupt of ours is raised by run_pytest, after the tear-down
    print(f"suite {args.suite}: pytest exit {rc} -> {code} ({exitcodes.word(code)}); JUnit XML {out / 'junit.xml'}")
    if rc == 5:
        print(f"suite {args.suite}: no test passed: nothing was checked, so this is not a pass", flush=True)
    return code


def cmd_run(args: argparse.Namespace) -> int:
    if args.suite:
        return run_suite(args)
    from harness.run import run
    outcome = run(_spec_from_args(args))
    print(outcome.summary())
    return exitcodes.for_verdict(outcome.overall)


def cmd_certify(args: argparse.Namespace) -> int:
    """Exit 0 when CERTIFIED, 1 when NOT CERTIFIED, 3 when UNKNOWN (the rules could not be run)."""
    from harness.certify import RESULT_WORDS, certify
    rules = None
    if args.rules is not None:
        rules = [r.strip() for r in args.rules.split(",") if r.strip()]
        if not rules:
            raise HarnessError(f"--rules {args.rules!r} names no rule: give rule ids, comma-separated, or leave "
                               "--rules out for all of them")
    cert, out = certify(args.client, kafka_version=args.kafka_version, bootstrap_servers=args.bootstrap_servers,
                        kafka_home=args.kafka_home, seed=args.seed, rules=rules, out_root=args.out, quiet=args.quiet)
    for r in cert["rules"]:
        print(f"{RESULT_WORDS[r['result']]:>32}  {r['rule']}" + (f": {r['evidence'][:160]}" if r["evidence"] else ""))
    print(f"{cert['verdict']}: {cert['driver']} ({cert.get('client', '?')} {cert.get('client_version', '?')}) on "
          f"Kafka {cert['kafka_version']}; certificate {out / 'certificate.md'}; comparison {out.parent / 'index.md'}")
    return {"CERTIFIED": exitcodes.PASS, "NOT CERTIFIED": exitcodes.VIOLATION}.get(cert["verdict"], exitcodes.UNKNOWN)


def cmd_tally(args: argparse.Namespace) -> int:
    """Exit 0 when every run passed with every fault applied and healed, 1 when a run failed, 3 when
    a run is unknown (crashed, unfinished, a fault not applied) or there is no run at all."""
    from harness.report.tally import render, tally, tally_exit
    rows = tally(args.runs)
    if args.json:
        print(json.dumps(rows, indent=2, sort_keys=True))
    else:
        print(render(rows) if rows else "no runs found: nothing was checked")
    return tally_exit(rows)


def cmd_check(args: argparse.Namespace) -> int:
    """Exit 0 (every property of every history holds), 1 (a violation), 3 (unknown: a property not
    decided, a run directory without a history), 2 (bad input)."""
    from harness.checkers import compose, verdict_word
    from harness.spark.engine import check_histories
    checks, engine = check_histories(args.history, args.engine, args.spark_master, args.spark_threshold)
    if args.nightly is not None:
        from harness.spark.nightly import append, row_for
        append(args.nightly, [row_for(c, engine) for c in checks])
    valid = compose([r for c in checks for r in c.results])  # no history at all: unknown
    if args.json:
        print(json.dumps({"engine": engine, "verdict": verdict_word(valid), "histories": [
            {"history": str(c.path), "verdict": verdict_word(c.valid), "results": [r.to_json() for r in c.results]}
            for c in checks]}, indent=2))
    else:
        for c in checks:
            if len(checks) > 1:
                print(f"== {c.path}")
            print(results_table(c.results, c.valid, c.events) + f" [{engine}]")
        if len(checks) > 1:
            print(f"overall: {verdict_word(valid)} ({len(checks)} histories)")
    return exitcodes.for_verdict(valid)


def cmd_nightly_report(args: argparse.Namespace) -> int:
    """Exit 0 when the report was written (a report is not a gate: `check` and `tally` are), 2 bad input."""
    from harness.spark.nightly import report
    out = report(args.table, args.out or args.table / "report.html", args.spark_master)
    print(f"nightly report: {out}")
    return exitcodes.PASS


def cmd_clean(args: argparse.Namespace) -> int:
    """Exit 0 after deleting (or listing, --dry-run) what the retention rule does not keep."""
    from harness.report.clean import clean
    from harness.report.rundir import reports_root
    root = args.root or reports_root()
    if not root.is_dir():
        raise HarnessError(f"{root} is not a reports directory: give --root the folder holding runs/ (or set "
                           "KSH_REPORTS_DIR)")
    kept, deleted, freed = clean(root, keep=args.keep, keep_failures=not args.all, dry_run=args.dry_run)
    for path in deleted:
        print(f"{'would delete' if args.dry_run else 'deleted'} {path}")
    print(f"{'would free' if args.dry_run else 'freed'} {freed / 1e6:.1f} MB; kept {len(kept)} entries "
          f"(the newest {args.keep} of each kind{'' if args.all else ', and every one that did not pass'})")
    return exitcodes.PASS


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
        for name, uses in sorted(getattr(r, "allowance_evidence", {}).items()):
            if uses:  # the first use's evidence, so a reader can audit it (all kept uses: --json)
                lines.append(f"{r.checker}: allowance {name} x{r.allowances.get(name, len(uses))}, first "
                             f"justified by ops {', '.join(map(str, uses[0]))}")
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
