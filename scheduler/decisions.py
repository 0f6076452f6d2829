"""The scheduler's decision record (`--record-decisions`, kemu only): one `Attempt` per
scheduling attempt of a pod (plain and KEP-5836 deferred-resize cycles alike), kept in memory,
bounded, and served as JSON at GET /debug/decisions on the metrics port.

An attempt says when it started (the cluster's clock), the profile, the cycle kind, the nodes
in the snapshot, how many PreFilter left (its PreFilterResult), the nodes evaluated (through
Filter, the nominated node's try included: percentageOfNodesToScore and KEP-1923 show here)
and the feasible ones, the nominatedNodeName the pod came with, and its outcome:
- `scheduled` on `node`, with the best scored `candidates` (the chosen node first; each Score
  plugin's weighted score and the total), then the `phases` after the choice (Reserve, Permit,
  WaitOnPermit, PreBind, Bind: code, plugin, seconds), the KEP-5278 expected node set at
  binding start, and `bound` (or the binding's error);
- `unschedulable` with `reasons` (reason -> node count, upstream's FailedScheduling words, with
  the first few nodes that gave each; the message too), `rejectedBy` (Filter plugin -> nodes) and what PostFilter did: the node
  preemption nominated, how many candidates the dry run found and which of upstream's criteria
  chose the node, each victim with its priority and the PodDisruptionBudgets it breaks, the
  lower-priority nominations to that node it clears;
- `parked` (a deferred resize that fits, waiting for its kubelet), or `error`.
The result labels are upstream's schedule_attempts_total ones: a binding that fails turns a
`scheduled` attempt into `error`.

Bounds: the last `max_attempts_per_pod` attempts of each of the last `max_pods` pods (least
recently attempted pods go first); an attempt holds no per-node data beyond a few named nodes,
so its size does not grow with the cluster (its reasons are distinct reasons, not nodes). Off (the default), the
scheduler holds no log and records nothing.

Served: `GET /debug/decisions?pod=NAMESPACE/NAME` -> {"pod", "uid", "attempts": [...]} (the
pod's latest uid); without `pod`, {"pods": count, "attempts": count, "maxPods",
"maxAttemptsPerPod", "bytesPerAttempt": the log's memory (`deep_size`: its records, the pods'
lists, the indexes; each shared string once) over the attempts it holds}.
"""

from __future__ import annotations

import heapq
import sys
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, is_dataclass
from types import MappingProxyType
from typing import Any, Final

import numpy as np

from kemu.api.v1 import types_pb2
from kemu.component.clock import Clock
from kemu.component.health import DebugRequestError
from kemu.machinery.jsonvalue import JSONObject
from kemu.machinery.keys import object_key
from kemu.scheduling.arrays import IntArray
from kemu.scheduling.filter_score import PrioritizedNodes
from kemu.scheduling.interface import FitError
from kemu.scheduling.runtime import NodePluginScores
from kemu.scheduling.status import Status
from kemu.scheduling.types import NodeInfo, PostFilterResult
from scheduler.cycle_observer import DEFERRED_RESIZE, SCHEDULE

__all__ = [
    "DEFERRED_RESIZE",
    "SCHEDULE",
    "Attempt",
    "DecisionLog",
    "DecisionRecorder",
    "Phase",
    "ScoredNode",
    "Victim",
    "record_unschedulable",
    "top_column_scores",
    "top_node_scores",
]

DEFAULT_MAX_PODS: Final = 10_000
DEFAULT_MAX_ATTEMPTS_PER_POD: Final = 16
EXAMPLE_NODES: Final = 3
"""Nodes named per reason of an unschedulable attempt (the first that gave it)."""
TOP_CANDIDATES: Final = 3
"""Scored nodes kept per attempt: the chosen node and the best of the others."""

RESERVE: Final = "Reserve"
PERMIT: Final = "Permit"
WAIT_ON_PERMIT: Final = "WaitOnPermit"
PRE_BIND: Final = "PreBind"
BIND: Final = "Bind"

