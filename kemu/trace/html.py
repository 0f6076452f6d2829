"""The replay's and the comparison's reports as one self-contained HTML page (inline SVG and
CSS, no script, nothing fetched): the figures, pending pods and nodes over time as step
charts, the preemptions, the pods; for kemu.whatif both runs on one chart and the
differences."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import Any, Final

_COLOURS: Final = ("#1f77b4", "#d62728")
_STYLE: Final = """
body{font:14px system-ui,sans-serif;margin:24px;color:#222}
table{border-collapse:collapse;margin:8px 0 20px}
td,th{border:1px solid #ccc;padding:3px 8px;text-align:left;font-variant-numeric:tabular-nums}
th{background:#f3f3f3}
svg{background:#fafafa;border:1px solid #ddd}
.legend span{display:inline-block;margin-right:16px}
"""


def _page(title: str, body: str) -> str:
    return (
        f"<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>{escape(title)}</title>"
        f"<style>{_STYLE}</style></head><body><h1>{escape(title)}</h1>{body}</body></html>\n"
    )


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    head = "".join(f"<th>{escape(str(h))}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(f"<td>{escape(_cell(c))}</td>" for c in row) + "</tr>" for row in rows
    )
    return f"<table><tr>{head}</tr>{body}</table>"


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def step_chart(
    title: str, series: Sequence[tuple[str, Sequence[Sequence[float]]]], width: int = 720
) -> str:
    """Step lines of [[t, value], ...] series on one SVG, with axes' extents written."""
    height, pad = 200, 36
    points = [p for _, s in series for p in s]
    if not points:
        return f"<h3>{escape(title)}</h3><p>(nothing)</p>"
    t0, t1 = min(p[0] for p in points), max(p[0] for p in points)
    top = max(max(p[1] for p in points), 1)
    span = (t1 - t0) or 1.0

    def x(t: float) -> float:
        return pad + (t - t0) / span * (width - 2 * pad)

    def y(v: float) -> float:
        return height - pad - v / top * (height - 2 * pad)

    lines = []
    for i, (_, s) in enumerate(series):
        if not s:
            continue
        path = [f"M{x(s[0][0]):.1f},{y(s[0][1]):.1f}"]
        for t, value in s[1:]:
            path.append(f"H{x(t):.1f}V{y(value):.1f}")
        colour = _COLOURS[i % len(_COLOURS)]
        lines.append(f"<path d='{''.join(path)}' fill='none' stroke='{colour}' stroke-width='2'/>")
    axes = (
        f"<line x1='{pad}' y1='{height - pad}' x2='{width - pad}' y2='{height - pad}' "
        "stroke='#888'/>"
        f"<line x1='{pad}' y1='{pad}' x2='{pad}' y2='{height - pad}' stroke='#888'/>"
        f"<text x='{pad}' y='{height - 10}'>{t0:.0f} s</text>"
        f"<text x='{width - pad}' y='{height - 10}' text-anchor='end'>{t1:.0f} s</text>"
        f"<text x='4' y='{pad}'>{top:g}</text><text x='4' y='{height - pad}'>0</text>"
    )
    legend = ""
    if len(series) > 1:
        legend = (
            "<div class='legend'>"
            + "".join(
                f"<span style='color:{_COLOURS[i % len(_COLOURS)]}'>&#9632; {escape(name)}</span>"
                for i, (name, _) in enumerate(series)
            )
            + "</div>"
        )
    return (
        f"<h3>{escape(title)}</h3>{legend}<svg width='{width}' height='{height}' "
        f"xmlns='http://www.w3.org/2000/svg'>{axes}{''.join(lines)}</svg>"
    )


def _figures(report: dict[str, Any]) -> list[tuple[str, Any]]:
    ttb, nnn = report["time_to_bind_s"], report["nominated_node_name_s"]
    return [
        ("trace span (s)", report["span_s"]),
        ("wall time (s)", report["wall_s"]),
        ("start-up (s)", report["startup_s"]),
        ("pods created", report["pods_created"]),
        ("pods bound", report["pods_bound"]),
        (
            "time to bind p50 / p90 / p99 (s)",
            f"{_cell(ttb['p50'])} / {_cell(ttb['p90'])} / {_cell(ttb['p99'])}",
        ),
        ("preemptions", len(report["preemptions"])),
        ("victims", len(report["victims"])),
        ("nominatedNodeName p50 / p99 (s)", f"{_cell(nnn['p50'])} / {_cell(nnn['p99'])}"),
        ("node-hours", report["node_hours"]),
        ("evictions", len(report["evictions"])),
        ("unschedulable at end", len(report["unschedulable_at_end"])),
    ]


def _unsupported(report: dict[str, Any]) -> str:
    u = report["unsupported"]
    rows = [("kind", k, n) for k, n in u["kinds"].items()]
    rows += [("field", f, n) for f, n in u["fields"].items()]
    rows += [("refused", r["object"], r["message"]) for r in report["refused"]]
    if not rows:
        return ""
    return "<h2>Skipped</h2>" + _table(("what", "name", "count / why"), rows)


def replay_page(report: dict[str, Any]) -> str:
    trace = report["trace"]
    body = [
        f"<p>{escape(str(trace.get('file', '')))} ({escape(str(trace.get('format', '')))}, "
        f"{trace.get('events', 0)} events)</p>",
        _table(("figure", "value"), _figures(report)),
        step_chart("Pending pods", [("pending", report["pending_over_time"])]),
        step_chart("Nodes", [("nodes", report["nodes_over_time"])]),
    ]
    if report["preemptions"]:
        body.append("<h2>Preemptions</h2>")
        body.append(
            _table(
                ("at (s)", "preemptor", "node", "victims"),
                [
                    (p["at"], p["preemptor"], p["node"], ", ".join(p["victims"]))
                    for p in report["preemptions"]
                ],
            )
        )
    body.append(_unsupported(report))
    body.append("<h2>Pods</h2>")
    body.append(
        _table(
            ("pod", "owner", "node", "created", "bound", "deleted", "phase"),
            [
                (
                    p["name"],
                    p["owner"],
                    p["node"],
                    p["created"],
                    p["bound"],
                    p["deleted"],
                    p["phase"],
                )
                for p in report["pods"]
            ],
        )
    )
    return _page("kemu trace replay", "".join(body))


def whatif_page(result: dict[str, Any]) -> str:
    a, b = result["a"], result["b"]
    names = result.get("names", {"a": "a", "b": "b"})
    fa, fb = _figures(a), _figures(b)
    rows = [(name, va, vb) for (name, va), (_, vb) in zip(fa, fb, strict=True)]
    body = [
        _table(("figure", names["a"], names["b"]), rows),
        step_chart(
            "Pending pods",
            [(names["a"], a["pending_over_time"]), (names["b"], b["pending_over_time"])],
        ),
        step_chart(
            "Nodes", [(names["a"], a["nodes_over_time"]), (names["b"], b["nodes_over_time"])]
        ),
        f"<h2>Differences ({len(result['diff'])})</h2>",
    ]
    if result["diff"]:
        body.append(
            _table(
                ("pod", "what", names["a"], names["b"]),
                [(d["pod"], d["what"], d["a"], d["b"]) for d in result["diff"]],
            )
        )
    else:
        body.append("<p>The two runs agree.</p>")
    return _page("kemu whatif", "".join(body))
