"""One self-contained HTML page per run (`run.html` in its run directory): the verdict per checker with
its anomalies and allowances, the fault table with evidence, the plots (harness.report.plots), the
reproduce command and links to the history, the verdict and the node and client logs.

The page is rendered by a Jinja2 template (autoescaped) and carries Plotly's script inline, so it opens
from a CI artifact or a mail attachment with no network. A run that did not reach its verdict (an
error, Ctrl-C) still gets its page: the plots of what the history holds, and the verdict says UNKNOWN.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from harness.history.schema import Op
from harness.history.story import record_named, story_ops
from harness.report.browser import chromium
from harness.report.html import STYLE
from harness.report.plots import COLOURS, figures, series
from harness.sys.files import read_json_object

PAGE = "run.html"
#: anomalies listed per checker on the page (the verdict.json has them all)
ANOMALIES_SHOWN = 20

_TEMPLATE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{ title }}: {{ word }}</title>
<style>{{ style|safe }}</style></head><body>
<h1>{{ title }} <span class="word {{ word }}">{{ word }}</span></h1>
<p>Kafka {{ kafka_version }} &middot; seed {{ seed }} &middot; engine {{ engine }} &middot;
{{ duration }} s of history, {{ n_ops }} operations</p>
{% if reproduce %}<p>Reproduce: <code>{{ reproduce }}</code></p>{% endif %}
{% if chaos_missing %}<p><b>The chaos asked for did not happen:</b> {{ chaos_missing }}</p>{% endif %}
<h2>Checkers</h2>
{% if checkers %}<table><tr><th>checker</th><th>verdict</th><th>anomalies</th><th>allowances</th></tr>
{% for c in checkers %}<tr><td>{{ c.name }}</td><td><span class="word {{ c.word }}">{{ c.word }}</span>
{% if c.reason %}<br>{{ c.reason }}{% endif %}</td>
<td>{% if c.anomalies %}{{ c.n_anomalies }}<ul class="anomalies">{% for a in c.anomalies %}<li><b>{{ a.kind }}</b>: {{ a.message }}</li>{% endfor %}</ul>{% endif %}</td>
<td>{% for k, n in c.allowances %}{{ k }}: {{ n }}<br>{% endfor %}</td></tr>{% endfor %}</table>
{% else %}<p>No verdict: the run ended before its checkers ran (UNKNOWN, never a pass).</p>{% endif %}
<h2>Faults</h2>
{% if faults %}<table><tr><th>id</th><th>fault</th><th>targets</th><th>from&ndash;to (s)</th><th>applied</th><th>healed</th><th>evidence</th></tr>
{% for f in faults %}<tr><td><span class="swatch" style="background: {{ f.colour }}"></span>{{ f.id }}</td><td>{{ f.fault }} ({{ f.group }})</td>
<td>{{ f.targets|join(", ") }}</td><td>{{ "%.1f"|format(f.start) }}&ndash;{{ "%.1f"|format(f.end) }}</td>
<td>{{ "yes" if f.applied else "NOT APPLIED" }}</td><td>{{ "yes" if f.healed else "no" }}</td><td>{{ f.evidence }}</td></tr>{% endfor %}</table>
{% else %}<p>No fault in this run.</p>{% endif %}
<h2>Plots</h2>
{% for title, html in plots %}<div class="plot" data-title="{{ title }}">{{ html|safe }}</div>{% endfor %}
<h2>Files</h2>
<ul>{% for name in files %}<li><a href="{{ name }}">{{ name }}</a></li>{% endfor %}</ul>
</body></html>
"""


def _checkers(verdict: dict[str, Any] | None) -> list[dict[str, Any]]:
    out = []
    for r in (verdict or {}).get("results", ()):
        valid = r.get("valid")
        anomalies = r.get("anomalies") or []
        out.append({"name": r.get("checker", "?"), "word": {True: "PASS", False: "FAIL"}.get(valid, "UNKNOWN"),
                    "reason": r.get("reason") or "", "n_anomalies": len(anomalies),
                    "anomalies": anomalies[:ANOMALIES_SHOWN],
                    "allowances": sorted((r.get("allowances") or {}).items())})
    return out


def archived_at_limit(verdict: dict[str, Any] | None) -> int | None:
    """The records archived at the delivery-count limit, as the no-loss checker counted them."""
    for r in (verdict or {}).get("results", ()):
        if r.get("checker") == "no-loss" and isinstance(r.get("stats"), dict):
            return r["stats"].get("archived_at_limit")
    return None


#: story operations marked per page beyond the evidence itself (a failed run of 10^6 operations stays a
#: page, not a freeze)
STORY_MARKS = 2000


