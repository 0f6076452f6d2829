"""Pod QoS class, as upstream GetPodQOS / ComputePodQOS (pkg/apis/core/helper/qos).

Only cpu and memory count. A pod is BestEffort when no container (init containers included)
requests or limits either with a positive amount; Guaranteed when every container has positive
cpu and memory limits and the pod's summed requests equal its summed limits for each; Burstable
otherwise. A request left unset where a limit is set defaults to that limit, as API defaulting
does upstream before this is computed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, Literal

from kemu.api.v1 import types_pb2
from kemu.machinery.quantity import Quantity, parse_quantity

QOSClass = Literal["Guaranteed", "Burstable", "BestEffort"]
GUARANTEED: Final = "Guaranteed"
BURSTABLE: Final = "Burstable"
BEST_EFFORT: Final = "BestEffort"

_CLASSES: Final[dict[str, QOSClass]] = {
    GUARANTEED: GUARANTEED,
    BURSTABLE: BURSTABLE,
    BEST_EFFORT: BEST_EFFORT,
}
_QOS_RESOURCES: Final = ("cpu", "memory")
_ZERO: Final = Quantity.from_int(0)


def _positive(resources: Mapping[str, str]) -> dict[str, Quantity]:
    out = {}
    for name in _QOS_RESOURCES:
        text = resources.get(name)
        if text is None:
            continue
        q = parse_quantity(text, name)
        if q > _ZERO:
            out[name] = q
    return out


def _add(total: dict[str, Quantity], more: dict[str, Quantity]) -> None:
    for name, q in more.items():
        total[name] = total[name] + q if name in total else q


def compute_qos_class(pod: types_pb2.Pod, *, pod_level_resources: bool = False) -> QOSClass:
    """The QoS class the pod's spec implies (ignores status.qosClass).

    With `pod_level_resources` (the PodLevelResources gate) and cpu or memory in
    spec.resources, the pod-level requests and limits decide, as upstream.
    """
    requests: dict[str, Quantity] = {}
    limits: dict[str, Quantity] = {}
    guaranteed = True
    pod_level = pod.spec.resources
    if pod_level_resources and any(
        r in pod_level.requests or r in pod_level.limits for r in _QOS_RESOURCES
    ):
        limits = _positive(pod_level.limits)
        requests = _positive({**pod_level.limits, **pod_level.requests})
        guaranteed = all(r in limits for r in _QOS_RESOURCES)
    else:
        for c in (*pod.spec.containers, *pod.spec.init_containers):
            res = c.resources
            # Requests default to limits (API defaulting upstream).
            _add(requests, _positive({**res.limits, **res.requests}))
            container_limits = _positive(res.limits)
            _add(limits, container_limits)
            if not all(r in container_limits for r in _QOS_RESOURCES):
                guaranteed = False
    if not requests and not limits:
        return BEST_EFFORT
    if guaranteed and requests.keys() == limits.keys():
        if all(limits[name] == q for name, q in requests.items()):
            return GUARANTEED
    return BURSTABLE


def qos_class(pod: types_pb2.Pod, *, pod_level_resources: bool = False) -> QOSClass:
    """GetPodQOS: status.qosClass when the apiserver has set it, else computed from the spec."""
    status = _CLASSES.get(pod.status.qos_class)
    if status is not None:
        return status
    return compute_qos_class(pod, pod_level_resources=pod_level_resources)
