"""What the PersistentVolume controller and the scheduler's volume binding share (upstream
k8s.io/component-helpers/storage/volume: pv_helpers.go and helpers.go): the binding
annotations, a claim's class, whether a volume is bound to a claim, and FindMatchingVolume,
which picks the volume a claim binds to.

Pure: no I/O. Quantities are compared exactly (kemu.machinery.quantity).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from kemu.api.v1 import types_pb2
from kemu.machinery.errors import Invalid
from kemu.machinery.labels import Selector, selector_from_label_selector
from kemu.machinery.quantity import Quantity
from kemu.machinery.storage import (
    ANN_SELECTED_NODE,
    DELETE,
    FILESYSTEM,
    IMMEDIATE,
    RETAIN,
    STORAGE,
    VOLUME_AVAILABLE,
    claim_class,
    volume_class,
)
from kemu.scheduling.plugins.helpers import node_selector


def binding_mode(cls: types_pb2.StorageClass) -> str:
    """The class's volumeBindingMode, Immediate when unset (the apiserver's default)."""
    if cls.HasField("volume_binding_mode"):
        return cls.volume_binding_mode
    return IMMEDIATE


def class_reclaim_policy(cls: types_pb2.StorageClass) -> str:
    """The class's reclaimPolicy, Delete when unset (the apiserver's default)."""
    return cls.reclaim_policy if cls.HasField("reclaim_policy") else DELETE


def volume_reclaim_policy(volume: types_pb2.PersistentVolume) -> str:
    """The volume's reclaim policy, Retain when unset (the apiserver's default)."""
    return volume.spec.persistent_volume_reclaim_policy or RETAIN


def is_delay_binding_provisioning(claim: types_pb2.PersistentVolumeClaim) -> bool:
    """IsDelayBindingProvisioning: the scheduler chose a node for the claim's provisioning."""
    return ANN_SELECTED_NODE in claim.metadata.annotations


def is_volume_bound_to_claim(
    volume: types_pb2.PersistentVolume, claim: types_pb2.PersistentVolumeClaim
) -> bool:
    """IsVolumeBoundToClaim: the volume's claimRef names the claim (its uid, when set, too)."""
    if not volume.spec.HasField("claim_ref"):
        return False
    ref = volume.spec.claim_ref
    if ref.name != claim.metadata.name or ref.namespace != claim.metadata.namespace:
        return False
    return not ref.uid or ref.uid == claim.metadata.uid


def check_volume_mode_mismatches(
    claim_spec: types_pb2.PersistentVolumeClaimSpec, volume_spec: types_pb2.PersistentVolumeSpec
) -> bool:
    """CheckVolumeModeMismatches: unset modes are Filesystem."""
    requested = claim_spec.volume_mode if claim_spec.HasField("volume_mode") else FILESYSTEM
    offered = volume_spec.volume_mode if volume_spec.HasField("volume_mode") else FILESYSTEM
    return requested != offered


def check_access_modes(
    claim: types_pb2.PersistentVolumeClaim, volume: types_pb2.PersistentVolume
) -> bool:
    """CheckAccessModes: the volume offers every mode the claim asks for."""
    offered = set(volume.spec.access_modes)
    return all(mode in offered for mode in claim.spec.access_modes)


def storage_quantity(resources: Mapping[str, str], path: str = "") -> Quantity:
    """The `storage` entry of a capacity or requests map (0 when missing)."""
    text = resources.get(STORAGE)
    return Quantity.parse(text, path) if text else Quantity.from_int(0)


def check_node_affinity(volume: types_pb2.PersistentVolume, node: types_pb2.Node) -> bool:
    """CheckNodeAffinity: the volume's required node affinity (if any) selects the node."""
    if not volume.spec.HasField("node_affinity") or not volume.spec.node_affinity.HasField(
        "required"
    ):
        return True
    return node_selector(volume.spec.node_affinity.required).matches(node)


def _claim_selector(claim: types_pb2.PersistentVolumeClaim) -> Selector | None:
    if not claim.spec.HasField("selector"):
        return None
    return selector_from_label_selector(claim.spec.selector, path="spec.selector")


def find_matching_volume(
    claim: types_pb2.PersistentVolumeClaim,
    volumes: Iterable[types_pb2.PersistentVolume],
    *,
    node: types_pb2.Node | None = None,
    excluded: frozenset[str] = frozenset(),
    delay_binding: bool = False,
) -> types_pb2.PersistentVolume | None:
    """FindMatchingVolume: the volume pre-bound to the claim, else the smallest Available one
    of the claim's class, selector and volume mode whose capacity covers the request.

    `node` is the scheduler's path: the volume's node affinity must select the node and the
    access modes are checked here (the controller checks them by its index instead). Without a
    node, `delay_binding` (WaitForFirstConsumer) leaves every volume that is not pre-bound to
    the scheduler. Invalid (naming spec.selector) for a claim selector that does not parse.
    """
    requested = storage_quantity(claim.spec.resources.requests, "spec.resources.requests")
    requested_class = claim_class(claim)
    selector = _claim_selector(claim)
    smallest: types_pb2.PersistentVolume | None = None
    smallest_qty: Quantity | None = None
    for volume in volumes:
        if volume.metadata.name in excluded:
            continue
        if volume.spec.HasField("claim_ref") and not is_volume_bound_to_claim(volume, claim):
            continue
        try:
            qty = storage_quantity(volume.spec.capacity)
        except Invalid:
            continue
        if qty < requested:
            continue
        if check_volume_mode_mismatches(claim.spec, volume.spec):
            continue
        if volume.metadata.HasField("deletion_timestamp"):
            continue
        affinity_ok = node is None or check_node_affinity(volume, node)
        if is_volume_bound_to_claim(volume, claim):
            # Pre-bound (by the user, a provisioner or the scheduler): this one or none.
            return volume if affinity_ok else None
        if node is None and delay_binding:
            continue
        if volume.status.phase != VOLUME_AVAILABLE:
            continue
        if selector is not None and not selector.matches(volume.metadata.labels):
            continue
        if volume_class(volume) != requested_class:
            continue
        if not affinity_ok:
            continue
        if node is not None and not check_access_modes(claim, volume):
            continue
        if smallest_qty is None or qty < smallest_qty:
            smallest, smallest_qty = volume, qty
    return smallest


def find_best_match_for_claim(
    claim: types_pb2.PersistentVolumeClaim,
    volumes: Iterable[types_pb2.PersistentVolume],
    *,
    delay_binding: bool,
) -> types_pb2.PersistentVolume | None:
    """The controller's findBestMatchForClaim (persistentvolume/index.go): volumes grouped by
    their access modes; of the groups offering every mode the claim asks for, the one with the
    fewest modes first, and in each FindMatchingVolume without a node."""
    groups: dict[frozenset[str], list[types_pb2.PersistentVolume]] = {}
    for volume in volumes:
        groups.setdefault(frozenset(volume.spec.access_modes), []).append(volume)
    wanted = set(claim.spec.access_modes)
    candidates = sorted(
        (modes for modes in groups if wanted <= modes),
        key=lambda modes: (len(modes), sorted(modes)),
    )
    for modes in candidates:
        found = find_matching_volume(claim, groups[modes], delay_binding=delay_binding)
        if found is not None:
            return found
    return None
