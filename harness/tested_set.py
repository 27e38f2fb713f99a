"""The tested set: every version the harness runs with, in one place (issue 73).

- **Python**: `harness/lock/requirements.txt`, every dependency pinned with its hashes, made by uv from
  pyproject.toml's dependencies and extras and `harness/lock/build.in` (what builds the harness itself):

      uv pip compile pyproject.toml harness/lock/build.in --all-extras --universal --python-version 3.10 \\
          --generate-hashes --no-header -o harness/lock/requirements.txt

  `scripts/install.sh` (and so CI, the Docker image and `tox`) installs from it with `--require-hashes`;
  `share-harness setup --print-constraints` prints it for the `pip install kafka-share-harness` recipe
  (docs/gate-your-implementation.md). The lock ships in the package (package data).
- **Maven**: the Kafka releases (`harness.kafka.versions`), log4j beside the broker jars
  (`harness.kafka.jars.LOG4J_VERSION`) and spring-kafka (`harness.kafka.spring_jars`).
- **Go**: the modules the franz-go driver and the kfake launcher's go.mod files pin (with their go.sum), and
  Toxiproxy's version (`harness.proxy.server.DEFAULT_VERSION`).

`share-harness --version` prints the set as resolved on this machine (`describe`), and every verdict,
certificate and report records it (`record`): a run made with a Python package other than the locked one says
which. `tested_versions` is what the deviation and known-bug tables must cover, version by version.
"""

from __future__ import annotations

import re
import sys
from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version as installed_version
from pathlib import Path

from harness.errors import HarnessError

LOCK = Path(__file__).resolve().parent / "lock" / "requirements.txt"
GO_MODULES = Path(__file__).resolve().parent / "go"
#: The librdkafka the locked confluent-kafka's wheels bundle (`confluent_kafka.libversion()`): the version of the
#: `mock` backend's implementation (librdkafka's mock cluster). A unit test holds it to the installed library
#: whenever the installed confluent-kafka is the locked one.
LIBRDKAFKA_OF_LOCK = "2.16.0"

#: one pin of a uv/pip lock file: name==version, an optional environment marker, a continuation backslash
LOCK_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._\-]*)==([^\s;\\]+)\s*(?:;\s*([^\\]*?))?\s*\\?\s*$")


def canonical(name: str) -> str:
    """A distribution's name as PEP 503 compares it ("PyYAML" -> "pyyaml", "typing_extensions" -> "typing-extensions")."""
    return re.sub(r"[-_.]+", "-", name).lower()


@lru_cache(maxsize=None)
def locked_python(lock: Path = LOCK) -> dict[str, str]:
    """{distribution: version} the lock pins for this interpreter (its markers evaluated here). A lock that is
    missing or pins nothing is a one-line error naming the fix."""
    try:
        text = lock.read_text()
    except OSError as exc:
        raise HarnessError(f"the dependency lock {lock} cannot be read ({exc.strerror}): reinstall the harness "
                           "(bash scripts/install.sh) or restore the file from the repository") from None
    pins: dict[str, str] = {}
    for line in text.splitlines():
        found = LOCK_PIN.match(line)
        if found is None:
            continue
        name, pinned, marker = found.groups()
        if marker:
            # (deferred: the tested set is read before its dependencies are installed; packaging is pytest's)
            from packaging.markers import Marker
            if not Marker(marker).evaluate():
                continue
        pins[canonical(name)] = pinned
    if not pins:
        raise HarnessError(f"the dependency lock {lock} pins no package: restore it from the repository")
    return pins


def python_drift(lock: Path = LOCK) -> list[tuple[str, str, str | None]]:
    """(distribution, locked version, installed version or None) of every locked package this environment has at
    another version, or lacks (an optional extra not installed shows as None)."""
    return [(name, pinned, have) for name, pinned in sorted(locked_python(lock).items())
            if (have := _installed(name)) != pinned]


def differences(drift: list[tuple[str, str, str | None]], most: int = 6) -> str:
    """The first `most` differences in one phrase ("rich 14.0 (locked 15.0.0), pytest missing (locked 9.2.0) and
    3 more"): what the install's check, the pages and the session header say."""
    shown = ", ".join(f"{n} {h or 'missing'} (locked {p})" for n, p, h in drift[:most])
    return shown + (f" and {len(drift) - most} more" if len(drift) > most else "")


def go_pins(source: Path = GO_MODULES) -> dict[str, str]:
    """{module: version} every go.mod under harness/go requires directly (not `// indirect`)."""
    pins: dict[str, str] = {}
    for mod in sorted(source.glob("*/go.mod")):
        for found in re.finditer(r"^\s*(?:require\s+)?([a-z0-9.\-]+\.[a-z]+/\S+)\s+(v\S+)\s*$", mod.read_text(), re.M):
            pins[found[1]] = found[2]
    return pins


def maven_pins() -> dict[str, str]:
    """{coordinate: version} of what the harness resolves from Maven Central beside the Kafka releases."""
    # (deferred: the tested set is read before its dependencies are installed)
    from harness.kafka.jars import LOG4J_VERSION
    # (deferred: the tested set is read before its dependencies are installed)
    from harness.kafka.spring_jars import SPRING_KAFKA_VERSION
    return {"org.apache.logging.log4j:log4j-core": LOG4J_VERSION,
            "org.springframework.kafka:spring-kafka": SPRING_KAFKA_VERSION}


