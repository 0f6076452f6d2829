"""A Timeline drawn as one self-contained HTML page: inline CSS, inline SVG and a small inline
script, no external URL (it opens offline, from a file).

One section per timeline (a bench that runs several workloads puts each in its own section of
one page). Each section, on one time axis (seconds from the run's origin):

- a chart of the pending pods (area) and the nodes (line) over time;
- a strip of the faults and notes the driver marked (numbered; a line across the chart and
  the lanes, a band while the fault lasted, listed under the picture) and one of the cluster
  autoscaler's scale-ups (up triangles) and scale-downs (down triangles);
- a lane per node (`data-node`): shaded while the node existed, hatched grey while it was not
  Ready; in it a bar per pod bound there (`data-pod`, namespace/name) from its binding to its
  deletion or finish (or the end of the run), coloured by priority (the legend gives the
  colours), stacked in rows as pods overlap; each nominatedNodeName span as a hatched,
  outlined bar on the nominated node's lane (`data-nominated`); a red cross where a
  preemption victim's bar ends (`data-victim`).

Under the section's title: its figures (counts, the time span), the driver's notes and, when
the driver measured the run itself, its facts as a table (`Timeline.facts`: a replay's
report). After the sections, tables of the page (`Table`: kemu.whatif's differences).

A pod's story (created, nominated, bound, preempted, terminating, deleted, with times) is the
tooltip of its bar (an SVG <title>); a click on any of its marks opens a side panel filled by
the script from the section's JSON (with links to the preemptor and the victims). The script
also counts what was drawn into `#drawn` (`data-lanes`, `data-bars`).

Sizes: a lane per node whatever their number (rows shrink to 1 px and labels thin out, so a
few thousand nodes make a tall page) and one rect with its title per binding: about 0.4 KB
per pod.
"""

from __future__ import annotations

import html
import json
import math
import os
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from kemu.timeline.model import Marker, MarkerKind, NodeTrack, PodTrack, Timeline

LABEL_W: Final = 190
PLOT_W: Final = 1150
RIGHT_W: Final = 60
WIDTH: Final = LABEL_W + PLOT_W + RIGHT_W
AXIS_H: Final = 22
CHART_H: Final = 110
FAULT_ROW_H: Final = 13
FAULT_ROWS: Final = 3
SCALE_H: Final = 16
LANES_TARGET_H: Final = 900.0
"""The height the lanes aim at; rows shrink to fit, down to MIN_ROW_H."""
MAX_ROW_H: Final = 7.0
MIN_ROW_H: Final = 1.0
MAX_ROWS: Final = 10
"""Rows per lane: pods overlapping beyond it share rows."""
LABEL_GAP: Final = 11.0
"""The least vertical distance between two lane labels (pixels)."""
MAX_LISTED_MARKERS: Final = 500
PALETTE: Final = (
    "#fde725",
    "#a0da39",
    "#4ac16d",
    "#1fa187",
    "#277f8e",
    "#365c8d",
    "#46327e",
    "#440154",
)
"""Priority colours, lowest to highest (viridis)."""


@dataclass(frozen=True)
class Table:
    """A table of its own on the page, after the runs' sections (kemu.whatif's differences)."""

    title: str
    header: tuple[str, ...]
    rows: Sequence[Sequence[object]]
    empty: str = "(none)"
    """What the section says when there are no rows."""


class OutputPathError(ValueError):
    """An --html path that cannot be written; the message says why."""