SCHEDULED: Final = "scheduled"
UNSCHEDULABLE: Final = "unschedulable"
ERROR: Final = "error"
PARKED: Final = "parked"


_NONE: Final[Mapping[str, Any]] = MappingProxyType({})
"""The empty reasons and examples every attempt without them shares."""


@dataclass(frozen=True, slots=True)
class Victim:
    """A pod preemption chose to remove for the attempt's pod, and the PodDisruptionBudgets
    (namespace/name) that select it and that removing the node's victims would take below
    zero disruptions allowed."""

    pod: str
    priority: int
    pdbs: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ScoredNode:
    """One of an attempt's best scored nodes: each Score plugin's weighted score (after
    NormalizeScore, times the plugin's weight; in the order of the attempt's
    `score_plugins`) and their total."""

    node: str
    total: int
    scores: tuple[int, ...]

    def to_json(self, plugins: Sequence[str]) -> JSONObject:
        return {
            "node": self.node,
            "total": self.total,
            "scores": dict(zip(plugins, self.scores, strict=True)),
        }


@dataclass(frozen=True, slots=True)
class Phase:
    """An extension point after the node was chosen (Reserve, Permit, WaitOnPermit, PreBind,
    Bind): its status code in upstream's words (Success, Wait, Unschedulable, Error, ...),
    the plugin that gave a non-success, how long it took on the scheduler's clock and how
    much of that its API calls waited for the client's rate limiter (kemu.client.flowcontrol)."""

    point: str
    code: str
    seconds: float
    plugin: str = ""
    throttled: float = 0.0

    def to_json(self) -> JSONObject:
        out: JSONObject = {"point": self.point, "code": self.code, "seconds": self.seconds}
        if self.plugin:
            out["plugin"] = self.plugin
        if self.throttled:
            out["throttledSeconds"] = self.throttled
        return out


@dataclass(slots=True)
class Attempt:
    """One scheduling attempt; the scheduler fills it in as the attempt goes."""

    time: float
    profile: str
    cycle: str
    nominated: str
    """status.nominatedNodeName at the cycle's start ("" for none)."""
    nodes: int = 0
    pre_filter_nodes: int | None = None
    """Nodes PreFilter left (its PreFilterResult); None when it left all of them."""
    evaluated: int = 0
    feasible: int = 0
    result: str = ""
    """"" while the scheduling cycle runs; then scheduled, unschedulable, parked or error."""
    node: str | None = None
    candidates: tuple[ScoredNode, ...] = ()
    """The chosen node first, then the best other scored nodes (none when only one node was
    feasible: upstream does not score it)."""
    score_plugins: tuple[str, ...] = ()
    """The Score plugins the candidates' scores are of, in that order."""
    reasons: Mapping[str, int] = field(default_factory=lambda: _NONE)
    examples: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: _NONE)
    """Reason -> up to EXAMPLE_NODES nodes that gave it (in the order they were filtered)."""
    rejected_by: Mapping[str, int] = field(default_factory=lambda: _NONE)
    """Filter plugin -> the nodes it rejected (upstream's Status plugin of each node's
    rejection; "PreFilter" for nodes a PreFilter result left out without one)."""
    message: str = ""
    post_filter_nominated: str | None = None
    """The node PostFilter (preemption) nominated; "" when it cleared the nomination."""
    victims: tuple[Victim, ...] = ()
    """The pods preemption chose on that node, most important first."""
    pdb_violations: int = 0
    """How many of them a PodDisruptionBudget protects (upstream's count, the first criterion)."""
    preemption_candidates: int = 0
    """Nodes where the dry run found victims that make the pod fit."""
    preemption_criterion: str = ""
    """Which of upstream's pickOneNodeForPreemption criteria chose the node among them."""
    cleared_nominations: tuple[str, ...] = ()
    """Lower-priority pods nominated to that node, whose nomination preemption clears."""
    bound: bool | None = None
    """After a `scheduled` cycle: True once bound, False if the binding cycle failed."""
    expected_node: str | None = None
    """KEP-5278: the node the binding cycle set nominatedNodeName to (the expected
    placement) before PreBind or Permit's wait; None when it set none."""
    phases: tuple[Phase, ...] = ()
    """Reserve, Permit and the binding cycle's points, in order, as far as they ran."""
    pod_group: PodGroupOutcome | None = None
    """A member's try in a pod-group cycle: the group's outcome; None for a pod's own cycle."""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "time": self.time,
            "profile": self.profile,
            "cycle": self.cycle,
            "nominatedNodeName": self.nominated or None,
            "nodes": self.nodes,
            "preFilterNodes": self.pre_filter_nodes,
            "evaluatedNodes": self.evaluated,
            "feasibleNodes": self.feasible,
            "result": self.result or "running",
            "node": self.node,
            "candidates": [c.to_json(self.score_plugins) for c in self.candidates],
            "reasons": dict(sorted(self.reasons.items())),
            "exampleNodes": {r: list(n) for r, n in sorted(self.examples.items())},
            "rejectedBy": dict(sorted(self.rejected_by.items())),
            "message": self.message,
            "victims": [v.pod for v in self.victims],
            "phases": [p.to_json() for p in self.phases],
        }
        if self.post_filter_nominated is not None:
            out["preemption"] = {
                "nominatedNodeName": self.post_filter_nominated or None,
                "victims": [
                    {"pod": v.pod, "priority": v.priority, "pdbs": list(v.pdbs)}
                    for v in self.victims
                ],
                "pdbViolations": self.pdb_violations,
                "candidates": self.preemption_candidates,
                "criterion": self.preemption_criterion or None,
                "clearedNominations": list(self.cleared_nominations),
            }
        if self.bound is not None:
            out["bound"] = self.bound
        if self.expected_node is not None:
            out["expectedNodeName"] = self.expected_node
        if self.pod_group is not None:
            out["podGroup"] = self.pod_group.to_json()
        return out


