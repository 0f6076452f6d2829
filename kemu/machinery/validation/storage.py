"""PersistentVolumes and PersistentVolumeClaims (core/v1), StorageClasses and CSINodes
(storage.k8s.io/v1): upstream's pkg/apis/core/validation (ValidatePersistentVolume,
ValidatePersistentVolumeClaim(Spec|Update)) and pkg/apis/storage/validation."""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from typing import Final

from kemu.api.v1 import types_pb2
from kemu.machinery import storage
from kemu.machinery.errors import Cause, Invalid
from kemu.machinery.quantity import NEGATIVE_ERROR, parse_quantity
from kemu.machinery.validation.container import HOST_PATH_TYPES
from kemu.machinery.validation.field import (
    duplicate,
    forbidden,
    invalid,
    not_supported,
    required,
    too_long,
)
from kemu.machinery.validation.meta import (
    validate_label_name,
    validate_label_selector,
    validate_object_meta,
    validate_qualified_name,
)
from kemu.machinery.validation.names import is_dns1123_subdomain, is_qualified_name
from kemu.machinery.validation.pod import validate_node_selector

_PV_SOURCES: Final = (
    ("aws_elastic_block_store", "awsElasticBlockStore"),
    ("host_path", "hostPath"),
    ("local", "local"),
    ("csi", "csi"),
)
_CSI_DRIVER_NAME_MAX: Final = 63
_CSI_NODE_ID_MAX: Final = 192
_PROVISIONER_MAX: Final = 63
_FIELD_IMMUTABLE: Final = "field is immutable"


def _validate_access_modes(modes: Sequence[str], path: str, *, missing: str) -> list[Cause]:
    """The access modes of a volume or a claim: at least one (`missing` the detail when there
    is none), each supported, and ReadWriteOncePod alone."""
    if not modes:
        return [required(path, missing)]
    causes = [
        not_supported(path, mode, storage.ACCESS_MODES)
        for mode in modes
        if mode not in storage.ACCESS_MODES
    ]
    if storage.READ_WRITE_ONCE_POD in modes and len(modes) > 1:
        causes.append(forbidden(path, "may not use ReadWriteOncePod with other access modes"))
    return causes


def _validate_volume_mode(
    spec: types_pb2.PersistentVolumeSpec | types_pb2.PersistentVolumeClaimSpec, path: str
) -> list[Cause]:
    if spec.HasField("volume_mode") and spec.volume_mode not in storage.VOLUME_MODES:
        return [not_supported(path, spec.volume_mode, storage.VOLUME_MODES)]
    return []


def _validate_class_name(name: str, path: str) -> list[Cause]:
    """ValidateClassName: a DNS subdomain (checked only when set)."""
    return [invalid(path, name, m) for m in is_dns1123_subdomain(name)] if name else []


def _validate_csi_driver_name(name: str, path: str) -> list[Cause]:
    """validateCSIDriverName: required, at most 63 characters, a DNS subdomain when lower-cased."""
    if not name:
        return [required(path)]
    if len(name) > _CSI_DRIVER_NAME_MAX:
        return [too_long(path, _CSI_DRIVER_NAME_MAX)]
    return [invalid(path, name, m) for m in is_dns1123_subdomain(name.lower())]


def _validate_pv_source(spec: types_pb2.PersistentVolumeSpec) -> list[Cause]:
    """Exactly one volume source, each valid (kemu has awsElasticBlockStore, hostPath, local
    and csi)."""
    present = [(f, j) for f, j in _PV_SOURCES if spec.HasField(f)]
    if not present:
        return [required("spec", "must specify a volume type")]
    causes = [
        forbidden(f"spec.{json_name}", "may not specify more than 1 volume type")
        for _, json_name in present[1:]
    ]
    field, json_name = present[0]
    path = f"spec.{json_name}"
    if field == "host_path":
        if not spec.host_path.path:
            causes.append(required(f"{path}.path"))
        elif ".." in spec.host_path.path.split("/"):
            causes.append(invalid(f"{path}.path", spec.host_path.path, "must not contain '..'"))
        if spec.host_path.type not in HOST_PATH_TYPES:
            causes.append(not_supported(f"{path}.type", spec.host_path.type, HOST_PATH_TYPES[1:]))
    elif field == "local":
        local = spec.local.path
        if not local:
            causes.append(required(f"{path}.path"))
        elif not local.startswith("/"):
            causes.append(invalid(f"{path}.path", local, "must be an absolute path"))
        elif ".." in local.split("/"):
            causes.append(invalid(f"{path}.path", local, "must not contain '..'"))
        if not spec.HasField("node_affinity"):
            causes.append(required("spec.nodeAffinity", "Local volume requires node affinity"))
    elif field == "aws_elastic_block_store":
        # validateAWSElasticBlockStoreVolumeSource
        ebs = spec.aws_elastic_block_store
        if not ebs.volume_id:
            causes.append(required(f"{path}.volumeID"))
        if ebs.partition < 0 or ebs.partition > 255:
            causes.append(
                invalid(f"{path}.partition", ebs.partition, "must be between 1 and 255, inclusive")
            )
    else:
        causes.extend(_validate_csi_driver_name(spec.csi.driver, f"{path}.driver"))
        if not spec.csi.volume_handle:
            causes.append(required(f"{path}.volumeHandle"))
    return causes


