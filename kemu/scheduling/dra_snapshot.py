"""The DRA objects of an autoscaler simulation (upstream cluster-autoscaler
simulator/dynamicresources/snapshot: snapshot.go, snapshot_claim_tracker.go, and utils/
sanitize.go, resource_claims.go).

A `DraSnapshot` holds the ResourceClaims, the node-local ResourceSlices by node (upstream's
NodeInfo LocalResourceSlices), the other slices and the DeviceClasses as the simulation sees
them; it forks with its ClusterSnapshot (kemu.scheduling.simulator) and changes with it:

- a node added (a template copy) brings its slices, renamed to the node (`sanitized_slices`);
  a node removed takes its slices, and the pods counted on it give up their claims
  (`unreserve_pod_claims`);
- a pod scheduled in simulation gets its claims allocated by the real DynamicResources plugin
  (its Reserve writes the allocation into the snapshot at once: `SimulationDraManager`'s
  signal_claim_pending_allocation, upstream's claim tracker) and reserved for it
  (`reserve_pod_claims`).

Claims are never changed in place: a change replaces the claim with a changed copy, so forks
share the unchanged ones.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Generic, NoReturn, TypeVar

from google.protobuf.message import Message

from kemu.api.v1 import types_pb2
from kemu.machinery.keys import object_key
from kemu.machinery.resourceclaim import (
    RESERVED_FOR_MAX_SIZE,
    ClaimNameError,
    is_for_pod,
    is_reserved_for_pod,
    pod_claim_name,
)
from kemu.scheduling.dra_manager import DraManager
from kemu.scheduling.interface import ObjectLister

__all__ = [
    "DraSnapshot",
    "SimulationDraManager",
    "sanitized_slices",
]

_ClaimKey = tuple[str, str]  # namespace, name
M = TypeVar("M", bound=Message)


class _Classes:
    """The DeviceClasses of a simulation, by name (they do not change in it)."""

    def __init__(self, classes: Iterable[types_pb2.DeviceClass]) -> None:
        self._by_name = {c.metadata.name: c for c in classes}

    def get(self, name: str, namespace: str = "") -> types_pb2.DeviceClass | None:
        return self._by_name.get(name)

    def list(self, namespace: str | None = None) -> Sequence[types_pb2.DeviceClass]:
        return list(self._by_name.values())


class _NoObjects(Generic[M]):
    def get(self, name: str, namespace: str = "") -> M | None:
        return None

    def list(self, namespace: str | None = None) -> Sequence[M]:
        return ()


def sanitized_slices(
    slices: Iterable[types_pb2.ResourceSlice], node_name: str
) -> list[types_pb2.ResourceSlice]:
    """Copies of a template node's node-local slices for a new node `node_name` (upstream
    SanitizedNodeResourceSlices): the devices kept, spec.nodeName and the pool's name the new
    node's (kemu's kubelet names a node's pool after the node, so the new pool is unique per
    driver, as upstream's name suffix makes it). ValueError for a slice that is not
    node-local ("can't sanitize slice %s because it isn't node-local")."""
    out = []
    for s in slices:
        if not s.spec.node_name:
            raise ValueError(f"can't sanitize slice {s.metadata.name} because it isn't node-local")
        copy = types_pb2.ResourceSlice()
        copy.CopyFrom(s)
        copy.metadata.name = f"{s.metadata.name}-{node_name}"
        copy.metadata.uid = f"{s.metadata.uid}-{node_name}"
        copy.spec.node_name = node_name
        copy.spec.pool.name = node_name
        out.append(copy)
    return out


class DraSnapshot:
    """Claims, slices and classes of one simulation; see the module docstring."""

    __slots__ = ("_all_slices", "_claims", "_global_slices", "_local_slices", "classes")

    def __init__(
        self,
        claims: Iterable[types_pb2.ResourceClaim] = (),
        slices: Iterable[types_pb2.ResourceSlice] = (),
        classes: Iterable[types_pb2.DeviceClass] = (),
    ) -> None:
        self._claims: dict[_ClaimKey, types_pb2.ResourceClaim] = {
            (c.metadata.namespace, c.metadata.name): c for c in claims
        }
        global_slices: list[types_pb2.ResourceSlice] = []
        local: dict[str, list[types_pb2.ResourceSlice]] = {}
        for s in slices:
            if s.spec.node_name:
                local.setdefault(s.spec.node_name, []).append(s)
            else:
                global_slices.append(s)
        self._local_slices: dict[str, tuple[types_pb2.ResourceSlice, ...]] = {
            n: tuple(ss) for n, ss in local.items()
        }
        self._global_slices = tuple(global_slices)
        self._all_slices: list[types_pb2.ResourceSlice] | None = None
        self.classes: ObjectLister[types_pb2.DeviceClass] = _Classes(classes)

    def fork(self) -> DraSnapshot:
        out = DraSnapshot()
        out.classes = self.classes
        out._claims = dict(self._claims)
        out._local_slices = dict(self._local_slices)
        out._global_slices = self._global_slices
        return out

    # ------------------------------------------------------------ slices

    def node_slices(self, node: str) -> tuple[types_pb2.ResourceSlice, ...]:
        """The node's node-local slices (upstream NodeInfo.LocalResourceSlices)."""
        return self._local_slices.get(node, ())

    def add_node_slices(self, node: str, slices: Sequence[types_pb2.ResourceSlice]) -> None:
        if slices:
            self._local_slices[node] = tuple(slices)
            self._all_slices = None

    def remove_node_slices(self, node: str) -> None:
        if self._local_slices.pop(node, None) is not None:
            self._all_slices = None

    def slices(self) -> list[types_pb2.ResourceSlice]:
        """Every slice: the nodes' and the others (what the plugin's allocator reads)."""
        if self._all_slices is None:
            out = list(self._global_slices)
            for ss in self._local_slices.values():
                out.extend(ss)
            self._all_slices = out
        return self._all_slices

    # ------------------------------------------------------------ claims

    def claim(self, namespace: str, name: str) -> types_pb2.ResourceClaim | None:
        return self._claims.get((namespace, name))

    def claims(self) -> list[types_pb2.ResourceClaim]:
        return list(self._claims.values())

    def set_claim(self, claim: types_pb2.ResourceClaim) -> None:
        self._claims[(claim.metadata.namespace, claim.metadata.name)] = claim

    def pod_claims(self, pod: types_pb2.Pod) -> list[types_pb2.ResourceClaim]:
        """The pod's claims found in the snapshot (entries whose claim is not named yet or not
        in the snapshot are left out: the plugin's PreFilter reports those)."""
        out = []
        for ref in pod.spec.resource_claims:
            try:
                name, _ = pod_claim_name(pod, ref)
            except ClaimNameError:
                continue
            if name is None:
                continue
            claim = self._claims.get((pod.metadata.namespace, name))
            if claim is not None:
                out.append(claim)
        return out

    def reserve_pod_claims(self, pod: types_pb2.Pod) -> str:
        """Adds the pod to its claims' reservedFor (upstream ReservePodClaims); "" or why not
        ("claim %s is fully reserved", the claims then unchanged)."""
        claims = self.pod_claims(pod)
        for claim in claims:
            if len(claim.status.reserved_for) >= RESERVED_FOR_MAX_SIZE and not is_reserved_for_pod(
                pod, claim
            ):
                return f"claim {object_key(claim)} is fully reserved"
        for claim in claims:
            if is_reserved_for_pod(pod, claim):
                continue
            copy = types_pb2.ResourceClaim()
            copy.CopyFrom(claim)
            copy.status.reserved_for.add(
                resource="pods", name=pod.metadata.name, uid=pod.metadata.uid
            )
            self.set_claim(copy)
        return ""

    def unreserve_pod_claims(self, pod: types_pb2.Pod) -> None:
        """Takes the pod out of its claims' reservedFor; a claim the pod owns, or that no pod
        uses any more, loses its allocation (upstream UnreservePodClaims)."""
        for claim in self.pod_claims(pod):
            copy = types_pb2.ResourceClaim()
            copy.CopyFrom(claim)
            keep = [r for r in copy.status.reserved_for if r.uid != pod.metadata.uid]
            del copy.status.reserved_for[:]
            copy.status.reserved_for.extend(keep)
            if is_for_pod(pod, claim) or not keep:
                copy.status.ClearField("allocation")
                copy.status.ClearField("devices")
            self.set_claim(copy)

    def allocated_claims(self) -> list[types_pb2.ResourceClaim]:
        return [c for c in self._claims.values() if c.status.HasField("allocation")]


