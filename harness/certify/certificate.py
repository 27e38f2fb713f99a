"""Client certification: the client-facing rules of KIP-932, run with one driver, as a certificate.

`share-harness certify --client NAME` runs every conformance test marked `pytest.mark.rule(ID)`
(the rules below: acknowledgement semantics, the client-side rules of the KIP, and a short seeded
chaos schedule) with that driver on a real cluster, then writes in its run directory a
certificate: rule x result (pass, FAIL with its evidence, inconclusive with the set-up that did not
hold, not supported by the driver, not applicable to the cluster, a known deviation of the release),
the sentence each rule rests on (`harness.certify.rules`), the client options the driver ran with,
the client's and the broker's versions, the seed and the command that reproduces it, the histories of
the runs that decided each rule (`runs/`), beside pytest's JUnit XML. A comparison page across every
certificate under the same root shows which rules each client (and configuration) passes.

A rule passes only if its test's own assertions held and the test's history conformed to the
reference model record by record; a rule whose test did not run is "not run", never pass. The
verdict is NOT CERTIFIED when a rule failed; INCONCLUSIVE when none failed but a rule's precondition
did not hold; CERTIFIED when every rule passed or was not supported by the driver, not applicable or a
known deviation, and at least one passed; UNKNOWN when pytest did not finish cleanly or a rule was not
decided (not run, or an error of the cluster or a fixture rather than of the client).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from harness.tested_set import record as tested_set_record
from harness.tested_set import summary as tested_set_summary
from harness.version import VERSION
from harness.certify.rules import CLIENT_RULES, RULES  # noqa: F401  (RULES re-exported: certify's rule table)
from harness.clients.options import check_options, label, probe
from harness.clients.registry import check_manifest_driver, driver_info, unsupported_by_spec
from harness.errors import HarnessError
from harness.kafka import jars
from harness.report.html import write_html_twin
from harness.report.rundir import BUSY, new_stamped_dir, reports_root
from harness.settings import for_command, shell, to_argv
from harness.spec import MAX_SEEDS, RunSpec
from harness.sys import pytest_child, suites
from harness.sys.paths import cache_dir
from harness.sys.suites import Suites
from harness.timing import add_junit

#: Results a rule can have, and what the certificate says for each.
RESULT_WORDS = {"pass": "pass", "fail": "FAIL", "inconclusive": "inconclusive (its set-up did not hold)",
                "error": "error (not the client's: see the log)",
                "not-supported": "not supported", "not-applicable": "not applicable",
                "known-deviation": "known deviation of the release", "not-run": "not run",
                "older-contract": "not run: the driver speaks an older contract"}
#: The verdict's words when every rule run passed but some were not run (the driver's contract is older)
OLDER_CONTRACT_VERDICT = "CERTIFIED ON AN OLDER CONTRACT"


def rule_result(rows: list[dict[str, Any]]) -> tuple[str, str, list[str]]:
    """(result, evidence, run directories) of one rule from its tests' rows (conformance.json).
    A test that failed is a failure of the client; one that errored (its set-up or tear-down: the
    cluster, a fixture) says nothing about the client: the rule is "error", which makes the verdict
    UNKNOWN unless another rule failed."""
    if not rows:
        return "not-run", "no test of this rule ran", []
    runs = [r["run_dir"] for r in rows if r.get("run_dir")]
    failed = [r for r in rows if r["result"] in ("fail", "xpass")]
    if failed:
        return "fail", "; ".join(f"{r['test'].split('::')[-1]}: {r['reason']}" for r in failed), runs
    errored = [r for r in rows if r["result"] in ("error", "unknown")]  # unknown: its process died
    if errored:
        return "error", "; ".join(f"{r['test'].split('::')[-1]}: {r['reason']}" for r in errored), runs
    inconclusive = [r for r in rows if r["result"] == "inconclusive"]
    if inconclusive:  # the behaviour was not exercised: neither pass nor the client's failure
        return "inconclusive", "; ".join(f"{r['test'].split('::')[-1]}: {r['reason']}" for r in inconclusive), runs
    if any(r["result"] == "xfail" for r in rows):
        return "known-deviation", "; ".join(r["reason"] for r in rows if r["result"] == "xfail"), runs
    skipped = [r for r in rows if r["result"] == "skipped"]
    if skipped and len(skipped) == len(rows):
        reason = skipped[0]["reason"]
        if reason.startswith("older contract"):
            return "older-contract", reason, runs
        return ("not-supported" if reason.startswith("not supported") else "not-applicable"), reason, runs
    if not any(r["result"] == "pass" for r in rows):  # a result this table does not know: not a pass
        return "error", "; ".join(f"{r['test'].split('::')[-1]}: {r['result']}" for r in rows), runs
    return "pass", "", runs


#: Anomalies a test that stopped early (its assertion failed before it settled its records) causes by
#: stopping: records still acquired or never consumed. Not evidence against the client: left out.
EARLY_STOP_KINDS = ("not-accepted", "lost")


def _evidence(run_dirs: list[str]) -> list[str]:
    """The anomalies the reference model found in a failed rule's runs (first few of each); in a run
    whose test stopped early, those its stopping explains (`EARLY_STOP_KINDS`) are left out, said once."""
    out = []
    for run in run_dirs:
        path = Path(run) / "verdict.json"
        if not path.is_file():
            continue
        verdict = json.loads(path.read_text())
        early = bool(verdict.get("ended_early"))
        left_out = 0
        for result in verdict.get("results", []):
            if result.get("valid") is False:
                anomalies = result.get("anomalies", [])
                if early:
                    kept = [a for a in anomalies if a.get("kind") not in EARLY_STOP_KINDS]
                    left_out += len(anomalies) - len(kept)
                    anomalies = kept
                for a in anomalies[:3]:
                    out.append(f"{result['checker']}: {a.get('kind')}: {a.get('message')}")
        if left_out:
            out.append(f"({left_out} {'/'.join(EARLY_STOP_KINDS)} anomalies of {Path(run).name} left out: the test "
                       f"stopped at its failed assertion, leaving those records unsettled)")
    return out


def _client_versions(run_dirs: list[str]) -> dict[str, Any]:
    """The client library and version the driver reported in its start event."""
    for run in run_dirs:
        path = Path(run) / "history.jsonl"
        if not path.is_file():
            continue
        for line in path.read_text().splitlines():
            if '"start"' not in line:
                continue
            op = json.loads(line)
            if op.get("f") == "start" and op.get("type") == "ok" and isinstance(op.get("value"), dict):
                v = op["value"]
                return {k: v[k] for k in ("client", "client_version", "librdkafka", "kafka_clients_version", "contract",
                                          "callback_offsets")
                        if k in v}
    return {}


def build_certificate(conformance: dict[str, Any], client: str, seed: int, rules: list[str],
                      command: str, pytest_exit: int, options: dict[str, str] | None = None) -> dict[str, Any]:
    by_rule: dict[str, list] = {}
    for row in conformance.get("tests", []):
        if row.get("rule"):
            by_rule.setdefault(row["rule"], []).append(row)
    results, all_runs = [], []
    for rule in rules:
        result, evidence, runs = rule_result(by_rule.get(rule, []))
        all_runs += runs
        basis = CLIENT_RULES[rule]
        entry = {"rule": rule, "statement": basis.statement, "source": basis.source, "sentence": basis.sentence,
                 "feature": basis.feature, "result": result, "evidence": evidence,
                 "tests": [r["test"] for r in by_rule.get(rule, [])], "runs": runs}
        if result == "fail":
            entry["anomalies"] = _evidence(runs)
        results.append(entry)
    counts = {k: sum(1 for r in results if r["result"] == k) for k in RESULT_WORDS}
    if counts["fail"]:
        verdict = "NOT CERTIFIED"  # a rule failed with evidence, whatever else happened
    elif pytest_exit not in (0, 1) or (pytest_exit == 1 and not counts["inconclusive"]) or counts["error"] \
            or counts["not-run"]:
        verdict = "UNKNOWN"  # pytest did not finish cleanly (or failed outside any rule), or a rule was not decided
    elif counts["inconclusive"]:
        verdict = "INCONCLUSIVE"  # a rule's set-up did not hold: never CERTIFIED
    elif not counts["pass"]:
        verdict = "UNKNOWN"
    elif counts["older-contract"]:  # never a plain CERTIFIED on fewer rules: the verdict says how many were not run
        verdict = f"{OLDER_CONTRACT_VERDICT} ({counts['older-contract']} NOT RUN)"
    else:
        verdict = "CERTIFIED"
    options = dict(options or {})
    return {"driver": client, "client_options": options, "configuration": label(options),
            **_client_versions(all_runs), "kafka_version": conformance.get("kafka_version"),
            "cluster": conformance.get("target"), "seed": seed, "verdict": verdict, "counts": counts,
            "rules": results, "complete": rules == list(RULES), "reproduce": command, "pytest_exit": pytest_exit,
            "created": time.strftime("%Y-%m-%d %H:%M:%S"), "harness_version": VERSION,
            "tested_set": tested_set_record()}


def beneath(cert: dict[str, Any], root: Path) -> dict[str, Any] | None:
    """For a framework's certificate (its driver reports the `kafka_clients_version` it runs on): the newest
    complete certificate under `root` of that bare client (the `java` driver, kafka-clients of that version)
    on the same Kafka release, and its result per rule, so that a rule the framework fails says whether the
    client beneath fails it too. None if the driver runs on no named client or no such certificate exists."""
    version = cert.get("kafka_clients_version")
    if not version:
        return None
    found = None
    for path in sorted(root.glob("*/certificate.json")):
        try:
            other = json.loads(path.read_text())
        except ValueError:
            continue
        if other.get("driver") == "java" and other.get("client_version") == version and other.get("complete") \
                and other.get("kafka_version") == cert.get("kafka_version") and not other.get("client_options"):
            found = (path.parent.name, other)  # sorted by time: the newest wins
    if found is None:
        return {"client": "kafka-clients", "client_version": version, "certificate": None, "results": {}}
    return {"client": "kafka-clients", "client_version": version, "certificate": found[0],
            "results": {r["rule"]: r["result"] for r in found[1]["rules"]}}


def render_certificate(cert: dict[str, Any]) -> str:
    version = cert.get("client_version", "unknown version")
    options = cert.get("client_options") or {}
    lines = [f"# Share-consumer certificate: {cert['driver']} ({cert.get('client', 'client')} {version})", "",
             f"**{cert['verdict']}** against Kafka {cert['kafka_version']} ({cert['cluster']}), seed {cert['seed']}"
             f"{', chaos seeds ' + ', '.join(map(str, cert['seeds'])) if cert.get('seeds') else ''}, {cert['created']}"
             f", kafka-share-harness {cert.get('harness_version', 'of an unrecorded version')}. "
             f"{tested_set_summary(cert.get('tested_set', {}))}",
             "", "Client options: " + (", ".join(f"`{k}={v}`" for k, v in sorted(options.items())) if options else
                                      "none (the library's defaults, as the driver sets it up: docs/driver.md)"), "",
             "Counts: " + ", ".join(f"{RESULT_WORDS[k]} {v}" for k, v in cert["counts"].items() if v), "",
             *(["Callback offsets: named by the driver, not the library (its acknowledgement callback carries "
                "none; docs/driver.md): a callback result the history shows for an offset is the driver's "
                "attribution.", ""] if cert.get("callback_offsets") == "driver" else []),
             *_beneath_lines(cert),
             f"Reproduce: `{cert['reproduce']}`", "",
             "Results: pass; FAIL (the behaviour was exercised and broke the rule's sentence); inconclusive (the "
             "test's set-up did not hold: the behaviour was not exercised, never CERTIFIED); not supported (the "
             "rule is a client-API contract the driver does not declare, or needs a feature it lacks); not "
             "applicable (the cluster or release has not the feature); not run: the driver speaks an older "
             "contract (the rule needs a command its contract version lacks: docs/driver.md; the verdict then "
             "says how many rules were not run, never a plain CERTIFIED).", "",
             "| Rule | Rests on | Result | Evidence |", "|---|---|---|---|"]
    for r in cert["rules"]:
        evidence = r["evidence"].replace("|", "\\|").replace("\n", " ")[:400]
        feature = f" (a contract a library may declare: `{r['feature']}`)" if r.get("feature") else ""
        basis = f"{r.get('source', '?')}{feature}: \"{r.get('sentence', '')}\"".replace("|", "\\|")
        lines.append(f"| {r['statement']} (`{r['rule']}`) | {basis} | {RESULT_WORDS[r['result']]} | {evidence} |")
    failed = [r for r in cert["rules"] if r["result"] in ("fail", "inconclusive")]
    for r in failed:
        lines += ["", f"## {r['rule']}: {RESULT_WORDS[r['result']]}", "", f"Rests on {r.get('source', '?')}: "
                  f"\"{r.get('sentence', '')}\"", "", f"- {r['evidence']}"] + \
                 [f"- {a}" for a in r.get("anomalies", [])] + \
                 [f"- run: {run}" for run in r["runs"]] + _beneath_rule(cert, r["rule"])
    return "\n".join(lines) + "\n"


def _beneath_lines(cert: dict[str, Any]) -> list[str]:
    under = cert.get("beneath")
    if not under:
        return []
    where = (f"its certificate on the same release: `{under['certificate']}`" if under.get("certificate") else
             "no certificate of it on the same release was found beside this one: certify `--client java` on "
             "this release to tell the framework's FAILs from the client's")
    return [f"Runs on {under['client']} {under['client_version']} (the client beneath the framework; {where}).", ""]


def _beneath_rule(cert: dict[str, Any], rule: str) -> list[str]:
    under = cert.get("beneath") or {}
    if not under.get("certificate"):
        return []
    result = under["results"].get(rule)
    if result is None:
        return [f"- the client beneath ({under['client']} {under['client_version']}) was not certified on this rule"]
    cause = ("the client beneath fails it too" if result in ("fail", "inconclusive") else
             "the client beneath passes it: the framework's cause" if result == "pass" else "")
    return [f"- the client beneath ({under['client']} {under['client_version']}, `{under['certificate']}`): "
            f"{RESULT_WORDS[result]}" + (f" ({cause})" if cause else "")]


def _column(cert: dict[str, Any]) -> str:
    config = cert.get("configuration", "default")
    over = f" over kafka-clients {cert['kafka_clients_version']}" if cert.get("kafka_clients_version") else ""
    return (f"{cert['driver']} ({cert.get('client', '?')} {cert.get('client_version', '')}{over}), Kafka "
            f"{cert.get('kafka_version')}" + ("" if config == "default" else f", `{config}`"))


def write_comparison(root: Path) -> Path:
    """`root/index.md`: the newest complete certificate (every rule) under `root` per client, client
    configuration and Kafka version, rule by rule (a run of some rules only stays in its own certificate)."""
    certs: dict[tuple, dict] = {}
    for path in sorted(root.glob("*/certificate.json")):
        try:
            cert = json.loads(path.read_text())
        except ValueError:
            continue
        if not cert.get("complete") or not (cert.get("verdict") in ("CERTIFIED", "NOT CERTIFIED") or
                                            str(cert.get("verdict")).startswith(OLDER_CONTRACT_VERDICT)):
            continue
        cert["_path"] = path.parent.name
        # sorted by time: the newest wins
        certs[(cert["driver"], cert.get("configuration", "default"), cert.get("kafka_version"))] = cert
    columns = sorted(certs.values(), key=lambda c: (c["driver"], c.get("configuration", "default") != "default",
                                                    c.get("configuration", ""), str(c.get("kafka_version"))))
    lines = ["# Share-consumer certificates compared", "",
             "Each rule's sentence (KIP-932, a follow-up KIP, or a client-API contract a library may declare) is "
             "in each certificate and in `harness/certify/rules.py`.", "",
             "| Rule | " + " | ".join(_column(c) for c in columns) + " |", "|---|" + "---|" * len(columns)]
    lines.append("| **Verdict** | " + " | ".join(f"**{c['verdict']}** ([certificate]({c['_path']}/certificate.md))"
                                                 for c in columns) + " |")
    for rule in RULES:
        cells = []
        for c in columns:
            found = [r for r in c["rules"] if r["rule"] == rule]
            cells.append(RESULT_WORDS[found[0]["result"]] if found else "-")
        lines.append(f"| {RULES[rule]} (`{rule}`) | " + " | ".join(cells) + " |")
    path = root / "index.md"
    path.write_text("\n".join(lines) + "\n")
    write_html_twin(path, "Share-consumer certificates compared")
    return path


def keep_runs(cert: dict[str, Any], out: Path) -> None:
    """Copy each rule's runs (history, verdict, spec) into `out/runs/`, and point the certificate there:
    the evidence stays with the certificate when reports/runs is cleaned or the certificate is published."""
    kept: dict[str, str] = {}
    for r in cert["rules"]:
        local = []
        for run in r["runs"]:
            src = Path(run)
            if run not in kept and src.is_dir():
                dest = out / "runs" / src.name
                dest.mkdir(parents=True, exist_ok=True)
                for name in ("history.jsonl", "verdict.json", "spec.json"):
                    if (src / name).is_file():
                        shutil.copy2(src / name, dest / name)
                kept[run] = f"runs/{src.name}"
            local.append(kept.get(run, run))
        r["runs"] = local


#: Chaos rules: several seeds each (`certify(seeds=...)`), one run per seed deciding all of them.
CHAOS_RULES = tuple(r for r in RULES if r.startswith("chaos-"))


@dataclass(frozen=True)
class Certification:
    """What one certification runs. `spec` holds the client (built-in name or manifest path), the client options
    the user gave (the manifest's own come first), the cluster to certify on (release, backend, external
    servers), the first seed and the rules (all when empty); the chaos rules run with `seeds` seeds from the
    spec's on; certificates go under `out_root` (default reports/certificates); `quiet`: pytest's output to
    pytest.log only."""

    spec: RunSpec
    seeds: int = 3
    out_root: Path | None = None
    quiet: bool = False


def certify(request: Certification) -> tuple[dict[str, Any], Path]:
    """Run the rules with the request's driver (its manifest's client options, then the user's); the chaos
    rules with its seeds; (the certificate, its directory)."""

    # Everything is refused here, in one line, before a directory, a download, a cluster or pytest starts.
    seeds, asked = request.seeds, request.spec
    if isinstance(seeds, bool) or not isinstance(seeds, int) or not 1 <= seeds <= MAX_SEEDS:
        raise HarnessError(f"invalid seeds {seeds!r}: the chaos rules run with 1..{MAX_SEEDS} seeds")
    info = driver_info(asked.client)  # a bad client is a one-line error before anything starts
    options = {**info.options, **asked.client_options}
    check_options(options)
    spec = replace(asked, client_options=options).validate()
    kafka_version = spec.kafka_version
    why = unsupported_by_spec(spec)
    if why:  # as `run` refuses it: every rule would be skipped, nothing certified
        raise HarnessError(f"client {info.name} on Kafka {kafka_version}: {why}")
    rules = list(spec.rules or RULES)
    client = spec.client
    if info.source != "built-in":  # a driver missing, exiting at once or declaring nothing: one line now
        check_manifest_driver(info, options, certify=True)
        client = str(Path(client).resolve())  # pytest runs elsewhere (the repository, or the caller's directory)
    elif options:  # an option the driver would not apply: one line now, not an error in every test
        dist = None
        if info.jvm:
            dist = jars.resolve(kafka_version, cache_dir(), spec.kafka_home)
        probe(info, options, dist)
    found = suites.locate()
    # certificates against kfake or the mock are kept apart (their own comparison page): beside Kafka's of the
    # same API level, one would replace the other on the page of the client's certificates
    out_root = request.out_root or reports_root() / "certificates" / (
        f"kfake-{spec.kfake_version}" if spec.backend == "kfake" else "mock" if spec.backend == "mock" else "")
    name = info.name + ("" if not options else "-" + label(options))
    out = new_stamped_dir(out_root, "".join(ch if ch.isalnum() or ch in "-_." else "-" for ch in name)[:80])
    try:
        return _certify_into(out, out_root, found, info, replace(spec, client=client, rules=tuple(rules)), asked,
                             seeds, request.quiet)
    except BaseException:
        _remove_if_empty(out, out_root)  # a certify that failed before it wrote anything leaves nothing
        raise


def rule_files(suite: Path, rules: list[str]) -> list[Path]:
    """The files of `suite` that hold the tests of `rules`, found by their `pytest.mark.rule("ID")` marks in the
    text (pytest then collects only those files: a certification of a few rules does not import the whole
    suite); the suite itself if a rule's mark is not found so, so that no rule is ever left out."""
    marks = {path: set(re.findall(r'mark\.rule\("([^"]+)"', path.read_text())) for path in sorted(suite.glob("test_*.py"))}
    if not all(any(rule in found for found in marks.values()) for rule in rules):
        return [suite]
    return [path for path, found in marks.items() if found & set(rules)]


