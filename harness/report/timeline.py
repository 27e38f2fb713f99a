"""The fault timeline of a run: one HTML file with an inline SVG, no plotting library needed.

Top: one row per target (node, link, consumer), a bar from each fault's start
to its heal, coloured by fault group; a fault that was not applied is drawn
hatched grey, one never healed runs to the end. Bottom: throughput per second
(records produced and acknowledged by the broker, records delivered to
consumers), so a fault's effect on progress can be seen beside it.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Sequence

from harness.history.schema import Op

COLOURS = {"leader": "#d62728", "coordinator": "#9467bd", "partition": "#1f77b4", "truncate": "#8c564b",
           "latency": "#ff7f0e", "consumer": "#2ca02c", "restart": "#7f7f7f"}
NS = 1e9


def fault_bars(ops: Sequence[Op]) -> list[dict]:
    """[{id, fault, targets, start, end, applied, healed}] in seconds, from fault-start/heal operations."""
    bars: dict[str, dict] = {}
    end = ops[-1].time / NS if ops else 0.0
    for op in ops:
        v = op.value if isinstance(op.value, dict) else {}
        if op.f == "fault-start":
            bar = bars.setdefault(v.get("id", ""), {"id": v.get("id", ""), "fault": v.get("fault", "?"),
                                                    "targets": v.get("targets") or [], "start": op.time / NS,
                                                    "end": None, "applied": None, "healed": False})
            if op.type == "ok":
                bar["applied"] = True if bar["applied"] is None else bar["applied"]
            elif op.type == "fail":
                bar["applied"] = False
        elif op.f == "fault-heal" and v.get("id") in bars and op.type in ("ok", "fail"):
            bars[v["id"]]["end"] = op.time / NS
            bars[v["id"]]["healed"] = op.type == "ok"
    for bar in bars.values():
        bar["end"] = bar["end"] if bar["end"] is not None else end
    return list(bars.values())


def throughput(ops: Sequence[Op]) -> dict[str, list[int]]:
    """Per whole second: records produced (ok) and records delivered (poll ok)."""
    seconds = int(ops[-1].time / NS) + 1 if ops else 0
    produced, delivered = [0] * seconds, [0] * seconds
    for op in ops:
        if op.type != "ok":
            continue
        if op.f == "produce":
            produced[int(op.time / NS)] += 1
        elif op.f == "poll":
            delivered[int(op.time / NS)] += len(op.value.get("records", ()))
    return {"produced": produced, "delivered": delivered}


def render(ops: Sequence[Op], title: str = "fault timeline") -> str:
    from harness.faults import CATALOGUE
    bars, rates = fault_bars(ops), throughput(ops)
    duration = max(1.0, ops[-1].time / NS if ops else 1.0)
    rows = sorted({t for bar in bars for t in (bar["targets"] or [bar["fault"]])})
    left, width, row_h = 170, 900, 18
    x = lambda t: left + width * t / duration  # noqa: E731
    top_h = row_h * max(1, len(rows)) + 20
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 20}" height="{top_h + 190}" '
           'font-family="sans-serif" font-size="11">',
           '<defs><pattern id="na" width="6" height="6" patternUnits="userSpaceOnUse">'
           '<path d="M0,6 l6,-6" stroke="#999"/></pattern></defs>']
    for i, row in enumerate(rows):
        out.append(f'<text x="4" y="{i * row_h + 13}">{html.escape(row)}</text>')
    for bar in bars:
        group = CATALOGUE[bar["fault"]].group if bar["fault"] in CATALOGUE else "?"
        fill = COLOURS.get(group, "#333") if bar["applied"] else "url(#na)"
        status = "applied" if bar["applied"] else "NOT applied"
        status += ", healed" if bar["healed"] else ", heal failed or missing"
        for target in bar["targets"] or [bar["fault"]]:
            i = rows.index(target)
            out.append(f'<rect x="{x(bar["start"]):.1f}" y="{i * row_h + 2}" width="{max(1.0, x(bar["end"]) - x(bar["start"])):.1f}" '
                       f'height="{row_h - 4}" fill="{fill}" stroke="#333" stroke-width="0.5"><title>'
                       f'{html.escape(bar["id"])}: {bar["start"]:.1f}s-{bar["end"]:.1f}s ({status})</title></rect>')
    peak = max([1] + rates["produced"] + rates["delivered"])
    base = top_h + 160
    for name, colour in (("produced", "#1f77b4"), ("delivered", "#2ca02c")):
        points = " ".join(f"{x(s + 0.5):.1f},{base - 140 * n / peak:.1f}" for s, n in enumerate(rates[name]))
        out.append(f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="1.5"/>')
    out.append(f'<text x="4" y="{base - 120}">records/s (max {peak})</text>'
               f'<text x="4" y="{base - 100}" fill="#1f77b4">produced</text>'
               f'<text x="4" y="{base - 85}" fill="#2ca02c">delivered</text>'
               f'<line x1="{left}" y1="{base}" x2="{left + width}" y2="{base}" stroke="#333"/>'
               f'<text x="{left}" y="{base + 15}">0 s</text><text x="{left + width - 30}" y="{base + 15}">'
               f'{duration:.0f} s</text></svg>')
    legend = " ".join(f'<span style="color:{c}">&#9632; {g}</span>' for g, c in COLOURS.items())
    applied = sum(1 for b in bars if b["applied"])
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title></head><body>"
            f"<h3>{html.escape(title)}</h3><p>{len(bars)} faults, {applied} applied; hatched: not applied. "
            f"{legend}</p>{''.join(out)}</body></html>")


def write_timeline(ops: Sequence[Op], path: Path, title: str = "fault timeline") -> Path:
    path.write_text(render(ops, title))
    return path
