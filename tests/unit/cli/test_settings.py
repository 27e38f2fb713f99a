"""The one table of run settings (harness.settings): every command-line option, every pytest option and
every reproduce command goes through a spec and back unchanged, and each interface is generated from it."""

from __future__ import annotations

import shlex
from dataclasses import replace

import pytest

from harness import settings
from harness.cli.parser import build_parser
from harness.kafka.implementations import KFAKE_VERSIONS
from harness.settings import SETTINGS, given, reproduce_command, spec_from_values, to_argv
from harness.spec import RunSpec

#: per setting, command-line words that give it (with what it needs beside it); a setting added to the table
#: without a sample here fails `test_every_setting_has_a_sample`
CLI_SAMPLES = {
    "name": ["--name", "a b"],
    "seed": ["--seed", "7"],
    "profile": ["--profile", "nightly"],
    "seeds": ["--seeds", "2"],
    "backend": ["--backend", "docker"],
    "kafka_home": ["--kafka-home", "{home}", "--kafka-version", "4.0.9"],
    "kafka_version": ["--kafka-version", "4.3.1"],
    "bootstrap_servers": ["--bootstrap-servers", "127.0.0.1:9092"],
    "kafka_image": ["--backend", "docker", "--kafka-image", "registry.local/kafka:4.4"],
    "kafka_image_classpath": ["--backend", "docker", "--kafka-image-classpath", "/k/libs/*"],
    "kfake_version": ["--backend", "kfake", "--kfake-version", KFAKE_VERSIONS[1]],
    "brokers": ["--brokers", "2"],
    "log_dirs": ["--log-dirs", "3"],
    "base_port": ["--base-port", "21000"],
    "topic_partitions": ["--partitions", "4"],
    "consumers": ["--consumers", "5"],
    "behaviour": ["--behaviour", "accept-explicit"],
    "records": ["--records", "123"],
    "workload": ["--workload", "poison"],
    "dead_letter": ["--dead-letter", "headers"],
    "lock_duration_ms": ["--lock-duration-ms", "2000"],
    "delivery_count_limit": ["--delivery-count-limit", "3"],
    "group_configs": ["--group-config", "share.isolation.level=read_committed", "--group-config",
                      "share.auto.offset.reset=earliest"],
    "faults": ["--faults", "leader"],
    "fault_seed": ["--faults", "leader", "--fault-seed", "9"],
    "fault_interval": ["--faults", "leader", "--fault-interval", "4.5"],
    "fault_mode": ["--faults", "leader", "--fault-mode", "once"],
    "client": ["--client", "java"],
    "client_options": ["--client-option", "max.poll.records=5", "--client-option", "a.b=c=d"],
    "rules": ["--rules", "ack-accept,ack-release"],
}
#: the same samples in the plugin's words (the table's pytest flag for each CLI flag), and the plugin's own
_PLUGIN_FLAGS = {s.cli: s.plugin for s in SETTINGS if s.cli is not None and s.plugin is not None}
PLUGIN_SAMPLES = {
    **{key: [_PLUGIN_FLAGS.get(word, word) for word in words] for key, words in CLI_SAMPLES.items()
       if settings.BY_KEY[key].plugin is not None and key not in ("fault_seed", "fault_interval", "client_options")},
    "fault_seed": ["--fault-seed", "9"],  # (the plugin refuses none without faults: a suite's tests set their own)
    "fault_interval": ["--fault-interval", "4.5"],
    "client_options": ["--ksh-client-options", '{"max.poll.records": "5"}'],  # (the plugin's is a JSON object)
    "check_engine": ["--ksh-engine", "spark"],
    "spark_threshold": ["--ksh-spark-threshold", "10"],
    "conformance_out": ["--ksh-conformance-out", "reports/conformance/x"],
}


def _words(sample: list[str], home) -> list[str]:
    return [word.replace("{home}", str(home)) for word in sample]


def _same(spec: RunSpec) -> RunSpec:
    """`spec` with the fault schedule's seed in effect written out (a reproduce command names it)."""
    scheduled = bool(spec.faults or spec.workload_events)
    return replace(spec, fault_seed=spec.effective_fault_seed if scheduled else spec.fault_seed)


def _from_cli(command: str, words: list[str]) -> tuple[RunSpec, dict]:
    argv = [command, *words] + (["--client", "confluent"] if command == "certify" and "--client" not in words else [])
    values = given(build_parser().parse_args(argv), command)
    seeds = values.pop("seeds", None)
    return spec_from_values(values), ({"seeds": seeds} if seeds is not None else {})


def _from_plugin(words: list[str]) -> tuple[RunSpec, dict]:
    by_flag = {s.plugin: s for s in settings.plugin_settings()}
    values = {}
    for flag, text in zip(words[::2], words[1::2]):
        values[by_flag[flag].key] = by_flag[flag].from_text(text, "pytest")
    seeds = values.pop("seeds", None)
    return spec_from_values(values), ({"seeds": seeds} if seeds is not None else {})


