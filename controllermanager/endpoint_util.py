"""What the endpoint and endpointslice controllers share (upstream pkg/controller/util/endpoint
and staging/src/k8s.io/endpointslice/util): which Services select a pod, whether a pod is an
endpoint, and a Service port's number on a pod."""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from kemu.api.v1 import types_pb2
from kemu.client.informer import Lister
from kemu.machinery.keys import object_key
from kemu.machinery.labels import selector_from_set
from kemu.machinery.pod_conditions import is_pod_ready
from kemu.machinery.validation.core import CLUSTER_IP_NONE
from kemu.machinery.well_known_labels import LABEL_TOPOLOGY_ZONE

TOPOLOGY_ZONE: Final = LABEL_TOPOLOGY_ZONE


def services_selecting(
    services: Lister[types_pb2.Service], pod: types_pb2.Pod
) -> list[types_pb2.Service]:
    """GetPodServiceMemberships: the pod's namespace's Services with a selector that matches
    its labels."""
    return [
        svc
        for svc in services.list(pod.metadata.namespace)
        if svc.spec.selector and selector_from_set(svc.spec.selector).matches(pod.metadata.labels)
    ]


def pod_changed_services(
    services: Lister[types_pb2.Service], old: types_pb2.Pod, new: types_pb2.Pod
) -> set[str]:
    """The keys of the Services an update of a pod concerns: those selecting it before or
    after (GetServicesToUpdateOnPodChange, without its fine-grained comparison)."""
    return {object_key(s) for p in (old, new) for s in services_selecting(services, p)}


def should_pod_be_in_endpoints(pod: types_pb2.Pod, include_terminating: bool) -> bool:
    """ShouldPodBeInEndpoints: a pod with an IP that has not finished (a pod that never
    restarts is done once Succeeded or Failed), and, unless `include_terminating`, not being
    deleted."""
    if not pod.status.pod_ip:
        return False
    if not include_terminating and pod.metadata.HasField("deletion_timestamp"):
        return False
    if pod.spec.restart_policy == "Never":
        return pod.status.phase not in ("Succeeded", "Failed")
    if pod.spec.restart_policy == "OnFailure":
        return pod.status.phase != "Succeeded"
    return True


def find_port(pod: types_pb2.Pod, port: types_pb2.ServicePort) -> int | None:
    """podutil.FindPort: the service port's targetPort on the pod (a name looked up among
    the containers' ports of the same protocol); None when a name is not found."""
    target = port.target_port
    if target.WhichOneof("value") == "str_val":
        for c in pod.spec.containers:
            for cp in c.ports:
                if cp.name == target.str_val and (cp.protocol or "TCP") == port.protocol:
                    return cp.container_port
        return None
    return target.int_val or port.port


def is_headless(svc: types_pb2.Service) -> bool:
    return svc.spec.cluster_ip == CLUSTER_IP_NONE


def serving(pod: types_pb2.Pod) -> bool:
    """An endpoint's serving condition: the pod is ready (podutil.IsPodReady)."""
    return is_pod_ready(pod)


def pod_ref(pod: types_pb2.Pod) -> types_pb2.ObjectReference:
    return types_pb2.ObjectReference(
        kind="Pod", namespace=pod.metadata.namespace, name=pod.metadata.name, uid=pod.metadata.uid
    )


def selected_pods(
    pods: Lister[types_pb2.Pod], svc: types_pb2.Service, keep: Callable[[types_pb2.Pod], bool]
) -> list[types_pb2.Pod]:
    """The Service's namespace's pods its selector matches that `keep` accepts, by name."""
    sel = selector_from_set(svc.spec.selector)
    return sorted(
        (
            p
            for p in pods.list(svc.metadata.namespace)
            if sel.matches(p.metadata.labels) and keep(p)
        ),
        key=lambda p: p.metadata.name,
    )
