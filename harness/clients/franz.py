"""The franz-go share-consumer driver (harness/go/franzdriver, Go), built with `go build` at first use.

The driver implements the step behaviour of `docs/driver.md` with franz-go's share consumer
(`kgo.ShareGroup`, franz-go v1.21+; the version is pinned in its go.mod). It is compiled once per
source (a digest of main.go, go.mod and go.sum names the build) into the harness's cache, with the
normal Go module cache: offline once the modules are there, else through the Go module proxy.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from harness import procs
from harness.clients.driver import StepDriver
from harness.errors import HarnessError
from harness.history.store import HistoryWriter

#: The driver's Go module.
SOURCE = Path(__file__).resolve().parent.parent / "go" / "franzdriver"
_FILES = ("main.go", "go.mod", "go.sum")

#: What the driver declares in its start event (docs/driver.md's vocabulary). franz-go has every
#: acknowledgement type (AckRenew: KIP-1222, Kafka 4.2+), explicit acknowledgement (Record.Ack) and
#: the accept-what-is-left behaviour of implicit mode (the next poll, or MarkAcks(AckAccept)), a
#: synchronous flush (FlushAcks: commit_sync), the background one (commit_async), the
#: acknowledgement callback (ShareAckCallback: per partition; the driver names the offsets) and
#: share.acquire.mode=record_limit (ShareMaxRecordsStrict).
FRANZ_FEATURES = ("ack:ACCEPT", "ack:RELEASE", "ack:REJECT", "ack:RENEW", "explicit", "implicit",
                  "commit_sync", "commit_async", "callback", "acquire_mode", "rack_id")


def franz_version(source: Path = SOURCE) -> str:
    """The franz-go version the driver's go.mod pins (e.g. v1.22.2)."""
    found = re.search(r"^\s*(?:require\s+)?github\.com/twmb/franz-go\s+(v\S+)", (source / "go.mod").read_text(),
                      re.MULTILINE)
    return found.group(1) if found else "unknown"


def _digest(source: Path) -> str:
    h = hashlib.sha256()
    for name in _FILES:
        h.update(name.encode() + b"\0" + (source / name).read_bytes() + b"\0")
    return h.hexdigest()[:12]


def _first_error_line(output: str) -> str:
    """The compiler's first line that says something (not `go: downloading ...`, not `# package`)."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    useful = [line for line in lines if not line.startswith(("go: downloading", "go: finding", "go: extracting", "# "))]
    return (useful or lines or ["no output"])[0]


def build_franz_driver(cache: Path, source: Path = SOURCE) -> Path:
    """The driver binary for the current source, built with `go build` on first use (and whenever
    main.go, go.mod or go.sum change): `cache/go/franzdriver-<digest>/franzdriver`."""
    target = cache / "go" / f"franzdriver-{_digest(source)}"
    binary = target / "franzdriver"
    if binary.is_file() and os.access(binary, os.X_OK):
        return binary
    go = shutil.which("go")
    if go is None:
        raise HarnessError(f"`go` not found on PATH: the franz-go driver is built with Go; install Go 1.26+ "
                           f"(franz-go {franz_version(source)} needs it, https://go.dev/dl) and put it on PATH")
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.with_name(target.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one build per source at a time; the loser uses the winner's
        if binary.is_file() and os.access(binary, os.X_OK):
            return binary
        _build(go, source, target)
    return binary


def _build(go: str, source: Path, target: Path) -> None:
    """`go build` into a temp dir beside `target`, renamed into place once complete."""
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    os.chmod(tmp, 0o755)  # mkdtemp's 0700 would become the cache entry's mode
    procs.REAPER.register_dir(tmp)  # removed even if we are killed mid-build
    try:
        for name in _FILES:  # built from a copy: `-mod=mod` may touch go.mod/go.sum, never the repo's
            shutil.copyfile(source / name, tmp / name)
        env = {**os.environ, "GOFLAGS": f"{os.environ.get('GOFLAGS', '')} -mod=mod".strip()}
        try:
            proc = procs.run(
                "go build", [go, "build", "-buildvcs=false", "-trimpath",
                             "-ldflags", f"-s -w -X main.version={franz_version(source)}", "-o", "franzdriver", "."],
                timeout=900, cwd=tmp, env=env)
        except subprocess.TimeoutExpired:
            raise HarnessError("building the franz-go driver did not finish within 15 minutes: check that the Go "
                               "module proxy is reachable (or the modules are in the Go module cache)") from None
        if proc.returncode != 0 or not (tmp / "franzdriver").is_file():
            raise HarnessError(f"building the franz-go driver ({source}) failed: "
                               f"{_first_error_line(proc.stderr or proc.stdout)}")
        for name in _FILES:
            (tmp / name).unlink()
        if target.exists():
            shutil.rmtree(target, ignore_errors=True)  # an incomplete entry: we hold the lock, so nobody uses it
        os.rename(tmp, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        procs.REAPER.forget_dir(tmp)


class FranzStepDriver(StepDriver):
    """franz-go's share consumer in step mode (harness/go/franzdriver, built with `go build` at
    first use). `dist` is accepted for the registry's sake and unused: franz-go is not tied to the
    Kafka release under test."""

    def __init__(self, name: str, config: dict[str, Any], history: HistoryWriter, log_dir: Path,
                 dist=None) -> None:
        super().__init__(name, config, history, log_dir)
        self.dist = dist

    def command_line(self) -> list[str]:
        from harness.paths import cache_dir
        return [str(build_franz_driver(cache_dir())), json.dumps(self.config)]