def validate_persistent_volume(pv: types_pb2.PersistentVolume) -> list[Cause]:
    """ValidatePersistentVolume(Spec): access modes, a capacity of storage only and positive,
    the reclaim policy, node affinity, exactly one source, the class name, volumeMode."""
    causes = validate_object_meta(pv.metadata, namespaced=False)
    spec = pv.spec
    causes.extend(_validate_access_modes(spec.access_modes, "spec.accessModes", missing=""))
    if not spec.capacity:
        causes.append(required("spec.capacity"))
    if storage.STORAGE not in spec.capacity or len(spec.capacity) > 1:
        causes.append(not_supported("spec.capacity", dict(spec.capacity), [storage.STORAGE]))
    for name, text in sorted(spec.capacity.items()):
        path = f"spec.capacity[{name}]"
        try:
            q = parse_quantity(text, path)
        except Invalid as e:
            causes.extend(e.causes)
            continue
        if q.value() <= 0:  # validateBasicResource, then ValidatePositiveQuantityValue
            causes.append(invalid(path, q.value(), "must be a valid resource quantity"))
        if q.sign() <= 0:
            causes.append(invalid(path, str(q), "must be greater than zero"))
    policy = spec.persistent_volume_reclaim_policy
    if policy and policy not in storage.PV_RECLAIM_POLICIES:
        causes.append(
            not_supported("spec.persistentVolumeReclaimPolicy", policy, storage.PV_RECLAIM_POLICIES)
        )
    if spec.HasField("node_affinity"):
        if not spec.node_affinity.HasField("required"):
            causes.append(
                required("spec.nodeAffinity.required", "must specify required node constraints")
            )
        else:
            causes.extend(
                validate_node_selector(spec.node_affinity.required, "spec.nodeAffinity.required")
            )
    causes.extend(_validate_pv_source(spec))
    if (
        spec.HasField("host_path")
        and posixpath.normpath(spec.host_path.path) == "/"
        and policy == storage.RECYCLE
    ):
        causes.append(
            forbidden(
                "spec.persistentVolumeReclaimPolicy",
                "may not be 'recycle' for a hostPath mount of '/'",
            )
        )
    causes.extend(_validate_class_name(spec.storage_class_name, "spec.storageClassName"))
    causes.extend(_validate_volume_mode(spec, "spec.volumeMode"))
    return causes


def _source_bytes(spec: types_pb2.PersistentVolumeSpec) -> bytes:
    out = types_pb2.PersistentVolumeSpec()
    for field, _ in _PV_SOURCES:
        if spec.HasField(field):
            getattr(out, field).CopyFrom(getattr(spec, field))
    return out.SerializeToString(deterministic=True)


def validate_persistent_volume_update(
    new: types_pb2.PersistentVolume, old: types_pb2.PersistentVolume
) -> list[Cause]:
    """ValidatePersistentVolumeUpdate: the source and volumeMode are immutable, and node
    affinity once set (the rest of the spec, claimRef above all, may change). The paths are
    upstream's ("volumeMode", "nodeAffinity")."""
    causes: list[Cause] = []
    if _source_bytes(new.spec) != _source_bytes(old.spec):
        causes.append(
            forbidden(
                "spec.persistentvolumesource",
                "spec.persistentvolumesource is immutable after creation",
            )
        )
    if new.spec.volume_mode != old.spec.volume_mode:
        causes.append(invalid("volumeMode", new.spec.volume_mode, _FIELD_IMMUTABLE))
    if old.spec.HasField("node_affinity") and new.spec.node_affinity != old.spec.node_affinity:
        causes.append(invalid("nodeAffinity", "", _FIELD_IMMUTABLE))
    return causes


# ---------------------------------------------------------------- claims