def _never(what: str) -> NoReturn:
    # Binding is never simulated: upstream's claim tracker panics here ("should never happen").
    raise RuntimeError(f"{what} should never happen in a simulation")


class SimulationDraManager(DraManager):
    """The DynamicResources plugin's view of a simulation (upstream's snapshot-backed
    SharedDRAManager, given to the framework as upstream's WithSharedDraManager: the
    FrameworkOptions' dra_manager): the claims, slices and classes of the DraSnapshot the
    simulation is on; Reserve's allocation written into that snapshot at once
    (SignalClaimPendingAllocation); nothing ever in flight (ClaimHasPendingAllocation is
    false); the binding cycle's calls never happen."""

    def __init__(self) -> None:
        super().__init__(_NoObjects(), _NoObjects(), _NoObjects())
        self._dra = DraSnapshot()

    def use(self, dra: DraSnapshot) -> None:
        """The snapshot the next calls read and change."""
        self._dra = dra
        self.classes = dra.classes

    def claim_has_pending_allocation(self, uid: str) -> bool:
        return False

    def signal_claim_pending_allocation(self, uid: str, claim: types_pb2.ResourceClaim) -> None:
        self._dra.set_claim(claim)

    def remove_claim_pending_allocation(self, uid: str) -> bool:
        _never("RemoveClaimPendingAllocation")

    def pending_allocations(self) -> int:
        return 0

    def get_claim(self, namespace: str, name: str) -> types_pb2.ResourceClaim | None:
        return self._dra.claim(namespace, name)

    def assume_claim_after_api_call(self, claim: types_pb2.ResourceClaim) -> bool:
        _never("AssumeClaimAfterAPICall")

    def assumed_claim_restore(self, namespace: str, name: str) -> None:
        _never("AssumedClaimRestore")

    def allocated_claims(self) -> list[types_pb2.ResourceClaim]:
        return self._dra.allocated_claims()

    def slices_list(self) -> list[types_pb2.ResourceSlice]:
        return self._dra.slices()
