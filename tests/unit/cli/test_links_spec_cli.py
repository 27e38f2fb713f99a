"""Fast unit tests of LinkMap, RunSpec, ports, wait_until, and the CLI's handling of bad input.

The CLI cases run `python -m harness.cli` in a subprocess, in a temporary working
directory with KSH_REPORTS_DIR and KSH_CACHE_DIR pointing into it; every case must
be rejected before anything is started, which the time limit checks.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from harness.errors import HarnessError
from harness.proxy.links import Link, LinkMap
from harness.settings import reproduce_command
from harness.spec import BEHAVIOURS, PROFILES, RunSpec
from harness.sys.ports import allocate, is_free
from harness.sys.wait import WaitTimeout, wait_until

# --------------------------------------------------------------------- links


def _links(brokers: int = 3) -> LinkMap:
    links, port = [], 40000
    for j in range(1, brokers + 1):
        links.append(Link("client", f"n{j}", port, port + 1000))
        port += 1
    for i in range(1, brokers + 1):
        for j in range(1, brokers + 1):
            if i != j:
                links.append(Link(f"n{i}", f"n{j}", port, port + 1000))
                port += 1
                links.append(Link(f"n{i}", f"c{j}", port, port + 1000))
                port += 1
    return LinkMap(links)


def test_linkmap_lookups():
    lm = _links()
    assert len(lm) == 3 + 6 + 6
    assert lm.get("n1", "n2").name == "n1->n2"
    assert lm.client(2) == lm.get("client", "n2")
    assert lm.client(2).kind == "client"
    assert lm.broker(1, 3).src == "n1" and lm.broker(1, 3).dst == "n3"
    assert lm.broker(1, 3).kind == "broker"
    assert lm.controller(3, 1).name == "n3->c1"
    assert lm.controller(3, 1).kind == "controller"
    assert lm.broker(1, 3) != lm.broker(3, 1)  # links are directed
    assert lm.names() == sorted(link.name for link in lm)


def test_linkmap_touching():
    lm = _links()
    names = {link.name for link in lm.touching(2)}
    assert names == {"n1->n2", "n3->n2", "n2->n1", "n2->n3",
                     "n2->c1", "n2->c3", "n1->c2", "n3->c2"}  # client links stay: isolation is between nodes
    assert all("2" in link.src or "2" in link.dst for link in lm.touching(2))
    assert lm.touching(9) == []


def test_linkmap_between_is_both_directions_of_a_split():
    lm = _links()
    names = {link.name for link in lm.between({1}, {2, 3})}
    assert names == {"n1->n2", "n1->n3", "n2->n1", "n3->n1", "n1->c2", "n1->c3", "n2->c1", "n3->c1"}


def test_lane_links_are_their_own_kind():
    lm = LinkMap([Link("lane0", "n1", 1, 2), Link("client", "n1", 3, 4)])
    assert lm.lane(0, 1).kind == "lane" and lm.client(1).kind == "client"


@pytest.mark.parametrize("call", [
    lambda lm: lm.get("n1", "n1"),
    lambda lm: lm.broker(1, 9),
    lambda lm: lm.client(4),
    lambda lm: lm.controller(2, 2),
])
def test_linkmap_keyerror_lists_known_names(call):
    lm = _links(2)
    with pytest.raises(KeyError) as exc:
        call(lm)
    message = exc.value.args[0]
    assert message.startswith("no proxied link ")
    for name in lm.names():
        assert name in message


# ---------------------------------------------------------------------- spec


def test_default_spec_is_valid():
    spec = RunSpec()
    assert spec.validate() is spec
    for profile in PROFILES:
        RunSpec(profile=profile).with_profile().validate()


def test_with_profile_applies_profile_values():
    spec = RunSpec(profile="nightly").with_profile()
    for key, value in PROFILES["nightly"].items():
        assert getattr(spec, key) == value


@pytest.mark.parametrize("changes, word", [
    ({"behaviour": "nope"}, "behaviour"),
    ({"profile": "weekly"}, "profile"),
    ({"consumers": 0}, "consumers"),
    ({"brokers": 0}, "brokers"),
    ({"topic_partitions": 0}, "partitions"),
    ({"records": -1}, "records"),
    ({"max_poll_records": 0}, "max-poll-records"),
    ({"controllers": -1}, "controllers"),
    ({"produce_rate": 0.0}, "produce-rate"),
    ({"drain_timeout": 0.0}, "drain-timeout"),
    ({"drain_timeout": -5.0}, "drain-timeout"),
    ({"kafka_version": "abc"}, "Kafka version"),
    ({"kafka_version": "4.3"}, "Kafka version"),
])
def test_validate_rejects_bad_values_with_one_line(changes, word):
    with pytest.raises(HarnessError) as exc:
        replace(RunSpec(), **changes).validate()
    message = str(exc.value)
    assert "\n" not in message
    assert word in message


def test_validate_messages_name_valid_choices():
    with pytest.raises(HarnessError) as exc:
        RunSpec(behaviour="nope").validate()
    for b in BEHAVIOURS:
        assert b in str(exc.value)
    with pytest.raises(HarnessError) as exc:
        RunSpec(profile="weekly").validate()
    for p in PROFILES:
        assert p in str(exc.value)


def test_reproduce_command_contains_seed_and_options():
    spec = replace(RunSpec(), seed=4242, consumers=5, behaviour="accept-explicit", bootstrap_servers="h:9092")
    cmd = reproduce_command(spec)
    assert cmd.startswith("share-harness run ")
    assert "--seed 4242" in cmd
    assert "--consumers 5" in cmd
    assert "--behaviour accept-explicit" in cmd
    assert "--bootstrap-servers h:9092" in cmd
    assert "--bootstrap-servers" not in reproduce_command(RunSpec())


def test_reproduce_command_round_trips_through_the_cli_parser():
    import shlex

    from harness.cli import build_parser
    spec = replace(RunSpec(), name="a b", seed=7, brokers=2, topic_partitions=4, records=123)
    args = build_parser().parse_args(shlex.split(reproduce_command(spec))[1:])
    assert (args.name, args.seed, args.brokers, args.topic_partitions, args.records) == ("a b", 7, 2, 4, 123)


def test_reproduce_command_carries_the_groups_lock_limit_and_configs_back_into_the_same_spec():
    import shlex

    from harness.cli import build_parser
    from harness.cli.run import spec_from_args
    spec = replace(RunSpec(), lock_duration_ms=2000, delivery_count_limit=3,
                   group_configs={"share.isolation.level": "read_committed", "share.auto.offset.reset": "earliest"})
    cmd = reproduce_command(spec)
    assert "--lock-duration-ms 2000" in cmd and "--delivery-count-limit 3" in cmd
    assert "--group-config share.auto.offset.reset=earliest --group-config share.isolation.level=read_committed" in cmd
    again = spec_from_args(build_parser().parse_args(shlex.split(cmd)[1:]))
    assert (again.lock_duration_ms, again.delivery_count_limit, again.group_configs) == (
        2000, 3, spec.group_configs)
    assert "--lock-duration-ms" not in reproduce_command(RunSpec())


def test_a_malformed_group_config_option_is_one_line():
    from harness.cli import build_parser
    from harness.cli.run import spec_from_args
    with pytest.raises(HarnessError, match="use KEY=VALUE"):
        spec_from_args(build_parser().parse_args(["run", "--group-config", "share.isolation.level"]))


def test_spec_json_is_sorted():
    import json
    text = RunSpec().to_json()
    keys = list(json.loads(text))
    assert keys == sorted(keys)


# --------------------------------------------------------------------- ports


def test_allocate_base_port_in_use_names_the_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        assert not is_free(port)
        with pytest.raises(HarnessError) as exc:
            allocate(2, base=port)
        message = str(exc.value)
        assert str(port) in message and "\n" not in message
        assert "--base-port" in message


def test_allocate_ephemeral_ports_are_distinct_and_never_reused():
    first = allocate(5)
    second = allocate(5)
    assert len(set(first)) == 5 and len(set(second)) == 5
    assert not set(first) & set(second)


def test_allocate_never_hands_out_a_base_port_twice():
    base = allocate(1)[0]  # now taken in this process, though nothing listens on it
    with pytest.raises(HarnessError, match=str(base)):
        allocate(1, base=base)


def test_allocate_base_port_out_of_range_is_a_harness_error():
    with pytest.raises(HarnessError):
        allocate(3, base=65534)


# ---------------------------------------------------------------------- wait


def test_wait_until_returns_the_truthy_value():
    calls = []

    def condition():
        calls.append(1)
        return {"ready": True} if len(calls) >= 3 else None

    assert wait_until(condition, timeout=5, what="thing", interval=0.001) == {"ready": True}
    assert len(calls) == 3


def test_wait_until_treats_exceptions_as_not_yet():
    calls = []

    def condition():
        calls.append(1)
        if len(calls) < 3:
            raise ConnectionError("refused")
        return 42

    assert wait_until(condition, timeout=5, what="thing", interval=0.001) == 42


def test_wait_until_stops_on_ctrl_c_that_a_library_wrapped():
    """confluent-kafka's Admin client raises its own error from a KeyboardInterrupt: not a "not yet"."""
    def condition():
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt:
            raise RuntimeError("KafkaException: interrupted")  # its context: the interrupt

    with pytest.raises(KeyboardInterrupt):
        wait_until(condition, timeout=5, what="thing", interval=0.001)


