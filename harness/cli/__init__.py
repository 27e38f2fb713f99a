"""`share-harness`: run | check | certify | matrix | explore | tally | nightly-report | clean | setup.

Exit codes (`harness.exitcodes`, the same for every command): 0 pass, 1 violation,
2 bad input, 3 unknown or incomplete, 130 interrupted. Every user error is one line
on stderr (`share-harness: error: ...`) and exit code 2; no traceback. Ctrl-C and
SIGTERM stop everything the run started.

This module is the entry point (`main`): it parses the command line, dispatches to the command and
turns every exception into its exit code and one line. The parser is `harness.cli.parser`; the
commands are `harness.cli.run` (run, run --suite), `harness.cli.report` (check, tally,
nightly-report), `harness.cli.certify` (certify, matrix), `harness.cli.explore` (explore) and `harness.cli.upkeep` (setup, clean).
"""

from __future__ import annotations

import errno
import os
import signal
import sys

from harness import exitcodes
from harness.cli.certify import cmd_certify, cmd_matrix
from harness.cli.explore import cmd_explore
from harness.cli.parser import build_parser
from harness.cli.report import cmd_check, cmd_nightly_report, cmd_tally
from harness.cli.run import cmd_run
from harness.cli.upkeep import cmd_clean, cmd_page, cmd_setup
from harness.errors import HarnessError, Inconclusive, first_line

__all__ = ["build_parser", "main", "cmd_run", "cmd_check", "cmd_tally", "cmd_nightly_report", "cmd_certify",
           "cmd_matrix", "cmd_explore", "cmd_clean", "cmd_setup", "cmd_page"]

def _terminate(signum, frame):  # SIGTERM -> the same clean-up path as Ctrl-C
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    signal.signal(signal.SIGTERM, _terminate)
    try:
        return {"run": cmd_run, "check": cmd_check, "setup": cmd_setup, "tally": cmd_tally,
                "nightly-report": cmd_nightly_report, "certify": cmd_certify, "matrix": cmd_matrix,
                "explore": cmd_explore,
                "clean": cmd_clean, "page": cmd_page}[args.command](args)
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
    except ModuleNotFoundError as exc:  # a package the project's install puts in place: the machine, not a bug
        if (exc.name or "harness").split(".")[0] in ("harness", "ksh_fixtures", "fixtures"):  # the project's own
            return _internal_error(exc)
        _traceback_if_debugging()
        print(f"share-harness: error: the Python package {exc.name!r} is not installed: run `bash scripts/install.sh` "
              "(it installs everything, idempotently)", file=sys.stderr)
        return exitcodes.BAD_INPUT
    except Exception as exc:  # noqa: BLE001 - a bug is not a verdict: never 1 (violation), never a traceback
        return _internal_error(exc)


_PATH_ERRORS = {errno.ENOENT, errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOTDIR, errno.EISDIR, errno.EEXIST}


def _traceback_if_debugging() -> None:
    if os.environ.get("KSH_DEBUG"):
        import traceback
        traceback.print_exc()


def _internal_error(exc: BaseException) -> int:
    """An exception nobody expected: unknown (3), one line; KSH_DEBUG=1 shows the traceback."""
    _traceback_if_debugging()
    first = first_line(exc)
    print(f"share-harness: internal error, nothing was decided: {type(exc).__name__}: {first} (a harness bug: "
          "rerun with KSH_DEBUG=1 for the traceback and report it)", file=sys.stderr)
    return exitcodes.UNKNOWN


