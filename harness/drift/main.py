"""`python scripts/drift.py` (`tox -e latest`, nightly): resolve the newest set, run on it, write the drift table.

Phases, in order: the options checked (`harness.drift.options`: a bad one is one line, exit 2, before anything
starts); every registry asked (one that cannot be read is one line naming it, the page written with that part
unresolved and nothing run, exit 2: an hour of runs on a set half known would be news of nothing); the virtual
environment built; the conformance suite run with each client on the newest release of the default Kafka line and
of every other supported line whose newest moved, each client certified on the first (or, with `--from`, the runs
and certificates an earlier invocation left read back); the failures no row explains run again on the tested set
(`harness.drift.baseline`); the page written.

Exit codes (`harness.exitcodes`): 0 the page was written and nothing that ran newly fails (drift is news, not a
failure); 1 a test or a certificate's rule newly fails; 2 bad input, or a registry that could not be read; 3 a
run or certification that did not finish with a verdict; 130 interrupted (children torn down, temp dir removed).
"""

from __future__ import annotations

import argparse
import shlex
import signal
import sys
import time
from pathlib import Path

from harness import exitcodes
from harness.drift import baseline, certs, outcomes, resolve, runner, versions
from harness.drift.options import CLIENTS, checked, parse_args
from harness.drift.render import Page, render
from harness.errors import HarnessError
from harness.kafka.implementations import KFAKE_VERSION
from harness.kafka.jars import LOG4J_VERSION
from harness.kafka.spring_jars import SPRING_KAFKA_VERSION
from harness.kafka.versions import DEFAULT_VERSION, KNOWN_VERSIONS, SUPPORTED_LINES
from harness.report.rundir import new_stamped_dir, reports_root
from harness.sys.paths import cache_dir
from harness.tested_set import LOCK, go_pins

REPO = Path(__file__).resolve().parents[2]


def resolve_all(work: Path) -> tuple[list[versions.Moved], resolve.PythonResolution, dict[str, list[str] | str]]:
    """Every registry asked: the "what moved" rows, the newest Python resolution, and the raw answers by part."""
    python = resolve.newest_python(REPO, work / "newest-requirements.txt")
    found = {"kafka": resolve.maven_versions(*resolve.KAFKA), "spring": resolve.maven_versions(*resolve.SPRING_KAFKA),
             "log4j": resolve.maven_versions(*resolve.LOG4J), "franz": resolve.go_versions(resolve.FRANZ_GO),
             "kfake": resolve.go_latest(resolve.KFAKE)}
    newest_lock = python.lock.read_text() if python.lock else None
    moved = versions.python(LOCK.read_text(), newest_lock, python.why)
    moved += versions.kafka(KNOWN_VERSIONS, SUPPORTED_LINES, found["kafka"])
    moved += [versions.single("franz-go (the franz driver)", go_pins()[resolve.FRANZ_GO], found["franz"]),
              versions.single("spring-kafka (the spring driver)", SPRING_KAFKA_VERSION, found["spring"]),
              versions.latest("kfake (the kfake backend; not run here)", KFAKE_VERSION, found["kfake"]),
              versions.single("log4j-core (beside the broker jars; not run here)", LOG4J_VERSION, found["log4j"])]
    return moved, python, found


def run_lines(lines: list[str] | None, moved: list[versions.Moved]) -> list[str]:
    """The Kafka releases to run on: the newest of each line asked, or of the default line and every supported
    line whose newest moved."""
    newest = {m.component.split()[1]: m for m in moved if m.component.startswith("Kafka ") and "not support"
              not in m.component}
    default = versions.line_of(DEFAULT_VERSION)
    chosen = lines or [default] + [line for line, m in newest.items() if m.state == "moved" and line != default]
    return [newest[line].newest for line in chosen if newest[line].newest]  # type: ignore[misc]


