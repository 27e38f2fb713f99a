"""The command line of `share-harness`: every subcommand and its options, and one-line usage errors.

`build_parser` makes the parser (one `_add_<command>` helper per subcommand, in the order `--help`
lists them); every number typed goes through a `harness.parse` rule, so a bad one is one line.
`SUITES` is which backends each `run --suite` can use. What the commands do is in `harness.cli_run`,
`harness.cli_report`, `harness.cli_certify` and `harness.cli_upkeep`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from harness import parse
from harness.errors import HarnessError
from harness.kafka.dead_letter import MODES as DEAD_LETTER_MODES
from harness.kafka.implementations import KFAKE_VERSION
from harness.kafka.versions import DEFAULT_VERSION
from harness.spec import SPARK_THRESHOLD
from harness.spec import BACKENDS, BEHAVIOURS, FAULT_MODES, IMAGE_CLASSPATH, MAX_SEEDS, PROFILES, RunSpec

#: suite -> the backends it can run on ("local": clusters the harness starts, with process and link
#: control; "external": --bootstrap-servers). A suite is refused up front on any other.
SUITES = {"conformance": ("local", "external"), "chaos": ("local",), "basic": ("local", "external")}


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
_seed_count = _argument(lambda text: parse.count(text, least=1, most=MAX_SEEDS))


def _path(text: str) -> Path:
    """A path typed by the user; an empty one is refused (`Path("")` is the current directory, so
    `check ""` would check whatever is there)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("empty path: give a path (`.` for the current directory)")
    return Path(text)


def _released(text: str) -> str:
    """A Kafka release the harness knows (`setup --kafka-version`: its jars are downloaded)."""
    from harness.kafka.versions import KNOWN_VERSIONS, SUPPORTED_LINES, check_supported, normalize_version
    try:
        check_supported(text)
    except HarnessError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if normalize_version(text) not in KNOWN_VERSIONS:
        known = [v for v in KNOWN_VERSIONS if v.rsplit(".", 1)[0] in SUPPORTED_LINES]
        raise argparse.ArgumentTypeError(f"Kafka {text.strip()} is not a release the harness knows: use one of "
                                         f"{', '.join(known)}")
    return normalize_version(text)


def _kfake_version(text: str) -> str:
    """A Go module version of kfake (`setup --kfake-version`: the launcher is built against it)."""
    from harness.kafka.implementations import check_kfake_version
    try:
        return check_kfake_version(text)
    except HarnessError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


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
    for add in (_add_run, _add_check, _add_nightly_report, _add_tally, _add_certify, _add_matrix, _add_explore,
                _add_clean, _add_setup, _add_page):
        add(sub)
    return parser


