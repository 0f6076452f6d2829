"""A replay's report: what the cluster did with the trace, as JSON (docs/traces.md lists the
keys) and as a table. Pure: computed from what `observe` recorded.

Times in the report are seconds from the trace's first event (virtual time), so that two
replays of one trace line up; durations are seconds.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TypedDict

from kemu.machinery.jsonvalue import JSON
from kemu.trace.objects import UnsupportedEntry
from kemu.trace.observe import Observed


class TraceInfo(TypedDict):
    """The report's "trace": the file replayed and what it holds."""

    file: str
    format: str
    events: int
    applied: int
    deleted: int
    kinds: dict[str, int]


class Summary(TypedDict):
    count: int
    p50: float | None
    p90: float | None
    p99: float | None
    max: float | None


class NominatedSummary(Summary):
    pods: list[str]


class PodEntry(TypedDict):
    name: str
    owner: str
    node: str
    node_group: str
    created: float | None
    bound: float | None
    deleted: float | None
    phase: str
    preempted: float | None
    evicted: float | None


class ObjectEntry(TypedDict):
    kind: str
    namespace: str
    name: str
    desired_replicas: int | None
    pods_bound: int


class PreemptionEntry(TypedDict):
    at: float | None
    preemptor: str
    node: str
    victims: list[str]


class EvictionEntry(TypedDict):
    pod: str
    at: float | None
    reason: str


class Refusal(TypedDict):
    object: str
    message: str


class Report(TypedDict):
    """A replay's report (docs/traces.md lists its keys)."""

    trace: TraceInfo
    cluster: dict[str, JSON]
    span_s: float
    wall_s: float
    startup_s: float
    virtual_s: float
    speedup: float | None
    processes: dict[str, dict[str, int]]
    objects: list[ObjectEntry]
    pods_created: int
    pods_bound: int
    time_to_bind_s: Summary
    pending_over_time: list[list[float]]
    preemptions: list[PreemptionEntry]
    victims: list[str]
    nominated_node_name_s: NominatedSummary
    nodes_over_time: list[list[float]]
    node_hours: float
    evictions: list[EvictionEntry]
    unschedulable_at_end: list[str]
    unsupported: UnsupportedEntry
    refused: list[Refusal]
    pods: list[PodEntry]


@dataclass(frozen=True)
class ObjectState:
    """A tracked object at the end: `desired` replicas (a bare pod 1, a Job its parallelism,
    a DaemonSet its desiredNumberScheduled), None if it is gone."""

    kind: str
    namespace: str
    name: str
    desired: int | None


