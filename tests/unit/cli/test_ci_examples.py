"""The CI recipes of docs/gate-your-implementation.md (docs/ci-examples/): YAML that parses into the shape its CI
reads, every `share-harness` command line one this version takes (parsed, and its spec built and refused as the
command itself would, without running it), the harness version the package's, and the reports published
whether the job passed or failed."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import yaml

from harness.cli import run as cli_run
from harness.cli.parser import build_parser
from harness.version import VERSION

EXAMPLES = Path(__file__).resolve().parents[3] / "docs" / "ci-examples"


def _load(name: str) -> dict:
    data = yaml.safe_load((EXAMPLES / name).read_text())
    assert isinstance(data, dict), name
    return data


def _commands(lines: list[str], env: dict[str, str]) -> list[list[str]]:
    """The `share-harness` command lines among shell lines, with the job's variables put in."""
    found = []
    for block in lines:
        for line in block.splitlines():
            line = re.sub(r"\$\{?(\w+)\}?", lambda m: env.get(m[1], m[0]), line.strip())
            if line.startswith("share-harness"):
                argv = shlex.split(line)
                cut = [i for i, word in enumerate(argv) if word in (">", ">>", "|")]  # the shell's, not the command's
                found.append(argv[:cut[0]] if cut else argv)
    return found


def _check_command(argv: list[str]) -> None:
    """What the CLI would refuse of `argv` before it starts anything, refused here (a HarnessError, SystemExit)."""
    if argv[1:] == ["--version"]:
        with pytest.raises(SystemExit) as done:
            build_parser().parse_args(argv[1:])
        assert done.value.code == 0
        return
    args = build_parser().parse_args(argv[1:])
    if args.command == "run" and args.suite:
        cli_run._refuse_options_not_applied(args)
        cli_run._refuse_backend(args.suite, cli_run.spec_from_args(args))
    elif args.command == "run":
        cli_run.spec_from_args(args).check_faults_hostable()


def test_the_github_actions_workflow_runs_the_gate_and_publishes_its_reports_always():
    flow = _load("github-actions.yml")
    assert flow.get("on", flow.get(True))  # (YAML 1.1 reads a bare `on` as true)
    env = flow["env"]
    assert env["HARNESS_VERSION"] == VERSION
    commands = []
    for name, job in flow["jobs"].items():
        assert job["runs-on"] and job["steps"], name
        assert all(("uses" in step) != ("run" in step) for step in job["steps"]), name
        uploads = [s for s in job["steps"] if str(s.get("uses", "")).startswith("actions/upload-artifact")]
        assert uploads and all(s.get("if") == "always()" for s in uploads), f"{name}: reports not published always"
        assert not any("|| true" in str(s.get("run", "")) for s in job["steps"]), f"{name}: a failure swallowed"
        commands += _commands([s["run"] for s in job["steps"] if "run" in s], env)
    assert [c[:3] for c in commands if c[1] == "run"] == [["share-harness", "run", "--suite"],
                                                          ["share-harness", "run", "--faults"]]
    assert any(c[1] == "certify" for c in commands)
    for argv in commands:
        _check_command(argv)


def test_the_gitlab_job_runs_the_gate_and_keeps_its_reports_always():
    pipeline = _load("gitlab-ci.yml")
    env = pipeline["variables"]
    assert env["HARNESS_VERSION"] == VERSION
    jobs = {name: job for name, job in pipeline.items() if isinstance(job, dict) and "script" in job}
    assert set(jobs) == {"kip-932", "certify-client"}
    commands = []
    for name, job in jobs.items():
        assert job["stage"] in pipeline["stages"], name
        assert job["artifacts"]["when"] == "always", f"{name}: reports not kept always"
        assert not any("|| true" in line for line in job["script"]), f"{name}: a failure swallowed"
        commands += _commands(job.get("before_script", []) + job["script"], env)
    assert jobs["kip-932"]["artifacts"]["reports"]["junit"]
    assert any(c[1:3] == ["run", "--suite"] for c in commands) and any(c[1] == "certify" for c in commands)
    for argv in commands:
        _check_command(argv)


def test_a_command_the_cli_would_refuse_fails_the_check():
    """(the check can fail: the chaos suite on an external cluster is refused, as `run` refuses it)"""
    from harness.errors import HarnessError
    with pytest.raises(HarnessError, match="cannot run on an external cluster"):
        _check_command(["share-harness", "run", "--suite", "chaos", "--bootstrap-servers", "127.0.0.1:9092"])
    with pytest.raises(SystemExit):
        _check_command(["share-harness", "run", "--no-such-flag"])
