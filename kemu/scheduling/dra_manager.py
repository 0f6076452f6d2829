"""What the DynamicResources plugin shares between its cycles (upstream
pkg/scheduler/framework/plugins/dynamicresources/dra_manager.go, SharedDRAManager): the claims
through an assume cache, the in-flight allocations, the slices, the classes and, when served,
the DeviceTaintRules.

- The assume cache holds the claim the plugin wrote in PreBind until the informer has that
  version or a newer one (AssumeClaimAfterAPICall), so that the next cycles count its devices
  at once, and so that a scheduler restarted between the claim's write and the binding finds
  the allocation (it is in the informer's first list).
- The in-flight allocations (uid -> the claim with its allocation) live from Reserve to the end
  of PreBind (SignalClaimPendingAllocation, RemoveClaimPendingAllocation): the devices they name
  are allocated for every other cycle, so that two pods never get the same device, and a pod
  sharing such a claim waits ("is in the process of being allocated").

kemu's cycles run on one thread, so no lock guards the maps (upstream's mutex).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, Generic, TypeVar

from google.protobuf.message import Message

from kemu.api.v1 import types_pb2
from kemu.scheduling.interface import InformerFactory, ObjectLister
from kemu.scheduling.plugins.volume_binder import AssumeCache

M = TypeVar("M", bound=Message)

DRA_KINDS: Final = (
    types_pb2.ResourceClaim,
    types_pb2.ResourceSlice,
    types_pb2.DeviceClass,
)
"""The kinds the plugin reads (the scheduler starts an informer of each; DeviceTaintRule too
where it is served)."""


class _EmptyLister(Generic[M]):
    def get(self, name: str, namespace: str = "") -> M | None:
        return None

    def list(self, namespace: str | None = None) -> Sequence[M]:
        return ()


class DraManager:
    """The claims (assumed and in flight), slices, classes and taint rules of one scheduler."""

    def __init__(
        self,
        claims: ObjectLister[types_pb2.ResourceClaim],
        slices: ObjectLister[types_pb2.ResourceSlice],
        classes: ObjectLister[types_pb2.DeviceClass],
        taint_rules: ObjectLister[types_pb2.DeviceTaintRule] | None = None,
    ) -> None:
        self.claims: AssumeCache[types_pb2.ResourceClaim] = AssumeCache(claims)
        self.slices = slices
        self.classes = classes
        self.taint_rules = taint_rules
        self._in_flight: dict[str, types_pb2.ResourceClaim] = {}

    @classmethod
    def empty(cls) -> DraManager:
        return cls(_EmptyLister(), _EmptyLister(), _EmptyLister())

    @classmethod
    def of(cls, factory: InformerFactory | None, *, taint_rules: bool) -> DraManager:
        """From a process's informers (empty listers without them: a simulation)."""
        if factory is None:
            return cls.empty()
        return cls(
            factory.informer(types_pb2.ResourceClaim).lister,
            factory.informer(types_pb2.ResourceSlice).lister,
            factory.informer(types_pb2.DeviceClass).lister,
            factory.informer(types_pb2.DeviceTaintRule).lister if taint_rules else None,
        )

    # ------------------------------------------------------------ in-flight allocations

    def claim_has_pending_allocation(self, uid: str) -> bool:
        return uid in self._in_flight

    def signal_claim_pending_allocation(self, uid: str, claim: types_pb2.ResourceClaim) -> None:
        self._in_flight[uid] = claim

    def remove_claim_pending_allocation(self, uid: str) -> bool:
        return self._in_flight.pop(uid, None) is not None

    def pending_allocations(self) -> int:
        return len(self._in_flight)

    # ------------------------------------------------------------ assume cache

    def get_claim(self, namespace: str, name: str) -> types_pb2.ResourceClaim | None:
        return self.claims.get(name, namespace)

    def assume_claim_after_api_call(self, claim: types_pb2.ResourceClaim) -> None:
        self.claims.assume(claim, from_api=True)

    def assumed_claim_restore(self, namespace: str, name: str) -> None:
        self.claims.restore(name, namespace)

    def allocated_claims(self) -> list[types_pb2.ResourceClaim]:
        """Every claim whose devices are taken: allocated in the (assumed) claims, or in flight
        (upstream ListAllAllocatedDevices' input)."""
        by_uid: dict[str, types_pb2.ResourceClaim] = {}
        self.claims.prune()  # assumptions of deleted claims go (list() only sees live ones)
        for claim in self.claims.list():
            if claim.status.HasField("allocation"):
                by_uid[claim.metadata.uid] = claim
        by_uid.update(self._in_flight)
        return list(by_uid.values())

    def slices_list(self) -> list[types_pb2.ResourceSlice]:
        return list(self.slices.list())

    def taint_rules_list(self) -> list[types_pb2.DeviceTaintRule]:
        return [] if self.taint_rules is None else list(self.taint_rules.list())
