"""Where a pod comes from and how much it matters to its node (upstream
pkg/kubelet/types/pod_update.go): mirror and static pods, critical pods, and which pod may
make way for which (`preemptable`), as the kubelet's critical-pod preemption and the
autoscaler's drain rules ask."""

from __future__ import annotations

from typing import Final

from kemu.api.v1 import types_pb2
from kemu.machinery.validation.policy import SYSTEM_CRITICAL_PRIORITY

MIRROR_ANNOTATION: Final = "kubernetes.io/config.mirror"
CONFIG_SOURCE_ANNOTATION: Final = "kubernetes.io/config.source"
API_SOURCE: Final = "api"


def is_mirror_pod(pod: types_pb2.Pod) -> bool:
    """The API's copy of a static pod (IsMirrorPod)."""
    return MIRROR_ANNOTATION in pod.metadata.annotations


def is_static_pod(pod: types_pb2.Pod) -> bool:
    """A pod the kubelet read from a file or URL, not from the API (IsStaticPod)."""
    source = pod.metadata.annotations.get(CONFIG_SOURCE_ANNOTATION)
    return source is not None and source != API_SOURCE


def is_critical_pod(pod: types_pb2.Pod) -> bool:
    """Static, mirror, or of priority system-cluster-critical or above (IsCriticalPod)."""
    if is_static_pod(pod) or is_mirror_pod(pod):
        return True
    return pod.spec.HasField("priority") and pod.spec.priority >= SYSTEM_CRITICAL_PRIORITY


def preemptable(preemptor: types_pb2.Pod, preemptee: types_pb2.Pod) -> bool:
    """Whether `preemptor` may make `preemptee` go (Preemptable): a critical pod any
    non-critical one, else a pod of higher priority when both have one."""
    if is_critical_pod(preemptor) and not is_critical_pod(preemptee):
        return True
    if preemptor.spec.HasField("priority") and preemptee.spec.HasField("priority"):
        return preemptor.spec.priority > preemptee.spec.priority
    return False