def validate_claim_spec(spec: types_pb2.PersistentVolumeClaimSpec, path: str) -> list[Cause]:
    """ValidatePersistentVolumeClaimSpec: access modes, the selector, a positive storage
    request, the class name, volumeMode, the data sources' kind and name."""
    causes = _validate_access_modes(
        spec.access_modes, f"{path}.accessModes", missing="at least 1 access mode is required"
    )
    if spec.HasField("selector"):
        causes.extend(validate_label_selector(spec.selector, f"{path}.selector"))
    request_path = f"{path}.resources[{storage.STORAGE}]"
    text = spec.resources.requests.get(storage.STORAGE)
    if text is None:
        causes.append(required(request_path))
    else:
        try:
            q = parse_quantity(text, request_path)
        except Invalid as e:
            causes.extend(e.causes)
        else:
            if q.sign() <= 0:  # ValidatePositiveQuantityValue
                causes.append(invalid(request_path, str(q), "must be greater than zero"))
    if spec.HasField("storage_class_name"):
        causes.extend(_validate_class_name(spec.storage_class_name, f"{path}.storageClassName"))
    causes.extend(_validate_volume_mode(spec, f"{path}.volumeMode"))
    for field, name in (("data_source", "dataSource"), ("data_source_ref", "dataSourceRef")):
        if spec.HasField(field):
            ref = getattr(spec, field)
            if not ref.name:
                causes.append(required(f"{path}.{name}.name"))
            if not ref.kind:
                causes.append(required(f"{path}.{name}.kind"))
            if not ref.api_group and ref.kind != "PersistentVolumeClaim":
                causes.append(
                    invalid(
                        f"{path}.{name}",
                        ref.kind,
                        "must be 'PersistentVolumeClaim' when referencing the default apiGroup",
                    )
                )
            elif ref.api_group:
                causes.extend(
                    invalid(f"{path}.{name}.apiGroup", ref.api_group, m)
                    for m in is_dns1123_subdomain(ref.api_group)
                )
    return causes


def validate_persistent_volume_claim(pvc: types_pb2.PersistentVolumeClaim) -> list[Cause]:
    causes = validate_object_meta(pvc.metadata, namespaced=True)
    causes.extend(validate_claim_spec(pvc.spec, "spec"))
    return causes


_CLAIM_SPEC_FORBIDDEN: Final = (
    "spec is immutable after creation except resources.requests and "
    "volumeAttributesClassName for bound claims"
)


def validate_persistent_volume_claim_update(
    new: types_pb2.PersistentVolumeClaim, old: types_pb2.PersistentVolumeClaim
) -> list[Cause]:
    """ValidatePersistentVolumeClaimUpdate: the spec is immutable but for the storage request
    of a bound claim (growing: a smaller one is refused), volumeAttributesClassName, a
    volumeName set on a claim that had none (binding) and a class set on a claim that had
    none, field or annotation (the retroactive default class); volumeMode immutable."""
    causes: list[Cause] = []
    a = types_pb2.PersistentVolumeClaimSpec()
    a.CopyFrom(new.spec)
    b = old.spec
    if not b.volume_name:
        a.volume_name = b.volume_name
    if (
        storage.BETA_STORAGE_CLASS_ANNOTATION not in old.metadata.annotations
        and not b.HasField("storage_class_name")
        and a.storage_class_name
    ):
        a.ClearField("storage_class_name")  # validateStorageClassUpgradeFromNil
    if new.status.phase == storage.CLAIM_BOUND and storage.STORAGE in a.resources.requests:
        if storage.STORAGE in b.resources.requests:
            a.resources.requests[storage.STORAGE] = b.resources.requests[storage.STORAGE]
        else:
            del a.resources.requests[storage.STORAGE]
    if a.HasField("volume_attributes_class_name") or b.HasField("volume_attributes_class_name"):
        if b.HasField("volume_attributes_class_name"):
            a.volume_attributes_class_name = b.volume_attributes_class_name
        else:
            a.ClearField("volume_attributes_class_name")
    if a.SerializeToString(deterministic=True) != b.SerializeToString(deterministic=True):
        causes.append(forbidden("spec", _CLAIM_SPEC_FORBIDDEN))
    if new.spec.volume_mode != b.volume_mode:
        causes.append(invalid("volumeMode", new.spec.volume_mode, _FIELD_IMMUTABLE))
    old_size = b.resources.requests.get(storage.STORAGE)
    new_size = new.spec.resources.requests.get(storage.STORAGE)
    if old_size is not None and new_size is not None:
        try:
            smaller = parse_quantity(new_size) < parse_quantity(old_size)
        except Invalid:
            smaller = False  # the create rules name a bad quantity
        if smaller:
            causes.append(
                forbidden(
                    "spec.resources.requests.storage", "field can not be less than previous value"
                )
            )
    return causes


# ---------------------------------------------------------------- storage.k8s.io/v1


def _validate_provisioner(provisioner: str) -> list[Cause]:
    if not provisioner:
        return [required("provisioner")]
    if len(provisioner) > _PROVISIONER_MAX:
        return [too_long("provisioner", _PROVISIONER_MAX)]
    return [invalid("provisioner", provisioner, m) for m in is_qualified_name(provisioner.lower())]