def check_output_path(path: str) -> None:
    """Raises OutputPathError unless `path` can be written as a file: before a run, so that a
    bad --html fails at once rather than after the run."""
    if not path:
        raise OutputPathError("no file name given")
    if os.path.isdir(path):
        raise OutputPathError(f"{path} is a directory")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise OutputPathError(f"{parent}: no such directory")
    if not os.access(parent, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        raise OutputPathError(f"{path}: permission denied")


def write_page(
    path: str,
    timelines: Sequence[Timeline],
    title: str = "kemu timeline",
    tables: Sequence[Table] = (),
) -> int:
    """Renders and writes the page; its size in bytes. OSError as open() raises it."""
    text = render_page(timelines, title, tables)
    data = text.encode()
    with open(path, "wb") as f:
        f.write(data)
    return len(data)


# ---------------------------------------------------------------------- the page


def render_page(
    timelines: Sequence[Timeline], title: str = "kemu timeline", tables: Sequence[Table] = ()
) -> str:
    sections = "\n".join(_Section(t, i).render() for i, t in enumerate(timelines))
    if not timelines:
        sections = '<p class="empty">No run was recorded.</p>'
    sections += "".join(f"\n{_table_section(t, i)}" for i, t in enumerate(tables))
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{_e(title)}</title>
<style>{_CSS}</style>
</head>
<body>
<header><h1>{_e(title)}</h1>
<p id="drawn" data-lanes="" data-bars="">(the page's script did not run)</p></header>
<main>
{sections}
</main>
<aside id="story" hidden><button type="button" id="story-close" title="close (Esc)">×</button>
<div id="story-body"></div></aside>
<script>{_SCRIPT}</script>
</body>
</html>
"""


def _cell(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}".rstrip("0").rstrip(".")
    return str(value)


def _rows_html(rows: Iterable[Sequence[object]]) -> str:
    return "".join(
        "<tr>" + "".join(f"<td>{_e(_cell(c))}</td>" for c in row) + "</tr>" for row in rows
    )


def _table_section(table: Table, number: int) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in table.header)
    body = (
        f"<table><thead><tr>{head}</tr></thead><tbody>{_rows_html(table.rows)}</tbody></table>"
        if table.rows
        else f'<p class="empty">{_e(table.empty)}</p>'
    )
    return (
        f'<section class="table" id="table-{number}" data-table="{number}">\n'
        f"<h2>{_e(table.title)} ({len(table.rows)})</h2>\n{body}\n</section>"
    )


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _json(data: object) -> str:
    """JSON safe inside a <script> element (no "<" that could end it)."""
    return json.dumps(data, separators=(",", ":")).replace("<", "\\u003c")


def _f(x: float) -> str:
    return f"{x:.1f}".removesuffix(".0")


def _natural(name: str) -> list[object]:
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name)]


def format_offset(seconds: float) -> str:
    """t+12.3s, t-0.4s."""
    text = f"{abs(seconds):.1f}"
    return f"t{'-' if seconds < 0 and text != '0.0' else '+'}{text}s"


def _tick_step(span: float) -> float:
    raw = span / 10
    exp = 10.0 ** math.floor(math.log10(raw))
    return next(m * exp for m in (1.0, 2.0, 5.0, 10.0) if m * exp >= raw * (1 - 1e-9))


def _tick_label(t: float) -> str:
    if abs(t) >= 120 and t == round(t):
        m, s = divmod(int(abs(t)), 60)
        sign = "-" if t < 0 else ""
        return f"{sign}{m}m" if s == 0 else f"{sign}{m}m{s:02d}s"
    return f"{t:g}s"


def priority_colours(priorities: Iterable[int]) -> dict[int, int]:
    """Each priority's palette index: in order, spread over the palette; more distinct
    priorities than colours share them by rank."""
    values = sorted(set(priorities))
    n, k = len(values), len(PALETTE)
    if n <= 1:
        return {v: k // 2 for v in values}
    if n <= k:
        return {v: round(i * (k - 1) / (n - 1)) for i, v in enumerate(values)}
    return {v: i * k // n for i, v in enumerate(values)}


@dataclass
class _Item:
    """One interval drawn on a lane: a bar (nomination None) or a nominated span."""

    start: float
    end: float
    index: int
    pod: PodTrack
    nomination: int | None = None
    row: int = 0


class _Section:
    def __init__(self, timeline: Timeline, number: int) -> None:
        self.tl = timeline
        self.number = number
        tl = timeline
        self.lo = min(tl.first, tl.origin)
        self.hi = max(tl.last, self.lo + 0.01)
        self.pods = list(tl.pods.values())
        self.index = {p.uid: i for i, p in enumerate(self.pods)}
        self.by_key = {p.key: i for i, p in enumerate(self.pods)}
        self.colour = priority_colours(p.priority for p in self.pods)

    def x(self, t: float) -> float:
        t = min(max(t, self.lo), self.hi)
        return LABEL_W + (t - self.lo) / (self.hi - self.lo) * PLOT_W

    def rel(self, t: float) -> float:
        return t - self.tl.origin

    # ------------------------------------------------------------ lanes

    def lane_names(self) -> list[str]:
        """The nodes of no group, then each node group's, by name (node-2 before node-10);
        then the names only a binding or a nomination gave (no Node object seen)."""
        nodes = self.tl.nodes
        named = sorted(nodes.values(), key=lambda n: (n.group, _natural(n.name)))
        names = [n.name for n in named]
        known = set(names)
        extra = {p.node for p in self.pods if p.node and p.node not in known}
        extra |= {
            n.node for p in self.pods for n in p.nominations if n.node and n.node not in known
        }
        return names + sorted(extra, key=_natural)

    def lane_items(self, names: Sequence[str]) -> dict[str, list[_Item]]:
        items: dict[str, list[_Item]] = {name: [] for name in names}
        for i, p in enumerate(self.pods):
            for j, n in enumerate(p.nominations):
                end = n.end if n.end is not None else self.hi
                items[n.node].append(_Item(n.start, end, i, p, nomination=j))
            if p.bound is not None:
                gone = p.gone
                items[p.node].append(_Item(p.bound, gone if gone is not None else self.hi, i, p))
        for lane in items.values():
            _pack(lane)
        return items

    # ------------------------------------------------------------ render

    def render(self) -> str:
        tl = self.tl
        names = self.lane_names()
        items = self.lane_items(names)
        rows = {name: max([it.row for it in items[name]], default=0) + 1 for name in names}
        total_rows = sum(rows.values()) or 1
        row_h = min(MAX_ROW_H, max(MIN_ROW_H, LANES_TARGET_H / total_rows))
        pad = 2.0 if row_h >= 3 else 0.5
        faults = [m for m in tl.markers if m.kind in (MarkerKind.FAULT, MarkerKind.NOTE)]
        scales = [m for m in tl.markers if m.kind in (MarkerKind.SCALE_UP, MarkerKind.SCALE_DOWN)]

        chart_top = AXIS_H
        fault_top = chart_top + CHART_H + 6
        scale_top = fault_top + FAULT_ROWS * FAULT_ROW_H + 2
        lanes_top = scale_top + SCALE_H + 4
        lane_h = {name: rows[name] * row_h + 2 * pad for name in names}
        lanes_h = sum(lane_h.values())
        height = lanes_top + lanes_h + AXIS_H

        out: list[str] = []
        out.append(
            f'<svg class="timeline" width="{WIDTH}" height="{_f(height)}" '
            f'viewBox="0 0 {WIDTH} {_f(height)}" role="img" '
            f'aria-label="{_e(tl.title)}: {len(names)} nodes, {len(self.pods)} pods">'
        )
        out.append(_DEFS.replace("{n}", str(self.number)))
        out += self.grid(chart_top, lanes_top + lanes_h)
        out += self.chart(chart_top)
        out += self.lanes(names, items, lane_h, row_h, pad, lanes_top)
        out += self.fault_marks(faults, fault_top, lanes_top + lanes_h)
        out += self.scale_marks(scales, scale_top, fault_top, _strip_label(faults))
        out += self.axis(lanes_top + lanes_h + 14)
        out.append("</svg>")
        stories = [self.story(p) for p in self.pods]
        sid = f"run-{self.number}"
        return (
            f'<section class="run" id="{sid}" data-run="{self.number}" '
            f'data-from="{self.rel(self.lo):.3f}" data-to="{self.rel(self.hi):.3f}">\n'
            f"<h2>{_e(tl.title)}</h2>\n"
            f"{self.facts(names, faults, scales)}\n{self.figures()}{self.legend()}\n"
            f'<div class="scroll">{"".join(out)}</div>\n'
            f"{self.marker_list(faults, scales)}\n"
            f'<script type="application/json" class="stories">{_json(stories)}</script>\n'
            "</section>"
        )

    def facts(
        self, names: Sequence[str], faults: Sequence[Marker], scales: Sequence[Marker]
    ) -> str:
        tl, pods = self.tl, self.pods
        bound = sum(1 for p in pods if p.bound is not None)
        preempted = sum(1 for p in pods if p.preempted is not None)
        nominated = sum(1 for p in pods if p.nominations)
        ups = sum(1 for m in scales if m.kind is MarkerKind.SCALE_UP)
        figures = [
            f"{len(names)} nodes",
            f"{len(pods)} pods",
            f"{bound} bound",
            f"{nominated} nominated",
            f"{preempted} preempted",
        ]
        counted = {
            "faults": sum(1 for m in faults if m.kind is MarkerKind.FAULT),
            "notes": sum(1 for m in faults if m.kind is MarkerKind.NOTE),
            "scale-ups": ups,
            "scale-downs": len(scales) - ups,
        }
        figures += [f"{n} {what}" for what, n in counted.items() if n]
        figures.append(
            f"from {format_offset(self.rel(self.lo))} to {format_offset(self.rel(self.hi))}"
        )
        notes = "".join(f"<li>{_e(n)}</li>" for n in tl.notes)
        return f'<p class="facts">{_e(", ".join(figures))}</p>' + (
            f'<ul class="notes">{notes}</ul>' if notes else ""
        )

    def figures(self) -> str:
        """The driver's facts of the run (`Timeline.facts`) as a table, "" without any."""
        if not self.tl.facts:
            return ""
        return f'<table class="figures"><tbody>{_rows_html(self.tl.facts)}</tbody></table>\n'

    def legend(self) -> str:
        by_colour: dict[int, list[int]] = {}
        for priority, c in sorted(self.colour.items()):
            by_colour.setdefault(c, []).append(priority)
        swatches = []
        for c, ps in sorted(by_colour.items()):
            label = f"{ps[0]}" if len(ps) == 1 else f"{ps[0]}..{ps[-1]}"
            swatches.append(
                f'<span class="key"><svg width="18" height="10"><rect class="c{c}" '
                f'width="18" height="10"/></svg>priority {_e(label)}</span>'
            )
        n = self.number
        fixed = [
            f'<span class="key"><svg width="18" height="10"><rect class="nnn" fill="url(#hatch-{n})" '
            'width="18" height="10"/></svg>nominated (nominatedNodeName)</span>',
            '<span class="key"><svg width="12" height="10"><path class="victim" '
            'd="M2 1L10 9M10 1L2 9"/></svg>preempted (the victim\'s end)</span>',
            f'<span class="key"><svg width="18" height="10"><rect class="notready" fill="url(#grey-{n})" '
            'width="18" height="10"/></svg>node not Ready</span>',
            '<span class="key"><svg width="18" height="10"><rect class="pending-area" '
            'width="18" height="10"/></svg>pending pods</span>',
            '<span class="key"><svg width="18" height="10"><path class="nodes-line" '
            'd="M0 5H18"/></svg>nodes</span>',
            '<span class="key"><svg width="10" height="10"><path class="fault-line" '
            'd="M5 0V10"/></svg>fault</span>',
            '<span class="key"><svg width="12" height="10"><path class="up" d="M1 9L6 1L11 9Z"/>'
            "</svg>scale-up</span>",
            '<span class="key"><svg width="12" height="10"><path class="down" d="M1 1L6 9L11 1Z"/>'
            "</svg>scale-down</span>",
        ]
        return f'<div class="legend">{"".join(swatches + fixed)}</div>'

    def grid(self, top: float, bottom: float) -> list[str]:
        out = ['<g class="grid">']
        for t, _ in self.ticks():
            x = _f(self.x(t))
            out.append(f'<line x1="{x}" x2="{x}" y1="{_f(top)}" y2="{_f(bottom)}"/>')
        out.append("</g>")
        return out

    def ticks(self) -> list[tuple[float, str]]:
        origin = self.tl.origin
        lo, hi = self.rel(self.lo), self.rel(self.hi)
        step = _tick_step(hi - lo)
        out = []
        k = math.ceil(lo / step)
        while k * step <= hi + 1e-9:
            t = k * step
            out.append((origin + t, _tick_label(round(t, 6))))
            k += 1
        return out

    def axis(self, y: float) -> list[str]:
        out = ['<g class="axis">']
        for t, label in self.ticks():
            x = _f(self.x(t))
            out.append(f'<text x="{x}" y="14" text-anchor="middle">{_e(label)}</text>')
            out.append(f'<text x="{x}" y="{_f(y)}" text-anchor="middle">{_e(label)}</text>')
        out.append("</g>")
        return out

    def chart(self, top: float) -> list[str]:
        tl = self.tl
        bottom = top + CHART_H
        peak_pending = max((v for _, v in tl.pending), default=0) or 1
        peak_nodes = max((v for _, v in tl.node_count), default=0) or 1

        def y_pending(v: float) -> float:
            return bottom - v / peak_pending * (CHART_H - 14)

        def y_nodes(v: float) -> float:
            return bottom - v / peak_nodes * (CHART_H - 14)

        area = _step_path(tl.pending, self.x, y_pending, self.x(self.hi))
        line = _step_path(tl.node_count, self.x, y_nodes, self.x(self.hi))
        x0, x1 = _f(LABEL_W), _f(LABEL_W + PLOT_W)
        out = [
            '<g class="chart">',
            f'<rect class="chart-bg" x="{x0}" y="{_f(top)}" width="{PLOT_W}" height="{CHART_H}"/>',
        ]
        if area:
            out.append(
                f'<path class="pending-area" d="{area} V{_f(bottom)} H{_f(self.x(tl.pending[0][0]))} Z"/>'
            )
        if line:
            out.append(f'<path class="nodes-line" d="{line}"/>')
        out += [
            f'<text class="pending-label" x="{_f(LABEL_W - 6)}" y="{_f(top + 10)}" '
            f'text-anchor="end">{peak_pending} pending</text>',
            f'<text class="pending-label" x="{_f(LABEL_W - 6)}" y="{_f(bottom)}" '
            'text-anchor="end">0</text>',
            f'<text class="nodes-label" x="{_f(LABEL_W + PLOT_W + 6)}" y="{_f(top + 10)}">'
            f"{peak_nodes} nodes</text>",
            f'<text class="nodes-label" x="{x1}" dx="6" y="{_f(bottom)}">0</text>',
            "</g>",
        ]
        return out

    def lanes(
        self,
        names: Sequence[str],
        items: dict[str, list[_Item]],
        lane_h: dict[str, float],
        row_h: float,
        pad: float,
        top: float,
    ) -> list[str]:
        out = ['<g class="lanes">']
        y = top
        last_label = -math.inf
        bar_h = row_h - 1 if row_h >= 3 else row_h
        for k, name in enumerate(names):
            h = lane_h[name]
            node = self.tl.nodes.get(name)
            out.append(
                f'<g class="lane{" odd" if k % 2 else ""}" data-node="{_e(name)}" '
                f'transform="translate(0,{_f(y)})">'
            )
            out.append(f'<rect class="lane-bg" x="{LABEL_W}" width="{PLOT_W}" height="{_f(h)}"/>')
            out += self.node_spans(node, h)
            if y - last_label >= LABEL_GAP or h >= LABEL_GAP:
                last_label = y
                shown = name if len(name) <= 30 else name[:29] + "…"
                out.append(
                    f'<text class="lane-label" x="{LABEL_W - 6}" y="{_f(min(h / 2 + 4, 11))}" '
                    f'text-anchor="end">{_e(shown)}<title>{_e(self.node_title(name, node))}</title></text>'
                )
            for it in items[name]:
                out.append(self.item(it, pad + it.row * row_h, bar_h))
            out.append("</g>")
            y += h
        out.append("</g>")
        return out

    def node_title(self, name: str, node: NodeTrack | None) -> str:
        if node is None:
            return f"{name} (no Node object seen)"
        lines = [name + (f" (node group {node.group})" if node.group else "")]
        for life in node.lives:
            end = "the end" if life.end is None else format_offset(self.rel(life.end))
            lines.append(f"exists {format_offset(self.rel(life.start))} to {end}")
        for gap in node.not_ready:
            end = "the end" if gap.end is None else format_offset(self.rel(gap.end))
            lines.append(f"not Ready {format_offset(self.rel(gap.start))} to {end}")
        return "\n".join(lines)

    def node_spans(self, node: NodeTrack | None, h: float) -> list[str]:
        if node is None:
            return []
        out = []
        for life in node.lives:
            x0, x1 = self.x(life.start), self.x(life.end if life.end is not None else self.hi)
            out.append(
                f'<rect class="life" x="{_f(x0)}" width="{_f(max(x1 - x0, 0.5))}" height="{_f(h)}"/>'
            )
        for gap in node.not_ready:
            x0, x1 = self.x(gap.start), self.x(gap.end if gap.end is not None else self.hi)
            out.append(
                f'<rect class="notready" fill="url(#grey-{self.number})" x="{_f(x0)}" '
                f'width="{_f(max(x1 - x0, 0.5))}" height="{_f(h)}"/>'
            )
        return out

    def item(self, it: _Item, y: float, h: float) -> str:
        p = it.pod
        x0, x1 = self.x(it.start), self.x(it.end)
        w = max(x1 - x0, 1.0)
        key = _e(p.key)
        title = _e(self.story_text(p))
        geometry = f'x="{_f(x0)}" y="{_f(y)}" width="{_f(w)}" height="{_f(h)}"'
        if it.nomination is not None:
            return (
                f'<rect class="nnn" fill="url(#hatch-{self.number})" data-nominated="{key}" '
                f'data-i="{it.index}" {geometry}><title>{title}</title></rect>'
            )
        bar = (
            f'<rect class="c{self.colour[p.priority]}" data-pod="{key}" data-i="{it.index}" '
            f"{geometry}><title>{title}</title></rect>"
        )
        if p.preempted is None:
            return bar
        cx, cy, r = x1, y + h / 2, max(h / 2, 3.0)
        return bar + (
            f'<path class="victim" data-victim="{key}" data-i="{it.index}" '
            f'd="M{_f(cx - r)} {_f(cy - r)}L{_f(cx + r)} {_f(cy + r)}'
            f'M{_f(cx + r)} {_f(cy - r)}L{_f(cx - r)} {_f(cy + r)}"/>'
        )

    def story_text(self, p: PodTrack) -> str:
        group = f", pod group {p.group}" if p.group else ""
        lines = [f"{p.key} (priority {p.priority}{group})"]
        lines += [f"{format_offset(self.rel(t))} {what}" for t, what in p.steps()]
        if p.bound is not None and p.gone is None:
            lines.append("still there at the end")
        return "\n".join(lines)

    def story(self, p: PodTrack) -> list[object]:
        """[key, priority, node, steps, preemptor index or -1, victim indices, pod group or
        ""]; a step is [seconds from the origin, what]."""
        steps = [[round(self.rel(t), 3), what] for t, what in p.steps()]
        preemptor = self.by_key.get(p.preempted_by, -1) if p.preempted_by else -1
        victims = [self.by_key[k] for _, k in p.victims if k in self.by_key]
        return [p.key, p.priority, p.node, steps, preemptor, victims, p.group]

    def fault_marks(self, faults: Sequence[Marker], top: float, bottom: float) -> list[str]:
        out = ['<g class="marks">']
        row_last = [-math.inf] * FAULT_ROWS
        for n, m in enumerate(faults, 1):
            at, until, label, kind = m.at, m.until, m.label, m.kind
            x = self.x(at)
            row = next((r for r in range(FAULT_ROWS) if x - row_last[r] >= 16), None)
            if row is None:
                row = min(range(FAULT_ROWS), key=lambda r: row_last[r])
            row_last[row] = x
            when = format_offset(self.rel(at))
            if until is not None:
                when += f" to {format_offset(self.rel(until))}"
            out.append(
                f'<g class="mark {kind}" data-marker="{kind}"><title>#{n} {when}: {_e(label)}</title>'
            )
            if until is not None and until > at:
                x1 = self.x(until)
                out.append(
                    f'<rect class="band" x="{_f(x)}" y="{_f(AXIS_H)}" width="{_f(max(x1 - x, 1))}" '
                    f'height="{_f(bottom - AXIS_H)}"/>'
                )
            out.append(f'<line x1="{_f(x)}" x2="{_f(x)}" y1="{_f(AXIS_H)}" y2="{_f(bottom)}"/>')
            ty = top + (row + 1) * FAULT_ROW_H - 3
            out.append(f'<text x="{_f(x + 2)}" y="{_f(ty)}">{n}</text></g>')
        out.append("</g>")
        return out

    def scale_marks(
        self, scales: Sequence[Marker], top: float, fault_top: float, fault_label: str
    ) -> list[str]:
        out = ['<g class="scales">']
        out.append(
            f'<text class="strip-label" x="{LABEL_W - 6}" y="{_f(top + 11)}" text-anchor="end">autoscaler</text>'
        )
        out.append(
            f'<text class="strip-label" x="{LABEL_W - 6}" y="{_f(fault_top + 10)}" '
            f'text-anchor="end">{fault_label}</text>'
        )
        for m in scales:
            at, label, kind = m.at, m.label, m.kind
            x = self.x(at)
            up = kind == MarkerKind.SCALE_UP
            d = (
                f"M{_f(x - 5)} {_f(top + 13)}L{_f(x)} {_f(top + 3)}L{_f(x + 5)} {_f(top + 13)}Z"
                if up
                else f"M{_f(x - 5)} {_f(top + 3)}L{_f(x)} {_f(top + 13)}L{_f(x + 5)} {_f(top + 3)}Z"
            )
            out.append(
                f'<path class="{"up" if up else "down"}" data-marker="{kind}" d="{d}">'
                f"<title>{format_offset(self.rel(at))} {kind}: {_e(label)}</title></path>"
            )
        out.append("</g>")
        return out

    def marker_list(self, faults: Sequence[Marker], scales: Sequence[Marker]) -> str:
        items = []
        for n, m in enumerate(faults[:MAX_LISTED_MARKERS], 1):
            at, until, label = m.at, m.until, m.label
            when = format_offset(self.rel(at))
            if until is not None:
                when += f" to {format_offset(self.rel(until))}"
            items.append(f'<li value="{n}">{when} {_e(label)}</li>')
        more = len(faults) - MAX_LISTED_MARKERS
        tail = f"<p>... and {more} more</p>" if more > 0 else ""
        if not items:
            return ""
        return f'<details class="marker-list" open><summary>{_strip_label(faults)}</summary><ol>{"".join(items)}</ol>{tail}</details>'


def _strip_label(marks: Sequence[Marker]) -> str:
    kinds = {m.kind for m in marks}
    if kinds == {MarkerKind.NOTE}:
        return "notes"
    return "faults, notes" if MarkerKind.NOTE in kinds else "faults"


def _pack(items: list[_Item]) -> None:
    """Rows for a lane's intervals, in order of start: the first row free at the start (a bar
    goes on the row of its own nomination on this node when that ends where it starts), else,
    past MAX_ROWS, the row that frees first."""
    items.sort(key=lambda it: (it.start, it.nomination is None, it.index))
    ends: list[float] = []
    nominated_row: dict[int, tuple[float, int]] = {}
    for it in items:
        own = nominated_row.get(it.index) if it.nomination is None else None
        if own is not None and own[0] == it.start and ends[own[1]] <= it.start:
            row = own[1]
        else:
            row = next((r for r, end in enumerate(ends) if end <= it.start), len(ends))
            if row == MAX_ROWS:
                row = min(range(MAX_ROWS), key=lambda r: ends[r])
        if row == len(ends):
            ends.append(it.end)
        else:
            ends[row] = max(ends[row], it.end)
        it.row = row
        if it.nomination is not None:
            nominated_row[it.index] = (it.end, row)


def _step_path(
    series: Sequence[tuple[float, int]],
    x: Callable[[float], float],
    y: Callable[[float], float],
    x_end: float,
) -> str:
    """An SVG path of a step function sampled at its changes, at most a few points per pixel
    column (each column keeps its peak and its last value)."""
    if not series:
        return ""
    columns: list[tuple[int, int, int]] = []  # (pixel, peak, last)
    for t, v in series:
        px = int(x(t))
        if columns and columns[-1][0] == px:
            _, peak, _ = columns[-1]
            columns[-1] = (px, max(peak, v), v)
        else:
            columns.append((px, v, v))
    first_x = x(series[0][0])
    parts = [f"M{_f(first_x)} {_f(y(columns[0][1]))}"]
    for px, peak, last in columns:
        parts.append(f"H{px}V{_f(y(peak))}")
        if last != peak:
            parts.append(f"V{_f(y(last))}")
    parts.append(f"H{_f(x_end)}")
    return "".join(parts)


_DEFS: Final = """<defs>
<pattern id="hatch-{n}" width="4" height="4" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">
<rect width="4" height="4" fill="#fff"/><line x1="0" y1="0" x2="0" y2="4" stroke="#555" stroke-width="2"/></pattern>
<pattern id="grey-{n}" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(-45)">
<line x1="0" y1="0" x2="0" y2="6" stroke="#bbb" stroke-width="3"/></pattern>
</defs>"""

_CSS: Final = (
    """
body{font:13px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#222;background:#fff}
header{padding:8px 16px;border-bottom:1px solid #ddd}
h1{font-size:18px;margin:0}h2{font-size:15px;margin:12px 0 2px}
#drawn{margin:2px 0;color:#555}
main{padding:0 16px 24px}
.facts{margin:2px 0;color:#333}.notes{margin:0;padding-left:18px;color:#666;font-size:12px}
.legend{display:flex;flex-wrap:wrap;gap:4px 14px;margin:6px 0;font-size:12px}
.key svg{vertical-align:middle;margin-right:4px}
.scroll{overflow-x:auto}
svg.timeline{display:block;font-size:10px}
.grid line{stroke:#eee;stroke-width:1}
.axis text{fill:#666}
.chart-bg{fill:#fafafa;stroke:#ddd}
.pending-area{fill:#9ecae1;stroke:#3182bd;stroke-width:1}
.nodes-line{fill:none;stroke:#222;stroke-width:1.5}
.pending-label{fill:#3182bd}.nodes-label{fill:#222}
.lane-bg{fill:#fff}.lane.odd .lane-bg{fill:#fcfcfc}
.life{fill:#f1f3f6}.lane.odd .life{fill:#e9ecf1}
.lane-label{fill:#333;font-size:10px}
.nnn{stroke:#444;stroke-width:.7}
.victim{stroke:#d62728;stroke-width:1.6;fill:none}
.mark line{stroke:#d62728;stroke-width:1;stroke-dasharray:3 2}
.mark.note line{stroke:#888}
.mark .band{fill:#d62728;opacity:.07}.mark.note .band{fill:#888}
.mark text{fill:#d62728;font-weight:600}.mark.note text{fill:#666}
.strip-label{fill:#666}
.up{fill:#2ca02c}.down{fill:#ff7f0e}
.fault-line{stroke:#d62728;stroke-dasharray:3 2}
rect[data-i],path[data-i]{cursor:pointer}
.sel{stroke:#000!important;stroke-width:2!important}
main table{border-collapse:collapse;margin:6px 0 10px;font-size:12px}
main td,main th{border:1px solid #ddd;padding:2px 8px;text-align:left;font-variant-numeric:tabular-nums}
main th{background:#f3f3f3}.figures td:first-child{color:#555}
.marker-list{font-size:12px;color:#444;margin:6px 0}.marker-list ol{columns:2;margin:4px 0}
#story{position:fixed;top:8px;right:8px;width:360px;max-height:90vh;overflow:auto;background:#fff;
border:1px solid #999;box-shadow:0 2px 10px rgba(0,0,0,.2);padding:10px 12px;font-size:12px}
#story h3{margin:0 0 6px;font-size:14px;word-break:break-all}
#story table{border-collapse:collapse}#story td{padding:1px 6px 1px 0;vertical-align:top}
#story-close{float:right;border:0;background:none;font-size:18px;cursor:pointer}
"""
    + "".join(f".c{i}{{fill:{c}}}" for i, c in enumerate(PALETTE))
    + "\n"
)

_SCRIPT: Final = r"""
(function () {
  "use strict";
  var runs = document.querySelectorAll("section.run");
  var data = {}, lanes = 0, bars = 0;
  runs.forEach(function (s) {
    data[s.id] = JSON.parse(s.querySelector("script.stories").textContent);
    lanes += s.querySelectorAll("[data-node]").length;
    bars += s.querySelectorAll("rect[data-pod]").length;
  });
  var drawn = document.getElementById("drawn");
  drawn.setAttribute("data-lanes", lanes);
  drawn.setAttribute("data-bars", bars);
  drawn.setAttribute("data-ready", "true");
  drawn.textContent = runs.length + (runs.length === 1 ? " run: " : " runs: ") + lanes +
    " node lanes, " + bars + " pod bars. Hover over a bar for its pod's story; click for more.";
  var panel = document.getElementById("story"), body = document.getElementById("story-body");
  var selected = [];
  function t(s) { return "t" + (s < 0 ? "-" : "+") + Math.abs(s).toFixed(1) + "s"; }
  function el(tag, text) { var e = document.createElement(tag); if (text !== undefined) e.textContent = text; return e; }
  function link(run, i) {
    var a = el("a", data[run][i][0]); a.href = "#"; a.setAttribute("data-goto", i); a.setAttribute("data-run", run);
    return a;
  }
  function show(run, i, scroll) {
    var s = data[run][i]; if (!s) return;
    selected.forEach(function (e) { e.classList.remove("sel"); });
    selected = Array.prototype.slice.call(document.querySelectorAll("#" + run + " [data-i='" + i + "']"));
    selected.forEach(function (e) { e.classList.add("sel"); });
    if (scroll && selected.length) selected[0].scrollIntoView({block: "center", inline: "center"});
    body.textContent = "";
    body.appendChild(el("h3", s[0]));
    body.appendChild(el("p", "priority " + s[1] + (s[6] ? ", pod group " + s[6] : "") + (s[2] ? ", bound to " + s[2] : ", never bound")));
    var table = el("table");
    s[3].forEach(function (step) {
      var tr = el("tr"); tr.appendChild(el("td", t(step[0]))); tr.appendChild(el("td", step[1])); table.appendChild(tr);
    });
    body.appendChild(table);
    if (s[4] >= 0) { var p = el("p", "preempted by "); p.appendChild(link(run, s[4])); body.appendChild(p); }
    if (s[5].length) {
      var v = el("p", "preempted: ");
      s[5].forEach(function (j, k) { if (k) v.appendChild(document.createTextNode(", ")); v.appendChild(link(run, j)); });
      body.appendChild(v);
    }
    panel.hidden = false;
  }
  function hide() { panel.hidden = true; selected.forEach(function (e) { e.classList.remove("sel"); }); selected = []; }
  document.addEventListener("click", function (e) {
    var go = e.target.closest("[data-goto]");
    if (go) { e.preventDefault(); show(go.getAttribute("data-run"), +go.getAttribute("data-goto"), true); return; }
    var mark = e.target.closest("[data-i]");
    if (mark) { show(mark.closest("section.run").id, +mark.getAttribute("data-i"), false); return; }
    if (e.target.id === "story-close" || !e.target.closest("#story")) hide();
  });
  document.addEventListener("keydown", function (e) { if (e.key === "Escape") hide(); });
})();
"""
