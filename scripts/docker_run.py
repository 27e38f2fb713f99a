#!/usr/bin/env python3
"""The harness on a machine with only Docker and Python: build its image, run it with the host's engine.

    python3 scripts/docker_run.py                     # the main job: pytest suites -q --backend docker
    python3 scripts/docker_run.py -- share-harness run --backend docker --faults leader
    python3 scripts/docker_run.py --base ksh/debian-jre:bookworm-17   # where no image can be pulled

1. The harness image (`compose/harness.Dockerfile`, tagged `ksh/harness:<hash of the project's
   files>`) is built unless it is there: Python, a JDK, Maven, Go and everything
   `scripts/install.sh` installs. `--base` names its Debian bookworm base (default
   `debian:bookworm-slim`, pulled; where none can be, the harness's debootstrapped
   `ksh/debian-jre:bookworm-17` from `scripts/docker_images.sh`).
2. The broker image `apache/kafka:<default version>` is used if present or pullable; otherwise the
   harness image stands in (it keeps that release's jars at /opt/kafka/libs), tagged so.
3. The harness runs in a container on the host network and the host's pid namespace, with the
   Docker socket, and the reports folder mounted at the same path (the broker containers it starts
   mount their node folders from there, and the host keeps every run directory). The engine's
   socket with the host's network and pids is root on the host: whoever controls the harness
   container (its command, the project's files it was built from) controls the host.
4. Whatever it leaves (it removes its containers itself; a killed harness cannot) is swept after it
   exits: containers labelled by a harness process of this host that no longer runs.

Exit code: the harness's own (see the README's table); 2 with one line for bad input (no Docker CLI,
no engine, no base image).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import os
import re
import shlex
import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.kafka.versions import DEFAULT_VERSION  # noqa: E402  (pure: no third-party import)

DOCKERFILE = ROOT / "compose" / "harness.Dockerfile"
DEFAULT_BASE = "debian:bookworm-slim"
IMAGE = "ksh/harness"  #: tagged <version>-<hash of the project's files it was built from>, and <version>
LOCAL_BASE = "ksh/debian-jre:bookworm-17"  # scripts/docker_images.sh builds it without a registry
#: What the image is built from: a change to any of these is a new image.
SOURCES = ("pyproject.toml", "README.md", "harness", "fixtures", "suites", "scripts", "compose", "tests")


#: Said in --help and before the harness container starts (the README's "Trust model" says the same).
TRUST_NOTE = ("the harness container gets the Docker engine's socket, the host's network and pid namespace: "
              "that is root on the host; run only a project and a command you trust")


class BadInput(Exception):
    """One line naming the fix; exit 2."""


def docker(*args: str, check: bool = True, quiet: bool = True) -> subprocess.CompletedProcess[str]:
    try:
        done = subprocess.run(["docker", *args], text=True, capture_output=quiet)
    except FileNotFoundError:
        raise BadInput("no docker CLI on PATH: install Docker (https://docs.docker.com/engine/install/; "
                       "Debian: apt-get install docker.io)") from None
    if check and done.returncode != 0:
        raise BadInput(f"docker {' '.join(args[:2])} failed: {(done.stderr or '').strip().splitlines()[-1:]}")
    return done


def image_present(image: str) -> bool:
    return docker("image", "inspect", image, check=False).returncode == 0


def pulled(image: str) -> bool:
    return image_present(image) or docker("pull", "-q", image, check=False).returncode == 0


def package_version() -> str:
    """pyproject.toml's version (this script runs where the package may not be installed)."""
    found = re.search(r'^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M)
    if found is None:
        raise BadInput(f"{ROOT / 'pyproject.toml'} names no version: run from a clone or an unpacked sdist")
    return found[1]


def source_hash() -> str:
    digest = hashlib.sha256()
    for name in SOURCES:
        path = ROOT / name
        files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path] if path.is_file() else []
        for f in files:
            if "__pycache__" in f.parts or f.suffix == ".pyc":
                continue
            digest.update(str(f.relative_to(ROOT)).encode() + b"\0" + f.read_bytes() + b"\0")
    return digest.hexdigest()[:12]


def choose_base(base: str | None) -> str:
    if base:
        if not pulled(base):
            raise BadInput(f"base image {base} is neither on this engine nor pullable: docker pull {base}")
        return base
    if pulled(DEFAULT_BASE):
        return DEFAULT_BASE
    if image_present(LOCAL_BASE):
        return LOCAL_BASE
    raise BadInput(f"no base image: {DEFAULT_BASE} cannot be pulled here; pull it, or build {LOCAL_BASE} "
                   "without a registry (bash scripts/docker_images.sh, as root with debootstrap)")


def extra_ca(files: list[Path]) -> str:
    """The certificate authorities added to this host (Debian's /usr/local/share/ca-certificates, or
    the files given): each certificate's PEM in base64, comma-separated (one file each in the image:
    Debian's tools read one certificate per file)."""
    for f in files:
        if not f.is_file():
            raise BadInput(f"--ca-file {f}: no such file (give a PEM certificate)")
    found = files or sorted(Path("/usr/local/share/ca-certificates").rglob("*.crt"))
    pems = [m.group(0) for f in found for m in _PEM.finditer(f.read_text(errors="replace"))]
    return ",".join(base64.b64encode(pem.encode() + b"\n").decode() for pem in pems)


