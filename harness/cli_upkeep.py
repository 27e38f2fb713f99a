"""The commands that look after the machine, not a run: `setup` fills the cache (Kafka jars, the Java
and franz-go drivers, Toxiproxy, the brokers' class-data archives) and `clean` deletes old entries under reports/.
"""

from __future__ import annotations

import argparse
import json

from harness import exitcodes
from harness.errors import HarnessError
from harness.kafka.versions import DEFAULT_VERSION, OLDEST_SUPPORTED


def cmd_setup(args: argparse.Namespace) -> int:
    from harness.kafka.jars import resolve
    from harness.paths import cache_dir
    from harness.proxy.server import find_or_build_toxiproxy
    from harness.clients.franz import build_franz_driver
    from harness.kafka.implementations import KFAKE_VERSION
    from harness.cluster.java_admin import compiled
    from harness.kafka import cds
    from harness.faults.upgrade import previous_line_release
    from harness.kafka.jars import tools_classpath
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
    from harness.cluster.kfake import build_kfake_launcher
    for kfake in args.kfake_version or [KFAKE_VERSION]:
        print(f"kfake launcher (kfake {kfake}): {build_kfake_launcher(cache_dir(), kfake)}")
    return 0


def cmd_page(args: argparse.Namespace) -> int:
    """Exit 0 after writing `run_dir/run.html` (and the screenshot, if asked); a page with a script error or
    a plot not drawn is an internal error, never a quiet success."""
    from harness.history.store import read_history
    from harness.report.page import write_run_page
    run_dir = args.run_dir.resolve()
    if not (run_dir / "history.jsonl").is_file():
        raise HarnessError(f"{args.run_dir} is not a run directory (no history.jsonl): give reports/runs/<run>")
    spec_path = run_dir / "spec.json"
    spec = json.loads(spec_path.read_text()).get("spec", {}) if spec_path.is_file() else {}
    ops = read_history(run_dir / "history.jsonl")
    verdict = run_dir / "verdict.json"
    try:
        json.loads(verdict.read_text()) if verdict.is_file() else None
    except ValueError as exc:
        raise HarnessError(f"malformed {verdict}: {exc} (not a verdict a share-harness run wrote)") from None
    try:
        page = write_run_page(run_dir, ops, f"{spec.get('name', run_dir.name)} seed {spec.get('seed', '?')}")
    except (TypeError, ValueError, KeyError, AttributeError, IndexError) as exc:
        # the schema let through what the page cannot draw: bad input, one line
        from harness.errors import first_line
        raise HarnessError(f"malformed history {run_dir / 'history.jsonl'}: {type(exc).__name__}: "
                           f"{first_line(exc)} (not a history a share-harness run wrote)") from None
    print(f"page: {page}")
    if args.screenshot is not None:
        from harness.report.browser import open_page
        opened = open_page(page, screenshot=args.screenshot)
        if opened.errors:
            raise RuntimeError(f"{page} did not render cleanly: {'; '.join(opened.errors)}")
        print(f"screenshot: {args.screenshot} ({len(opened.plots)} plots drawn)")
    return 0


def cmd_clean(args: argparse.Namespace) -> int:
    """Exit 0 after deleting (or listing, --dry-run) what the retention rule does not keep."""
    from harness.report.clean import clean
    from harness.report.rundir import reports_root
    root = args.root or reports_root()
    if not root.is_dir():
        raise HarnessError(f"{root} is not a reports directory: give --root the folder holding runs/ (or set "
                           "KSH_REPORTS_DIR)")
    kept, deleted, freed = clean(root, keep=args.keep, keep_failures=not args.all, dry_run=args.dry_run)
    for path in deleted:
        print(f"{'would delete' if args.dry_run else 'deleted'} {path}")
    print(f"{'would free' if args.dry_run else 'freed'} {freed / 1e6:.1f} MB; kept {len(kept)} entries "
          f"(the newest {args.keep} of each kind{'' if args.all else ', and every one that did not pass'})")
    return exitcodes.PASS