def test_every_setting_has_a_sample():
    cli = {s.key for s in SETTINGS if s.cli is not None}
    plugin = {s.key for s in SETTINGS if s.plugin is not None}
    assert cli == set(CLI_SAMPLES), cli ^ set(CLI_SAMPLES)
    assert plugin == set(PLUGIN_SAMPLES), plugin ^ set(PLUGIN_SAMPLES)


@pytest.mark.parametrize("key", sorted(CLI_SAMPLES))
def test_every_cli_option_round_trips_through_the_spec(key, tmp_path):
    """Each command that takes the option: the words -> a spec -> the command's words -> the same spec."""
    setting = settings.BY_KEY[key]
    for command in setting.commands:
        if command in ("suite", "explore"):
            continue  # suite: the pytest dialect (below); explore: a schedule's settings, not a spec's
        words = _words(CLI_SAMPLES[key], tmp_path)
        if command != "run":
            words = [w for i, w in enumerate(words) if not _for_run_only(words, i, command)]
        spec, extra = _from_cli(command, words)
        assert getattr(spec, key, extra.get(key)) is not None
        again, extra_again = _from_cli(command, to_argv(spec, "cli", command, **extra))
        assert _same(again) == _same(spec), (command, to_argv(spec, "cli", command, **extra))
        assert extra_again == extra


def _for_run_only(words: list[str], i: int, command: str) -> bool:
    """Whether words[i] belongs to a companion option `command` does not take (its flag or its value)."""
    takes = {s.cli for s in settings.for_command(command)}
    flag = words[i] if words[i].startswith("--") else words[i - 1]
    return flag not in takes


@pytest.mark.parametrize("key", sorted(PLUGIN_SAMPLES))
def test_every_pytest_option_round_trips_through_the_spec(key, tmp_path):
    spec, extra = _from_plugin(_words(PLUGIN_SAMPLES[key], tmp_path))
    if key != "seeds":
        assert getattr(spec, key) != getattr(RunSpec(), key) or key in ("kafka_version", "seed")
    again, extra_again = _from_plugin(to_argv(spec, "pytest", **extra))
    assert again == spec and extra_again == extra, to_argv(spec, "pytest", **extra)


@pytest.mark.parametrize("key", sorted(CLI_SAMPLES))
def test_every_reproduce_command_is_taken_back_whole(key, tmp_path):
    """The reproduce command of a run given the option makes that run's spec again (through the parser and the
    run's own translation, `spec_from_args`, which also refuses what a run would not honour)."""
    from harness.cli.run import spec_from_args
    setting = settings.BY_KEY[key]
    if "run" not in setting.commands:
        return
    spec, _ = _from_cli("run", _words(CLI_SAMPLES[key], tmp_path))
    command = reproduce_command(spec)
    assert command.startswith("share-harness run ")
    args = build_parser().parse_args(shlex.split(command)[1:])
    if spec.client_options:  # (spec_from_args would start the driver to probe them: the translation alone)
        again = spec_from_values(given(args, "run"))
    else:
        again = spec_from_args(args)
    assert _same(again) == _same(spec), command


def test_the_suite_command_passes_every_setting_it_takes_to_pytest(tmp_path):
    """`run --suite`'s pytest child gets the run's settings in the plugin's words (one writer: to_argv)."""
    from harness.cli.run import _suite_command
    words = ["--seed", "5", "--profile", "nightly", "--kafka-version", "4.3.1", "--faults", "leader", "--fault-seed",
             "8", "--fault-interval", "6", "--client", "java"]
    spec = spec_from_values(given(build_parser().parse_args(["run", "--suite", "chaos", *words]), "run"))
    cmd = _suite_command(spec, tmp_path, tmp_path / "out")
    flags = cmd[cmd.index("-rfEsx") + 1:cmd.index("--junitxml")]
    again, _ = _from_plugin(flags)
    for key in (s.key for s in settings.for_command("suite")):
        assert getattr(again, key) == getattr(spec, key), key


def test_the_plugin_declares_the_tables_options():
    from ksh_fixtures import plugin
    assert {s.plugin for s in plugin._OPTIONS.values()} == {s.plugin for s in settings.plugin_settings()}
    assert set(plugin.INI_KEYS) >= {s.ini for s in settings.plugin_settings()}


def test_a_value_refused_names_its_setting():
    with pytest.raises(settings.SettingRefused) as refused:
        spec_from_values({"backend": "local", "kafka_image": "img"})
    assert refused.value.setting.key == "kafka_image" and "docker" in str(refused.value)


def test_the_certify_and_matrix_children_are_written_by_the_table(tmp_path):
    from harness.sys.suites import Suites
    from harness.certify.matrix import cell_command
    cmd = cell_command(Suites(tmp_path / "suites", tmp_path, installed=False), f"kfake@{KFAKE_VERSIONS[1]}", "java", tmp_path / "o", 3, None)
    again, _ = _from_plugin(cmd[cmd.index("no:cacheprovider") + 1:cmd.index("--junitxml")])
    assert (again.backend, again.kfake_version, again.client, again.seed) == ("kfake", KFAKE_VERSIONS[1], "java", 3)
    assert again.conformance_out == str(tmp_path / "o" / "conformance")
