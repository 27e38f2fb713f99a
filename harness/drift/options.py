"""The drift job's options (`scripts/drift.py --help`): each checked before anything starts, a bad one refused in
one line naming the fix (exit 2)."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from harness import exitcodes
from harness.drift import outcomes
from harness.errors import HarnessError
from harness.kafka.versions import SUPPORTED_LINES
from harness.sys.files import BadFile, read_text

REPO = Path(__file__).resolve().parents[2]
CLIENTS = ("confluent", "java", "franz", "spring")


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="scripts/drift.py", description="the drift job (tox -e latest): the newest set, run, and the drift table")
    parser.add_argument("--clients", default=",".join(CLIENTS), help=f"comma-separated (default {','.join(CLIENTS)})")
    parser.add_argument("--lines", default=None, help="Kafka lines to run on, comma-separated (default: the "
                                                      "default line and every supported line whose newest moved)")
    parser.add_argument("--tests", default="suites/conformance", help="the pytest selection, as one string "
                                                                      "(default suites/conformance)")
    parser.add_argument("--skip-certify", action="store_true", help="certify no client")
    parser.add_argument("--resolve-only", action="store_true", help="only what moved: no run")
    parser.add_argument("--workers", type=int, default=2, help="pytest-xdist workers per run (0: none; default 2)")
    parser.add_argument("--baseline", action="append", default=[], metavar="CLIENT=JUNIT",
                        help="the same selection's JUnit XML on the tested set, for a client (repeatable; the job's own "
                             "reruns of the failures on the tested set come first: --no-baseline-reruns)")
    parser.add_argument("--no-baseline-reruns", action="store_true",
                        help="do not run a run's unexplained failures again on the tested set")
    parser.add_argument("--from", dest="stored", type=Path, default=None, metavar="DIR",
                        help="judge the runs and certificates an earlier invocation left in DIR (reports/drift/<time>) "
                             "instead of making them: what moved resolved again, the baselines run")
    parser.add_argument("--page", type=Path, default=REPO / "docs" / "drift.md", help="default docs/drift.md")
    parser.add_argument("--out", type=Path, default=None, help="logs, JUnit XML, certificates (default "
                                                               "reports/drift/<time>)")

    def refuse(message: str) -> None:  # one line naming the fix, not argparse's usage block
        print(f"drift: error: {message} (python scripts/drift.py --help)", file=sys.stderr)
        sys.exit(exitcodes.BAD_INPUT)
    parser.error = refuse  # type: ignore[method-assign, assignment]
    return parser.parse_args(argv)


def checked(args: argparse.Namespace) -> tuple[list[str], list[str] | None, tuple[str, ...], dict]:
    """(clients, lines or None, the pytest selection, {client: baseline outcomes}); a HarnessError naming the fix."""
    clients = [c.strip() for c in args.clients.split(",") if c.strip()]
    wrong = [c for c in clients if c not in CLIENTS] or ([] if clients else ["(none)"])
    if wrong:
        raise HarnessError(f"--clients {args.clients!r}: {', '.join(wrong)} is not a built-in client; give some of "
                           f"{','.join(CLIENTS)}")
    lines = None if args.lines is None else [x.strip() for x in args.lines.split(",") if x.strip()]
    if lines is not None and (not lines or any(x not in SUPPORTED_LINES for x in lines)):
        raise HarnessError(f"--lines {args.lines!r}: give supported Kafka lines, comma-separated "
                           f"({','.join(SUPPORTED_LINES)})")
    if args.workers < 0:
        raise HarnessError(f"--workers {args.workers}: give 0 (no xdist) or more")
    try:
        tests = tuple(shlex.split(args.tests))
    except ValueError as exc:
        raise HarnessError(f"--tests {args.tests!r} cannot be split as a shell would ({exc}): quote it evenly") from None
    if not tests:
        raise HarnessError("--tests is empty: give a pytest selection, e.g. suites/conformance")
    return clients, lines, tests, baselines(args.baseline, clients)


def baselines(given: list[str], clients: list[str]) -> dict[str, tuple[outcomes.TestOutcome, ...]]:
    """{client: the outcomes of its baseline JUnit XML}; a HarnessError for a malformed or unreadable one."""
    found = {}
    for item in given:
        client, sep, path = item.partition("=")
        if not sep or client not in clients or not path:
            raise HarnessError(f"--baseline {item!r}: give CLIENT=JUNIT_XML, CLIENT one of --clients "
                               f"({','.join(clients)})")
        try:
            found[client] = tuple(outcomes.parse_junit(read_text(Path(path), "baseline JUnit XML")))
        except (BadFile, ValueError) as exc:
            raise HarnessError(f"--baseline {item!r}: {exc}") from None
    return found