def anomaly_marks(ops: Sequence[Op], verdict: dict[str, Any] | None) -> list[tuple[float, str, str]]:
    """(seconds, label, process) of the operations an anomaly cites as evidence (history indexes), and of
    the whole story (`harness.history.story`: produce, deliveries, acknowledgements and their results,
    crashes of its holders, faults while held) of the record its message names (the first
    `ANOMALIES_SHOWN` records named). Every evidence operation is kept; the stories add at most
    `STORY_MARKS`. Sorted by time."""
    evidence: dict[int, tuple[float, str, str]] = {}
    named: dict[tuple[str, int, int], str] = {}
    for r in (verdict or {}).get("results", ()):
        for a in (r.get("anomalies") or [])[:200]:
            label = f"{r.get('checker')}: {a.get('kind')}: {a.get('message', '')[:200]}"
            for index in a.get("evidence") or ():
                op = ops[index] if isinstance(index, int) and 0 <= index < len(ops) else None
                if op is not None and op.index == index:  # a history's index is its position
                    evidence.setdefault(index, (op.time / 1e9, label, op.process))
            key = record_named(str(a.get("message", "")))
            if key is not None and len(named) < ANOMALIES_SHOWN:  # each story is a scan of the history
                named.setdefault(key, label)
    stories: dict[int, tuple[float, str, str]] = {}
    for key, label in named.items():
        topic, partition, offset = key
        for op, _ in story_ops(ops, key):
            if op.index not in evidence and op.index not in stories and len(stories) < STORY_MARKS:
                stories[op.index] = (op.time / 1e9, f"{label} | {op.process} {op.f} ({op.type}) of "
                                     f"{topic}-{partition}@{offset}", op.process)
    return sorted({**stories, **evidence}.values(), key=lambda mark: mark[0])


def render(ops: Sequence[Op], verdict: dict[str, Any] | None, title: str, files: Sequence[str] = ()) -> str:
    """The page's HTML: self-contained (Plotly's script once, inline)."""
    import jinja2
    s = series(ops)
    figs = figures(s, anomaly_marks(ops, verdict), archived_at_limit(verdict))
    plots, first = [], True
    for name, fig in figs.items():
        plots.append((name, fig.to_html(full_html=False, include_plotlyjs=first, div_id=f"plot-{name.replace(' ', '-')}")))
        first = False
    word = (verdict or {}).get("verdict") or "UNKNOWN"
    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)
    return env.from_string(_TEMPLATE).render(
        title=title, word=word, kafka_version=(verdict or {}).get("kafka_version", "?"),
        seed=(verdict or {}).get("seed", "?"), engine=(verdict or {}).get("engine", "-"),
        duration=f"{s.duration:.1f}", n_ops=len(ops), reproduce=(verdict or {}).get("reproduce", ""),
        chaos_missing=(verdict or {}).get("chaos_missing") or "", checkers=_checkers(verdict),
        faults=[{**f.__dict__, "colour": COLOURS.get(f.group, "#333")} for f in s.faults], plots=plots,
        files=list(files), style=STYLE)


def read_verdict(run_dir: Path) -> dict[str, Any] | None:
    """The run's verdict.json (None if it was not written): a JSON object in a regular file of bounded size,
    else one line of bad input naming it (`harness.sys.files`: a fifo never blocks, a link to /dev/zero never
    fills the memory)."""
    path = run_dir / "verdict.json"
    if not path.exists():
        return None
    return read_json_object(path, "the run's verdict")


_READ = object()


def write_run_page(run_dir: Path, ops: Sequence[Op], title: str, verdict: Any = _READ) -> Path:
    """`run_dir/run.html` from the history `ops` and the run's verdict (`read_verdict`, unless given)."""
    if verdict is _READ:
        verdict = read_verdict(run_dir)
    files = [p.relative_to(run_dir).as_posix() for p in sorted(run_dir.rglob("*"))
             if p.is_file() and p.name != PAGE and p.suffix in (".json", ".jsonl", ".log", ".parquet", ".txt")]
    path = run_dir / PAGE
    _replace_text(path, render(ops, verdict, title, files))
    return path


def _replace_text(path: Path, text: str) -> None:
    """`path` holding `text`, written beside it and renamed over it: whatever `path` was (a fifo would block
    a plain write until a reader came), it is replaced, and a reader never sees half a page."""
    import os
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_plot_images(run_dir: Path, ops: Sequence[Op]) -> list[Path]:
    """The page's plots as static images, `run_dir/plots/<name>.png` (for allure and CI logs), drawn by
    kaleido in the same Chromium the pages' tests use, all in one browser session."""
    import os

    import plotly.io as pio

    os.environ.setdefault("BROWSER_PATH", chromium())  # kaleido's browser: Debian's, never a download
    verdict = read_verdict(run_dir)
    figs = figures(series(ops), anomaly_marks(ops, verdict), archived_at_limit(verdict))
    (run_dir / "plots").mkdir(exist_ok=True)
    paths = [run_dir / "plots" / f"{name.replace(' ', '-')}.png" for name in figs]
    pio.write_images(list(figs.values()), paths, width=1200, height=500)
    return paths
