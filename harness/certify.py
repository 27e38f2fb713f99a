"""Client certification: the client-facing rules of KIP-932, run with one driver, as a certificate.

`share-harness certify --client NAME` runs every conformance test marked `pytest.mark.rule(ID)`
(the rules below: acknowledgement semantics, the client-side rules of the KIP, and a short seeded
chaos schedule) with that driver on a real cluster, then writes in its run directory a
certificate: rule x result (pass, fail with its evidence, not supported by the driver, not
applicable to the cluster, a known deviation of the release), the client's and the broker's
versions, the seed and the command that reproduces it, beside pytest's JUnit XML. A comparison
page across every certificate under the same root shows which rules each client passes.

A rule passes only if its test's own assertions held and the test's history conformed to the
reference model record by record; a rule whose test did not run is "not run", never pass. The
verdict is NOT CERTIFIED when a rule failed; CERTIFIED when none did, at least one passed and every
other was not supported by the driver, not applicable or a known deviation;
UNKNOWN when pytest did not finish cleanly or a rule was not decided (not run, or an error of the
cluster or a fixture rather than of the client).
"""

from __future__ import annotations

import json
import shlex
import sys
import time
from pathlib import Path
from typing import Any

from harness.client_rules import RULES  # noqa: F401  (re-exported: certify's rule table)
from harness.errors import HarnessError

#: Results a rule can have, and what the certificate says for each.
RESULT_WORDS = {"pass": "pass", "fail": "FAIL", "error": "error (not the client's: see the log)",
                "not-supported": "not supported", "not-applicable": "not applicable",
                "known-deviation": "known deviation of the release", "not-run": "not run"}


def repo_root() -> Path:
    root = Path(__file__).resolve().parents[1]
    if not (root / "suites" / "conformance").is_dir():
        raise HarnessError(f"{root / 'suites' / 'conformance'} not found: certify from a clone of the repository "
                           "(pip install -e .)")
    return root


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
    if any(r["result"] == "xfail" for r in rows):
        return "known-deviation", "; ".join(r["reason"] for r in rows if r["result"] == "xfail"), runs
    skipped = [r for r in rows if r["result"] == "skipped"]
    if skipped and len(skipped) == len(rows):
        reason = skipped[0]["reason"]
        return ("not-supported" if reason.startswith("not supported") else "not-applicable"), reason, runs
    return "pass", "", runs


def _evidence(run_dirs: list[str]) -> list[str]:
    """The anomalies the reference model found in a failed rule's runs (first few of each)."""
    out = []
    for run in run_dirs:
        path = Path(run) / "verdict.json"
        if not path.is_file():
            continue
        for result in json.loads(path.read_text()).get("results", []):
            if result.get("valid") is False:
                for a in result.get("anomalies", [])[:3]:
                    out.append(f"{result['checker']}: {a.get('kind')}: {a.get('message')}")
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
                return {k: v[k] for k in ("client", "client_version", "librdkafka", "contract") if k in v}
    return {}


def build_certificate(conformance: dict[str, Any], client: str, seed: int, rules: list[str],
                      command: str, pytest_exit: int) -> dict[str, Any]:
    by_rule: dict[str, list] = {}
    for row in conformance.get("tests", []):
        if row.get("rule"):
            by_rule.setdefault(row["rule"], []).append(row)
    results, all_runs = [], []
    for rule in rules:
        result, evidence, runs = rule_result(by_rule.get(rule, []))
        all_runs += runs
        entry = {"rule": rule, "statement": RULES[rule], "result": result, "evidence": evidence,
                 "tests": [r["test"] for r in by_rule.get(rule, [])], "runs": runs}
        if result == "fail":
            entry["anomalies"] = _evidence(runs)
        results.append(entry)
    counts = {k: sum(1 for r in results if r["result"] == k) for k in RESULT_WORDS}
    if counts["fail"]:
        verdict = "NOT CERTIFIED"  # a rule failed with evidence, whatever else happened
    elif pytest_exit != 0 or counts["error"] or counts["not-run"] or not counts["pass"]:
        verdict = "UNKNOWN"  # pytest did not finish cleanly, or a rule was not decided
    else:
        verdict = "CERTIFIED"
    return {"driver": client, **_client_versions(all_runs), "kafka_version": conformance.get("kafka_version"),
            "cluster": conformance.get("target"), "seed": seed, "verdict": verdict, "counts": counts,
            "rules": results, "complete": rules == list(RULES), "reproduce": command, "pytest_exit": pytest_exit,
            "created": time.strftime("%Y-%m-%d %H:%M:%S")}


def render_certificate(cert: dict[str, Any]) -> str:
    version = cert.get("client_version", "unknown version")
    lines = [f"# Share-consumer certificate: {cert['driver']} ({cert.get('client', 'client')} {version})", "",
             f"**{cert['verdict']}** against Kafka {cert['kafka_version']} ({cert['cluster']}), seed {cert['seed']}, "
             f"{cert['created']}.", "",
             "Counts: " + ", ".join(f"{RESULT_WORDS[k]} {v}" for k, v in cert["counts"].items() if v), "",
             f"Reproduce: `{cert['reproduce']}`", "", "| Rule | Result | Evidence |", "|---|---|---|"]
    for r in cert["rules"]:
        evidence = r["evidence"].replace("|", "\\|").replace("\n", " ")[:400]
        lines.append(f"| {r['statement']} (`{r['rule']}`) | {RESULT_WORDS[r['result']]} | {evidence} |")
    failed = [r for r in cert["rules"] if r["result"] == "fail"]
    for r in failed:
        lines += ["", f"## {r['rule']}: evidence", ""] + [f"- {a}" for a in r.get("anomalies", [])] + \
                 [f"- run: {run}" for run in r["runs"]]
    return "\n".join(lines) + "\n"