def validate_storage_class(sc: types_pb2.StorageClass) -> list[Cause]:
    """ValidateStorageClass: the provisioner, parameters' keys, reclaimPolicy,
    volumeBindingMode, allowedTopologies."""
    causes = validate_object_meta(sc.metadata, namespaced=False)
    causes.extend(_validate_provisioner(sc.provisioner))
    for key in sorted(sc.parameters):
        if not key:
            causes.append(invalid("parameters", key, "invalid key name"))
    if sc.HasField("reclaim_policy") and sc.reclaim_policy not in storage.SC_RECLAIM_POLICIES:
        causes.append(
            not_supported("reclaimPolicy", sc.reclaim_policy, storage.SC_RECLAIM_POLICIES)
        )
    if sc.HasField("volume_binding_mode") and sc.volume_binding_mode not in storage.BINDING_MODES:
        causes.append(
            not_supported("volumeBindingMode", sc.volume_binding_mode, storage.BINDING_MODES)
        )
    for i, term in enumerate(sc.allowed_topologies):
        path = f"allowedTopologies[{i}]"
        if not term.match_label_expressions:
            causes.append(
                required(f"{path}.matchLabelExpressions", "must have at least one label expression")
            )
        seen: set[str] = set()
        for j, req in enumerate(term.match_label_expressions):
            p = f"{path}.matchLabelExpressions[{j}]"
            causes.extend(validate_label_name(req.key, f"{p}.key"))
            if req.key in seen:
                causes.append(duplicate(f"{p}.key", req.key))
            seen.add(req.key)
            if not req.values:
                causes.append(required(f"{p}.values", "must specify as least one value"))
    return causes


def validate_storage_class_update(
    new: types_pb2.StorageClass, old: types_pb2.StorageClass
) -> list[Cause]:
    """ValidateStorageClassUpdate: parameters, provisioner, reclaimPolicy and
    volumeBindingMode are immutable."""
    causes: list[Cause] = []
    if dict(new.parameters) != dict(old.parameters):
        causes.append(forbidden("parameters", "updates to parameters are forbidden."))
    if new.provisioner != old.provisioner:
        causes.append(forbidden("provisioner", "updates to provisioner are forbidden."))
    if new.reclaim_policy != old.reclaim_policy:
        causes.append(forbidden("reclaimPolicy", "updates to reclaimPolicy are forbidden."))
    if new.volume_binding_mode != old.volume_binding_mode:
        causes.append(invalid("volumeBindingMode", new.volume_binding_mode, _FIELD_IMMUTABLE))
    return causes


def validate_csi_node(node: types_pb2.CSINode) -> list[Cause]:
    """ValidateCSINode: each driver's name valid and unique, its nodeID set (at most 192
    characters), its topology keys unique qualified names, its allocatable count >= 0."""
    causes = validate_object_meta(node.metadata, namespaced=False)
    names: set[str] = set()
    for i, driver in enumerate(node.spec.drivers):
        path = f"spec.drivers[{i}]"
        causes.extend(_validate_csi_driver_name(driver.name, f"{path}.name"))
        if driver.name in names:
            causes.append(duplicate(f"{path}.name", driver.name))
        names.add(driver.name)
        if not driver.node_id:
            causes.append(required(f"{path}.nodeID"))
        elif len(driver.node_id) > _CSI_NODE_ID_MAX:
            causes.append(too_long(f"{path}.nodeID", _CSI_NODE_ID_MAX))
        keys: set[str] = set()
        for j, key in enumerate(driver.topology_keys):
            if not key:
                causes.append(required(f"{path}.topologyKeys[{j}]"))
                continue
            if key in keys:
                causes.append(duplicate(f"{path}.topologyKeys[{j}]", key))
            keys.add(key)
            causes.extend(validate_qualified_name(key, f"{path}.topologyKeys[{j}]"))
        allocatable = driver.allocatable
        if (
            driver.HasField("allocatable")
            and allocatable.HasField("count")
            and allocatable.count < 0
        ):
            causes.append(invalid(f"{path}.allocatable.count", allocatable.count, NEGATIVE_ERROR))
    return causes


def validate_csi_node_update(new: types_pb2.CSINode, old: types_pb2.CSINode) -> list[Cause]:
    """ValidateCSINodeUpdate: a driver that stays keeps its nodeID and topology keys."""
    causes: list[Cause] = []
    before = {d.name: d for d in old.spec.drivers}
    for i, driver in enumerate(new.spec.drivers):
        prior = before.get(driver.name)
        if prior is None:
            continue
        path = f"spec.drivers[{i}]"
        if driver.node_id != prior.node_id:
            causes.append(invalid(f"{path}.nodeID", driver.node_id, _FIELD_IMMUTABLE))
        if list(driver.topology_keys) != list(prior.topology_keys):
            causes.append(invalid(f"{path}.topologyKeys", "", _FIELD_IMMUTABLE))
    return causes
