"""Builders of StorageClasses, PersistentVolumes and PersistentVolumeClaims for the volume
controllers' tests (unit and integration)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kemu.api.v1 import types_pb2
from kemu.machinery.storage import (
    ANN_SELECTED_NODE,
    DEFAULT_CLASS_ANNOTATION,
)

RWO = "ReadWriteOnce"
ROX = "ReadOnlyMany"
RWX = "ReadWriteMany"


def storage_class(
    name: str,
    provisioner: str = "kemu.io/simulated",
    *,
    binding_mode: str | None = None,
    reclaim: str | None = None,
    parameters: Mapping[str, str] | None = None,
    default: bool = False,
    allowed_zones: Sequence[str] = (),
) -> types_pb2.StorageClass:
    cls = types_pb2.StorageClass(provisioner=provisioner)
    cls.metadata.name = name
    if binding_mode is not None:
        cls.volume_binding_mode = binding_mode
    if reclaim is not None:
        cls.reclaim_policy = reclaim
    cls.parameters.update(parameters or {})
    if default:
        cls.metadata.annotations[DEFAULT_CLASS_ANNOTATION] = "true"
    if allowed_zones:
        term = cls.allowed_topologies.add()
        term.match_label_expressions.add(key="topology.kubernetes.io/zone", values=allowed_zones)
    return cls


def volume(
    name: str,
    size: str,
    *,
    storage_class: str = "",
    modes: Sequence[str] = (RWO,),
    phase: str = "Available",
    reclaim: str = "Retain",
    labels: Mapping[str, str] | None = None,
    host_path: str = "/data/v",
    volume_mode: str | None = None,
    claim: types_pb2.PersistentVolumeClaim | None = None,
) -> types_pb2.PersistentVolume:
    pv = types_pb2.PersistentVolume()
    pv.metadata.name = name
    pv.metadata.labels.update(labels or {})
    pv.spec.capacity["storage"] = size
    pv.spec.access_modes.extend(modes)
    pv.spec.storage_class_name = storage_class
    pv.spec.persistent_volume_reclaim_policy = reclaim
    pv.spec.host_path.path = host_path
    if volume_mode is not None:
        pv.spec.volume_mode = volume_mode
    if claim is not None:
        ref = pv.spec.claim_ref
        ref.kind, ref.api_version = "PersistentVolumeClaim", "v1"
        ref.namespace, ref.name, ref.uid = (
            claim.metadata.namespace,
            claim.metadata.name,
            claim.metadata.uid,
        )
    pv.status.phase = phase
    return pv


def claim(
    name: str,
    size: str,
    *,
    storage_class: str | None = None,
    modes: Sequence[str] = (RWO,),
    namespace: str = "default",
    selector: Mapping[str, str] | None = None,
    volume_name: str = "",
    selected_node: str | None = None,
    volume_mode: str | None = None,
) -> types_pb2.PersistentVolumeClaim:
    pvc = types_pb2.PersistentVolumeClaim()
    pvc.metadata.name = name
    pvc.metadata.namespace = namespace
    pvc.spec.resources.requests["storage"] = size
    pvc.spec.access_modes.extend(modes)
    if storage_class is not None:
        pvc.spec.storage_class_name = storage_class
    if selector is not None:
        pvc.spec.selector.match_labels.update(selector)
    pvc.spec.volume_name = volume_name
    if selected_node is not None:
        pvc.metadata.annotations[ANN_SELECTED_NODE] = selected_node
    if volume_mode is not None:
        pvc.spec.volume_mode = volume_mode
    pvc.status.phase = "Pending"
    return pvc
