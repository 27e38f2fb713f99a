"""The plots of a run, from its history, drawn with Plotly (figures the run page embeds).

Why Plotly: one figure definition gives an interactive HTML plot (zoom, hover on a fault band to read
its evidence, toggle series) and, through kaleido and a Chromium, the same figure as a static image
for CI logs and allure. Matplotlib draws static images only; Bokeh's image export needs Selenium.

Every plot has the run's seconds on its x axis and every fault as a band: a filled band per target
(node, link, consumer) from the fault's start to its heal, coloured by fault group; a fault that was
not applied is an empty dashed band, one never healed runs to the end. Jepsen's store is the model.
"""

from __future__ import annotations

from array import array
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any, Sequence

from harness.history.schema import Op

NS = 1e9
#: fault group -> colour (the bands and the fault table)
COLOURS = {"leader": "#d62728", "coordinator": "#9467bd", "partition": "#1f77b4", "truncate": "#8c564b",
           "latency": "#ff7f0e", "consumer": "#2ca02c", "restart": "#7f7f7f", "disk": "#17becf"}
QUANTILES = (0.5, 0.95, 0.99, 1.0)
#: poll marks drawn per consumer lane (crashes and closes always)
MARKS_PER_LANE = 2000


@dataclass
class Fault:
    id: str
    fault: str
    group: str
    targets: list[str]
    start: float
    end: float | None = None
    applied: bool | None = None
    healed: bool = False
    evidence: str = ""


@dataclass
class Series:
    """What the plots draw, in one pass over the history (seconds since the run started)."""
    duration: float = 0.0
    rates: dict[str, Counter] = field(default_factory=lambda: defaultdict(Counter))  # name -> second -> n
    #: name -> second -> latencies (s) of what completed in that second (8 bytes each)
    latencies: dict[str, dict[int, array]] = field(default_factory=lambda: defaultdict(dict))
    delivery_counts: Counter = field(default_factory=Counter)
    limit: int | None = None
    lanes: dict[str, list[tuple[float, float, str]]] = field(default_factory=lambda: defaultdict(list))
    marks: dict[str, list[tuple[float, str]]] = field(default_factory=lambda: defaultdict(list))  # lane events
    faults: list[Fault] = field(default_factory=list)

    def latency(self, name: str, t: float, seconds: float) -> None:
        self.latencies[name].setdefault(int(t), array("d")).append(seconds)


def fault_bands(ops: Sequence[Op]) -> list[Fault]:
    """The faults of a run from its fault-start / fault-heal operations."""
    from harness.faults import CATALOGUE  # (deferred: loads confluent_kafka)
    faults: dict[str, Fault] = {}
    end = ops[-1].time / NS if ops else 0.0
    for op in ops:
        v = op.value if isinstance(op.value, dict) else {}
        if op.f == "fault-start":
            name = v.get("fault", "?")
            f = faults.setdefault(v.get("id", ""), Fault(v.get("id", ""), name, CATALOGUE[name].group
                                                         if name in CATALOGUE else "?",
                                                         [str(t) for t in v.get("targets") or []] or [name],
                                                         op.time / NS))
            if op.type == "ok":
                f.applied = True if f.applied is None else f.applied
                f.evidence = str(v.get("evidence") or "")
            elif op.type == "fail":
                f.applied, f.evidence = False, str(v.get("error") or "")
        elif op.f == "fault-heal" and v.get("id") in faults and op.type in ("ok", "fail"):
            f = faults[v["id"]]
            f.end, f.healed = op.time / NS, op.type == "ok"
    for f in faults.values():
        f.end = f.end if f.end is not None else end
    return list(faults.values())


