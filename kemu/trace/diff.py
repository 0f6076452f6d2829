"""What differs between two replays of one trace (kemu.whatif): pods matched across the runs
by owner and creation order (their names are generated), then, pair by pair, those placed on
another node or node group, preempted in one run only, unschedulable at the end in one only,
bound later by more than a threshold, or made in one run only. Pure: two reports in, a list
out, empty when the runs agree.

    {"pod": "Deployment/ns/web#3", "what": "node", "a": "node-1", "b": "node-0"}

`what` is one of: node, node_group, preempted, unschedulable, bound, only_in_a, only_in_b.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, TypedDict

from kemu.trace.report import PodEntry, Report

DEFAULT_BIND_THRESHOLD: Final = 1.0
"""Seconds of virtual time one run may bind a pod later than the other before it counts."""

Value = str | float | bool | None
"""What a difference shows of each side: a node, a time, whether the pod was stuck."""


class Difference(TypedDict):
    pod: str
    what: str
    a: Value
    b: Value


class Comparison(TypedDict):
    """kemu.whatif's JSON: the two configurations' names, both reports and the differences."""

    names: dict[str, str]
    a: Report
    b: Report
    diff: list[Difference]


def match(
    a: Sequence[PodEntry], b: Sequence[PodEntry]
) -> list[tuple[str, PodEntry | None, PodEntry | None]]:
    """Pairs of pods (report entries) of the two runs: by owner, the n-th created with the
    n-th; a bare pod by its name. Each pair is labelled "owner#n" or the pod's name."""

    def groups(pods: Sequence[PodEntry]) -> dict[str, list[PodEntry]]:
        out: dict[str, list[PodEntry]] = {}
        for pod in sorted(pods, key=lambda p: (p["created"] is None, p["created"] or 0.0)):
            owner = pod["owner"] or f"Pod/{pod['name']}"
            out.setdefault(owner, []).append(pod)
        return out

    ga, gb = groups(a), groups(b)
    pairs: list[tuple[str, PodEntry | None, PodEntry | None]] = []
    for owner in sorted(set(ga) | set(gb)):
        la, lb = ga.get(owner, []), gb.get(owner, [])
        bare = owner.startswith("Pod/")
        for i in range(max(len(la), len(lb))):
            label = owner.removeprefix("Pod/") if bare else f"{owner}#{i}"
            pairs.append((label, la[i] if i < len(la) else None, lb[i] if i < len(lb) else None))
    return pairs


def diff(
    a: Report, b: Report, *, bind_threshold: float = DEFAULT_BIND_THRESHOLD
) -> list[Difference]:
    """The differences between two replay reports (`report.build`'s)."""
    stuck_a, stuck_b = set(a["unschedulable_at_end"]), set(b["unschedulable_at_end"])
    out: list[Difference] = []

    def note(label: str, what: str, va: Value, vb: Value) -> None:
        out.append({"pod": label, "what": what, "a": va, "b": vb})

    for label, pa, pb in match(a["pods"], b["pods"]):
        if pa is None or pb is None:
            only = "only_in_a" if pb is None else "only_in_b"
            note(label, only, pa["name"] if pa else None, pb["name"] if pb else None)
            continue
        if pa["node"] != pb["node"]:
            note(label, "node", pa["node"], pb["node"])
        if pa["node_group"] != pb["node_group"]:
            note(label, "node_group", pa["node_group"], pb["node_group"])
        if (pa["preempted"] is None) != (pb["preempted"] is None):
            note(label, "preempted", pa["preempted"], pb["preempted"])
        if (pa["name"] in stuck_a) != (pb["name"] in stuck_b):
            note(label, "unschedulable", pa["name"] in stuck_a, pb["name"] in stuck_b)
        ba, bb = pa["bound"], pb["bound"]
        if ba is not None and bb is not None:
            late_a, late_b = ba - (pa["created"] or 0.0), bb - (pb["created"] or 0.0)
            if abs(late_a - late_b) > bind_threshold:
                note(label, "bound", ba, bb)
    return out