@dataclass(frozen=True)
class PodGroupOutcome:
    """What the pod-group cycle a member was tried in decided for the whole group."""

    group: str
    """namespace/name of the PodGroup (1.35: of the Workload's pod group)."""
    members: int
    result: str
    message: str

    def to_json(self) -> JSONObject:
        return {
            "group": self.group,
            "members": self.members,
            "result": self.result,
            "message": self.message,
        }


@dataclass
class Gated:
    """PreEnqueue keeps the pod out of activeQ: since when, by which plugin, its message (the
    latest; `since` is kept while the gate stays)."""

    since: float
    plugin: str
    message: str

    def to_json(self) -> JSONObject:
        return {"since": self.since, "plugin": self.plugin, "message": self.message}


def deep_size(roots: Iterable[object]) -> int:
    """Bytes of every object reachable from `roots` through containers and dataclass fields,
    each distinct object counted once (a node name or a plugin name many records share
    costs its bytes once; None, True and False nothing): what holding them costs."""
    seen: set[int] = {id(None), id(True), id(False)}
    stack = list(roots)
    total = 0
    while stack:
        obj = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        total += sys.getsizeof(obj)
        if isinstance(obj, str | bytes | int | float):
            continue
        if isinstance(obj, dict | MappingProxyType):
            stack.extend(obj.keys())
            stack.extend(obj.values())
        elif isinstance(obj, tuple | list | set | frozenset):
            stack.extend(obj)
        elif is_dataclass(obj):
            stack.extend(getattr(obj, f.name) for f in fields(obj))
    return total


_PLUGIN_ORDERS: dict[tuple[str, ...], tuple[str, ...]] = {}


def _plugin_order(names: tuple[str, ...]) -> tuple[str, ...]:
    """One tuple per distinct order of Score plugins (a handful per profile, for the plugins
    PreScore skips), shared by every attempt that scored with it."""
    return _PLUGIN_ORDERS.setdefault(names, names)


