"""What the volume plugins (VolumeBinding, VolumeRestrictions, VolumeZone, NodeVolumeLimits)
share: the storage objects they read and the facts about them that upstream's
component-helpers/storage/volume and pkg/volume/util compute.

The objects come through `VolumeListers`, four read-only listers (claims, volumes, classes,
CSINodes). The scheduler builds them from its informers (`volume_listers(handle)`); a
simulation without informers gets empty ones (no claim exists, so a pod with a claim is
unschedulable, as upstream's would be with empty listers) and may pass its own listers, e.g.
over a snapshot, to the plugins' constructors.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Final, Generic, TypeVar

from google.protobuf.message import Message

from kemu.api.v1 import types_pb2
from kemu.machinery.errors import Invalid
from kemu.machinery.quantity import Quantity, parse_quantity
from kemu.machinery.storage import ANN_BIND_COMPLETED, WAIT_FOR_FIRST_CONSUMER, claim_class
from kemu.scheduling.interface import Handle, ObjectLister

M = TypeVar("M", bound=Message)


class _EmptyLister(Generic[M]):
    """No objects: a simulation without storage informers."""

    def get(self, name: str, namespace: str = "") -> M | None:
        return None

    def list(self, namespace: str | None = None) -> Sequence[M]:
        return ()


@dataclass(frozen=True, slots=True)
class VolumeListers:
    """The storage objects the volume plugins read."""

    claims: ObjectLister[types_pb2.PersistentVolumeClaim]
    volumes: ObjectLister[types_pb2.PersistentVolume]
    classes: ObjectLister[types_pb2.StorageClass]
    csi_nodes: ObjectLister[types_pb2.CSINode]

    @classmethod
    def empty(cls) -> VolumeListers:
        return cls(_EmptyLister(), _EmptyLister(), _EmptyLister(), _EmptyLister())


STORAGE_KINDS: Final = (
    types_pb2.PersistentVolumeClaim,
    types_pb2.PersistentVolume,
    types_pb2.StorageClass,
    types_pb2.CSINode,
)
"""The kinds `volume_listers` reads: a process that runs the volume plugins (the scheduler,
the autoscaler's simulations) starts an informer of each."""


def volume_listers(handle: Handle) -> VolumeListers:
    """The handle's informers' listers of the four kinds (the scheduler starts them with the
    others); empty ones when the handle has no informers."""
    factory = handle.informer_factory()
    if factory is None:
        return VolumeListers.empty()
    return VolumeListers(
        claims=factory.informer(types_pb2.PersistentVolumeClaim).lister,
        volumes=factory.informer(types_pb2.PersistentVolume).lister,
        classes=factory.informer(types_pb2.StorageClass).lister,
        csi_nodes=factory.informer(types_pb2.CSINode).lister,
    )


def pod_claim_names(pod: types_pb2.Pod) -> Iterator[str]:
    """The names of the claims the pod's volumes use, in order (ephemeral volumes' claims do
    not exist in kemu's pod spec)."""
    for v in pod.spec.volumes:
        if v.HasField("persistent_volume_claim"):
            yield v.persistent_volume_claim.claim_name


def has_claims(pod: types_pb2.Pod) -> bool:
    """The plain path's test: a pod without claims Skips every volume plugin."""
    return any(v.HasField("persistent_volume_claim") for v in pod.spec.volumes)


def claim_key(namespace: str, name: str) -> str:
    return f"{namespace}/{name}"


def is_delay_binding(
    claim: types_pb2.PersistentVolumeClaim, classes: ObjectLister[types_pb2.StorageClass]
) -> bool:
    """Whether the claim's class binds at the first consumer (IsDelayBindingMode): a claim
    without a class, or whose class does not exist, binds immediately."""
    name = claim_class(claim)
    if not name:
        return False
    sc = classes.get(name)
    return sc is not None and sc.volume_binding_mode == WAIT_FOR_FIRST_CONSUMER


def is_fully_bound(claim: types_pb2.PersistentVolumeClaim) -> bool:
    """The claim names its volume and the PV controller finished the binding (upstream
    isPVCFullyBound: the bind-completed annotation)."""
    return bool(claim.spec.volume_name) and ANN_BIND_COMPLETED in claim.metadata.annotations


def _storage(text: str | None) -> Quantity:
    """A storage quantity; zero when absent or unparsable (the apiserver validates them)."""
    if not text:
        return _ZERO
    try:
        return parse_quantity(text)
    except Invalid:
        return _ZERO


_ZERO: Final = Quantity.from_int(0)


def storage_request(claim: types_pb2.PersistentVolumeClaim) -> Quantity:
    """The claim's storage request (zero when it asks for none)."""
    return _storage(claim.spec.resources.requests.get("storage"))


def pv_capacity(pv: types_pb2.PersistentVolume) -> Quantity:
    return _storage(pv.spec.capacity.get("storage"))


def claim_access_modes(claim: types_pb2.PersistentVolumeClaim) -> frozenset[str]:
    return frozenset(claim.spec.access_modes)