def write_comparison(root: Path) -> Path:
    """`root/index.md`: the newest complete certificate (every rule) under `root` per client and Kafka
    version, rule by rule (a run of some rules only stays in its own certificate)."""
    certs: dict[tuple, dict] = {}
    for path in sorted(root.glob("*/certificate.json")):
        try:
            cert = json.loads(path.read_text())
        except ValueError:
            continue
        if not cert.get("complete") or cert.get("verdict") not in ("CERTIFIED", "NOT CERTIFIED"):
            continue
        cert["_path"] = path.parent.name
        certs[(cert["driver"], cert.get("kafka_version"))] = cert  # sorted by time: the newest wins
    columns = sorted(certs.values(), key=lambda c: (c["driver"], str(c.get("kafka_version"))))
    lines = ["# Share-consumer certificates compared", "",
             "| Rule | " + " | ".join(f"{c['driver']} ({c.get('client', '?')} {c.get('client_version', '')}), "
                                     f"Kafka {c.get('kafka_version')}"
                                     for c in columns) + " |", "|---|" + "---|" * len(columns)]
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
    from harness.report.html import write_html_twin
    write_html_twin(path, "Share-consumer certificates compared")
    return path


def certify(client: str, *, kafka_version: str, bootstrap_servers: str | None = None, kafka_home: str | None = None,
            backend: str = "local", kafka_image: str | None = None, kafka_image_classpath: str | None = None,
            kfake_version: str | None = None, seed: int = 1, rules: list[str] | None = None, out_root: Path | None = None,
            profile: str = "ci", quiet: bool = False) -> tuple[dict[str, Any], Path]:
    """Run the rules with `client`'s driver; (the certificate, its directory)."""
    from harness.clients.registry import driver_info
    from harness.report.rundir import new_stamped_dir, reports_root
    from harness.spec import RunSpec, backend_args
    info = driver_info(client)  # a bad client is a one-line error before anything starts
    spec = RunSpec(seed=seed, kafka_version=kafka_version, kafka_home=kafka_home, bootstrap_servers=bootstrap_servers,
                   profile=profile, backend=backend, kafka_image=kafka_image,
                   kafka_image_classpath=kafka_image_classpath or RunSpec.kafka_image_classpath,
                   kfake_version=kfake_version or RunSpec.kfake_version).validate()  # the rest too
    kafka_version, bootstrap_servers, kafka_home = spec.kafka_version, spec.bootstrap_servers, spec.kafka_home
    if info.source != "built-in":
        client = str(Path(client).resolve())  # pytest runs from the repository
    rules = list(rules or RULES)
    unknown = [r for r in rules if r not in RULES]
    if unknown:
        raise HarnessError(f"unknown rules {', '.join(unknown)}; valid: {', '.join(RULES)}")
    root = repo_root()
    # certificates against kfake are kept apart (their own comparison page): beside Kafka's of the same API
    # level, one would replace the other on the page of the client's certificates
    out_root = out_root or reports_root() / "certificates" / (
        f"kfake-{spec.kfake_version}" if spec.backend == "kfake" else "")
    label = "".join(ch if ch.isalnum() or ch in "-_." else "-" for ch in info.name)
    out = new_stamped_dir(out_root, label)
    cmd = [sys.executable, "-m", "pytest", str(root / "suites" / "conformance"), "-m", "rule", "-q", "-rfEsx",
           "--ksh-client", client, "--ksh-seed", str(seed), "--ksh-profile", profile,
           "--kafka-version", kafka_version, "--junitxml", str(out / "junit.xml"),
           "--ksh-rules", ",".join(rules), "--ksh-conformance-out", str(out / "conformance")]
    if bootstrap_servers:
        cmd += ["--bootstrap-servers", bootstrap_servers]
    if kafka_home:
        cmd += ["--kafka-home", kafka_home]
    cmd += backend_args(spec)
    reproduce = f"share-harness certify --client {client} --kafka-version {kafka_version} --seed {seed}" + \
        (f" --bootstrap-servers {bootstrap_servers}" if bootstrap_servers else "") + \
        (f" --kafka-home {kafka_home}" if kafka_home else "") + \
        "".join(f" {shlex.quote(arg)}" for arg in backend_args(spec)) + \
        (f" --rules {','.join(rules)}" if rules != list(RULES) else "")
    from harness.pytest_child import run_pytest
    with open(out / "pytest.log", "w") as log:
        rc = run_pytest(cmd, cwd=root, stdout=log if quiet else None)
    report = out / "conformance" / "conformance.json"
    conformance = json.loads(report.read_text()) if report.is_file() else {"kafka_version": kafka_version,
                                                                           "target": bootstrap_servers, "tests": []}
    cert = build_certificate(conformance, info.name, seed, rules, reproduce, rc)
    cert["log"] = str(out / "pytest.log") if quiet else None
    (out / "certificate.json").write_text(json.dumps(cert, indent=1))
    (out / "certificate.md").write_text(render_certificate(cert))
    from harness.report.html import write_html_twin
    write_html_twin(out / "certificate.md", f"Certificate: {info.name}, Kafka {kafka_version}: {cert['verdict']}")
    if cert["verdict"] != "UNKNOWN":  # the comparison shows decided certificates only
        write_comparison(out_root)
    return cert, out