def series(ops: Sequence[Op]) -> Series:
    """Per second: produced (invoked), acknowledged by the broker, delivered, redelivered, accepted,
    released, rejected. Latencies: produce (broker's ack) -> first delivery, delivery -> the commit
    result of its acknowledgement, commit round trip. The delivery counts seen, the consumers' lanes."""
    s = Series(duration=ops[-1].time / NS if ops else 0.0)
    produced_at: dict[str, float] = {}  # records not delivered yet (a first delivery takes its own out)
    polled_at: dict[tuple, float] = {}  # (process, topic, partition, offset) -> delivery time
    awaiting: dict[str, list[float]] = defaultdict(list)  # process -> delivery times acknowledged, no result yet
    commit_at: dict[str, float] = {}
    started: dict[str, float] = {}
    for op in ops:
        t, v = op.time / NS, op.value if isinstance(op.value, dict) else {}
        sec = int(t)
        if op.f == "config" and op.type == "ok":
            s.limit = v.get("delivery_count_limit")
        elif op.f == "produce":
            if op.type == "invoke":
                s.rates["produced"][sec] += 1
            elif op.type == "ok":
                s.rates["acknowledged by the broker"][sec] += 1
                produced_at[v.get("id", "")] = t
        elif op.f == "poll" and op.type == "ok":
            for r in v.get("records", ()):
                s.rates["delivered"][sec] += 1
                count = r.get("delivery_count") or 0
                s.delivery_counts[count] += 1
                if count > 1:
                    s.rates["redelivered"][sec] += 1
                at = produced_at.pop(r.get("id"), None)
                if at is not None:
                    s.latency("produce -> first delivery", t, t - at)
                polled_at[(op.process, r.get("topic"), r.get("partition"), r.get("offset"))] = t
            if v.get("records") and len(s.marks[op.process]) < MARKS_PER_LANE:
                s.marks[op.process].append((t, f"poll {len(v['records'])}"))
        elif op.f == "acknowledge" and op.type == "ok":
            for r in v.get("records", ()):
                kind = {"ACCEPT": "accepted", "RELEASE": "released", "REJECT": "rejected"}.get(r.get("type"))
                if kind:
                    s.rates[kind][sec] += 1
                at = polled_at.pop((op.process, r.get("topic"), r.get("partition"), r.get("offset")), None)
                if at is not None and r.get("type") != "RENEW":
                    awaiting[op.process].append(at)
        elif op.f == "commit":
            if op.type == "invoke":
                commit_at[op.process] = t
                continue
            if op.process in commit_at:
                s.latency("commit round trip", t, t - commit_at.pop(op.process))
            if op.type == "ok":
                for at in awaiting.pop(op.process, []):
                    s.latency("delivery -> acknowledgement result", t, t - at)
        elif op.f == "callback" and op.type == "ok":
            for at in awaiting.pop(op.process, []):
                s.latency("delivery -> acknowledgement result", t, t - at)
        elif op.f == "start" and op.type == "ok" and op.process.startswith("consumer"):
            started[op.process] = t
        elif op.f in ("close", "crash") and op.type in ("ok", "info", "fail"):
            who = v.get("process", op.process) if op.f == "crash" else op.process
            if who in started:
                s.lanes[who].append((started.pop(who), t, "crashed" if op.f == "crash" else "closed"))
            s.marks[who].append((t, op.f))
    for who, at in started.items():
        s.lanes[who].append((at, s.duration, "running at the end"))
    s.faults = fault_bands(ops)
    return s


def _bands(fig: Any, faults: list[Fault], legend: bool = True) -> None:
    """Every fault as a band behind the plot: filled when applied, an empty dashed band when not. With
    `legend`, a line per fault at the plot's foot that reads its targets, status and evidence on hover
    (and hides or shows it from the legend)."""
    import plotly.graph_objects as go
    for f in faults:
        colour = COLOURS.get(f.group, "#333333")
        fig.add_vrect(x0=f.start, x1=max(f.end or f.start, f.start + 0.05), fillcolor=colour,
                      opacity=0.18 if f.applied else 0.0, line_width=0 if f.applied else 1,
                      line_dash="dash", line_color=colour, layer="below")
        if legend:
            fig.add_trace(go.Scatter(x=[f.start, f.end], y=[0, 0], mode="lines", line={"color": colour, "width": 6},
                                     name=f"{f.fault} on {', '.join(f.targets)}", legendgroup="faults",
                                     hovertext=_fault_text(f), hoverinfo="text", opacity=1.0 if f.applied else 0.4))


def _fault_text(f: Fault) -> str:
    status = ("applied" if f.applied else "NOT applied") + (", healed" if f.healed else ", not healed")
    return f"{f.id}: {f.fault} on {', '.join(f.targets)}, {f.start:.1f}-{f.end:.1f} s, {status}. {f.evidence[:300]}"


