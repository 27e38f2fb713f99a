"""The registries the drift job asks for the newest releases: PyPI through uv, Maven Central's metadata, the Go
module proxy through `go list`. Each answer is the versions found, or one line saying which registry could not
be read and why (a `str`): the caller shows that part as unresolved, never as unchanged.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
import urllib.error
import urllib.request
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from harness.errors import first_line
from harness.sys import procs

MAVEN_CENTRAL = "https://repo1.maven.org/maven2"
KAFKA = ("org.apache.kafka", "kafka_2.13")
SPRING_KAFKA = ("org.springframework.kafka", "spring-kafka")
LOG4J = ("org.apache.logging.log4j", "log4j-core")
FRANZ_GO = "github.com/twmb/franz-go"
KFAKE = "github.com/twmb/franz-go/pkg/kfake"
#: seconds one registry question may take
TIMEOUT_S = 60
#: seconds uv may take to resolve every Python dependency again (about 20 s here)
UV_TIMEOUT_S = 600
#: the lock's own command (harness/tested_set.py), without its output file: the newest set adds --upgrade
UV_COMPILE = ("pip", "compile", "pyproject.toml", "harness/lock/build.in", "--all-extras", "--universal",
              "--python-version", "3.10", "--generate-hashes", "--no-header")


def maven_versions(group: str, artifact: str) -> list[str] | str:
    """Every version Maven Central's metadata lists for group:artifact, or why it could not be read."""
    url = f"{MAVEN_CENTRAL}/{group.replace('.', '/')}/{artifact}/maven-metadata.xml"
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_S) as answer:
            root = ET.fromstring(answer.read())
    except (urllib.error.URLError, OSError, ET.ParseError) as exc:
        return f"Maven Central could not be read ({url}: {first_line(exc, 160)}): check network access to it"
    found = [v.text.strip() for v in root.iter("version") if v.text and v.text.strip()]
    return found or f"Maven Central's {url} lists no version"


def go_versions(module: str) -> list[str] | str:
    """The versions of Go module `module` the module proxy lists (`go list -m -versions`), or why not."""
    ok, answer = _go(["list", "-m", "-versions", module])
    if not ok:
        return answer
    words = answer.split()
    return words[1:] if len(words) > 1 and words[0] == module else \
        f"the Go module proxy lists no version of {module} (`go list -m -versions {module}`)"


def go_latest(module: str) -> list[str] | str:
    """[the version `module@latest` resolves to] (a pseudo-version for a module without releases), or why not."""
    ok, answer = _go(["list", "-m", "-json", f"{module}@latest"])
    if not ok:
        return answer
    try:
        return [json.loads(answer)["Version"]]
    except (ValueError, KeyError, TypeError):
        return f"`go list -m -json {module}@latest` answered no version"


def _go(args: list[str]) -> tuple[bool, str]:
    """`go` run outside any module (a temp dir: the repository's go.mod files play no part): (True, its output),
    or (False, why not)."""
    with tempfile.TemporaryDirectory(prefix="ksh-drift-go-") as where:
        try:
            proc = procs.run("go", ["go", *args], TIMEOUT_S * 2, cwd=Path(where))
        except subprocess.TimeoutExpired:
            return False, f"the Go module proxy did not answer `go {' '.join(args)}` within {TIMEOUT_S * 2} s"
    if proc.returncode != 0:
        said = (proc.stderr or proc.stdout).strip().splitlines() or ["no output"]
        return False, f"the Go module proxy could not be asked (`go {' '.join(args)}`: {said[-1][:200]})"
    return True, proc.stdout


@dataclass(frozen=True)
class PythonResolution:
    """The newest Python set: the lock uv wrote (`lock`), or why there is none (`why`)."""

    lock: Path | None
    why: str = ""


def newest_python(repo: Path, out: Path) -> PythonResolution:
    """The lock's command with `--upgrade` (every dependency at its newest release the constraints allow) into
    `out`; PyPI unreachable or a resolution that fails is one line naming it."""
    try:
        proc = procs.run("uv", ["uv", *UV_COMPILE, "--upgrade", "-o", str(out)], UV_TIMEOUT_S, cwd=repo)
    except subprocess.TimeoutExpired:
        return PythonResolution(None, f"uv did not resolve the Python dependencies within {UV_TIMEOUT_S} s")
    if proc.returncode != 0 or not out.is_file():
        errors = [line for line in proc.stderr.splitlines() if line.strip() and not line.startswith("warning")]
        said = errors[0] if errors else f"exit {proc.returncode}"
        return PythonResolution(None, f"PyPI could not be resolved through uv (`uv {' '.join(UV_COMPILE)} "
                                      f"--upgrade`: {said[:200]}): check network access to PyPI")
    return PythonResolution(out)
