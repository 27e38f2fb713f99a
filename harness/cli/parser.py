"""The command line of `share-harness`: every subcommand and its options, and one-line usage errors.

`build_parser` makes the parser (one `_add_<command>` helper per subcommand, in the order `--help`
lists them); the settings of a run (`run`, `certify`, `explore`) come from the one table of them,
`harness.settings`; every number typed goes through a `harness.parse` rule, so a bad one is one line.
`SUITES` is which backends each `run --suite` can use. What the commands do is in `harness.cli.run`,
`harness.cli.report`, `harness.cli.certify` and `harness.cli.upkeep`.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from harness import parse, settings
from harness.errors import HarnessError
from harness.kafka.implementations import KFAKE_VERSION
from harness.kafka.versions import DEFAULT_VERSION

from harness.version import VERSION
from harness.spec import CHECK_ENGINES, IMAGE_CLASSPATH, SPARK_THRESHOLD

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


def _path(text: str) -> Path:
    """A path typed by the user; an empty one is refused (`Path("")` is the current directory, so
    `check ""` would check whatever is there)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("empty path: give a path (`.` for the current directory)")
    return Path(text)


def _released(text: str) -> str:
    """A Kafka release the harness knows (`setup --kafka-version`: its jars are downloaded)."""
    # (deferred: loaded only when this command or fixture runs)
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
    # (deferred: loaded only when this command or fixture runs)
    from harness.kafka.implementations import check_kfake_version
    try:
        return check_kfake_version(text)
    except HarnessError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


class _OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage error is one line naming the fix (no usage block)."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


class _TestedSetVersion(argparse.Action):
    """`--version`: the tested set (`harness.tested_set.describe`), read only when asked."""

    def __call__(self, parser, namespace, values, option_string=None):
        from harness.errors import HarnessError  # (deferred: read only when --version is asked)
        from harness.tested_set import describe  # (deferred: read only when --version is asked)
        try:
            text = describe()
        except HarnessError as exc:
            parser.exit(2, f"share-harness {VERSION}\n{parser.prog}: error: {exc}\n")
        try:
            print(text, flush=True)
        except BrokenPipeError:  # (`share-harness --version | head -3`: the reader had enough)
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        parser.exit(0)


def build_parser() -> argparse.ArgumentParser:
    parser = _OneLineParser(prog="share-harness", description="Kafka share-group (KIP-932) test harness")
    parser.add_argument("--version", action=_TestedSetVersion, nargs=0,
                        help="print the harness's version and the tested set as resolved here (Python packages and "
                             "where they differ from the lock, Kafka releases, Maven and Go pins), then exit")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_OneLineParser)
    for add in (_add_run, _add_check, _add_nightly_report, _add_tally, _add_certify, _add_matrix, _add_explore,
                _add_clean, _add_setup, _add_page):
        add(sub)
    return parser


def _add_run(sub) -> None:
    run = sub.add_parser("run", help="start a cluster, run a workload, check the history, write a report")
    run.add_argument("--suite", choices=tuple(SUITES), default=None,
                     help="run a pytest suite of the harness (installed with it) instead of one workload (JUnit XML, allure "
                          "results and, for conformance, the area report go under reports/)")
    run.add_argument("--quiet", action="store_true",
                     help="no progress lines while the run runs (the outcome is printed either way)")
    # every run setting (harness.settings), not given: None, so the run's default or its --workload's applies;
    # a value given that the run would not honour (e.g. --consumers beside a --workload that sets its own) is
    # refused by harness.cli.run
    settings.add_options(run, "run")


def _add_check(sub) -> None:
    check = sub.add_parser("check", help="check run directories, history files (.jsonl or .parquet) or folders "
                                          "of runs again")
    check.add_argument("history", type=_path, nargs="+")
    check.add_argument("--json", action="store_true", help="print the results as JSON instead of a table")
    check.add_argument("--engine", choices=CHECK_ENGINES, default="auto",
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


def _add_certify(sub) -> None:
    certify = sub.add_parser("certify", help="run the client rules of KIP-932 with one share-consumer driver and "
                                              "write its certificate (and the comparison page of all certificates)")
    settings.add_options(certify, "certify", client={"required": True},
                         bootstrap_servers={"help": "certify against an existing cluster (rules needing faults are "
                                                    "not applicable)"})
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
    # the run settings explore takes (harness.settings); with --replay, the schedule's where not given
    settings.add_options(
        explore, "explore",
        kafka_version={"type": _released, "help": f"the release under test (default {DEFAULT_VERSION}; with "
                                                  "--replay: the schedule's)"},
        kafka_home={"type": _path}, backend={"default": "local"}, kafka_image_classpath={"default": IMAGE_CLASSPATH},
        kfake_version={"default": KFAKE_VERSION}, client={"help": "the share-consumer library: confluent (default), "
                                                                 "java, franz, or a driver manifest (with --replay: "
                                                                 "the schedule's)"},
        seed={"default": 1, "help": "the exploration's seed: every run's schedule derives from it and the run's "
                                    "number"})
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
    setup = sub.add_parser("setup", help="fill the cache from the tested set: the default release's jars, its Java driver "
                                          "and admin tools, Toxiproxy (--all: every release CI runs, the franz-go "
                                          "and Spring drivers and the kfake launcher too)")
    setup.add_argument("--kafka-version", action="append", default=None, type=_released,
                       help="releases whose jars to download (repeatable; default: the default release, and with "
                            "--all also the one the rolling upgrade starts from and the oldest supported)")
    setup.add_argument("--kfake-version", action="append", default=None, type=_kfake_version,
                       help="kfake versions to build the launcher for (with --all; default: the pinned one)")
    setup.add_argument("--all", action="store_true",
                       help="everything CI runs, not only the main job's set (what is left out is fetched on first use)")
    setup.add_argument("--print-constraints", action="store_true",
                       help="print the dependency lock (every Python package pinned, with hashes) and exit: "
                            "`pip install --require-hashes -r <(share-harness setup --print-constraints)`")
