"""Per-kind rules of upstream's PrepareForUpdate strategies that the apiserver's registry and
the fake client share: when an update bumps metadata.generation, and what metadata a status
update may change."""

from __future__ import annotations

from typing import Final

from google.protobuf.message import Message

from kemu.api.v1 import types_pb2
from kemu.machinery.errors import Conflict
from kemu.machinery.kinds import Kind

# Kinds without a spec whose changes would mean a new generation.
_NO_GENERATION: Final = frozenset(
    "kemu.api.v1." + name
    for name in (
        # The kinds whose upstream strategy sets no metadata.generation (its PrepareForCreate
        # leaves it 0 and nothing bumps it: pkg/registry/core/{configmap,secret,node,
        # namespace,service,serviceaccount,persistentvolume,persistentvolumeclaim}/strategy.go,
        # storage/{storageclass,csinode}, scheduling/priorityclass, coordination/lease,
        # core/event, resource/{resourceclaim,resourceclaimtemplate}).
        "Lease",
        "Event",
        "ConfigMap",
        "Secret",
        "Node",
        "Namespace",
        "Service",
        "ServiceAccount",
        "PersistentVolume",
        "PersistentVolumeClaim",
        "StorageClass",
        "CSINode",
        "PriorityClass",
        "ResourceClaim",
        "ResourceClaimTemplate",
        # issue #57 kinds-a and kinds-b: rbac/{role,clusterrole,rolebinding,clusterrolebinding},
        # certificates/certificatesigningrequest, kube-aggregator's apiservice,
        # core/{limitrange,resourcequota,endpoint} strategies set no generation.
        "Role",
        "ClusterRole",
        "RoleBinding",
        "ClusterRoleBinding",
        "CertificateSigningRequest",
        "APIService",
        "LimitRange",
        "ResourceQuota",
        "Endpoints",
    )
)


def has_generation(obj: Message) -> bool:
    """Whether upstream's strategy for the object's kind sets metadata.generation (1 at
    creation, bumped by spec changes); the others keep 0, which JSON leaves out."""
    return obj.DESCRIPTOR.full_name not in _NO_GENERATION


def _spec_bytes(obj: Message) -> bytes:
    spec: Message | None = getattr(obj, "spec", None)
    if spec is None:
        # PriorityClass keeps its "spec" at the top level.
        probe = obj.__class__()
        probe.CopyFrom(obj)
        probe.ClearField("metadata")
        return probe.SerializeToString(deterministic=True)
    return spec.SerializeToString(deterministic=True)


def bumps_generation(old: Message, new: Message) -> bool:
    """Whether storing `new` over `old` (a main-resource update) bumps metadata.generation.

    A spec change does, for every kind but Leases and Events. A Deployment's annotation change
    does too, as upstream's deployment strategy (annotations are copied to its ReplicaSets).
    """
    name = new.DESCRIPTOR.full_name
    if name in _NO_GENERATION:
        return False
    if _spec_bytes(old) != _spec_bytes(new):
        return True
    if name == "kemu.api.v1.Deployment":
        return dict(old.metadata.annotations) != dict(new.metadata.annotations)  # type: ignore[attr-defined]
    return False


# Kinds whose status updates also write annotations (upstream's apps status strategies keep
# only the spec and labels: the Deployment controller records its revision that way).
_STATUS_WRITES_ANNOTATIONS: Final = frozenset({"kemu.api.v1.Deployment", "kemu.api.v1.ReplicaSet"})


def apply_status_update_metadata(stored: Message, sent: Message) -> None:
    """Takes into `stored` (the object a status update writes, holding the old metadata and
    the new status) what the status update may change for its kind besides the status."""
    meta: types_pb2.ObjectMeta = stored.metadata  # type: ignore[attr-defined]
    sent_meta: types_pb2.ObjectMeta = sent.metadata  # type: ignore[attr-defined]
    if isinstance(stored, types_pb2.Pod):
        # podStatusStrategy.PrepareForUpdate resets only the spec, the deletionTimestamp and
        # the ownerReferences (old kubelets corrupted them): labels, annotations and
        # finalizers are the request's. The QoS class, set at creation, is backfilled when
        # the request leaves it empty (old kubelets dropped it); a change is Invalid.
        meta.labels.clear()
        meta.labels.update(sent_meta.labels)
        meta.annotations.clear()
        meta.annotations.update(sent_meta.annotations)
        del meta.finalizers[:]
        meta.finalizers.extend(sent_meta.finalizers)
        return
    if stored.DESCRIPTOR.full_name not in _STATUS_WRITES_ANNOTATIONS:
        return
    meta.annotations.clear()
    meta.annotations.update(sent_meta.annotations)


def backfill_qos_class(new: types_pb2.Pod, old: types_pb2.Pod) -> None:
    """A pod status that leaves qosClass empty keeps the stored one (upstream
    podStatusStrategy.PrepareForUpdate)."""
    if not new.status.qos_class:
        new.status.qos_class = old.status.qos_class


def check_update_uid(kind: Kind, stored: Message, sent: Message) -> None:
    """An update (or status update) whose body carries a uid is preconditioned on it
    (upstream DefaultUpdatedObjectInfo.Preconditions): Conflict when the stored object is
    another one, with storage.Preconditions.Check's message."""
    uid = sent.metadata.uid  # type: ignore[attr-defined]
    stored_meta: types_pb2.ObjectMeta = stored.metadata  # type: ignore[attr-defined]
    if uid and uid != stored_meta.uid:
        raise Conflict(
            f'Operation cannot be fulfilled on {kind.qualified_resource} "{stored_meta.name}": '
            f"Precondition failed: UID in precondition: {uid}, UID in object meta: "
            f"{stored_meta.uid}"
        )
