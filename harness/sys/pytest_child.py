"""A pytest child for `run --suite` and `certify` that is torn down, not cut off.

The child runs in its own session (so a terminal's Ctrl-C reaches it once, through us) and
dies with us (parent-death signal SIGTERM, which the plugin turns into a clean tear-down).
Ctrl-C or SIGTERM on the parent is forwarded as one SIGINT; the child then has
`grace` seconds to stop its clusters and write its JUnit XML and reports before it is killed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import IO, Sequence

from harness.sys.procs import child_setup_for

#: Seconds an interrupted pytest child gets to tear down (clusters, drivers, reports).
GRACE_S = 120.0


def run_pytest(cmd: Sequence[str], *, cwd: Path, env: dict[str, str] | None = None,
               stdout: IO | None = None, grace: float = GRACE_S) -> int:
    """Run `cmd` (a pytest command line) to its end; pytest's exit status. On KeyboardInterrupt
    (Ctrl-C, or SIGTERM turned into one by the CLI) forward SIGINT, wait up to `grace` seconds for
    the tear-down (the child killed only if it did not finish), then raise the KeyboardInterrupt
    again: the caller is interrupted too (a swallowed interrupt let an outer pytest session go on)."""
    die_with_us = child_setup_for(os.getpid(), signal.SIGTERM)

    def setup() -> None:
        # A shell without job control starts a background command with SIGINT ignored, and Python leaves an ignored
        # SIGINT ignored: the forwarded SIGINT would then do nothing and the child be killed after `grace`.
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        die_with_us()
    child = subprocess.Popen(list(cmd), cwd=cwd, env=env, stdout=stdout,
                             stderr=subprocess.STDOUT if stdout is not None else None,
                             start_new_session=True, preexec_fn=setup)
    try:
        return child.wait()
    except KeyboardInterrupt:
        _forward(child, grace)
        raise
    finally:
        if child.poll() is None:  # any other way out: never leave the child behind
            _forward(child, grace)


def _forward(child: subprocess.Popen, grace: float) -> None:
    previous = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        if child.poll() is None:
            print(f"share-harness: stopping the pytest child (pid {child.pid}); it has {grace:g} s to tear down",
                  file=sys.stderr, flush=True)
            try:
                child.send_signal(signal.SIGINT)
                child.wait(grace)
            except subprocess.TimeoutExpired:
                print(f"share-harness: the pytest child did not stop in {grace:g} s: killed", file=sys.stderr)
                try:
                    os.killpg(child.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                child.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
