"""The commands that look after the machine, not a run: `setup` fills the cache (Kafka jars, the Java
and franz-go drivers, Toxiproxy, the brokers' class-data archives) and `clean` deletes old entries under reports/.
"""

from __future__ import annotations

import argparse

from harness import exitcodes
from harness.errors import HarnessError
from harness.kafka.versions import DEFAULT_VERSION, OLDEST_SUPPORTED


def cmd_setup(args: argparse.Namespace) -> int:
    """Fill the cache from the tested set (issue 73). The main job's set: the default release's jars, its Java
    driver and admin tools, the brokers' class-data archives, Toxiproxy. `--all` (CI): also the release CI's
    rolling upgrade starts from, the oldest supported, the franz-go driver, the kfake launcher and the Spring
    driver's jars; without it, those are fetched on first use (a progress line each)."""
    if args.print_constraints:  # (before any import of a dependency: the pip recipe runs it before installing them)
        from harness.tested_set import LOCK
        print(LOCK.read_text(), end="")
        return 0
    from concurrent.futures import ThreadPoolExecutor

    from harness.cluster.java_admin import compiled, compiled_tools  # (deferred: loaded only when this command runs)
    from harness.kafka import cds  # (deferred: loaded only when this command runs)
    from harness.kafka.jars import resolve  # (deferred: loaded only when this command runs)
    from harness.proxy.server import find_or_build_toxiproxy  # (deferred: loaded only when this command runs)
    from harness.sys.paths import cache_dir  # (deferred: loaded only when this command runs)
    if args.kfake_version and not args.all:
        raise HarnessError("--kfake-version builds the kfake launcher, which only --all does: add --all")
    versions = args.kafka_version or [DEFAULT_VERSION]
    if args.all and not args.kafka_version:
        from harness.faults.upgrade import previous_line_release  # (deferred: loaded only when this command runs)
        versions = list(dict.fromkeys([DEFAULT_VERSION, previous_line_release(), OLDEST_SUPPORTED]))

    def kafka(version: str) -> list[str]:
        dist = resolve(version, cache_dir())
        lines = [f"kafka {dist.version}: {dist.libs}",
                 f"java driver (KafkaShareConsumer {dist.version}): {compiled(dist, cache_dir(), 'ShareDriver')}"]
        if version == DEFAULT_VERSION:  # the suites' admin reads and state decoding; its FeatureCommand
            lines.append(f"java admin tools (Kafka {dist.version}): {compiled_tools(dist, cache_dir())}")
        return lines + [f"class-data archives (broker, StorageTool): {cds.ensure(dist)}"]

    # Maven's downloads, javac and the archives of the releases in one lane, the Go builds in the other: what
    # one waits on (a registry, a JIT) the other fills, on two cores (issue 73: the fresh install's time)
    java_lane = [lambda v=v: kafka(v) for v in versions]
    go_lane = [lambda: [f"toxiproxy: {find_or_build_toxiproxy(cache_dir())}"]]
    if args.all:
        from harness.clients.franz import build_franz_driver  # (deferred: loaded only when this command runs)
        from harness.cluster.kfake import build_kfake_launcher  # (deferred: loaded only when this command runs)
        from harness.kafka.implementations import KFAKE_VERSION  # (deferred: loaded only when this command runs)
        # (deferred: loaded only when this command runs)
        from harness.kafka.spring_jars import SPRING_KAFKA_VERSION, spring_libs
        java_lane.append(lambda: [f"spring-kafka {SPRING_KAFKA_VERSION}: {spring_libs(cache_dir())}"])
        go_lane.append(lambda: [f"franz-go driver: {build_franz_driver(cache_dir())}"])
        go_lane += [lambda k=k: [f"kfake launcher (kfake {k}): {build_kfake_launcher(cache_dir(), k)}"]
                    for k in args.kfake_version or [KFAKE_VERSION]]

    def lane(steps) -> None:
        for step in steps:
            for line in step():
                print(line, flush=True)

    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="ksh-setup") as pool:
        lanes = [pool.submit(lane, java_lane), pool.submit(lane, go_lane)]
    for done in lanes:
        done.result()  # the first lane's error, once both have ended (neither leaves a half-written entry)
    if not args.all:
        print("fetched on first use: other Kafka releases, the franz-go and Spring drivers, the kfake launcher, "
              "Debian's chromium (share-harness setup --all: now)")
    return 0


