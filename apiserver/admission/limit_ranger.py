"""The LimitRanger admission plugin (upstream plugin/pkg/admission/limitranger/admission.go),
on by default: a new pod's containers get the defaults of their namespace's LimitRanges
(mutating), then the pod is checked against their min, max and maxLimitRequestRatio
(validating); a pod's resize (pods/resize) is checked again, and a PersistentVolumeClaim
created or updated (an expansion) against the PersistentVolumeClaim items' storage min and
max (upstream DefaultLimitRangerActions.SupportsAttributes: no other update). The rules are
kemu.machinery.limit_ranger's; this reads the namespace's LimitRanges from the watch cache."""

from __future__ import annotations

from collections.abc import Iterable

from google.protobuf.message import Message

from kemu.api.v1 import types_pb2
from kemu.machinery import limit_ranger


def in_namespace(objects: Iterable[Message], namespace: str) -> list[types_pb2.LimitRange]:
    return [
        o
        for o in objects
        if isinstance(o, types_pb2.LimitRange) and o.metadata.namespace == namespace
    ]


def admit(pod: types_pb2.Pod, ranges: list[types_pb2.LimitRange]) -> None:
    """The mutating half: defaults (the annotation kubernetes.io/limit-ranger says which)."""
    limit_ranger.mutate_pod(pod, ranges)


def validate(pod: types_pb2.Pod, ranges: list[types_pb2.LimitRange]) -> None:
    """The validating half: Forbidden with upstream's message."""
    limit_ranger.validate_pod(pod, ranges)


def validate_pvc(pvc: types_pb2.PersistentVolumeClaim, ranges: list[types_pb2.LimitRange]) -> None:
    limit_ranger.validate_pvc(pvc, ranges)