def top_column_scores(
    feasible: Sequence[NodeInfo],
    totals: IntArray,
    per_plugin: Mapping[str, IntArray | int],
    chosen: int,
) -> tuple[tuple[ScoredNode, ...], tuple[str, ...]]:
    """The batch path's best scored nodes and the plugins of their scores: `chosen` (an
    index of `feasible`, whose order the score arrays follow) first, then the other best by
    total."""
    k = min(TOP_CANDIDATES, len(totals))
    best = np.argpartition(-totals, k - 1)[:k] if len(totals) > k else range(len(totals))
    others = sorted((int(i) for i in best if i != chosen), key=lambda i: -int(totals[i]))
    columns = tuple(per_plugin.values())
    nodes = tuple(
        ScoredNode(
            feasible[i].name,
            int(totals[i]),
            tuple(v if isinstance(v, int) else int(v[i]) for v in columns),
        )
        for i in [chosen, *others[: TOP_CANDIDATES - 1]]
    )
    return nodes, _plugin_order(tuple(per_plugin))


def top_node_scores(
    scores: Sequence[NodePluginScores], chosen: str
) -> tuple[tuple[ScoredNode, ...], tuple[str, ...]]:
    """The per-node path's best scored nodes and the plugins of their scores: `chosen`
    first, then the other best by total."""
    best = heapq.nlargest(TOP_CANDIDATES, scores, key=lambda s: s.total_score)
    first = [s for s in scores if s.name == chosen][:1]
    others = [s for s in best if s.name != chosen][: TOP_CANDIDATES - len(first)]
    picked = [*first, *others]
    plugins = _plugin_order(tuple(picked[0].scores)) if picked else ()
    nodes = tuple(ScoredNode(s.name, s.total_score, tuple(s.scores.values())) for s in picked)
    return nodes, plugins


@dataclass
class _PodRecord:
    key: str
    uid: str
    attempts: list[Attempt]
    """Oldest first, at most the log's max_attempts_per_pod (a list: a deque's blocks would
    cost a pod 760 bytes however few its attempts)."""
    gated: Gated | None = None
    """Held at PreEnqueue now (None once an attempt began)."""


class DecisionLog:
    """The record of the last attempts of the last pods; see the module docstring."""

    def __init__(
        self,
        *,
        max_pods: int = DEFAULT_MAX_PODS,
        max_attempts_per_pod: int = DEFAULT_MAX_ATTEMPTS_PER_POD,
    ) -> None:
        if max_pods < 1 or max_attempts_per_pod < 1:
            raise ValueError("a decision log keeps at least one pod and one attempt")
        self.max_pods = max_pods
        self.max_attempts_per_pod = max_attempts_per_pod
        self._pods: OrderedDict[str, _PodRecord] = OrderedDict()  # by uid, oldest first
        self._by_key: dict[str, str] = {}  # namespace/name -> the latest uid

    def _record(self, uid: str, key: str) -> _PodRecord:
        """Pod `uid`'s record, made (and the oldest dropped past max_pods) or moved last."""
        record = self._pods.get(uid)
        if record is None:
            record = self._pods[uid] = _PodRecord(key, uid, [])
            while len(self._pods) > self.max_pods:
                _, old = self._pods.popitem(last=False)
                if self._by_key.get(old.key) == old.uid:
                    del self._by_key[old.key]
        else:
            self._pods.move_to_end(uid)
        self._by_key[key] = uid
        return record

    def gate(self, uid: str, key: str, *, time: float, plugin: str, message: str) -> None:
        """Pod `uid` is held at PreEnqueue by `plugin` (its first hold's time is kept)."""
        record = self._record(uid, key)
        if record.gated is None or record.gated.plugin != plugin:
            record.gated = Gated(time, plugin, message)
        else:
            record.gated.message = message

    def begin(
        self, uid: str, key: str, *, time: float, profile: str, cycle: str, nominated: str
    ) -> Attempt:
        """A new attempt of pod `uid` (namespace/name `key`), recorded at once."""
        record = self._record(uid, key)
        record.gated = None
        attempt = Attempt(time, profile, cycle, nominated)
        record.attempts.append(attempt)
        if len(record.attempts) > self.max_attempts_per_pod:
            del record.attempts[0]
        return attempt

    def latest(self, uid: str) -> Attempt | None:
        """The last attempt of pod `uid` (the one in flight, if any), or None."""
        record = self._pods.get(uid)
        return record.attempts[-1] if record is not None and record.attempts else None

    def attempts(self, key: str) -> tuple[str, list[Attempt]] | None:
        """(uid, attempts oldest first) of the latest pod named `key`, or None."""
        uid = self._by_key.get(key)
        if uid is None:
            return None
        return uid, list(self._pods[uid].attempts)

    def gated(self, key: str) -> Gated | None:
        """How the latest pod named `key` is held at PreEnqueue now, if it is."""
        uid = self._by_key.get(key)
        return self._pods[uid].gated if uid is not None else None

    def report(self, query: Mapping[str, str]) -> dict[str, Any]:
        """GET /debug/decisions (see the module docstring)."""
        key = query.get("pod")
        if key is None:
            count = sum(len(r.attempts) for r in self._pods.values())
            size = deep_size([self._pods, self._by_key])
            return {
                "pods": len(self._pods),
                "attempts": count,
                "maxPods": self.max_pods,
                "maxAttemptsPerPod": self.max_attempts_per_pod,
                "bytesPerAttempt": round(size / count) if count else 0,
            }
        namespace, sep, name = key.partition("/")
        if not sep or not namespace or not name or "/" in name:
            raise DebugRequestError(f'pod: "{key}" is not NAMESPACE/NAME')
        found = self.attempts(key)
        if found is None:
            return {"pod": key, "uid": None, "attempts": []}
        uid, attempts = found
        out: dict[str, Any] = {"pod": key, "uid": uid, "attempts": [a.to_json() for a in attempts]}
        gated = self.gated(key)
        if gated is not None:
            out["gated"] = gated.to_json()
        return out


