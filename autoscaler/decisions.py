"""The autoscaler's decision record (`--record-decisions`, kemu only): one `LoopRecord` per
loop, and each node's scale-down verdicts over time, kept in memory, bounded, and served as
JSON at GET /debug/decisions on the metrics port.

A loop's record says when it ran (the cluster's clock) and what it decided: the pending pods it
considered for a scale-up, those it left out (expendable, too young, nominated to a node: counted
there), those that fit an existing or upcoming node in simulation (and where), each scale-up
option (group, node count, the pods it helps) with the expander's choice, why the pods no
option helped triggered none (upstream's NotTriggerScaleUp reasons, counted over groups), and
the scale-down: the cooldown if any, each node's verdict (`unneeded` since when, or upstream's
UnremovableReason and its message) and the deletions started.

A node's history keeps a verdict each time it changes (the first, and then only changes), so a
node unneeded for an hour is one entry, not one per loop.

Bounds: the last `max_loops` loops; the history of the last `max_nodes` nodes (least recently
changed first out), `max_verdicts_per_node` entries each. Off (the default), nothing is kept.

Served: `GET /debug/decisions?node=NAME` -> {"node", "verdicts": [{"time", "verdict",
"message"}...]}; `?loops=N` -> {"loops": [the last N loop records]} (default 10).
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from autoscaler.scale_up import ScaleUpResult
from autoscaler.scaledown.eligibility import UnremovableReason
from autoscaler.scaledown.scale_down import ScaleDownSummary
from kemu.component.health import DebugRequestError
from kemu.machinery.convert import format_time, timestamp
from kemu.machinery.jsonvalue import JSONObject
from kemu.machinery.keys import object_key

DEFAULT_MAX_LOOPS: Final = 1000
DEFAULT_MAX_NODES: Final = 10_000
DEFAULT_MAX_VERDICTS_PER_NODE: Final = 64
DEFAULT_LOOPS_SHOWN: Final = 10

UNNEEDED: Final = "Unneeded"
DELETION_STARTED: Final = "DeletionStarted"
_WAITING: Final = frozenset(
    {
        str(UnremovableReason.NOT_UNNEEDED_LONG_ENOUGH),
        str(UnremovableReason.NOT_UNREADY_LONG_ENOUGH),
    }
)


@dataclass(frozen=True, slots=True)
class Verdict:
    time: float
    verdict: str
    """Unneeded, DeletionStarted, or an upstream UnremovableReason."""
    message: str = ""

    def to_json(self) -> JSONObject:
        return {"time": self.time, "verdict": self.verdict, "message": self.message}


@dataclass(frozen=True)
class LoopRecord:
    time: float
    considered: tuple[str, ...] = ()
    left_out: Mapping[str, str] = field(default_factory=dict)
    """Pod -> why it was no scale-up candidate (expendable, too young, nominated)."""
    placements: Mapping[str, str] = field(default_factory=dict)
    options: tuple[JSONObject, ...] = ()
    chosen: JSONObject | None = None
    not_triggered: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    scale_down: JSONObject | None = None

    def to_json(self) -> JSONObject:
        return {
            "time": self.time,
            "considered": list(self.considered),
            "leftOut": {k: v for k, v in self.left_out.items()},
            "placements": {k: v for k, v in self.placements.items()},
            "scaleUp": {
                "options": [dict(o) for o in self.options],
                "chosen": None if self.chosen is None else dict(self.chosen),
                "notTriggered": {
                    k: {r: n for r, n in v.items()} for k, v in self.not_triggered.items()
                },
            },
            "scaleDown": None if self.scale_down is None else dict(self.scale_down),
        }


def _scale_up_parts(
    result: ScaleUpResult | None, expander: str
) -> tuple[tuple[JSONObject, ...], JSONObject | None, dict[str, dict[str, int]]]:
    if result is None:
        return (), None, {}
    options = tuple[JSONObject, ...](
        {"group": o.group, "nodes": o.node_count, "pods": [object_key(p) for p in o.pods]}
        for o in result.options
    )
    chosen: JSONObject | None = None
    if result.option is not None:
        o = result.option
        chosen = {
            "group": o.group,
            "nodes": o.node_count,
            "from": result.before,
            "to": result.before + o.node_count,
            "expander": expander,
        }
    return options, chosen, {k: dict(v) for k, v in sorted(result.reasons.items())}


def _scale_down_part(summary: ScaleDownSummary | None) -> JSONObject | None:
    if summary is None:
        return None
    messages = dict(summary.unremovable_messages)
    return {
        "cooldown": summary.cooldown_reason or None,
        "unneeded": {
            u.name: {"since": u.since, "utilization": u.utilization} for u in summary.unneeded
        },
        "unremovable": {
            n: {"reason": r, "message": messages.get(n, "")} for n, r in summary.unremovable
        },
        "deletionsStarted": list(summary.started),
    }


class LoopDecisionLog:
    """The last loops and each node's verdicts; see the module docstring."""

    def __init__(
        self,
        *,
        max_loops: int = DEFAULT_MAX_LOOPS,
        max_nodes: int = DEFAULT_MAX_NODES,
        max_verdicts_per_node: int = DEFAULT_MAX_VERDICTS_PER_NODE,
    ) -> None:
        if min(max_loops, max_nodes, max_verdicts_per_node) < 1:
            raise ValueError("a decision log keeps at least one of each")
        self._loops: deque[LoopRecord] = deque(maxlen=max_loops)
        self._nodes: OrderedDict[str, deque[Verdict]] = OrderedDict()
        self._max_nodes = max_nodes
        self._max_verdicts = max_verdicts_per_node

    def record(
        self,
        *,
        time: float,
        considered: tuple[str, ...],
        left_out: Mapping[str, str],
        placements: Mapping[str, str],
        scale_up: ScaleUpResult | None,
        expander: str,
        scale_down: ScaleDownSummary | None,
    ) -> LoopRecord:
        options, chosen, not_triggered = _scale_up_parts(scale_up, expander)
        loop = LoopRecord(
            time,
            considered,
            dict(left_out),
            dict(placements),
            options,
            chosen,
            not_triggered,
            _scale_down_part(scale_down),
        )
        self._loops.append(loop)
        if scale_down is not None:
            self._verdicts(time, scale_down)
        return loop

    def _verdicts(self, time: float, summary: ScaleDownSummary) -> None:
        """An unneeded node still waiting out its unneeded (or unready) time is Unneeded
        (since when); a node not checked again this loop (RecentlyUnremovable) keeps its
        verdict."""
        messages = dict(summary.unremovable_messages)
        unneeded = {u.name: u for u in summary.unneeded}
        for name, reason in summary.unremovable:
            if reason == str(UnremovableReason.RECENTLY_UNREMOVABLE):
                continue
            if name in unneeded and reason in _WAITING:
                continue
            unneeded.pop(name, None)
            self._note(name, Verdict(time, reason, messages.get(name, "")))
        for u in unneeded.values():
            since = format_time(timestamp(u.since), "second")
            self._note(u.name, Verdict(time, UNNEEDED, f"since {since}"))
        for name in summary.started:
            self._note(name, Verdict(time, DELETION_STARTED))

    def _note(self, node: str, verdict: Verdict) -> None:
        history = self._nodes.get(node)
        if history is None:
            history = self._nodes[node] = deque(maxlen=self._max_verdicts)
            while len(self._nodes) > self._max_nodes:
                self._nodes.popitem(last=False)
        elif history and (history[-1].verdict, history[-1].message) == (
            verdict.verdict,
            verdict.message,
        ):
            return
        self._nodes.move_to_end(node)
        history.append(verdict)

    def verdicts(self, node: str) -> list[Verdict]:
        return list(self._nodes.get(node, ()))

    def loops(self) -> list[LoopRecord]:
        return list(self._loops)

    def report(self, query: Mapping[str, str]) -> JSONObject:
        """GET /debug/decisions (see the module docstring)."""
        node = query.get("node")
        if node is not None:
            if not node:
                raise DebugRequestError("node: a node name is required")
            return {"node": node, "verdicts": [v.to_json() for v in self.verdicts(node)]}
        text = query.get("loops", str(DEFAULT_LOOPS_SHOWN))
        try:
            n = int(text)
        except ValueError:
            n = -1
        if n < 0:
            raise DebugRequestError(f'loops: "{text}" is not a number of loops (0 or more)')
        recent = list(self._loops)[-n:] if n else []
        return {"loops": [loop.to_json() for loop in recent]}