def kafka_releases() -> dict[str, object]:
    # (deferred: the tested set is read before its dependencies are installed)
    from harness.kafka.versions import DEFAULT_VERSION, KNOWN_VERSIONS, SUPPORTED_LINES
    return {"default": DEFAULT_VERSION,
            "known": [v for v in KNOWN_VERSIONS if v.rsplit(".", 1)[0] in SUPPORTED_LINES]}


def tested_versions() -> dict[str, tuple[str, ...]]:
    """The versions of each implementation and client the tested set holds: what every row of the deviation and
    known-bug tables must decide (known there, fixed before, or not yet met), none of them "not yet confirmed".
    Keys are the tables' names: clients (confluent, java, franz), implementations (apache, kfake,
    librdkafka-mock)."""
    # (deferred: the tested set is read before its dependencies are installed)
    from harness.kafka.implementations import KFAKE_VERSION, MOCK
    kafka = tuple(kafka_releases()["known"])  # type: ignore[arg-type]
    go = go_pins()
    return {"confluent": (locked_python()["confluent-kafka"],), "java": kafka, "apache": kafka,
            "franz": (go["github.com/twmb/franz-go"],), "kfake": (KFAKE_VERSION,), MOCK: (LIBRDKAFKA_OF_LOCK,)}


def record() -> dict[str, object]:
    """The resolved set, as every verdict, certificate and report records it: the harness's version, the Python
    packages as installed (and where they differ from the lock), the Kafka releases, Maven and Go pins. (Read
    once per process: what is installed does not change under a running harness; a copy each call.)"""
    import copy
    return copy.deepcopy(_record())


@lru_cache(maxsize=1)
def _record() -> dict[str, object]:
    # (deferred: the tested set is read before its dependencies are installed)
    from harness.proxy.server import DEFAULT_VERSION as TOXIPROXY_VERSION
    from harness.version import VERSION  # (deferred: the tested set is read before its dependencies are installed)
    try:  # (each package's metadata read once: its version, and from it whether it is the lock's)
        python = {n: (p, _installed(n)) for n, p in sorted(locked_python().items())}
        drift = [{"package": n, "locked": p, "installed": h} for n, (p, h) in python.items() if h != p]
    except HarnessError as exc:
        drift, python = [{"error": str(exc)}], {}
    return {"harness": VERSION, "python_version": sys.version.split()[0],
            "python": {n: h for n, (_, h) in python.items() if h is not None}, "python_drift": drift,
            "kafka": kafka_releases(), "maven": maven_pins(),
            "go": {**go_pins(), "github.com/Shopify/toxiproxy/v2": TOXIPROXY_VERSION}}


def summary(rec: dict | None = None) -> str:
    """One sentence of a record (`record`, or one a report kept) for the pages: the Python set is the lock's, or
    which packages are not."""
    rec = record() if rec is None else rec
    drift = rec.get("python_drift")
    if drift is None:
        return "The tested set was not recorded."
    if not drift:
        return "Python packages: exactly the lock's (harness/lock/requirements.txt)."
    if any("error" in d for d in drift):
        return f"Python packages: {drift[0]['error']}."
    return f"Python packages NOT the lock's: {differences([(d['package'], d['locked'], d['installed']) for d in drift])}."


def _installed(name: str) -> str | None:
    try:
        return installed_version(name)
    except PackageNotFoundError:
        return None


def describe() -> str:
    """`share-harness --version`: the harness, then the set resolved here, a line each."""
    rec = record()
    kafka = rec["kafka"]
    lines = [f"share-harness {rec['harness']}", f"python {rec['python_version']}",
             f"kafka releases: default {kafka['default']}; known {', '.join(kafka['known'])}"]  # type: ignore[index]
    lines.append(f"maven org.apache.kafka:kafka-clients (the Java driver's): the release under test's (default "
                 f"{kafka['default']})")  # type: ignore[index]
    lines += [f"maven {c}: {v}" for c, v in rec["maven"].items()]  # type: ignore[union-attr]
    lines += [f"go {m}: {v}" for m, v in rec["go"].items()]  # type: ignore[union-attr]
    drift = rec["python_drift"]
    lines += [f"python {n}: {v}" for n, v in sorted(rec["python"].items())]  # type: ignore[union-attr]
    if drift:
        lines.append(f"python packages that differ from the lock ({LOCK.name}):")
        lines += [f"  {d['error']}" if "error" in d else f"  {d['package']}: installed {d['installed']}, locked {d['locked']}"
                  for d in drift]  # type: ignore[union-attr]
    else:
        lines.append("python packages: exactly the lock")
    return "\n".join(lines)


def check_installed() -> str | None:
    """None when this environment holds exactly the lock's packages; else one line naming what differs and the fix
    (what `scripts/install.sh` ends with: an install that left a package at another version did not install the
    tested set, and must not be mistaken for one that did)."""
    drift = python_drift()
    if not drift:
        return None
    return (f"the installed Python packages are not the lock's ({LOCK.name}): {differences(drift)}: run "
            "`bash scripts/install.sh` again (it installs the lock with pip --require-hashes)")


def main(argv: list[str] | None = None) -> int:
    """`python3 -m harness.tested_set [--check]`: print the tested set, or check this environment against the lock."""
    args = sys.argv[1:] if argv is None else argv
    try:
        if args == ["--check"]:
            problem = check_installed()
            if problem:
                print(f"install.sh: error: {problem}", file=sys.stderr)
                return 2
            return 0
        if args:
            print(f"usage: python3 -m harness.tested_set [--check] (not {' '.join(args)})", file=sys.stderr)
            return 2
        print(describe())
        return 0
    except HarnessError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
