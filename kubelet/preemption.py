"""The kubelet's preemption for critical pods (upstream pkg/kubelet/preemption/preemption.go,
CriticalPodAdmissionHandler).

A critical pod (static, mirror, or of priority system-cluster-critical and above:
kemu.machinery.pod_types) that does not fit on its node is not rejected: the kubelet kills a
set of other pods that frees what it lacks, then admits it. Only pods the critical pod may
preempt (`preemptable`: non-critical ones, or lower-priority ones) are candidates, taken
BestEffort first, then Burstable, then Guaranteed: the Guaranteed pods needed even if every
other candidate went, then the Burstable ones needed besides those, then the BestEffort ones;
within a class, repeatedly the pod nearest to what is still missing (the squared shares of
each requirement it leaves unmet, summed; ties to the smaller memory, then cpu, request).
A pod counts at what it holds on the node; for the pod count, one. When no set of candidates
frees enough, the pod is rejected with UnexpectedAdmissionError.

Each victim gets a Warning event Preempting, "Preempted in order to admit critical pod", and is
killed with its grace period: phase Failed, reason Preempting, that message, and (with
PodDisruptionConditions) the condition DisruptionTarget, reason TerminationByKubelet. Upstream
admits the critical pod only once its victims are dead (the kill blocks); kemu admits it at
once and starts its containers when the last victim has stopped.

Upstream's ordering is by QoS class alone (kubernetes#135857 asks for priority within it; its
PR, #135866, was not merged as of 2026-11).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from kemu.api.v1 import types_pb2
from kemu.machinery.pod_types import is_critical_pod, preemptable
from kemu.machinery.qos import BEST_EFFORT, BURSTABLE, GUARANTEED, QOSClass, qos_class
from kubelet.admission import PODS, AdmissionError, InsufficientResource

PREEMPT_REASON: Final = "Preempting"
"""The victim's status reason and event reason (upstream events.PreemptContainer)."""
PREEMPT_MESSAGE: Final = "Preempted in order to admit critical pod"
DISRUPTION_REASON: Final = "TerminationByKubelet"
DISRUPTION_MESSAGE: Final = "Pod was preempted by Kubelet to accommodate a critical pod."
UNEXPECTED_ADMISSION_ERROR: Final = "UnexpectedAdmissionError"

_MEMORY: Final = "memory"
_CPU: Final = "cpu"


@dataclass(frozen=True)
class Candidate:
    """An active pod of the node and the requests it holds there."""

    pod: types_pb2.Pod
    held: Mapping[str, int]

    def request(self, resource: str) -> int:
        """upstream resource.GetResourceRequest: one for the pod count."""
        return 1 if resource == PODS else self.held.get(resource, 0)


Requirements = tuple[tuple[str, int], ...]
"""(resource, amount still to free), in the order of the failures."""


def _subtract(reqs: Requirements, pods: Iterable[Candidate]) -> Requirements:
    """What is still missing once `pods` are gone (admissionRequirementList.subtract)."""
    pods = list(pods)
    out: list[tuple[str, int]] = []
    for name, quantity in reqs:
        left = quantity
        for pod in pods:
            left -= pod.request(name)
            if left <= 0:
                break
        if left > 0:
            out.append((name, left))
    return tuple(out)


def _distance(reqs: Requirements, pod: Candidate) -> float:
    dist = 0.0
    for name, quantity in reqs:
        remaining = quantity - pod.request(name)
        if remaining > 0:
            dist += (remaining / quantity) ** 2
    return dist


def _smaller(a: Candidate, b: Candidate) -> bool:
    """smallerResourceRequest: memory, then cpu; True when equal."""
    for name in (_MEMORY, _CPU):
        x, y = a.request(name), b.request(name)
        if x != y:
            return x < y
    return True


def _text(reqs: Requirements) -> str:
    return "[" + "".join(f"(res: {n}, q: {q}), " for n, q in reqs) + "]"


class NoVictims(Exception):
    pass


def _by_distance(pods: list[Candidate], reqs: Requirements) -> list[Candidate]:
    """getPodsToPreemptByDistance (`pods` is consumed)."""
    out: list[Candidate] = []
    while reqs:
        if not pods:
            raise NoVictims(f"no set of running pods found to reclaim resources: {_text(reqs)}")
        best_distance = float(len(reqs) + 1)
        best = 0
        for i, pod in enumerate(pods):
            dist = _distance(reqs, pod)
            if dist < best_distance or (dist == best_distance and _smaller(pod, pods[best])):
                best_distance, best = dist, i
        chosen = pods[best]
        reqs = _subtract(reqs, [chosen])
        out.append(chosen)
        pods[best] = pods[-1]
        pods.pop()
    return out


def pods_to_preempt(
    preemptor: types_pb2.Pod, candidates: Sequence[Candidate], reqs: Requirements
) -> list[Candidate]:
    """getPodsToPreempt; NoVictims when no set of candidates frees `reqs`."""
    classes: dict[QOSClass, list[Candidate]] = {BEST_EFFORT: [], BURSTABLE: [], GUARANTEED: []}
    for c in candidates:
        if preemptable(preemptor, c.pod):
            classes[qos_class(c.pod)].append(c)
    best_effort, burstable, guaranteed = (
        classes[BEST_EFFORT],
        classes[BURSTABLE],
        classes[GUARANTEED],
    )
    left = _subtract(reqs, [*best_effort, *burstable, *guaranteed])
    if left:
        raise NoVictims(f"no set of running pods found to reclaim resources: {_text(left)}")
    g = _by_distance(list(guaranteed), _subtract(reqs, [*best_effort, *burstable]))
    b = _by_distance(list(burstable), _subtract(reqs, [*best_effort, *g]))
    be = _by_distance(list(best_effort), _subtract(reqs, [*b, *g]))
    return [*be, *b, *g]


class CriticalPodAdmissionHandler:
    """kubelet.admission's AdmissionFailureHandler for one node: `candidates` lists the
    node's active pods (with what they hold), `kill` kills one as a victim and returns when
    its containers will have stopped."""

    def __init__(
        self,
        candidates: Callable[[], Sequence[Candidate]],
        kill: Callable[[types_pb2.Pod], float],
    ) -> None:
        self._candidates = candidates
        self._kill = kill

    def __call__(
        self, pod: types_pb2.Pod, failures: Sequence[InsufficientResource]
    ) -> float | None:
        if not is_critical_pod(pod):
            return None
        reqs = tuple((f.resource, f.amount) for f in failures)
        others = [c for c in self._candidates() if c.pod.metadata.uid != pod.metadata.uid]
        try:
            victims = pods_to_preempt(pod, others, reqs)
        except NoVictims as e:
            raise AdmissionError(
                UNEXPECTED_ADMISSION_ERROR,
                "Unexpected error while attempting to recover from admission failure: "
                f"preemption: error finding a set of pods to preempt: {e}",
            ) from None
        free_at = 0.0
        for victim in victims:
            free_at = max(free_at, self._kill(victim.pod))
        return free_at