def _quantile(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def figures(s: Series, anomalies: Sequence[tuple[float, str, str]] = (), archived_at_limit: int | None = None
            ) -> dict[str, Any]:
    """The run's figures, by title: throughput, latency quantiles, delivery counts, consumer lanes.
    `anomalies` (time, label, process) are the operations of the anomalous records' stories, marked on
    the throughput plot and on their process's lane;
    `archived_at_limit`: the records the checkers found archived at the limit (the verdict's count)."""
    import plotly.graph_objects as go
    seconds = list(range(int(s.duration) + 1))
    out: dict[str, Any] = {}

    fig = go.Figure()
    for name in ("produced", "acknowledged by the broker", "delivered", "redelivered", "accepted", "released",
                 "rejected"):
        counts = s.rates.get(name, Counter())
        fig.add_trace(go.Scatter(x=seconds, y=[counts.get(sec, 0) for sec in seconds], name=name, mode="lines",
                                 visible=True if name in ("produced", "delivered", "accepted", "redelivered")
                                 else "legendonly"))
    if anomalies:
        fig.add_trace(go.Scatter(x=[t for t, _, _ in anomalies], y=[0] * len(anomalies), mode="markers",
                                 marker={"symbol": "x", "size": 11, "color": "black"}, name="anomalous records",
                                 hovertext=[label for _, label, _ in anomalies], hoverinfo="text"))
    _bands(fig, s.faults)
    fig.update_layout(title="Throughput (records per second); faults shaded", xaxis_title="seconds",
                      yaxis_title="records/s")
    out["throughput"] = fig

    fig = go.Figure()
    for name, per_second in s.latencies.items():
        windows: dict[int, list[float]] = defaultdict(list)
        width = max(1, int(s.duration // 60))  # at most ~60 windows
        for sec, latencies in per_second.items():
            windows[sec // width * width].extend(x * 1000 for x in latencies)
        xs = sorted(windows)
        for q in QUANTILES:
            fig.add_trace(go.Scatter(x=xs, y=[_quantile(windows[x], q) for x in xs], mode="lines+markers",
                                     name=f"{name} {'max' if q == 1.0 else f'p{int(q * 100)}'}",
                                     legendgroup=name, visible=True if q in (0.5, 0.99) else "legendonly"))
    _bands(fig, s.faults)
    fig.update_layout(title="Latency quantiles over time (ms)", xaxis_title="seconds", yaxis_title="ms",
                      yaxis_type="log")
    out["latency"] = fig

    counts = sorted(s.delivery_counts)
    fig = go.Figure(go.Bar(x=counts, y=[s.delivery_counts[c] for c in counts], name="deliveries",
                           marker_color=["#d62728" if s.limit and c >= s.limit else "#1f77b4" for c in counts]))
    fig.update_layout(title="Delivery counts" + (f" (limit {s.limit}: at the limit in red, archived if not "
                                                 "accepted)" if s.limit else "")
                      + (f"; {archived_at_limit} records archived at the limit" if archived_at_limit is not None
                         else ""),
                      xaxis_title="delivery count", yaxis_title="deliveries", xaxis_dtick=1)
    out["delivery counts"] = fig

    fig = go.Figure()
    for f in s.faults:  # a lane per fault target above the consumers' (the node, link or consumer it hit)
        colour = COLOURS.get(f.group, "#333333")
        for target in f.targets:
            fig.add_trace(go.Scatter(x=[f.start, f.end], y=[f"fault: {target}"] * 2, mode="lines", showlegend=False,
                                     line={"width": 10, "color": colour, "dash": "solid" if f.applied else "dot"},
                                     opacity=1.0 if f.applied else 0.5, hovertext=_fault_text(f), hoverinfo="text"))
    for who, spans in sorted(s.lanes.items()):
        for start, end, how in spans:
            fig.add_trace(go.Scatter(x=[start, end], y=[who, who], mode="lines", line={"width": 10, "color":
                                     "#2ca02c" if how != "crashed" else "#ff7f0e"}, showlegend=False,
                                     hovertext=f"{who}: {start:.1f}-{end:.1f} s, {how}", hoverinfo="text"))
        marks = s.marks.get(who, [])
        fig.add_trace(go.Scatter(x=[t for t, _ in marks], y=[who] * len(marks), mode="markers", showlegend=False,
                                 marker={"symbol": ["x" if m == "crash" else "line-ns" for _, m in marks],
                                         "size": 9, "line": {"width": 1}, "color": "#333"},
                                 hovertext=[m for _, m in marks], hoverinfo="text+x"))
    story = [(t, label, who) for t, label, who in anomalies if who in s.lanes]
    if story:
        fig.add_trace(go.Scatter(x=[t for t, _, _ in story], y=[who for _, _, who in story], mode="markers",
                                 name="anomalous records", marker={"symbol": "x", "size": 11, "color": "#c62828"},
                                 hovertext=[label for _, label, _ in story], hoverinfo="text+x"))
    _bands(fig, s.faults, legend=False)
    fig.update_layout(title="Consumers: sessions (green; orange: ended by a crash), polls and crashes"
                      + ("; the anomalous records' stories as red crosses" if story else ""),
                      xaxis_title="seconds",
                      height=160 + 30 * max(1, len(s.lanes) + sum(len(f.targets) for f in s.faults)))
    out["consumers"] = fig
    return out