_PEM = re.compile(r"-----BEGIN CERTIFICATE-----.+?-----END CERTIFICATE-----", re.S)


def build_harness_image(base: str | None, rebuild: bool, ca_files: list[Path]) -> str:
    version = package_version()
    image, tag = f"{IMAGE}:{version}-{source_hash()}", f"{IMAGE}:{version}"
    if image_present(image) and not rebuild:
        print(f"docker_run: {image} present", flush=True)
        docker("tag", image, tag)
        return image
    chosen = choose_base(base)
    print(f"docker_run: building {image} from {chosen} (first time: several minutes)", flush=True)
    done = docker("build", "--force-rm", "--network", "host", "-f", str(DOCKERFILE), "--build-arg", f"BASE={chosen}",
                  "--build-arg", f"EXTRA_CA={extra_ca(ca_files)}", "-t", image, str(ROOT), check=False, quiet=False)
    if done.returncode != 0:
        raise BadInput(f"building {image} failed (its output is above)")
    docker("tag", image, tag)  # the version's tag names the newest build of it (README: `docker run ... ksh/harness:<version>`)
    old = docker("image", "ls", "--format", "{{.Repository}}:{{.Tag}}", IMAGE, check=False).stdout.split()
    for stale in sorted(set(old) - {image, tag}):  # earlier builds of this project: only the newest is kept
        docker("image", "rm", stale, check=False)
    return image


def kafka_image(harness_image: str) -> str:
    image = f"apache/kafka:{DEFAULT_VERSION}"
    if pulled(image):
        return image
    docker("tag", harness_image, image)  # the harness image has that release's jars at /opt/kafka/libs
    print(f"docker_run: {image} cannot be pulled here: the harness image stands in for it", flush=True)
    return image


def socket_path() -> str:
    host = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    if not host.startswith("unix://"):
        raise BadInput(f"DOCKER_HOST={host}: the harness container needs the engine's unix socket "
                       "(unset DOCKER_HOST, or point it at unix:///path/docker.sock)")
    return host[len("unix://"):]


def run_command(harness_image: str, command: list[str], reports: Path) -> list[str]:
    sock = socket_path()
    args = ["docker", "run", "--rm", "--network", "host", "--pid", "host",
            "-v", f"{sock}:/var/run/docker.sock", "-v", f"{reports}:{reports}",
            "-e", f"KSH_REPORTS_DIR={reports}", "-e", "TESTCONTAINERS_RYUK_DISABLED=true"]
    if os.getuid() != 0:  # the run directories belong to the user, who may reach the socket by group
        args += ["--user", f"{os.getuid()}:{os.getgid()}", "--group-add", str(os.stat(sock).st_gid)]
    if sys.stdin.isatty():
        args += ["-it"]
    return args + [harness_image, *command]


def sweep(harness_image: str) -> None:
    """Remove containers of harness processes of this host that no longer run (docker_engine.sweep)."""
    code = ("from harness.cluster.docker.engine import engine, sweep\n"
            "for name in sweep(engine()): print('docker_run: removed leftover container', name)")
    docker("run", "--rm", "--network", "host", "--pid", "host", "-v", f"{socket_path()}:/var/run/docker.sock",
           harness_image, "python3", "-c", code, check=False, quiet=False)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=f"Trust: {TRUST_NOTE}.")
    parser.add_argument("--base", help=f"the harness image's Debian bookworm base (default {DEFAULT_BASE}, "
                                       f"else {LOCAL_BASE} when present)")
    parser.add_argument("--ca-file", type=Path, action="append", default=[],
                        help="a PEM certificate authority the build's HTTPS must trust (default: the host's "
                             "/usr/local/share/ca-certificates)")
    parser.add_argument("--rebuild", action="store_true", help="build the harness image even if present")
    parser.add_argument("--reports", type=Path, default=Path(os.environ.get("KSH_REPORTS_DIR") or ROOT / "reports"),
                        help="where run directories go (default ./reports; KSH_REPORTS_DIR)")
    parser.add_argument("command", nargs="*", help="what to run in the harness image (after --; default: "
                                                   "pytest suites -q --backend docker)")
    args = parser.parse_args(argv)
    try:
        if docker("info", check=False).returncode != 0:
            raise BadInput("no Docker engine answers: start it (systemctl start docker; here: "
                           "bash scripts/docker_engine.sh start)")
        image = build_harness_image(args.base, args.rebuild, args.ca_file)
        kafka = kafka_image(image)
        command = args.command or ["python3", "-m", "pytest", "suites", "-q", "--backend", "docker",
                                   "--kafka-version", kafka.split(":", 1)[1]]
        reports = args.reports.resolve()
        reports.mkdir(parents=True, exist_ok=True)
        cmd = run_command(image, command, reports)
    except BadInput as exc:
        print(f"docker_run: error: {exc}", file=sys.stderr)
        return 2
    print(f"docker_run: note: {TRUST_NOTE}", flush=True)
    print(f"docker_run: {shlex.join(command)}  (reports: {reports})", flush=True)
    proc = subprocess.Popen(cmd)
    signal.signal(signal.SIGTERM, lambda *_: proc.send_signal(signal.SIGTERM))  # docker run passes it on
    interrupted = False
    try:
        while True:
            try:
                code = proc.wait()
                return 130 if interrupted else code
            except KeyboardInterrupt:  # docker run passed it on: wait while the harness stops what it started
                interrupted = True
    finally:
        sweep(image)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
