"""Go programs the harness builds itself (harness/go/<name>): `go build` once per source, cached.

The franz-go driver and the kfake launcher are Go modules kept in the repository. Each is compiled
once per source (a digest of main.go, go.mod, go.sum and any module pins asked for names the build)
into the harness's cache, `cache/go/<name>-<digest>/<name>`, with the normal Go module cache: offline
once the modules are there, else through the Go module proxy. A build holds a lock per entry and
renames a complete temp dir into place, so two processes never see half a binary.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Sequence

from harness.errors import HarnessError
from harness.sys import procs
from harness.sys.progress import progress

#: The Go module directories of the repository.
GO_SOURCES = Path(__file__).resolve().parents[1] / "go"
_FILES = ("main.go", "go.mod", "go.sum")


def digest(source: Path, pins: Sequence[str] = ()) -> str:
    h = hashlib.sha256()
    for name in _FILES:
        h.update(name.encode() + b"\0" + (source / name).read_bytes() + b"\0")
    for pin in pins:
        h.update(b"pin\0" + pin.encode() + b"\0")
    return h.hexdigest()[:12]


def first_error_line(output: str) -> str:
    """The compiler's first line that says something (not `go: downloading ...`, not `# package`)."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    useful = [line for line in lines if not line.startswith(("go: downloading", "go: finding", "go: extracting", "# "))]
    return (useful or lines or ["no output"])[0]


def build_go(cache: Path, source: Path, name: str, what: str, *, ldflags: str = "-s -w",
             pins: Sequence[str] = (), needs: str = "Go 1.26+") -> Path:
    """The binary `name` of the Go module at `source`, built on first use (and whenever its files or
    `pins` change). `pins` are `module@version` requirements set before the build (`go get`): a version
    other than the one go.mod pins. `what` names the program in errors ("the franz-go driver")."""
    target = cache / "go" / f"{name}-{digest(source, pins)}"
    binary = target / name
    if binary.is_file() and os.access(binary, os.X_OK):
        return binary
    go = shutil.which("go")
    if go is None:
        raise HarnessError(f"`go` not found on PATH: {what} is built with Go; install {needs} "
                           "(https://go.dev/dl) and put it on PATH")
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.with_name(target.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one build per source at a time; the loser uses the winner's
        if binary.is_file() and os.access(binary, os.X_OK):
            return binary
        progress(f"building {what} with go into {target} (first use; reused after)")
        _build(go, source, target, name, what, ldflags, pins)
    return binary


def _build(go: str, source: Path, target: Path, name: str, what: str, ldflags: str, pins: Sequence[str]) -> None:
    """`go build` into a temp dir beside `target`, renamed into place once complete."""
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    os.chmod(tmp, 0o755)  # mkdtemp's 0700 would become the cache entry's mode
    procs.REAPER.register_dir(tmp)  # removed even if we are killed mid-build
    try:
        for file in _FILES:  # built from a copy: `-mod=mod` and `go get` touch go.mod/go.sum, never the repo's
            shutil.copyfile(source / file, tmp / file)
        env = {**os.environ, "GOFLAGS": f"{os.environ.get('GOFLAGS', '')} -mod=mod".strip()}
        steps = [[go, "get", pin] for pin in pins]
        steps.append([go, "build", "-buildvcs=false", "-trimpath", "-ldflags", ldflags, "-o", name, "."])
        for step in steps:
            try:
                proc = procs.run(f"go {step[1]}", step, timeout=900, cwd=tmp, env=env)
            except subprocess.TimeoutExpired:
                raise HarnessError(f"building {what} did not finish within 15 minutes: check that the Go module "
                                   "proxy is reachable (or the modules are in the Go module cache)") from None
            if proc.returncode != 0:
                raise HarnessError(f"building {what} ({source}) failed at `go {step[1]}`: "
                                   f"{first_error_line(proc.stderr or proc.stdout)}")
        if not (tmp / name).is_file():
            raise HarnessError(f"building {what} ({source}) wrote no {name} binary")
        for file in _FILES:
            (tmp / file).unlink()
        if target.exists():
            shutil.rmtree(target, ignore_errors=True)  # an incomplete entry: we hold the lock, so nobody uses it
        os.rename(tmp, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        procs.REAPER.forget_dir(tmp)