def _add_run(sub) -> None:
    run = sub.add_parser("run", help="start a cluster, run a workload, check the history, write a report")
    run.add_argument("--suite", choices=tuple(SUITES), default=None,
                     help="run a pytest suite of the repository instead of one workload (JUnit XML, allure "
                          "results and, for conformance, the area report go under reports/)")
    run.add_argument("--quiet", action="store_true",
                     help="no progress lines while the run runs (the outcome is printed either way)")
    run.add_argument("--name", default="share-basic")
    run.add_argument("--seed", type=_whole, default=1)
    run.add_argument("--profile", choices=sorted(PROFILES), default="ci")
    run.add_argument("--kafka-version", default=None, help=f"default {DEFAULT_VERSION} (on the kfake backend: "
                                                           "the release whose API kfake serves)")
    run.add_argument("--kafka-home", default=None, help="use jars of an unpacked Kafka distribution")
    run.add_argument("--bootstrap-servers", default=None, help="run against an existing cluster")
    _add_backend(run)
    # (None: not given, so the run's default, or its --workload's, applies; a value given that the run would
    # not honour, e.g. --consumers beside a --workload that sets its own, is refused by harness.cli_run)
    run.add_argument("--brokers", type=_positive_int, default=None,
                     help=f"brokers of a cluster the harness starts (default {RunSpec.brokers})")
    run.add_argument("--log-dirs", type=_positive_int, default=None,
                     help="log directories (disks) per broker of a local or docker cluster; 2 or more lets a disk "
                          f"fail without halting the broker (fault disk-fail; default {RunSpec.log_dirs})")
    run.add_argument("--partitions", type=_positive_int, default=None,
                     help=f"partitions of the run's topic (default {RunSpec.topic_partitions}, or the workload's)")
    run.add_argument("--consumers", type=_positive_int, default=None,
                     help=f"share consumers (default {RunSpec.consumers}, or the workload's)")
    run.add_argument("--behaviour", choices=BEHAVIOURS, default=None,
                     help=f"what the consumers do (default {RunSpec.behaviour}, or the workload's)")
    run.add_argument("--workload", default=None, help="a named consumer workload (sets behaviour, consumers, "
                     "partitions, short locks and a low delivery limit): " + ", ".join(_workload_names()))
    run.add_argument("--records", type=_positive_int, default=None)
    run.add_argument("--base-port", type=_positive_int, default=None)
    _add_run_faults(run)
    run.add_argument("--dead-letter", choices=DEAD_LETTER_MODES, default="off",
                     help="the share group's dead-letter queue (KIP-1191, Kafka 4.4+): off, headers (DLQ records "
                          "carry the context headers only) or copy (and the record); checked by no-loss")
    run.add_argument("--lock-duration-ms", type=_positive_int, default=None,
                     help="the share group's acquisition lock (share.record.lock.duration.ms; default: the broker's)")
    run.add_argument("--delivery-count-limit", type=_positive_int, default=None,
                     help="the share group's delivery-count limit where the release has the group config (4.3+)")
    run.add_argument("--group-config", action="append", default=[], metavar="KEY=VALUE",
                     help="a group config of the share group (repeatable), e.g. share.isolation.level=read_committed")
    run.add_argument("--client", default="confluent",
                     help="the share-consumer library the consumers run: confluent, java, franz, spring, or the path "
                          "of a driver manifest (docs/driver.md)")
    _add_client_option(run)


def _add_run_faults(run: argparse.ArgumentParser) -> None:
    run.add_argument("--faults", default=None, help="fault groups or names, comma-separated: "
                     "leader,coordinator,partition,truncate,latency,consumer,restart (or all)")
    run.add_argument("--fault-seed", type=_whole, default=None, help="seed of the fault schedule (default: --seed)")
    run.add_argument("--fault-interval", type=_seconds, default=None, help="mean seconds between fault starts")
    run.add_argument("--fault-mode", choices=FAULT_MODES, default="random",
                     help="random: a seeded schedule drawn from --faults; once: each of --faults once")


def _add_check(sub) -> None:
    check = sub.add_parser("check", help="check run directories, history files (.jsonl or .parquet) or folders "
                                          "of runs again")
    check.add_argument("history", type=_path, nargs="+")
    check.add_argument("--json", action="store_true", help="print the results as JSON instead of a table")
    check.add_argument("--engine", choices=("auto", "inprocess", "spark"), default="auto",
                       help="inprocess: one Python replay per history; spark: one Spark job for all (Parquet "
                            "only); auto: spark when the histories hold more than --spark-threshold events")
    check.add_argument("--spark-master", default=None,
                       help="Spark master URL (default: $SPARK_MASTER, else embedded local[*])")
    check.add_argument("--spark-threshold", type=_positive_int, default=SPARK_THRESHOLD,
                       help=f"events above which auto picks spark (default {SPARK_THRESHOLD:,})")
    check.add_argument("--nightly", type=_path, default=None,
                       help="append one row per run to this nightly table (a directory of Parquet files)")


def _add_nightly_report(sub) -> None:
    nightly = sub.add_parser("nightly-report", help="HTML report of a nightly table: pass rate and anomalies "
                                                    "per scenario and night")
    nightly.add_argument("table", type=_path)
    nightly.add_argument("--out", type=_path, default=None, help="default: <table>/report.html")
    nightly.add_argument("--spark-master", default=None)


