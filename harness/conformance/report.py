"""The conformance report: KIP area x result for the release tested, for a person to read."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from harness.tested_set import record as tested_set_record
from harness.tested_set import summary as tested_set_summary
from harness.version import VERSION
from harness.conformance.outcomes import is_inconclusive
from harness.report.html import write_html_twin

#: The KIP-932 areas of suites/conformance, in report order: marker name -> title.
AREAS = {
    "acknowledgement": "Acknowledgement",
    "delivery-count": "Delivery counts and limits",
    "locks": "Acquisition locks",
    "ordering": "Ordering",
    "start-offsets": "Start offsets",
    "lifecycle": "Group lifecycle and membership",
    "transactions": "Transactions",
    "retention": "Log retention and compaction",
    "partitions-added": "Partitions added",
    "authorization": "Authorization",
    "newer-features": "Newer features",
    "dead-letter": "Dead-letter queue (KIP-1191)",
    "client": "Client rules",
    "model": "Model-based (stateful)",
}


@dataclass(frozen=True)
class Row:
    area: str
    test: str  # node id
    behaviour: str  # the behaviour in KIP terms (the test's docstring, first line)
    result: str  # pass | fail | error | skipped | xfail (a known deviation of the release) | xpass | unknown
    #  (unknown: its set-up held but no result came: the process running it died) | inconclusive (its
    #  precondition did not hold: the behaviour was not exercised; harness.conformance.outcomes)
    reason: str = ""  # skip reason or failure summary (one line)
    run_dir: str = ""
    rule: str = ""  # the client rule it decides (harness.certify.certificate.RULES), if any


def outcome(report) -> tuple[str, str]:
    """A pytest report's result for the reports (pass, fail, error, skipped, xfail: a known deviation
    of the release, xpass, inconclusive: a precondition that did not hold) and its one-line reason (the
    skip reason or the failure's last line)."""
    result = "pass" if report.passed else "skipped" if report.skipped else \
        "fail" if report.when == "call" else "error"
    reason = ""
    if hasattr(report, "wasxfail"):
        result, reason = ("xfail" if report.skipped else "xpass"), report.wasxfail
    elif report.skipped and isinstance(report.longrepr, tuple):
        reason = str(report.longrepr[2]).removeprefix("Skipped: ")
    elif report.failed:
        crash = getattr(getattr(report, "longrepr", None), "reprcrash", None)
        if crash is not None and getattr(crash, "message", None):  # the exception and its message
            reason = " ".join(line.strip() for line in crash.message.splitlines() if line.strip())[:600]
        else:
            reason = (report.longreprtext or "").strip().splitlines()[-1][:300] if report.longreprtext else ""
        if is_inconclusive(reason):
            result = "inconclusive"
    return result, reason


def reportable(report) -> bool:
    """Whether `report` settles a test's result: its call, or a setup that skipped or failed."""
    return report.when == "call" or (report.when == "setup" and (report.skipped or report.failed))


#: the reason of a test whose set-up held and whose call never reported
UNFINISHED = ("did not finish: its process died or the session was interrupted before its result "
              "(see the session's log)")


def report_row(report) -> tuple[str, str] | None:
    """(result, reason) of the row `report` carries: its outcome if it settles the test, "unknown" for a
    set-up that held (replaced by the call's row when that comes), else None."""
    if reportable(report):
        return outcome(report)
    if report.when == "setup" and report.passed:
        return "unknown", UNFINISHED
    return None


def area_result(rows: list[Row]) -> str:
    """An area fails if any test failed or errored; is unknown if a test never finished; inconclusive if
    a test's precondition did not hold; deviates if a known deviation of the release was met (xfail);
    passes if at least one passed; else skipped."""
    results = {r.result for r in rows}
    if results & {"fail", "error"}:
        return "FAIL"
    if "unknown" in results:
        return "UNKNOWN"
    if "inconclusive" in results:
        return "INCONCLUSIVE"
    if "xfail" in results:
        return "KNOWN DEVIATION"
    if results & {"pass", "xpass"}:
        return "PASS"
    return "SKIPPED" if rows else "NOT RUN"


def render_markdown(rows: list[Row], kafka_version: str, target: str, client: str = "confluent") -> str:
    lines = [f"# KIP-932 conformance: Kafka {kafka_version}", "", f"Cluster: {target}", "", f"Client: {client}", "",
             f"Checked by kafka-share-harness {VERSION}. {tested_set_summary()}", "",
             "| Area | Result | Passed | Failed | Inconclusive | Unfinished | Known deviations | Skipped |",
             "|---|---|---|---|---|---|---|---|"]
    for area, title in AREAS.items():
        mine = [r for r in rows if r.area == area]
        count = lambda *names: sum(1 for r in mine if r.result in names)  # noqa: E731
        lines.append(f"| {title} | {area_result(mine)} | {count('pass', 'xpass')} | {count('fail', 'error')} | "
                     f"{count('inconclusive')} | {count('unknown')} | {count('xfail')} | {count('skipped')} |")
    for area, title in AREAS.items():
        mine = [r for r in rows if r.area == area]
        if not mine:
            continue
        lines += ["", f"## {title}", ""]
        for r in mine:
            why = f": {r.reason}" if r.reason else ""
            where = f" ([run]({r.run_dir}))" if r.run_dir else ""
            lines.append(f"- **{r.result}** {r.behaviour} (`{r.test}`){why}{where}")
    return "\n".join(lines) + "\n"


def write_report(rows: list[Row], kafka_version: str, target: str, out_dir: Path, client: str = "confluent") -> Path:
    import json
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "conformance.json").write_text(json.dumps(
        {"kafka_version": kafka_version, "target": target, "client": client, "harness_version": VERSION,
         "tested_set": tested_set_record(),
         "areas": {a: area_result([r for r in rows if r.area == a]) for a in AREAS},
         "tests": [r.__dict__ for r in rows]}, indent=1))
    path = out_dir / "conformance.md"
    path.write_text(render_markdown(rows, kafka_version, target, client))
    write_html_twin(path, f"KIP-932 conformance: Kafka {kafka_version}, {client}")
    return path
