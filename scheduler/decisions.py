"""The scheduler's decision record (`--record-decisions`, kemu only): one `Attempt` per
scheduling attempt of a pod (plain and KEP-5836 deferred-resize cycles alike), kept in memory,
bounded, and served as JSON at GET /debug/decisions on the metrics port.

An attempt says when it started (the cluster's clock), the profile, the cycle kind, the nodes
in the snapshot, the nodes evaluated (through Filter, the nominated node's try included:
percentageOfNodesToScore and KEP-1923 show here) and the feasible ones, the nominatedNodeName
the pod came with, and its outcome: `scheduled` on `node` (then `bound`, or the binding's
error), `unschedulable` with `reasons` (reason -> node count, upstream's FailedScheduling
words, with the first few nodes that gave each; the message too) and what PostFilter did (the node preemption nominated, its victims
with their priorities, how many a PodDisruptionBudget protects), `parked` (a deferred resize that fits,
waiting for its kubelet), or `error`. The result labels are upstream's
schedule_attempts_total ones: a binding that fails turns a `scheduled` attempt into `error`.

Bounds: the last `max_attempts_per_pod` attempts of each of the last `max_pods` pods (least
recently attempted pods go first); an attempt holds no per-node data, so its size does not grow
with the cluster (its reasons are distinct reasons, not nodes). Off (the default), the
scheduler holds no log and records nothing.

Served: `GET /debug/decisions?pod=NAMESPACE/NAME` -> {"pod", "uid", "attempts": [...]} (the
pod's latest uid); without `pod`, {"pods": count, "attempts": count, "maxPods",
"maxAttemptsPerPod", "bytesPerAttempt": what a record holds on average (`Attempt.size`)}.
"""

from __future__ import annotations

import sys
from collections import OrderedDict, deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from kemu.component.health import DebugRequestError

DEFAULT_MAX_PODS: Final = 10_000
DEFAULT_MAX_ATTEMPTS_PER_POD: Final = 16
EXAMPLE_NODES: Final = 3
"""Nodes named per reason of an unschedulable attempt (the first that gave it)."""

SCHEDULE: Final = "schedule"
DEFERRED_RESIZE: Final = "deferred-resize"

SCHEDULED: Final = "scheduled"
UNSCHEDULABLE: Final = "unschedulable"
ERROR: Final = "error"
PARKED: Final = "parked"


@dataclass(frozen=True, slots=True)
class Victim:
    """A pod preemption chose to remove for the attempt's pod."""

    pod: str
    priority: int