def record_unschedulable(
    attempt: Attempt, fit: FitError, nominating: PostFilterResult | None
) -> None:
    """What the decision record keeps of a FitError and its PostFilter."""
    attempt.result = UNSCHEDULABLE
    attempt.nodes = fit.num_all_nodes
    attempt.evaluated = len(fit.statuses)
    attempt.reasons = fit.reasons()
    examples: dict[str, list[str]] = {}
    rejected_by: dict[str, int] = {}
    for node, status in fit.statuses.items():
        plugin = status.plugin or "PreFilter"
        rejected_by[plugin] = rejected_by.get(plugin, 0) + 1
        for reason in status.reasons:
            named = examples.setdefault(reason, [])
            if len(named) < EXAMPLE_NODES:
                named.append(node)
    absent = fit.num_all_nodes - len(fit.statuses)
    if absent > 0 and fit.statuses.absent.reasons and not fit.statuses.pre_filter_rejected:
        # (the nodes a PreFilterResult left out share one status)
        plugin = fit.statuses.absent.plugin or "PreFilter"
        rejected_by[plugin] = rejected_by.get(plugin, 0) + absent
    attempt.examples = {r: tuple(n) for r, n in examples.items()}
    attempt.rejected_by = rejected_by
    attempt.message = str(fit)
    if nominating is not None and nominating.nominated_node_name is not None:
        attempt.post_filter_nominated = nominating.nominated_node_name
        detail = nominating.detail
        pdbs = detail.victim_pdbs if detail is not None else ()
        attempt.victims = tuple(
            Victim(object_key(v), v.spec.priority, pdbs[i] if i < len(pdbs) else ())
            for i, v in enumerate(nominating.victims)
        )
        attempt.pdb_violations = nominating.pdb_violations
        if detail is not None:
            attempt.preemption_candidates = detail.candidates
            attempt.preemption_criterion = detail.criterion
            attempt.cleared_nominations = detail.cleared_nominations