def target(client: str, kafka_version: str, found: dict[str, list[str] | str], newest_lock: str,
           python_moved: tuple[str, ...]) -> runner.Target:
    """A run's target: `client` at its newest version on Kafka `kafka_version` (the drivers told by environment),
    with what of it moved from the tested set (`python_moved`: the Python packages that did, which every run uses)."""
    env: tuple[tuple[str, str], ...] = ()
    if client == "confluent":
        version, tested = (versions.lock_pins(lock).get("confluent-kafka", ("unknown",))[0].split(" ")[0]
                           for lock in (newest_lock, LOCK.read_text()))
    elif client == "franz":
        tested = go_pins()[resolve.FRANZ_GO]
        version = versions.newest(found["franz"]) or tested  # type: ignore[arg-type]
        env = ((runner.FRANZ_ENV, version),)
    elif client == "spring":
        tested = SPRING_KAFKA_VERSION
        version = versions.newest(found["spring"]) or tested  # type: ignore[arg-type]
        env = ((runner.SPRING_ENV, version),)
    else:
        version = tested = kafka_version
    moved = list(python_moved) + ([f"{client} {tested} -> {version}"] if version != tested else [])
    if kafka_version not in KNOWN_VERSIONS:
        moved.append(f"Kafka {kafka_version}, a release the harness does not know")
    return runner.Target(client, version, kafka_version, runner.kafka_args(kafka_version, cache_dir()), env,
                         tuple(moved))


def not_run(clients: list[str], tests: tuple[str, ...], args: argparse.Namespace, certified: bool) -> list[str]:
    """What a nightly run does that this one did not, and why."""
    said = []
    others = [c for c in CLIENTS if c not in clients]
    how = "--from: the earlier invocation's" if args.stored is not None else f"--clients {args.clients}"
    if others:
        said.append(f"the clients {', '.join(others)} ({how})")
    if tests != ("suites/conformance",):
        said.append(f"the rest of the conformance suite: only `{' '.join(tests)}` ran" +
                    (" (--tests)" if args.stored is None else ""))
    if not certified:
        said.append("certification" + (" (--skip-certify)" if args.skip_certify else " (the earlier invocation "
                                                                                   "made none)"))
    if args.lines is not None and args.stored is None:
        said.append(f"Kafka lines other than {args.lines} (--lines)")
    return said + ["the chaos suite, kfake and the librdkafka mock: the drift job does not run them"]


def write(page: Page, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(page))


def job(args: argparse.Namespace, argv: list[str]) -> int:
    """The phases of the module's docstring; the exit code."""
    # (deferred: the deviation tables load the history store and its Arrow; read once the runs are made)
    from harness.drift.tables import table_rows
    started = time.monotonic()
    clients, lines, tests, base = checked(args)
    out = (args.stored or args.out or new_stamped_dir(reports_root() / "drift", "latest")).resolve()
    if args.stored is not None and not runner.stored_runs(out):
        raise HarnessError(f"--from {args.stored}: no run's JUnit XML (<client>-kafka-<version>.junit.xml) in it: "
                           "give a directory an earlier invocation wrote (reports/drift/<time>)")
    out.mkdir(parents=True, exist_ok=True)
    command = shlex.join(["python", "scripts/drift.py", *argv])
    if args.stored is None:
        (out / "command").write_text(command + "\n")  # read back by a later --from

    def page(**parts) -> Page:
        took = f"{(time.monotonic() - started) / 60:.0f} min"
        return Page(time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), command, took, moved, **parts)
    with runner.Workspace() as work:
        moved, python, found = resolve_all(work.path)
        unresolved = [m for m in moved if m.newest is None]
        if python.lock and args.stored is None:
            (out / "newest-requirements.txt").write_text(python.lock.read_text())
        if unresolved or args.resolve_only:
            why = "--resolve-only" if args.resolve_only else "a registry could not be read (What moved)"
            write(page(not_run=[f"every run: {why}"]), args.page)
            for m in unresolved:
                print(f"drift: error: {m.component}: {m.why}", file=sys.stderr)
            print(f"drift: page {args.page}")
            return exitcodes.BAD_INPUT if unresolved else exitcodes.PASS
        assert python.lock is not None
        ran = out / "newest-requirements.txt"  # the set the runs were made with (an earlier one's, with --from)
        newest_lock = ran.read_text() if ran.is_file() else python.lock.read_text()
        python_moved = tuple(f"{m.component} {m.tested} -> {m.newest}" for m in moved
                             if m.component.startswith("Python ") and m.state != "same")
        context = (found, newest_lock, python_moved, out)
        if args.stored is not None:
            clients = [c for c in CLIENTS if c in {client for client, _ in runner.stored_runs(out)}]
            runs, drifts = stored(clients, context, args.skip_certify)
        else:
            runs, drifts = made(work.path, python.lock, clients, run_lines(lines, moved), tests, args, context)
        rows = table_rows()
        if not args.no_baseline_reruns:
            runs = [baseline.with_baseline(run, rows, args.workers, out, REPO) for run in runs]
        statuses = [outcomes.row_status(row, runs) for row in rows]
        fails = outcomes.failures(runs, rows, base or None)
        notes = [f"logs, JUnit XML, certificates and the newest lock: {shown(out)}"]
        if args.stored is not None:
            made_by = (out / "command").read_text().strip() if (out / "command").is_file() else "not recorded"
            notes.insert(0, f"the runs and certificates were made earlier, by the invocation that wrote {shown(out)} "
                            f"(`{made_by}`); what moved was resolved again now")
        if args.stored is not None:
            tests = runner.stored_selection(out) or ("(not recorded)",)
        write(page(runs=runs, not_run=not_run(clients, tests, args, bool(drifts)), rows=statuses, failures=fails, certs=drifts,
                   notes=notes), args.page)
    print(f"drift: page {args.page}; logs in {out}")
    return verdict(runs, fails, drifts)