def _add_tally(sub) -> None:
    tally = sub.add_parser("tally", help="per scenario: runs passed/failed/unknown and allowances used")
    tally.add_argument("runs", type=str, nargs="+", help="run directories or folders of them (reports/runs)")
    tally.add_argument("--json", action="store_true")


def _add_backend(parser) -> None:
    parser.add_argument("--backend", choices=BACKENDS, default="local",
                        help="start the cluster as local java processes (default), as containers (docker), or "
                             "start franz-go's kfake instead of Apache Kafka (kfake)")
    parser.add_argument("--kafka-image", default=None, help="docker backend: the Kafka image under test "
                                                            "(default apache/kafka:<--kafka-version>)")
    parser.add_argument("--kafka-image-classpath", default=IMAGE_CLASSPATH,
                        help="docker backend: where the image keeps Kafka's jars (default /opt/kafka/libs/*)")
    parser.add_argument("--kfake-version", default=KFAKE_VERSION,
                        help=f"kfake backend: the Go module version of kfake (default {KFAKE_VERSION})")


def _add_client_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--client-option", action="append", default=[], metavar="KEY=VALUE",
                        help="a client property a user of the library would set (repeatable), passed to every "
                             "consumer and recorded, e.g. max.concurrent.fetches=0 for franz-go's fetch-on-poll; "
                             "a property the driver does not apply is refused")


def _add_certify(sub) -> None:
    certify = sub.add_parser("certify", help="run the client rules of KIP-932 with one share-consumer driver and "
                                              "write its certificate (and the comparison page of all certificates)")
    certify.add_argument("--client", required=True, help="confluent, java, franz, spring, or the path of a driver "
                                                         "manifest (docs/driver.md)")
    certify.add_argument("--kafka-version", default=None, help=f"default {DEFAULT_VERSION} (on the kfake backend: "
                                                               "the release whose API kfake serves)")
    certify.add_argument("--kafka-home", default=None, help="use jars of an unpacked Kafka distribution")
    certify.add_argument("--bootstrap-servers", default=None, help="certify against an existing cluster "
                                                                   "(rules needing faults are not applicable)")
    _add_backend(certify)
    _add_client_option(certify)
    certify.add_argument("--seed", type=_whole, default=1)
    certify.add_argument("--seeds", type=_seed_count, default=3,
                         help=f"seeds the chaos rules run with, from --seed on (default 3, at most {MAX_SEEDS})")
    certify.add_argument("--rules", default=None, help="comma-separated rule ids (default: all)")
    certify.add_argument("--out", type=_path, default=None, help="certificates root (default: reports/certificates)")
    certify.add_argument("--quiet", action="store_true", help="pytest's output to pytest.log only")


def _add_matrix(sub) -> None:
    matrix = sub.add_parser("matrix", help="run the conformance suite and a short chaos set over releases x "
                                            "clients and write one page (nightly: hours)")
    matrix.add_argument("--versions", default=None, help="comma-separated releases (default: the newest of "
                                                         "each supported line); `kfake` or `kfake@<version>` "
                                                         "gates franz-go's kfake instead of a Kafka release")
    matrix.add_argument("--clients", default="confluent,java,franz", help="comma-separated clients")
    matrix.add_argument("--seed", type=_whole, default=1)
    matrix.add_argument("-k", dest="select", default=None, help="a pytest -k expression: only these tests")
    matrix.add_argument("--out", type=_path, default=None, help="matrix root (default: reports/matrix)")
    matrix.add_argument("--workers", type=_whole, default=1,
                        help="pytest-xdist workers per cell, each with its own cluster (2 on a 2-core machine "
                             "takes about half the time)")
    matrix.add_argument("--resume", type=_path, default=None,
                        help="a matrix directory an earlier run wrote: keep its finished cells (same --seed and "
                             "-k), run the others into it")


