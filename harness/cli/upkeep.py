"""The commands that look after the machine, not a run: `setup` fills the cache (Kafka jars, the Java
and franz-go drivers, Toxiproxy, the brokers' class-data archives) and `clean` deletes old entries under reports/.
"""

from __future__ import annotations

import argparse

from harness import exitcodes
from harness.errors import HarnessError
from harness.kafka.versions import DEFAULT_VERSION, OLDEST_SUPPORTED


def cmd_setup(args: argparse.Namespace) -> int:
    from harness.clients.franz import build_franz_driver  # (deferred: loaded only when this command or fixture runs)
    from harness.cluster.java_admin import compiled  # (deferred: loaded only when this command or fixture runs)
    # (deferred: loaded only when this command or fixture runs)
    from harness.faults.upgrade import \
        previous_line_release  # (deferred: loaded only when this command or fixture runs)
    from harness.kafka import cds  # (deferred: loaded only when this command or fixture runs)
    from harness.kafka.implementations import KFAKE_VERSION  # (deferred: loaded only when this command or fixture runs)
    from harness.kafka.jars import resolve, tools_classpath  # (deferred: loaded only when this command or fixture runs)
    # (deferred: loaded only when this command or fixture runs)
    from harness.proxy.server import \
        find_or_build_toxiproxy  # (deferred: loaded only when this command or fixture runs)
    from harness.sys.paths import cache_dir  # (deferred: loaded only when this command or fixture runs)

    # the default release, the one CI's rolling upgrade starts from, and the oldest (CI's smoke)
    for version in args.kafka_version or dict.fromkeys([DEFAULT_VERSION, previous_line_release(), OLDEST_SUPPORTED]):
        dist = resolve(version, cache_dir())
        print(f"kafka {dist.version}: {dist.libs}")
        if version == DEFAULT_VERSION:  # its FeatureCommand finalises CI's rolling upgrade
            tools_classpath(dist, cache_dir())
        print(f"java driver (KafkaShareConsumer {dist.version}): {compiled(dist, cache_dir(), 'ShareDriver')}")
        print(f"class-data archives (broker, StorageTool): {cds.ensure(dist)}")
    print(f"toxiproxy: {find_or_build_toxiproxy(cache_dir())}")
    print(f"franz-go driver: {build_franz_driver(cache_dir())}")
    from harness.cluster.kfake import build_kfake_launcher  # (deferred: loaded only when this command or fixture runs)
    for kfake in args.kfake_version or [KFAKE_VERSION]:
        print(f"kfake launcher (kfake {kfake}): {build_kfake_launcher(cache_dir(), kfake)}")
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
