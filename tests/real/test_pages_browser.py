"""The run page in a real browser: headless Chromium (Debian's package, driven by Playwright) opens a
page rendered from a small history and a failed verdict; no script error, every plot drawn, a
screenshot taken. No cluster: the history is written here. Chromium missing is a failure naming the
install command, never a skip (scripts/install.sh installs it)."""

from __future__ import annotations

import json
from pathlib import Path

from harness.history.schema import Op
from harness.report.browser import open_page
from harness.report.page import write_run_page

pytest_plugins = ["pytester"]


def _history() -> list[Op]:
    c, t = "consumer-0", "t"
    ops = [Op(0, 0, "harness", "ok", "config", {"schema_version": 1, "delivery_count_limit": 3}),
           Op(1, int(0.1e9), c, "ok", "start", {"client": "x"})]
    for i in range(30):
        at = int((0.2 + i * 0.2) * 1e9)
        rec = {"id": f"r{i}", "topic": t, "partition": 0, "offset": i}
        ops += [Op(0, at, "producer-0", "invoke", "produce", {"id": f"r{i}", "topic": t}),
                Op(0, at + 5_000_000, "producer-0", "ok", "produce", rec),
                Op(0, at + 400_000_000, c, "ok", "poll", {"records": [{**rec, "delivery_count": 1 + i % 3}]}),
                Op(0, at + 450_000_000, c, "ok", "acknowledge", {"records": [{**rec, "type": "ACCEPT"}]}),
                Op(0, at + 460_000_000, c, "invoke", "commit", {}),
                Op(0, at + 500_000_000, c, "ok", "commit", {"results": [{"topic": t, "partition": 0, "error": None}]})]
    ops += [Op(0, int(1.0e9), "nemesis", "invoke", "fault-start", {"id": "leader-kill-1", "fault": "leader-kill",
                                                                   "targets": ["n2"]}),
            Op(0, int(1.2e9), "nemesis", "ok", "fault-start", {"id": "leader-kill-1", "fault": "leader-kill",
                                                               "targets": ["n2"], "evidence": "leader of t-0 moved n2 -> n1"}),
            Op(0, int(3.0e9), "nemesis", "ok", "fault-heal", {"id": "leader-kill-1", "fault": "leader-kill"}),
            Op(0, int(4.0e9), "nemesis", "fail", "fault-start", {"id": "partition-2", "fault": "partition-leader",
                                                                 "targets": ["n1->n3"], "error": "no leader"}),
            Op(0, int(7.0e9), "harness", "info", "crash", {"process": c})]
    ops.sort(key=lambda op: op.time)
    return [Op(i, op.time, op.process, op.type, op.f, op.value) for i, op in enumerate(ops)]


def test_a_failed_runs_page_opens_in_chromium_with_every_plot_drawn(tmp_path):
    ops = _history()
    verdict = {"verdict": "FAIL", "overall": False, "kafka_version": "4.4.0", "seed": 7, "engine": "inprocess",
               "reproduce": "share-harness run --seed 7", "chaos_missing": None,
               "results": [{"checker": "no-loss", "valid": False, "reason": "",
                            "anomalies": [{"kind": "lost", "message": "record r3 at t-0@3 was acknowledged by the "
                                           "broker but never delivered", "evidence": [9]}],
                            "allowances": {}},
                           {"checker": "delivery-count", "valid": True, "anomalies": [],
                            "allowances": {"delivery-count-lag": 2}}]}
    (tmp_path / "verdict.json").write_text(json.dumps(verdict))
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "n1-server.log").write_text("started\n")
    page = write_run_page(tmp_path, ops, "a failed run <seed 7>")
    text = page.read_text()
    assert "a failed run &lt;seed 7&gt;" in text and "<script" in text  # escaped; the script inline
    assert 'href="logs/n1-server.log"' in text and "NOT APPLIED" in text and "leader of t-0 moved n2 -&gt; n1" in text
    assert "https://" not in text.split("<body>")[1].split("<h2>Plots</h2>")[0]  # nothing fetched from a network

    shot = tmp_path / "page.png"
    opened = open_page(page, screenshot=shot)
    assert opened.errors == []
    assert opened.plots == ["throughput", "latency", "delivery counts", "consumers"]
    assert opened.title.endswith("FAIL")
    assert shot.stat().st_size > 20_000  # a page with its plots, not a blank one