class DecisionRecorder:
    """The scheduling cycle's observer (scheduler.cycle_observer.CycleObserver) that fills
    `log`: one Attempt per cycle, found again by the pod's uid as the cycle goes. `clock` is
    the scheduler's (attempts' times, the phases' durations)."""

    def __init__(self, log: DecisionLog, clock: Clock) -> None:
        self.log = log
        self._clock = clock

    def gated(self, pod: types_pb2.Pod, plugin: str, message: str) -> None:
        self.log.gate(
            pod.metadata.uid,
            object_key(pod),
            time=self._clock.now(),
            plugin=plugin,
            message=message,
        )

    def cycle_started(self, pod: types_pb2.Pod, *, profile: str, cycle: str) -> None:
        self.log.begin(
            pod.metadata.uid,
            object_key(pod),
            time=self._clock.now(),
            profile=profile,
            cycle=cycle,
            nominated=pod.status.nominated_node_name,
        )

    def pre_filter_narrowed(self, pod: types_pb2.Pod, nodes: int) -> None:
        if (attempt := self.log.latest(pod.metadata.uid)) is not None:
            attempt.pre_filter_nodes = nodes

    def plugin_scores(self) -> dict[str, IntArray | int] | None:
        return {}

    def scored(self, pod: types_pb2.Pod, scores: PrioritizedNodes, chosen: int) -> None:
        attempt = self.log.latest(pod.metadata.uid)
        if attempt is None:
            return
        if scores.totals is not None and scores.plugin_scores is not None:
            found = top_column_scores(scores.nodes, scores.totals, scores.plugin_scores, chosen)
        elif scores.node_scores is not None:
            found = top_node_scores(scores.node_scores, scores.nodes[chosen].name)
        else:
            return
        attempt.candidates, attempt.score_plugins = found

    def scheduled(
        self, pod: types_pb2.Pod, *, node: str, nodes: int, evaluated: int, feasible: int
    ) -> None:
        if (attempt := self.log.latest(pod.metadata.uid)) is not None:
            attempt.nodes = nodes
            attempt.evaluated = evaluated
            attempt.feasible = feasible
            attempt.node = node
            attempt.result = SCHEDULED

    def unschedulable(
        self, pod: types_pb2.Pod, fit: FitError, nominating: PostFilterResult | None
    ) -> None:
        if (attempt := self.log.latest(pod.metadata.uid)) is not None:
            record_unschedulable(attempt, fit, nominating)

    def parked(self, pod: types_pb2.Pod) -> None:
        if (attempt := self.log.latest(pod.metadata.uid)) is not None:
            attempt.result = PARKED

    def failed(self, pod: types_pb2.Pod, status: Status) -> None:
        attempt = self.log.latest(pod.metadata.uid)
        if attempt is not None and attempt.result in ("", SCHEDULED):
            # Failed after a node was found (Reserve, Permit, binding) or without a FitError.
            attempt.result = UNSCHEDULABLE if status.is_rejected() else ERROR
            attempt.message = status.message() or str(status)

    def phase(
        self, pod: types_pb2.Pod, point: str, status: Status, since: float, throttled: float = 0.0
    ) -> None:
        if (attempt := self.log.latest(pod.metadata.uid)) is not None:
            plugin = "" if status.is_success() else status.plugin
            seconds = round(self._clock.monotonic() - since, 6)
            phase = Phase(point, status.code_name(), seconds, plugin, round(throttled, 6))
            attempt.phases += (phase,)

    def expected_node(self, pod: types_pb2.Pod, node: str) -> None:
        if (attempt := self.log.latest(pod.metadata.uid)) is not None:
            attempt.expected_node = node

    def bound(self, pod: types_pb2.Pod, ok: bool) -> None:
        if (attempt := self.log.latest(pod.metadata.uid)) is not None:
            attempt.bound = ok

    def pod_group_decided(
        self,
        pod: types_pb2.Pod,
        *,
        group: str,
        members: int,
        result: str,
        message: str,
        nominated: str | None = None,
    ) -> None:
        if (attempt := self.log.latest(pod.metadata.uid)) is not None:
            attempt.pod_group = PodGroupOutcome(group, members, result, message)
            if nominated is not None:
                # (workload-aware preemption: as a pod's PostFilter nomination)
                attempt.post_filter_nominated = nominated
