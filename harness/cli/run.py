"""`share-harness run`: one workload on a cluster, or (`--suite`) a pytest suite of the repository.

`spec_from_args` turns the command line into a validated `RunSpec`; `cmd_run` runs it and prints the
outcome; `run_suite` refuses what a suite would not apply, then runs pytest on `suites/<name>` with the
run's options and maps pytest's exit status onto `harness.exitcodes`.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

from harness import exitcodes, settings
from harness.cli.parser import SUITES, build_parser
from harness.errors import HarnessError
from harness.spec import RunSpec
from harness.sys import suites

#: The options `run --suite` passes on to pytest (the plugin's); any other given with it is refused.
_SUITE_OPTIONS = ("command", "suite", *(s.key for s in settings.for_command("suite")))


def cmd_run(args: argparse.Namespace) -> int:
    if args.suite:
        return run_suite(args)
    from harness.run import run  # (deferred: loaded only when this command or fixture runs)
    outcome = run(spec_from_args(args), progress=not args.quiet)
    print(outcome.summary())
    return exitcodes.for_verdict(outcome.overall)


def spec_from_args(args: argparse.Namespace) -> RunSpec:
    """The run's spec from the command line, validated (every bad value is one line, before anything starts;
    so is a value the run would not honour: `_refuse_not_honoured`)."""
    spec = settings.spec_from_values(settings.given(args, "run"))
    spec = spec.check_faults_hostable()
    _refuse_not_honoured(args, spec)
    if not getattr(args, "suite", None):  # (a suite's pytest session probes its driver itself)
        # (deferred: loaded only when this command or fixture runs)
        from harness.clients.registry import check_manifest_driver, driver_info, probe_spec
        info = driver_info(spec.client)
        if info.source != "built-in":  # a manifest's driver missing or exiting at once: one line, now
            # (deferred: loaded only when this command or fixture runs)
            from harness.clients.registry import effective_options
            check_manifest_driver(info, effective_options(spec))
        elif spec.client_options:
            probe_spec(spec)  # an option the driver would not apply: one line, before anything starts
    # (deferred: loaded only when this command or fixture runs)
    from harness.clients.registry import \
        unsupported_by_spec  # (deferred: loaded only when this command or fixture runs)
    why = unsupported_by_spec(spec)
    if why and not getattr(args, "suite", None):  # a suite says it per test (skipped, with the reason)
        raise HarnessError(f"client {spec.client} on Kafka {spec.kafka_version}: {why}")
    return spec


def _refuse_not_honoured(args: argparse.Namespace, spec: RunSpec) -> None:
    """A setting given that the run would not honour is refused, naming why (taken and then silently not
    applied, the run would pass something not asked for)."""
    suite = getattr(args, "suite", None)
    if not suite and not spec.faults:  # (a suite's tests set their own faults: its options apply to them)
        if args.fault_mode not in (None, "random"):
            raise HarnessError(f"--fault-mode {args.fault_mode} needs --faults: it says how the faults named there "
                               "are scheduled; name them (e.g. --faults leader) or leave --fault-mode out")
        for option, value in (("--fault-interval", args.fault_interval), ("--fault-seed", args.fault_seed)):
            if value is not None and not spec.workload_events:  # (a workload's consumer events are scheduled too)
                from harness.workloads import WORKLOADS  # (deferred: loaded only when this command or fixture runs)
                with_events = ", ".join(w.name for w in WORKLOADS.values() if w.events)
                raise HarnessError(f"{option} needs --faults (or a --workload with consumer events: {with_events}): "
                                   f"it spaces or seeds a fault schedule, and this run has none; name faults (e.g. "
                                   f"--faults leader) or leave {option} out")
    if args.workload:
        from harness.workloads import WORKLOADS  # (deferred: loaded only when this command or fixture runs)
        workload = WORKLOADS[args.workload]
        for option, given, own in (("--consumers", args.consumers, workload.consumers),
                                   ("--partitions", args.topic_partitions, workload.partitions),
                                   ("--behaviour", args.behaviour, workload.behaviour)):
            if given is not None and given != own:
                raise HarnessError(f"{option} {given} cannot be used with --workload {args.workload}, which runs "
                                   f"{workload.consumers} consumers on {workload.partitions} partitions with "
                                   f"behaviour {workload.behaviour}: leave {option} out, or leave out --workload")
    if spec.bootstrap_servers:
        for option, given in (("--brokers", args.brokers), ("--log-dirs", args.log_dirs),
                              ("--base-port", args.base_port)):
            if given is not None:
                raise HarnessError(f"{option} cannot be used with --bootstrap-servers: it shapes a cluster the "
                                   "harness starts, and an external cluster is what it is; leave one of them out")
    elif spec.backend in ("kfake", "mock") and args.log_dirs is not None:
        raise HarnessError(f"--log-dirs cannot be used with --backend {spec.backend}: it keeps its logs in memory (no "
                           "log directories, no disk faults); leave --log-dirs out")
    limit = args.delivery_count_limit
    if limit is not None:
        from harness.kafka.versions import release_line  # (deferred: loaded only when this command or fixture runs)
        if release_line(spec.kafka_version).group_config("delivery_count_limit") is None:
            raise HarnessError(f"--delivery-count-limit needs a release with the group config share.delivery.count."
                               f"limit (Kafka 4.3+), which {spec.kafka_version} has not: its brokers' limit "
                               f"(group.share.delivery.count.limit) applies; leave the option out, or use 4.3+")


def run_suite(args: argparse.Namespace) -> int:
    """`run --suite NAME`: pytest on suites/NAME with the run's options, its exit status in the table of
    `harness.exitcodes` (no test passed: unknown). A suite that cannot run on the chosen backend is
    refused before anything starts."""
    # (deferred: loaded only when this command or fixture runs)
    from harness.report.rundir import new_stamped_dir, reports_root
    from harness.sys.pytest_child import run_pytest  # (deferred: loaded only when this command or fixture runs)
    _refuse_options_not_applied(args)
    spec = spec_from_args(args)
    _refuse_backend(args.suite, spec)
    found = suites.locate()
    target = found.path("test_share_basic.py" if args.suite == "basic" else args.suite)
    out = new_stamped_dir(reports_root() / "suites", args.suite)
    cmd = _suite_command(spec, target, out) + found.pytest_args()
    print(f"suite {args.suite}: {' '.join(cmd)}", flush=True)
    rc = run_pytest(cmd, cwd=found.cwd)
    code = exitcodes.from_pytest(rc)  # an interrupt of ours is raised by run_pytest, after the tear-down
    print(f"suite {args.suite}: pytest exit {rc} -> {code} ({exitcodes.word(code)}); JUnit XML {out / 'junit.xml'}")
    if rc == 5:
        print(f"suite {args.suite}: no test passed: nothing was checked, so this is not a pass", flush=True)
    return code


def _refuse_options_not_applied(args: argparse.Namespace) -> None:
    """Every option given that `--suite` would not pass on is an error naming the ones it does."""
    defaults = vars(build_parser().parse_args(["run"]))
    flag = {s.key: s.cli for s in settings.SETTINGS}
    ignored = [flag.get(name) or f"--{name.replace('_', '-')}" for name, value in vars(args).items()
               if name not in _SUITE_OPTIONS and value != defaults.get(name)]
    if ignored:  # taken and then silently not applied would be a pass of something not asked for
        raise HarnessError(f"{', '.join(ignored)} cannot be used with --suite (each suite sets its own workloads): "
                           f"with --suite, give only {', '.join(flag[o] for o in _SUITE_OPTIONS[2:])}")


def _refuse_backend(suite: str, spec: RunSpec) -> None:
    backend = "external" if spec.bootstrap_servers else "local"
    if backend not in SUITES[suite]:
        raise HarnessError(f"suite {suite} cannot run on an external cluster (--bootstrap-servers): its faults "
                           f"need process and link control; run it on the {' or '.join(SUITES[suite])} backend "
                           "(drop --bootstrap-servers)")


def _suite_command(spec: RunSpec, target: Path, out: Path) -> list[str]:
    """The pytest command line: the suite, the run's options as the plugin's, JUnit XML (and allure) in `out`."""
    if spec.client != "confluent":  # a manifest's path as the pytest child (run from the repository) finds it
        from harness.clients.registry import driver_info  # (deferred: loaded only when this command or fixture runs)
        if driver_info(spec.client).source != "built-in":
            spec = replace(spec, client=str(Path(spec.client).resolve()))
    cmd = [sys.executable, "-m", "pytest", str(target),
           "-q", "-rfEsx", *settings.to_argv(spec, "pytest"), "--junitxml", str(out / "junit.xml")]
    try:
        import allure_pytest  # noqa: F401
        cmd += ["--alluredir", str(out / "allure")]
    except ImportError:
        pass
    return cmd