def test_wait_until_timeout_is_harness_error_naming_what():
    start = time.monotonic()
    with pytest.raises(WaitTimeout) as exc:
        wait_until(lambda: 0, timeout=0.2, what="the moon to rise", interval=0.05)
    elapsed = time.monotonic() - start
    assert isinstance(exc.value, HarnessError)
    assert "the moon to rise" in str(exc.value)
    assert 0.2 <= elapsed < 1.5


def test_wait_until_timeout_reports_last_error_and_diagnostics():
    def condition():
        raise ValueError("still booting")

    with pytest.raises(WaitTimeout) as exc:
        wait_until(condition, timeout=0.05, what="broker 1", interval=0.01, diagnostics=lambda: "log tail\n")
    message = str(exc.value)
    assert "still booting" in message and "broker 1" in message
    assert message.endswith("\nlog tail")


def test_wait_until_stops_early_on_fatal():
    calls = []
    start = time.monotonic()
    with pytest.raises(WaitTimeout) as exc:
        wait_until(lambda: calls.append(1), timeout=30, what="broker 2", interval=0.01,
                   fatal=lambda: "broker 2 exited with code 1" if len(calls) >= 2 else None)
    assert time.monotonic() - start < 2
    assert len(calls) == 2
    assert "broker 2 exited with code 1" in str(exc.value)
    assert "broker 2" in str(exc.value)