def _remove_if_empty(out: Path, out_root: Path) -> None:
    """Remove the certificate directory `out` if nothing was written into it (an empty pytest.log and the
    directory's lock file aside), and the certificates root if `out` was all it held: a failed certify leaves
    no empty directories."""
    try:
        files = [p for p in out.rglob("*") if p.is_file() and p.relative_to(out) != Path(BUSY)]
        if all(p.name == "pytest.log" and p.stat().st_size == 0 for p in files):
            shutil.rmtree(out)
            if out_root.is_dir() and not any(out_root.iterdir()):
                out_root.rmdir()
    except OSError:  # the clean-up must not hide why the certify failed
        pass


#: Plugins a certification's pytest child never uses (it writes JUnit XML, no allure results, and runs in one
#: process): not loading them takes 0.5-0.8 s off each child's start (issue 53: CI certifies thirty drivers).
CHILD_PLUGINS_OFF = ("-p", "no:allure_pytest", "-p", "no:xdist", "-p", "no:xdist.looponfail")


def _certify_into(out: Path, out_root: Path, found: Suites, info, spec: RunSpec, asked: RunSpec, seeds: int,
                  quiet: bool) -> tuple[dict[str, Any], Path]:
    """Run pytest on `spec`'s rules (every option of `spec` on the child's command line) into the certificate
    directory `out`; the certificate and `out`. `asked`: the certification as the user gave it (its reproduce
    command)."""
    kafka_version, bootstrap_servers, seed, rules = spec.kafka_version, spec.bootstrap_servers, spec.seed, list(spec.rules)
    options = spec.client_options
    chaos_seeds = [seed + i for i in range(seeds)] if any(r in CHAOS_RULES for r in rules) else []
    child = replace(spec, conformance_out=str(out / "conformance"))
    cmd = [sys.executable, "-m", "pytest", *map(str, rule_files(found.path("conformance"), rules)), "-m", "rule",
           "-q", "-rfEsx", *to_argv(child, "pytest", seeds=seeds), "--junitxml", str(out / "junit.xml"),
           *CHILD_PLUGINS_OFF, *found.pytest_args()]
    reproduce = shell(["share-harness", "certify", "--client", asked.client,
                       *to_argv(asked, "cli", "certify", seeds=seeds if seeds != 3 else None,
                                only=[s.key for s in for_command("certify") if s.key != "client"])])
    from harness.cluster.java_admin import shared_helpers_env  # (the child's durable reads use this process's JVMs)
    with open(out / "pytest.log", "w") as log:
        rc = pytest_child.run_pytest(cmd, cwd=found.cwd, stdout=log if quiet else None,
                                     env={**os.environ, **shared_helpers_env()})
    add_junit(out / "junit.xml")  # the child's seconds per kind count as this process's (issue 53's table)
    if rc == 4:  # pytest's usage error: the plugin refused an option; nothing ran, nothing is certified
        said = [line for line in (out / "pytest.log").read_text(errors="replace").splitlines() if line.strip()]
        shutil.rmtree(out, ignore_errors=True)
        if out_root.is_dir() and not any(out_root.iterdir()):
            out_root.rmdir()
        raise HarnessError("pytest refused the certification's options (usage error, exit 4), nothing was run: "
                           + (said[-1][:300] if said else "see its message above"))
    report = out / "conformance" / "conformance.json"
    conformance = json.loads(report.read_text()) if report.is_file() else {"kafka_version": kafka_version,
                                                                           "target": bootstrap_servers, "tests": []}
    cert = build_certificate(conformance, info.name, seed, rules, reproduce, rc, options)
    cert["seeds"] = chaos_seeds
    cert["beneath"] = beneath(cert, out_root)
    keep_runs(cert, out)
    cert["log"] = str(out / "pytest.log") if quiet else None
    (out / "certificate.json").write_text(json.dumps(cert, indent=1))
    (out / "certificate.md").write_text(render_certificate(cert))
    write_html_twin(out / "certificate.md", f"Certificate: {info.name}, Kafka {kafka_version}: {cert['verdict']}")
    if cert["verdict"] in ("CERTIFIED", "NOT CERTIFIED"):  # the comparison shows decided certificates only
        write_comparison(out_root)
    return cert, out
