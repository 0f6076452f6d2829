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

from collections.abc import Iterable, Sequence
from typing import Final, Generic, TypeVar

from google.protobuf.message import Message

from kemu.api.v1 import types_pb2
from kemu.machinery.resourceclaim import is_extended_resource_claim
from kemu.scheduling.dra.allocator import AllocatedState, DeviceID
from kemu.scheduling.interface import InformerFactory, ObjectLister, SharedInformer
from kemu.scheduling.plugins.volume_binder import AssumeCache

M = TypeVar("M", bound=Message)

# resourceapi.ResourceDeviceClassPrefix: every class backs the extended resource of this name.
IMPLICIT_EXTENDED_RESOURCE_PREFIX: Final = "deviceclass.resource.kubernetes.io/"

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
        # kemu: the allocated devices kept up to date from the changes (watch_claims); None
        # while the claims' informer is not watched (allocated_state rebuilds each time).
        self._index: _AllocatedIndex | None = None
        self._extended: _ExtendedClaims | None = None

    @classmethod
    def empty(cls) -> DraManager:
        return cls(_EmptyLister(), _EmptyLister(), _EmptyLister())

    @classmethod
    def of(cls, factory: InformerFactory | None, *, taint_rules: bool) -> DraManager:
        """From a process's informers (empty listers without them: a simulation)."""
        if factory is None:
            return cls.empty()
        claims = factory.informer(types_pb2.ResourceClaim)
        manager = cls(
            claims.lister,
            factory.informer(types_pb2.ResourceSlice).lister,
            factory.informer(types_pb2.DeviceClass).lister,
            factory.informer(types_pb2.DeviceTaintRule).lister if taint_rules else None,
        )
        manager.watch_claims(claims)
        return manager

    def watch_claims(self, informer: SharedInformer[types_pb2.ResourceClaim]) -> None:
        """Keeps allocated_state up to date from the claims' informer's events (and this
        manager's own assumptions and in-flight allocations), and the extended-resource
        claims indexed by their controller's uid."""
        self._index = _AllocatedIndex()
        self._extended = _ExtendedClaims()
        informer.add_event_handler(_ClaimsChanged(self._index, self._extended))

    def extended_claims_controlled_by(self, uid: str) -> list[types_pb2.ResourceClaim]:
        """The claims annotated as a pod's extended-resource claim whose controller has
        `uid` (every claim while the informer is not watched: the caller checks)."""
        if self._extended is None:
            return list(self.claims.list())
        out = []
        for namespace, name in self._extended.by_owner.get(uid, ()):
            claim = self.claims.get(name, namespace)
            if claim is not None:
                out.append(claim)
        return out

    def _claim_changed(self, namespace: str, name: str) -> None:
        if self._index is not None:
            self._index.keys.add((namespace, name))

    def _in_flight_changed(self, uid: str) -> None:
        if self._index is not None:
            self._index.uids.add(uid)

    # ------------------------------------------------------------ in-flight allocations

    def claim_has_pending_allocation(self, uid: str) -> bool:
        return uid in self._in_flight

    def signal_claim_pending_allocation(self, uid: str, claim: types_pb2.ResourceClaim) -> None:
        self._in_flight[uid] = claim
        self._in_flight_changed(uid)

    def remove_claim_pending_allocation(self, uid: str) -> bool:
        self._in_flight_changed(uid)
        return self._in_flight.pop(uid, None) is not None

    def pending_allocations(self) -> int:
        return len(self._in_flight)

    # ------------------------------------------------------------ assume cache

    def get_claim(self, namespace: str, name: str) -> types_pb2.ResourceClaim | None:
        return self.claims.get(name, namespace)

    def assume_claim_after_api_call(self, claim: types_pb2.ResourceClaim) -> bool:
        """Lays the API's answer over the informer's claim; False, and nothing assumed, when
        the informer does not hold the claim yet (upstream's AssumeCache.Assume answers
        ErrNotFound: a claim the scheduler has just created)."""
        meta = claim.metadata
        if self.claims.lister.get(meta.name, meta.namespace) is None:
            return False
        self.claims.assume(claim, from_api=True)
        self._claim_changed(meta.namespace, meta.name)
        return True

    def assumed_claim_restore(self, namespace: str, name: str) -> None:
        self.claims.restore(name, namespace)
        self._claim_changed(namespace, name)

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

    def extended_resource_classes(self) -> dict[str, str]:
        """DRAExtendedResource: extended resource name -> the DeviceClass that backs it
        (upstream extended.DeviceClassMapping): each class's implicit
        `deviceclass.resource.kubernetes.io/<class>` and its spec.extendedResourceName. Where
        several classes name the same resource, the newest one (then the first by name) wins
        (upstream's ExtendedResourceCache keeps the latest class)."""
        out: dict[str, str] = {}
        explicit: dict[str, tuple[int, str]] = {}
        for dc in self.classes.list():
            name = dc.metadata.name
            out[IMPLICIT_EXTENDED_RESOURCE_PREFIX + name] = name
            if dc.spec.HasField("extended_resource_name") and dc.spec.extended_resource_name:
                created = dc.metadata.creation_timestamp.seconds
                rname = dc.spec.extended_resource_name
                have = explicit.get(rname)
                if have is None or created > have[0] or (created == have[0] and name < have[1]):
                    explicit[rname] = (created, name)
        out.update({r: cls for r, (_, cls) in explicit.items()})
        return out

    def allocated_state(self, *, consumable_capacity: bool) -> AllocatedState:
        """AllocatedState.from_claims(allocated_claims()) (upstream lists the allocated devices
        each PreFilter); kemu keeps the exclusive devices up to date from the claims' changes
        while the informer is watched and no allocation has shares of a device."""
        index = self._index
        if index is None or consumable_capacity != index.consumable_capacity:
            if index is not None:
                index.reset(consumable_capacity, self.claims.lister.list(), self._in_flight)
            return AllocatedState.from_claims(
                self.allocated_claims(), consumable_capacity=consumable_capacity
            )
        index.update(self.claims, self._in_flight)
        if index.shares:
            return AllocatedState.from_claims(
                self.allocated_claims(), consumable_capacity=consumable_capacity
            )
        return AllocatedState(allocated_devices=set(index.devices))

    def slices_list(self) -> list[types_pb2.ResourceSlice]:
        return list(self.slices.list())

    def taint_rules_list(self) -> list[types_pb2.DeviceTaintRule]:
        return [] if self.taint_rules is None else list(self.taint_rules.list())