def test_wait_until_fatal_empty_string_is_not_fatal():
    assert wait_until(lambda: "ok", timeout=1, what="x", fatal=lambda: "") == "ok"


# ----------------------------------------------------------------------- cli

CLI_TIME_LIMIT = 15.0  # seconds; validation takes well under one, a started cluster far more

CLI_CASES = {
    "version-abc": ["run", "--kafka-version", "abc"],
    "version-999": ["run", "--kafka-version", "9.9.9"],
    "consumers-0": ["run", "--consumers", "0"],
    "behaviour-nope": ["run", "--behaviour", "nope"],
    "check-missing": ["check", "/nonexistent/history.jsonl"],
}


def _cli(workdir: Path, args: list[str]) -> tuple[subprocess.CompletedProcess, float]:
    env = dict(os.environ, KSH_REPORTS_DIR=str(workdir / "reports"), KSH_CACHE_DIR=str(workdir / "cache"),
               COLUMNS="80")
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "harness.cli", *args], cwd=workdir, env=env,
                          capture_output=True, text=True, timeout=CLI_TIME_LIMIT)
    return proc, time.monotonic() - start


@pytest.fixture(scope="module")
def cli(tmp_path_factory):
    """Every CLI case run once, concurrently: name -> (completed process, seconds, working directory)."""
    from concurrent.futures import ThreadPoolExecutor
    dirs = {name: tmp_path_factory.mktemp(f"cli-{name}") for name in CLI_CASES}
    with ThreadPoolExecutor(len(CLI_CASES)) as pool:
        futures = {name: pool.submit(_cli, dirs[name], args) for name, args in CLI_CASES.items()}
        return {name: (*future.result(), dirs[name]) for name, future in futures.items()}


def _assert_short_error(proc: subprocess.CompletedProcess, elapsed: float) -> list[str]:
    assert proc.returncode != 0
    assert elapsed < CLI_TIME_LIMIT
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert 1 <= len(lines) <= 3, proc.stderr
    return lines


@pytest.mark.parametrize("case, word", [
    ("version-abc", "abc"),
    ("version-999", "9.9.9"),
    ("check-missing", "/nonexistent/history.jsonl"),
])
def test_cli_bad_input_is_a_short_error(cli, case, word):
    proc, elapsed, _ = cli[case]
    lines = _assert_short_error(proc, elapsed)
    assert proc.returncode == 2
    assert lines[-1].startswith("share-harness: error: ")
    assert word in proc.stderr
    assert proc.stdout == ""


def test_cli_unknown_version_names_supported_lines(cli):
    from harness.kafka.versions import SUPPORTED_LINES
    proc, elapsed, _ = cli["version-999"]
    _assert_short_error(proc, elapsed)
    for line in SUPPORTED_LINES:
        assert line in proc.stderr


def test_cli_rejections_start_no_process_or_cache(cli):
    for name, (proc, elapsed, workdir) in cli.items():
        assert elapsed < CLI_TIME_LIMIT, name
        assert not (workdir / "cache").exists(), name  # no jar download, no Toxiproxy build
        # no node, proxy, driver or client ever logged anything (an empty, pre-opened log file is fine)
        logs = [p for p in (workdir / "reports").glob("runs/*/logs/**/*") if p.is_file() and p.stat().st_size]
        assert logs == [], (name, logs)


def test_cli_unknown_version_creates_no_run_directory(cli):
    proc, _, workdir = cli["version-999"]
    assert proc.returncode == 2
    assert not (workdir / "reports" / "runs").exists()


@pytest.mark.parametrize("case, word", [("consumers-0", "--consumers"), ("behaviour-nope", "nope")])
def test_cli_argparse_errors_exit_nonzero_without_traceback(cli, case, word):
    proc, elapsed, _ = cli[case]
    assert proc.returncode == 2
    assert elapsed < CLI_TIME_LIMIT
    assert "Traceback" not in proc.stderr
    assert word in proc.stderr.strip().splitlines()[-1]


@pytest.mark.parametrize("case", ["consumers-0", "behaviour-nope"])
def test_cli_argparse_errors_are_short(cli, case):
    proc, elapsed, _ = cli[case]
    _assert_short_error(proc, elapsed)
