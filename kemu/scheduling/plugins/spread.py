"""The default selector of a pod (upstream plugins/helper/spread.go DefaultSelector): the labels
that the workloads owning or serving the pod select it by, used by PodTopologySpread's default
constraints to count "the pod's siblings".

- Every Service of the pod's namespace whose selector matches the pod's labels contributes its
  selector's labels (a Service without a selector matches nothing, not everything).
- The pod's controller (the ownerReference with controller=true), when it is an apps/v1
  ReplicaSet the lister knows, adds the requirements of the ReplicaSet's selector.
- Upstream also reads ReplicationControllers (core/v1) and StatefulSets (apps/v1); kemu serves
  neither kind, so such an owner adds nothing.

An empty result (no Service and no known controller) selects everything, which
PodTopologySpread reads as "no default constraints for this pod".
"""

from __future__ import annotations

from typing import Final

from kemu.api.v1 import types_pb2
from kemu.machinery.errors import Invalid
from kemu.machinery.labels import (
    EVERYTHING,
    Selector,
    selector_from_label_selector,
    selector_from_set,
)
from kemu.machinery.owners import controller_of
from kemu.scheduling.interface import ObjectLister

APPS_V1: Final = "apps/v1"
REPLICA_SET_KIND: Final = "ReplicaSet"


def pod_services(
    services: ObjectLister[types_pb2.Service] | None, pod: types_pb2.Pod
) -> list[types_pb2.Service]:
    """The Services of the pod's namespace that select it (upstream GetPodServices)."""
    if services is None:
        return []
    labels = pod.metadata.labels
    out = []
    for svc in services.list(pod.metadata.namespace):
        selector = svc.spec.selector
        if not selector:
            continue  # no selector: the Service selects nothing
        if all(labels.get(k) == v for k, v in selector.items()):
            out.append(svc)
    return out


def default_selector(
    pod: types_pb2.Pod,
    services: ObjectLister[types_pb2.Service] | None,
    replica_sets: ObjectLister[types_pb2.ReplicaSet] | None,
) -> Selector:
    """The pod's default selector (see the module's docstring); EVERYTHING when nothing owns
    or serves it. Listers are None in simulations without informers."""
    label_set: dict[str, str] = {}
    for svc in pod_services(services, pod):
        # They all match the pod, so their labels cannot conflict: merging is safe.
        label_set.update(svc.spec.selector)
    selector = selector_from_set(label_set) if label_set else EVERYTHING
    owner = controller_of(pod)
    if owner is None or replica_sets is None:
        return selector
    if owner.api_version != APPS_V1 or owner.kind != REPLICA_SET_KIND:
        return selector
    rs = replica_sets.get(owner.name, pod.metadata.namespace)
    if rs is None:
        return selector
    try:
        other = selector_from_label_selector(
            rs.spec.selector if rs.spec.HasField("selector") else None
        )
    except Invalid:
        return selector
    if other.nothing:
        return selector  # upstream: Requirements() of Nothing are not selectable
    return Selector(
        tuple(sorted((*selector.requirements, *other.requirements), key=lambda r: r.key))
    )