def cmd_page(args: argparse.Namespace) -> int:
    """Exit 0 after writing `run_dir/run.html` (and the screenshot, if asked); a page with a script error or
    a plot not drawn is an internal error, never a quiet success. Bad input (2): an empty path, a run
    directory without a history, a spec.json or verdict.json that is not a JSON object (or not a regular
    file of a sane size), a screenshot path whose directory does not exist."""
    from harness.cli.report import given_path  # (deferred: loaded only when this command or fixture runs)
    from harness.errors import first_line  # (deferred: loaded only when this command or fixture runs)
    from harness.history.store import read_history_prefix  # (deferred: loaded only when this command or fixture runs)
    # (deferred: loaded only when this command or fixture runs)
    from harness.report.page import read_verdict, write_run_page
    from harness.sys.files import read_json_object  # (deferred: loaded only when this command or fixture runs)
    given = given_path(args.run_dir, "the run directory", "give reports/runs/<run> (or reports/runs/latest)")
    run_dir = given.resolve()
    screenshot = None
    if args.screenshot is not None:
        screenshot = given_path(args.screenshot, "--screenshot", "give the PNG file to write").absolute()
        if not screenshot.parent.is_dir():  # never made: a typo must not create directories
            raise HarnessError(f"--screenshot {args.screenshot}: its directory {screenshot.parent} does not exist: "
                               f"give a PNG path in an existing directory")
        if screenshot.is_dir():
            raise HarnessError(f"--screenshot {args.screenshot} is a directory: give the PNG file to write")
    history = run_dir / "history.jsonl"
    if not history.exists():
        raise HarnessError(f"{given} is not a run directory (no history.jsonl): give reports/runs/<run>")
    spec: dict = {}
    if (run_dir / "spec.json").exists():
        spec = read_json_object(run_dir / "spec.json", "the run's spec")
        spec = spec.get("spec", {})
        if not isinstance(spec, dict):
            raise HarnessError(f"malformed {run_dir / 'spec.json'}: its \"spec\" is not a JSON object (not a spec a "
                               f"share-harness run wrote): rewrite or remove it")
    ops, _ = read_history_prefix(history)  # a crashed run's last line cut short: the page of the lines before it
    verdict = read_verdict(run_dir)  # before anything is written: bad input leaves no page
    title = f"{spec.get('name', run_dir.name)} seed {spec.get('seed', '?')}"
    try:
        page = write_run_page(run_dir, ops, title, verdict)
    except (TypeError, ValueError, KeyError, AttributeError, IndexError) as exc:
        # the schema let through what the page cannot draw: bad input, one line
        what = f"history {history}" + ("" if verdict is None else f" or verdict {run_dir / 'verdict.json'}")
        raise HarnessError(f"malformed {what}: {type(exc).__name__}: {first_line(exc)} (not a history "
                           f"{'' if verdict is None else 'or verdict '}a share-harness run wrote)") from None
    print(f"page: {page}")
    if screenshot is not None:
        from harness.report.browser import open_page  # (deferred: loaded only when this command or fixture runs)
        opened = open_page(page, screenshot=screenshot)
        if opened.errors:
            raise RuntimeError(f"{page} did not render cleanly: {'; '.join(opened.errors)}")
        print(f"screenshot: {args.screenshot} ({len(opened.plots)} plots drawn)")
    return 0


def cmd_clean(args: argparse.Namespace) -> int:
    """Exit 0 after deleting (or listing, --dry-run) what the retention rule does not keep; 2 for a root that is
    not a reports directory (`check_root`) or an empty --root."""
    from harness.cli.report import given_path  # (deferred: loaded only when this command or fixture runs)
    from harness.report.clean import check_root, clean  # (deferred: loaded only when this command or fixture runs)
    from harness.report.rundir import reports_root  # (deferred: loaded only when this command or fixture runs)
    root = reports_root() if args.root is None else \
        given_path(args.root, "--root", "give the reports folder (the one holding runs/), or leave --root out")
    check_root(root)  # only a folder the harness writes reports in: never a user's folder
    kept, deleted, freed = clean(root, keep=args.keep, keep_failures=not args.all, dry_run=args.dry_run)
    for path in deleted:
        print(f"{'would delete' if args.dry_run else 'deleted'} {path}")
    print(f"{'would free' if args.dry_run else 'freed'} {freed / 1e6:.1f} MB; kept {len(kept)} entries "
          f"(the newest {args.keep} of each kind{'' if args.all else ', and every one that did not pass'})")
    return exitcodes.PASS