def test_no_chromium_is_one_line_naming_the_install_command(monkeypatch, tmp_path):
    import pytest

    from harness.errors import HarnessError
    from harness.report.browser import chromium
    monkeypatch.delenv("KSH_CHROMIUM", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(HarnessError, match=r"no Chromium found .*scripts/install.sh"):
        chromium()


ALLURE_INNER = """
import json
from pathlib import Path
from types import SimpleNamespace

from ksh_fixtures.plugin import attach_run


def test_a_run(request):
    run_dir = Path({run_dir!r})
    attach_run(SimpleNamespace(run_dir=run_dir, spec=SimpleNamespace(name="a run", seed=7), overall=False),
               request.config)
"""


def test_allure_gets_the_run_page_plots_verdict_history_and_logs(pytester, tmp_path):
    """Every run test's allure result carries its run's page, its plots as images, the verdict, the
    history and every node's and client's log: read back from the allure results themselves."""
    run_dir = tmp_path / "run"
    (run_dir / "logs").mkdir(parents=True)
    (run_dir / "history.jsonl").write_text("".join(json.dumps(op.to_json()) + "\n" for op in _history()))
    (run_dir / "verdict.json").write_text(json.dumps({"verdict": "PASS", "overall": True, "results": []}))
    for name in ("n1-server.log", "consumer-0.log"):
        (run_dir / "logs" / name).write_text("a line\n")
    pytester.makepyfile(test_inner=ALLURE_INNER.format(run_dir=str(run_dir)))
    results = tmp_path / "allure"
    outcome = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--alluredir", str(results), timeout=180)
    assert outcome.ret == 0, outcome.stdout.str()
    [result] = [json.loads(p.read_text()) for p in results.glob("*-result.json")]
    attached = {a["name"]: results / a["source"] for a in result.get("attachments", [])}
    assert set(attached) >= {"run.html", "throughput.png", "latency.png", "delivery-counts.png", "consumers.png",
                             "verdict.json", "history.jsonl", "n1-server.log", "consumer-0.log"}, sorted(attached)
    assert all(Path(p).is_file() and Path(p).stat().st_size > 0 for p in attached.values())
    assert Path(attached["throughput.png"]).read_bytes()[:4] == b"\x89PNG"
    assert "Plotly.newPlot" in Path(attached["run.html"]).read_text()  # written for the run, which had none


def test_every_report_page_has_the_same_look_and_opens_without_errors(tmp_path):
    """The HTML twins of the Markdown reports (conformance, matrix, certificates and their comparison)
    and the nightly report: the harness's one style, result words as badges, no script error."""
    from harness.certify.matrix import Cell, write_matrix
    from harness.conformance.report import Row, write_report
    from harness.report.html import STYLE
    conformance = write_report([Row("ordering", "suites/conformance/test_ordering.py::test_a", "in order", "pass"),
                                Row("locks", "suites/conformance/test_locks.py::test_b", "lock", "fail", "held")],
                               "4.4.0", "local", tmp_path / "conformance", "java").with_suffix(".html")
    cell = Cell("4.4.0", "java", tmp_path / "cell", areas={"ordering": "PASS", "locks": "FAIL"},
                evidence=["fail: `test_b`: held"])
    write_matrix([cell], tmp_path)
    pages = [(conformance, {"PASS", "FAIL"}), (tmp_path / "matrix.html", {"PASS", "FAIL"})]

    # the certificates kept in the repository, each rendered again, and their comparison
    import shutil

    from harness.certify.certificate import render_certificate, write_comparison
    from harness.report.html import write_html_twin
    certs, verdicts = tmp_path / "certificates", set()
    shutil.copytree(Path(__file__).resolve().parents[2] / "docs" / "certificates", certs)
    for cert_json in sorted(certs.glob("*/certificate.json")):
        cert = json.loads(cert_json.read_text())
        md = cert_json.with_suffix(".md")
        md.write_text(render_certificate(cert))
        pages.append((write_html_twin(md, f"Certificate: {cert['driver']}"), {cert["verdict"]}))
        verdicts.add(cert["verdict"])
    write_comparison(certs)
    pages.append((certs / "index.html", verdicts))

    from harness.spark.nightly import report_html
    nightly = tmp_path / "nightly.html"
    nightly.write_text(report_html([
        {"scenario": "leader-kill", "night": "2026-11-26", "runs": 4, "passed": 4, "anomalies": 0, "pass_rate": 1.0},
        {"scenario": "leader-kill", "night": "2026-11-27", "runs": 4, "passed": 3, "anomalies": 2, "pass_rate": 0.75}]))
    pages.append((nightly, set()))

    assert len(pages) >= 6
    for path, words in pages:
        text = path.read_text()
        assert STYLE in text
        opened = open_page(path)
        assert opened.errors == [] and words <= set(opened.words), (path, opened)
    assert "3/4 (2 anomalies)" in nightly.read_text()


def test_share_harness_page_rewrites_a_runs_page_and_screenshots_it(tmp_path, capsys):
    from harness.cli import main
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "history.jsonl").write_text("".join(json.dumps(op.to_json()) + "\n" for op in _history()))
    (run_dir / "spec.json").write_text(json.dumps({"spec": {"name": "a run", "seed": 3}}))
    assert main(["page", str(run_dir), "--screenshot", str(tmp_path / "shot.png")]) == 0
    out = capsys.readouterr().out
    assert f"page: {run_dir / 'run.html'}" in out and "4 plots drawn" in out
    assert "a run seed 3" in (run_dir / "run.html").read_text() and (tmp_path / "shot.png").stat().st_size > 20_000
    assert main(["page", str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is not a run directory" in err[0]


def test_an_anomalous_records_whole_story_is_marked_and_a_malformed_history_is_one_line(tmp_path, capsys):
    """The anomaly names record t-0@3 and cites one delivery: that record's produce, delivery,
    acknowledgement and commit are marked (with the faults while it was held), no other record's, and
    the evidence is kept even when a story is long. A history the page cannot draw is one line naming
    it, never a traceback."""
    from harness.cli import main
    from harness.history.story import story_ops
    from harness.report import page as run_page
    ops = _history()
    [cited] = [op for op in ops if op.f == "poll" and op.value["records"][0]["offset"] == 3]
    verdict = {"results": [{"checker": "no-loss", "valid": False,
                            "anomalies": [{"kind": "lost", "message": "record t-0@3 lost", "evidence": [cited.index]}]}]}
    marks = run_page.anomaly_marks(ops, verdict)
    story = [op for op, _ in story_ops(ops, ("t", 0, 3))]
    assert {op.f for op in story} >= {"produce", "poll", "acknowledge", "commit", "fault-start"}
    assert sorted((t, who) for t, _, who in marks) == sorted((op.time / 1e9, op.process) for op in story)
    others = {(op.time / 1e9, op.process) for op in ops
              if op.f in ("produce", "poll") and op.type == "ok" and op not in story}
    assert others and not others & {(t, who) for t, _, who in marks}
    assert {"producer-0", "consumer-0"} <= {who for _, _, who in marks}
    assert all(label.startswith("no-loss: lost: record t-0@3 lost") for _, label, _ in marks)
    assert run_page.anomaly_marks(ops, {"results": [{"anomalies": [{"evidence": [10_000, "x"]}]}]}) == []

    # a one-record batch of many: only the named record's story; and the evidence outlives the cap
    big = ops + [Op(len(ops), ops[-1].time + 1, "consumer-0", "ok", "poll",
                    {"records": [{"topic": "t", "partition": 0, "offset": o, "delivery_count": 2} for o in range(30)]})]
    verdict["results"][0]["anomalies"][0]["evidence"] = [len(ops)]
    marked = run_page.anomaly_marks(big, verdict)
    assert len(marked) == len(story) + 1 and marked[-1][0] == big[-1].time / 1e9  # the 30-record poll, once
    run_page.STORY_MARKS, saved = 0, run_page.STORY_MARKS
    try:
        assert [t for t, _, _ in run_page.anomaly_marks(big, verdict)] == [big[-1].time / 1e9]
    finally:
        run_page.STORY_MARKS = saved

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    bad = [op.to_json() for op in ops] + [{"index": len(ops), "time": ops[-1].time + 1, "process": "nemesis",
                                           "type": "ok", "f": "fault-start", "value": {"id": "x", "fault": ["a"]}}]
    (run_dir / "history.jsonl").write_text("".join(json.dumps(op) + "\n" for op in bad))
    assert main(["page", str(run_dir)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not a history a share-harness run wrote" in err[0], err