def percentile(values: Sequence[float], p: float) -> float | None:
    """The nearest-rank percentile (p in 0..100) of `values`, None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]


def _summary(values: Sequence[float]) -> Summary:
    return {
        "count": len(values),
        "p50": _round(percentile(values, 50)),
        "p90": _round(percentile(values, 90)),
        "p99": _round(percentile(values, 99)),
        "max": _round(max(values) if values else None),
    }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def step_series(intervals: Iterable[tuple[float, float | None]], end: float) -> list[list[float]]:
    """How many intervals [start, stop) are open over time: [[t, count], ...] at every
    change from the first start, and at `end` (an open interval, stop None, runs past it)."""
    deltas: dict[float, int] = {}
    for start, stop in intervals:
        if stop is not None and stop <= start:
            continue
        deltas[start] = deltas.get(start, 0) + 1
        if stop is not None and stop <= end:
            deltas[stop] = deltas.get(stop, 0) - 1
    series: list[list[float]] = []
    count = 0
    for t in sorted(deltas):
        count += deltas[t]
        point = [round(t, 3), count]
        if series and series[-1][0] == point[0]:
            series[-1] = point
        elif not series or series[-1][1] != count:
            series.append(point)
    if series and series[-1][0] < end:
        series.append([round(end, 3), count])
    return series


def build(
    observed: Observed,
    *,
    origin: float,
    end: float,
    span: float,
    wall: float,
    startup: float,
    objects: Sequence[ObjectState],
    unsupported: UnsupportedEntry,
    refused: list[Refusal],
    trace_info: TraceInfo,
    cluster_info: dict[str, JSON],
    processes: dict[str, dict[str, int]] | None = None,
) -> Report:
    """The report. `origin`: the trace's first event in the cluster's time; `end`: the
    cluster's time when the replay ended; `processes`: each process's memory then."""

    def at(t: float) -> float:
        return round(t - origin, 3)

    def rel(t: float | None) -> float | None:
        return None if t is None else at(t)

    records = sorted(observed.pods.values(), key=lambda r: (r.created, r.created_rv))
    nodes_by_name = observed.nodes
    pods: list[PodEntry] = []
    for r in records:
        node = nodes_by_name.get(r.node)
        pods.append(
            {
                "name": r.key,
                "owner": observed.owner_of(r),
                "node": r.node,
                "node_group": node.group if node is not None else "",
                "created": rel(r.created),
                "bound": rel(r.bound),
                "deleted": rel(r.deleted),
                "phase": r.phase,
                "preempted": rel(r.preempted),
                "evicted": rel(r.evicted),
            }
        )
    binds = [r.bound - r.created for r in records if r.bound is not None]
    pending = step_series(
        ((r.created, r.bound if r.bound is not None else r.deleted) for r in records), end
    )
    node_intervals = [(n.created, n.deleted) for n in nodes_by_name.values()]
    node_hours = sum(((n.deleted or end) - n.created) for n in nodes_by_name.values()) / 3600

    preemptions = sorted(observed.preemptions.values(), key=lambda p: (p.at, p.preemptor))
    by_uid = {r.uid: r for r in records}
    nominated: list[float] = []
    nominated_pods = []
    for p in preemptions:
        pod = by_uid.get(p.preemptor_uid)
        if pod is None:
            continue
        until = pod.bound if pod.bound is not None else (pod.deleted or end)
        nominated.append(max(0.0, until - p.at))
        nominated_pods.append(pod.key)
    victims = sorted({v for p in preemptions for v in p.victims})
    evictions = [r for r in records if r.evicted is not None]
    live = [r for r in records if r.deleted is None]
    unschedulable = sorted(r.key for r in live if r.bound is None and r.phase != "Succeeded")

    bound_now: dict[str, int] = {}
    for r in live:
        if r.bound is not None and r.phase not in ("Succeeded", "Failed"):
            owner = observed.owner_of(r) or f"Pod/{r.key}"
            bound_now[owner] = bound_now.get(owner, 0) + 1
    object_rows: list[ObjectEntry] = []
    for o in objects:
        key = f"{o.kind}/{o.namespace}/{o.name}" if o.namespace else f"{o.kind}/{o.name}"
        object_rows.append(
            {
                "kind": o.kind,
                "namespace": o.namespace,
                "name": o.name,
                "desired_replicas": o.desired,
                "pods_bound": bound_now.get(key, 0),
            }
        )
    return {
        "trace": trace_info,
        "cluster": cluster_info,
        "span_s": round(span, 3),
        "wall_s": round(wall, 3),
        "startup_s": round(startup, 3),
        "virtual_s": round(end - origin, 3),
        "speedup": round(span / wall, 2) if wall > 0 else None,
        "processes": dict(sorted((processes or {}).items())),
        "objects": object_rows,
        "pods_created": len(records),
        "pods_bound": sum(r.bound is not None for r in records),
        "time_to_bind_s": _summary(binds),
        "pending_over_time": [[at(t + origin), n] for t, n in pending],
        "preemptions": [
            {"at": rel(p.at), "preemptor": p.preemptor, "node": p.node, "victims": p.victims}
            for p in preemptions
        ],
        "victims": victims,
        "nominated_node_name_s": {**_summary(nominated), "pods": nominated_pods},
        "nodes_over_time": [[at(t), n] for t, n in step_series(node_intervals, end)],
        "node_hours": round(node_hours, 4),
        "evictions": [
            {"pod": r.key, "at": rel(r.evicted), "reason": r.evicted_reason} for r in evictions
        ],
        "unschedulable_at_end": unschedulable,
        "unsupported": unsupported,
        "refused": refused,
        "pods": pods,
    }


def figures(report: Report) -> list[tuple[str, str]]:
    """The report's figures (name, value as shown): the terminal's table and the facts of
    the replay's picture."""
    ttb = report["time_to_bind_s"]
    nnn = report["nominated_node_name_s"]
    unsupported = report["unsupported"]
    out = [
        ("trace span", f"{report['span_s']:.1f} s ({report['trace']['events']} events)"),
        (
            "wall time",
            f"{report['wall_s']:.1f} s (start-up {report['startup_s']:.1f} s apart), "
            f"{_fmt_speedup(report['speedup'])}",
        ),
        ("pods created/bound", f"{report['pods_created']} / {report['pods_bound']}"),
        (
            "time to bind p50/p90/p99",
            f"{_fmt(ttb['p50'])} / {_fmt(ttb['p90'])} / {_fmt(ttb['p99'])} s",
        ),
        ("preemptions/victims", f"{len(report['preemptions'])} / {len(report['victims'])}"),
        ("nominatedNodeName p50/p99", f"{_fmt(nnn['p50'])} / {_fmt(nnn['p99'])} s"),
        ("nodes (peak)", str(max((n for _, n in report["nodes_over_time"]), default=0))),
        ("node-hours", f"{report['node_hours']:.3f}"),
        ("evictions", str(len(report["evictions"]))),
        ("unschedulable at end", str(len(report["unschedulable_at_end"]))),
    ]
    if unsupported["kinds"] or unsupported["fields"]:
        skipped = [f"{k} x{n}" for k, n in unsupported["kinds"].items()]
        skipped += [f"{f} x{n}" for f, n in unsupported["fields"].items()]
        out.append(("unsupported (skipped)", ", ".join(skipped)))
    if report["refused"]:
        out.append(("refused", f"{len(report['refused'])} (see --json)"))
    return out


def table(report: Report) -> str:
    """The report's figures, one per line, for the terminal."""
    return "\n".join(f"{name:<26}{value}" for name, value in figures(report))


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _fmt_speedup(speedup: float | None) -> str:
    return "-" if speedup is None else f"{speedup:g}x the trace's pace"