@dataclass(slots=True)
class Attempt:
    """One scheduling attempt; the scheduler fills it in as the attempt goes."""

    time: float
    profile: str
    cycle: str
    nominated: str
    """status.nominatedNodeName at the cycle's start ("" for none)."""
    nodes: int = 0
    evaluated: int = 0
    feasible: int = 0
    result: str = ""
    """"" while the scheduling cycle runs; then scheduled, unschedulable, parked or error."""
    node: str | None = None
    reasons: dict[str, int] = field(default_factory=dict)
    examples: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Reason -> up to EXAMPLE_NODES nodes that gave it (in the order they were filtered)."""
    message: str = ""
    post_filter_nominated: str | None = None
    """The node PostFilter (preemption) nominated; "" when it cleared the nomination."""
    victims: tuple[Victim, ...] = ()
    """The pods preemption chose on that node, most important first."""
    pdb_violations: int = 0
    """How many of them a PodDisruptionBudget protects."""
    bound: bool | None = None
    """After a `scheduled` cycle: True once bound, False if the binding cycle failed."""
    expected_node: str | None = None
    """KEP-5278: the node the binding cycle set nominatedNodeName to (the expected
    placement) before PreBind or Permit's wait; None when it set none."""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "time": self.time,
            "profile": self.profile,
            "cycle": self.cycle,
            "nominatedNodeName": self.nominated or None,
            "nodes": self.nodes,
            "evaluatedNodes": self.evaluated,
            "feasibleNodes": self.feasible,
            "result": self.result or "running",
            "node": self.node,
            "reasons": dict(sorted(self.reasons.items())),
            "exampleNodes": {r: list(n) for r, n in sorted(self.examples.items())},
            "message": self.message,
            "victims": [v.pod for v in self.victims],
        }
        if self.post_filter_nominated is not None:
            out["preemption"] = {
                "nominatedNodeName": self.post_filter_nominated or None,
                "victims": [{"pod": v.pod, "priority": v.priority} for v in self.victims],
                "pdbViolations": self.pdb_violations,
            }
        if self.bound is not None:
            out["bound"] = self.bound
        if self.expected_node is not None:
            out["expectedNodeName"] = self.expected_node
        return out

    def size(self) -> int:
        """Bytes this record holds (the object, its strings, reasons and victims; strings
        shared with the rest of the process, such as interned node names, counted anyway)."""
        total = sys.getsizeof(self)
        for value in (
            self.profile,
            self.cycle,
            self.nominated,
            self.result,
            self.node,
            self.message,
            self.post_filter_nominated,
            self.expected_node,
        ):
            if value is not None:
                total += sys.getsizeof(value)
        total += sys.getsizeof(self.reasons)
        total += sum(sys.getsizeof(k) + sys.getsizeof(v) for k, v in self.reasons.items())
        total += sys.getsizeof(self.examples)
        total += sum(
            sys.getsizeof(v) + sum(sys.getsizeof(n) for n in v) for v in self.examples.values()
        )
        total += sys.getsizeof(self.victims)
        total += sum(sys.getsizeof(v) + sys.getsizeof(v.pod) for v in self.victims)
        return total


@dataclass
class _PodRecord:
    key: str
    uid: str
    attempts: deque[Attempt]


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

    def begin(
        self, uid: str, key: str, *, time: float, profile: str, cycle: str, nominated: str
    ) -> Attempt:
        """A new attempt of pod `uid` (namespace/name `key`), recorded at once."""
        record = self._pods.get(uid)
        if record is None:
            record = self._pods[uid] = _PodRecord(key, uid, deque(maxlen=self.max_attempts_per_pod))
            while len(self._pods) > self.max_pods:
                _, old = self._pods.popitem(last=False)
                if self._by_key.get(old.key) == old.uid:
                    del self._by_key[old.key]
        else:
            self._pods.move_to_end(uid)
        self._by_key[key] = uid
        attempt = Attempt(time, profile, cycle, nominated)
        record.attempts.append(attempt)
        return attempt

    def attempts(self, key: str) -> tuple[str, list[Attempt]] | None:
        """(uid, attempts oldest first) of the latest pod named `key`, or None."""
        uid = self._by_key.get(key)
        if uid is None:
            return None
        return uid, list(self._pods[uid].attempts)

    def report(self, query: Mapping[str, str]) -> dict[str, Any]:
        """GET /debug/decisions (see the module docstring)."""
        key = query.get("pod")
        if key is None:
            attempts = [a for r in self._pods.values() for a in r.attempts]
            size = sum(a.size() for a in attempts)
            return {
                "pods": len(self._pods),
                "attempts": len(attempts),
                "maxPods": self.max_pods,
                "maxAttemptsPerPod": self.max_attempts_per_pod,
                "bytesPerAttempt": round(size / len(attempts)) if attempts else 0,
            }
        namespace, sep, name = key.partition("/")
        if not sep or not namespace or not name or "/" in name:
            raise DebugRequestError(f'pod: "{key}" is not NAMESPACE/NAME')
        found = self.attempts(key)
        if found is None:
            return {"pod": key, "uid": None, "attempts": []}
        uid, attempts = found
        return {"pod": key, "uid": uid, "attempts": [a.to_json() for a in attempts]}