class _AllocatedIndex:
    """The devices allocated exclusively by the claims (assume cache and in flight, one per
    uid, in flight first: DraManager.allocated_claims), kept up to date from the changed
    claims' keys and in-flight uids, applied when next asked."""

    def __init__(self) -> None:
        self.consumable_capacity: bool | None = None  # None: never filled
        self.keys: set[tuple[str, str]] = set()  # claims changed (namespace, name)
        self.uids: set[str] = set()  # in-flight allocations changed
        self._key_uid: dict[tuple[str, str], str] = {}
        self._cached: dict[str, types_pb2.ResourceClaim] = {}  # uid -> allocated claim
        self._counted: dict[str, tuple[DeviceID, ...]] = {}  # uid -> its devices
        self._refs: dict[DeviceID, int] = {}
        self.devices: set[DeviceID] = set()
        self.shares: set[str] = set()  # uids with shares of a device

    def reset(
        self,
        consumable_capacity: bool,
        claims: Sequence[types_pb2.ResourceClaim],
        in_flight: Iterable[str],
    ) -> None:
        """Everything to be looked at again (the first time, or with the other flag)."""
        self.consumable_capacity = consumable_capacity
        self.keys = {(c.metadata.namespace, c.metadata.name) for c in claims}
        self.uids = set(in_flight) | set(self._counted)
        self._key_uid.clear()
        self._cached.clear()
        self._counted.clear()
        self._refs.clear()
        self.devices.clear()
        self.shares.clear()

    def update(
        self,
        claims: AssumeCache[types_pb2.ResourceClaim],
        in_flight: dict[str, types_pb2.ResourceClaim],
    ) -> None:
        uids = self.uids
        for key in self.keys:
            old = self._key_uid.pop(key, None)
            if old is not None:
                self._cached.pop(old, None)
                uids.add(old)
            namespace, name = key
            if claims.lister.get(name, namespace) is None:
                continue  # gone (an assumption of it no longer counts)
            claim = claims.get(name, namespace)
            if claim is not None and claim.status.HasField("allocation"):
                uid = claim.metadata.uid
                self._key_uid[key] = uid
                self._cached[uid] = claim
                uids.add(uid)
        self.keys = set()
        for uid in uids:
            claim = in_flight.get(uid)
            if claim is None:
                claim = self._cached.get(uid)
            for device_id in self._counted.pop(uid, ()):
                left = self._refs[device_id] - 1
                if left:
                    self._refs[device_id] = left
                else:
                    del self._refs[device_id]
                    self.devices.discard(device_id)
            self.shares.discard(uid)
            if claim is None:
                continue
            counted: list[DeviceID] = []
            for r in claim.status.allocation.devices.results:
                if r.admin_access:
                    continue
                if self.consumable_capacity and r.HasField("share_id"):
                    self.shares.add(uid)
                    continue
                device_id = DeviceID(r.driver, r.pool, r.device)
                counted.append(device_id)
                self._refs[device_id] = self._refs.get(device_id, 0) + 1
                self.devices.add(device_id)
            self._counted[uid] = tuple(counted)
        self.uids = set()


class _ExtendedClaims:
    """The extended-resource claims' keys by their controller's uid."""

    def __init__(self) -> None:
        self.by_owner: dict[str, set[tuple[str, str]]] = {}

    def add(self, claim: types_pb2.ResourceClaim) -> None:
        if not is_extended_resource_claim(claim):
            return
        key = (claim.metadata.namespace, claim.metadata.name)
        for ref in claim.metadata.owner_references:
            if ref.controller:
                self.by_owner.setdefault(ref.uid, set()).add(key)

    def remove(self, claim: types_pb2.ResourceClaim) -> None:
        key = (claim.metadata.namespace, claim.metadata.name)
        for ref in claim.metadata.owner_references:
            keys = self.by_owner.get(ref.uid)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self.by_owner[ref.uid]


class _ClaimsChanged:
    """The claims' informer handler: the claim's key is to be looked at again; the
    extended-resource claims' index follows."""

    def __init__(self, index: _AllocatedIndex, extended: _ExtendedClaims) -> None:
        self._index = index
        self._extended = extended

    def on_add(self, obj: types_pb2.ResourceClaim) -> None:
        self._index.keys.add((obj.metadata.namespace, obj.metadata.name))
        self._extended.add(obj)

    def on_update(self, old: types_pb2.ResourceClaim, new: types_pb2.ResourceClaim) -> None:
        self._index.keys.add((new.metadata.namespace, new.metadata.name))
        self._extended.remove(old)
        self._extended.add(new)

    def on_delete(self, obj: types_pb2.ResourceClaim) -> None:
        self._index.keys.add((obj.metadata.namespace, obj.metadata.name))
        self._extended.remove(obj)
