"""The franz-go driver without a cluster: it builds, refuses what it does not run, and speaks
contract 1 even when no broker answers."""

import json
import shutil
import subprocess

import pytest

from harness.clients.contract import CONTRACT_VERSION
from harness.clients.franz import FRANZ_FEATURES, SOURCE, build_franz_driver, franz_version
from harness.errors import HarnessError
from harness.sys.gobuild import first_error_line as _first_error_line
from harness.sys.paths import cache_dir


@pytest.fixture(scope="module")
def binary():
    if shutil.which("go") is None:
        pytest.skip("`go` is not on PATH: the franz-go driver is built with Go 1.26+")
    return build_franz_driver(cache_dir())


def _config(**extra):
    return json.dumps({"bootstrap": "127.0.0.1:1", "group": "g", "topics": ["t"], "behaviour": "step",
                       "seed": 1, "mode": "explicit", **extra})


def test_the_binary_builds_once_per_source(binary):
    assert binary.is_file() and binary.name == "franzdriver"
    assert build_franz_driver(cache_dir()) == binary  # cached: the same source is not built again
    assert franz_version().startswith("v1.")


def test_an_unknown_behaviour_exits_2_with_one_line(binary):
    proc = subprocess.run([str(binary), _config(behaviour="accept-implicit")], capture_output=True, text=True,
                          timeout=20)
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1 and "accept-implicit" in proc.stderr
    assert proc.stdout == ""


def test_without_a_broker_it_starts_and_closes_cleanly(binary):
    config = _config(client_config={"max.poll.records": "7", "no.such.property": "x"})
    proc = subprocess.run([str(binary), config], input='{"cmd": "close"}\n', capture_output=True, text=True,
                          timeout=20)
    assert proc.returncode == 0, proc.stderr
    ops = [json.loads(line) for line in proc.stdout.splitlines()]
    start = ops[0]
    assert (start["type"], start["f"]) == ("ok", "start")
    assert start["value"]["contract"] == CONTRACT_VERSION and start["value"]["client"] == "franz-go"
    assert start["value"]["client_version"] == franz_version()
    assert tuple(start["value"]["features"]) == FRANZ_FEATURES
    assert start["value"]["ignored_config"] == ["no.such.property"]
    assert [(op["type"], op["f"]) for op in ops[1:]] == [("invoke", "close"), ("ok", "close"), ("ok", "step")]
    assert ops[-1]["value"] == {"n": 1, "cmd": "close"}


def test_commands_without_a_broker_answer_with_their_markers(binary):
    commands = "\n".join([json.dumps({"cmd": "poll", "timeout": 0.5}), "not json",
                          json.dumps({"cmd": "ack", "records": [{"topic": "t", "partition": 0, "offset": 3,
                                                                 "type": "ACCEPT"}]}),
                          json.dumps({"cmd": "commit_sync"})]) + "\n"  # end of input closes
    proc = subprocess.run([str(binary), _config(mode="implicit")], input=commands, capture_output=True, text=True,
                          timeout=20)
    assert proc.returncode == 0, proc.stderr
    ops = [json.loads(line) for line in proc.stdout.splitlines()]
    steps = [op["value"] for op in ops if op["f"] == "step"]
    assert steps[0] == {"n": 1, "cmd": "poll", "records": 0}
    assert steps[1] == {"n": 2, "cmd": None}
    assert steps[2]["cmd"] == "ack" and "never returned by a poll" in steps[2]["error"]
    assert steps[3] == {"n": 4, "cmd": "commit_sync"}
    assert steps[4] == {"n": 4, "cmd": "close"}
    assert {"type": "ok", "f": "commit", "value": {"results": []}} in ops
    assert any(op["type"] == "fail" and op["f"] == "acknowledge" for op in ops)


def test_missing_go_names_the_fix(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no `go` there
    with pytest.raises(HarnessError, match="install Go"):
        build_franz_driver(tmp_path / "cache", SOURCE)


def test_a_compile_error_is_its_first_line(tmp_path):
    if shutil.which("go") is None:
        pytest.skip("`go` is not on PATH")
    source = tmp_path / "src"
    source.mkdir()
    for name in ("go.mod", "go.sum"):
        shutil.copyfile(SOURCE / name, source / name)
    (source / "main.go").write_text("package main\n\nfunc main() { undefined() }\n")
    with pytest.raises(HarnessError, match="undefined"):
        build_franz_driver(tmp_path / "cache", source)
    assert _first_error_line("go: downloading x v1\n# m\n./main.go:3:15: undefined: y\n") == \
        "./main.go:3:15: undefined: y"