Context = tuple  # (registry answers, the newest lock's text, the Python packages that moved, the job's directory)


def made(work: Path, lock: Path, clients: list[str], kafka: list[str], tests: tuple[str, ...],
         args: argparse.Namespace, context: Context) -> tuple[list[outcomes.Run], list[certs.CertDrift]]:
    """The runs and certifications, made in a virtual environment of the newest set."""
    found, newest_lock, python_moved, out = context
    print(f"drift: building the newest Python set's virtual environment in {work}", flush=True)
    venv = runner.build_venv(work / "venv", lock, REPO)
    runs = []
    for version in kafka:
        for client in clients:
            print(f"drift: conformance with {client} on Kafka {version} (log in {out})", flush=True)
            try:
                runs.append(runner.conformance(venv, target(client, version, found, newest_lock, python_moved),
                                               tests, args.workers, out, REPO))
            except HarnessError as exc:
                runs.append(outcomes.Run(client, "?", version, (), why=str(exc)))
    drifts = [] if args.skip_certify else [certified(venv, c, kafka[0], context) for c in clients]
    return runs, drifts


def stored(clients: list[str], context: Context, skip_certify: bool) -> tuple[list[outcomes.Run],
                                                                              list[certs.CertDrift]]:
    """The runs and certificates an earlier invocation left in the job's directory (`--from`)."""
    found, newest_lock, python_moved, out = context
    runs = []
    for client, version in runner.stored_runs(out):
        try:
            aim = target(client, version, found, newest_lock, python_moved)
        except HarnessError as exc:
            runs.append(outcomes.Run(client, "?", version, (), why=str(exc)))
            continue
        runs.append(runner.stored_run(aim, out, runner.run_name(client, version)))
    drifts = []
    for client in [] if skip_certify or not (out / "certificates").is_dir() else clients:
        cert, why = runner.stored_certificate(out, client)
        drifts.append(certs.compare(client, certs.published(REPO / "docs" / "certificates", client)[0], cert, why))
    return runs, drifts


def shown(path: Path) -> str:
    """`path` relative to the checkout when inside it (the page is committed: no machine's absolute path)."""
    try:
        return str(path.relative_to(REPO))
    except ValueError:
        return str(path)


def certified(venv: Path, client: str, kafka_version: str, context: Context) -> certs.CertDrift:
    """`client` certified on the newest set, against its published certificate."""
    found, newest_lock, python_moved, out = context
    print(f"drift: certify {client} on Kafka {kafka_version}", flush=True)
    try:
        cert, why = runner.certify(venv, target(client, kafka_version, found, newest_lock, python_moved), out, REPO)
    except HarnessError as exc:
        cert, why = None, str(exc)
    tested, _ = certs.published(REPO / "docs" / "certificates", client)
    return certs.compare(client, tested, cert, why)


def verdict(runs: list[outcomes.Run], fails: list[outcomes.Failure], drifts: list[certs.CertDrift]) -> int:
    """1 if something newly fails, else 3 if a run or certificate has no verdict, else 0."""
    if any(f.kind == outcomes.NEW for f in fails) or any(d.newly_failed for d in drifts):
        return exitcodes.VIOLATION
    if any(r.why for r in runs) or any(f.kind == outcomes.NO_VERDICT for f in fails) or \
            any(not d.decided for d in drifts):
        return exitcodes.UNKNOWN
    return exitcodes.PASS


def _terminate(signum, frame):  # SIGTERM -> the same clean-up path as Ctrl-C
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _terminate)
    try:
        return job(args, argv)
    except HarnessError as exc:
        print(f"drift: error: {exc}", file=sys.stderr)
        return exitcodes.BAD_INPUT
    except KeyboardInterrupt:
        print("drift: interrupted: the runs were stopped and the temp directory removed; no page written",
              file=sys.stderr)
        return exitcodes.INTERRUPTED