def _budget(text: str) -> float:
    """A duration: 90 or 90s (seconds), 30m, 2h, 1h30m."""
    import re
    match = re.fullmatch(r"\s*(?:(\d+)h)?\s*(?:(\d+)m)?\s*(?:(\d+(?:\.\d+)?)s?)?\s*", text or "")
    if not text.strip() or match is None or not any(match.groups()):
        raise argparse.ArgumentTypeError(f"invalid duration {text!r}: use seconds (90, 90s), minutes (30m), hours "
                                         "(2h) or both (1h30m)")
    hours, minutes, seconds = (float(g) if g else 0.0 for g in match.groups())
    total = hours * 3600 + minutes * 60 + seconds
    if total <= 0 or total > 7 * 86400:
        raise argparse.ArgumentTypeError(f"invalid duration {text!r}: use more than 0 and at most a week (168h)")
    return total


def _add_explore(sub) -> None:
    explore = sub.add_parser("explore", help="generated runs: operations of the share-group surface interleaved "
                                              "with faults, checked by the oracle; failures shrunk and stored as "
                                              "findings (reports/findings)")
    explore.add_argument("--kafka-version", type=_released, default=None,
                         help=f"the release under test (default {DEFAULT_VERSION}; with --replay: the schedule's)")
    explore.add_argument("--kafka-home", type=_path, default=None, help="use jars of an unpacked Kafka distribution")
    _add_backend(explore)
    explore.add_argument("--client", default=None, help="the share-consumer library: confluent (default), java, "
                                                        "franz, or a driver manifest (with --replay: the schedule's)")
    explore.add_argument("--seed", type=_whole, default=1, help="the exploration's seed: every run's schedule "
                                                                "derives from it and the run's number")
    explore.add_argument("--budget", type=_budget, default=120.0,
                         help="how long to explore (90s, 30m, 2h; default 2m); a run started before the end "
                              "finishes, and one run is always made")
    explore.add_argument("--steps", type=_argument(lambda t: parse.count(t, least=1, most=200)), default=12,
                         help="steps per generated run (default 12, at most 200)")
    explore.add_argument("--no-shrink", dest="shrink", action="store_false", help="store failures as generated")
    explore.add_argument("--shrink-runs", type=_positive_int, default=24,
                         help="the most runs one shrink takes (default 24)")
    explore.add_argument("--replay", type=_path, default=None, help="run one schedule.json (a finding's) again")
    explore.add_argument("--merge", type=_path, nargs="+", default=None, metavar="DIR",
                         help="fold other machines' findings stores (their reports/findings) into this one; "
                              "nothing runs")
    explore.add_argument("--findings", type=_path, default=None,
                         help="the findings store (default: reports/findings under $KSH_REPORTS_DIR or ./reports)")
    explore.add_argument("--base-port", type=_positive_int, default=None)


def _add_clean(sub) -> None:
    clean = sub.add_parser("clean", help="delete old run directories, suite reports and certificates under "
                                          "reports/ (keeps the newest --keep and, unless --all, every one that "
                                          "did not pass)")
    clean.add_argument("--keep", type=_non_negative_int, default=20, help="newest entries kept per kind (default 20)")
    clean.add_argument("--all", action="store_true", help="delete failed and unknown runs too (beyond --keep)")
    clean.add_argument("--dry-run", action="store_true", help="list what would be deleted, delete nothing")
    clean.add_argument("--root", type=_path, default=None, help="reports root (default: $KSH_REPORTS_DIR or ./reports)")


def _add_page(sub) -> None:
    page = sub.add_parser("page", help="(re)write a run directory's page, run.html, from its history and verdict; "
                                        "optionally screenshot it in headless Chromium")
    page.add_argument("run_dir", type=_path, help="a run directory (reports/runs/<...>, or reports/runs/latest)")
    page.add_argument("--screenshot", type=_path, default=None, help="write a PNG of the whole page here")


def _add_setup(sub) -> None:
    setup = sub.add_parser("setup", help="download Kafka jars, build Toxiproxy, the franz-go driver and the kfake "
                                          "launcher into the cache")
    setup.add_argument("--kafka-version", action="append", default=None, type=_released,
                       help="releases whose jars to download (repeatable; default: the default release, the one "
                            "the rolling upgrade starts from and the oldest supported)")
    setup.add_argument("--kfake-version", action="append", default=None, type=_kfake_version,
                       help="kfake versions to build the launcher for (default: the pinned one)")
