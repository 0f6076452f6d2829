"""S-DRA-PERF-2: DraManager.allocated_state kept up to date from the claims' events (kemu; upstream
lists the allocated devices each PreFilter) equals AllocatedState.from_claims of
allocated_claims() after any sequence of informer events, assumptions, restores and in-flight
allocations."""

from __future__ import annotations

import random
from collections.abc import Sequence

import pytest

from kemu.api.v1 import types_pb2
from kemu.scheduling.dra.allocator import AllocatedState
from kemu.scheduling.dra_manager import DraManager
from kemu.scheduling.interface import ObjectEventHandler

NS = "default"


class _Informer:
    """Claims by name with their event handlers (the informer's cache and events)."""

    def __init__(self) -> None:
        self.items: dict[str, types_pb2.ResourceClaim] = {}
        self.handlers: list[ObjectEventHandler[types_pb2.ResourceClaim]] = []

    @property
    def lister(self) -> _Informer:
        return self

    def get(self, name: str, namespace: str = "") -> types_pb2.ResourceClaim | None:
        return self.items.get(name) if namespace == NS else None

    def list(self, namespace: str | None = None) -> Sequence[types_pb2.ResourceClaim]:
        return list(self.items.values())

    def add_event_handler(self, handler: ObjectEventHandler[types_pb2.ResourceClaim]) -> None:
        self.handlers.append(handler)

    def put(self, claim: types_pb2.ResourceClaim) -> None:
        old = self.items.get(claim.metadata.name)
        self.items[claim.metadata.name] = claim
        for h in self.handlers:
            if old is None:
                h.on_add(claim)
            else:
                h.on_update(old, claim)

    def delete(self, name: str) -> None:
        old = self.items.pop(name, None)
        if old is not None:
            for h in self.handlers:
                h.on_delete(old)


class _Empty:
    def get(self, name: str, namespace: str = "") -> None:
        return None

    def list(self, namespace: str | None = None) -> Sequence[types_pb2.DeviceClass]:
        return ()


def _claim(rng: random.Random, name: str, rv: int) -> types_pb2.ResourceClaim:
    c = types_pb2.ResourceClaim()
    c.metadata.name = name
    c.metadata.namespace = NS
    c.metadata.uid = f"uid-{name}"
    c.metadata.resource_version = str(rv)
    if rng.random() < 0.7:
        for _ in range(rng.randint(1, 3)):
            r = c.status.allocation.devices.results.add(
                request="r",
                driver="d",
                pool=f"p{rng.randint(0, 2)}",
                device=f"x{rng.randint(0, 5)}",
            )
            if rng.random() < 0.1:
                r.admin_access = True
            if rng.random() < 0.05:
                r.share_id = "s1"
    return c


@pytest.mark.parametrize("seed", range(60))
def test_s_dra_perf_2_allocated_state_follows_the_changes(seed: int) -> None:
    rng = random.Random(seed)
    informer = _Informer()
    manager = DraManager(informer, _Empty(), _Empty())  # type: ignore[arg-type]
    manager.watch_claims(informer)
    rv = 1
    for _ in range(120):
        rv += 1
        name = f"c{rng.randint(0, 7)}"
        op = rng.random()
        if op < 0.4:
            informer.put(_claim(rng, name, rv))
        elif op < 0.5:
            informer.delete(name)
        elif op < 0.65:
            manager.assume_claim_after_api_call(_claim(rng, name, rv))
        elif op < 0.7:
            manager.assumed_claim_restore(NS, name)
        elif op < 0.85:
            manager.signal_claim_pending_allocation(f"uid-{name}", _claim(rng, name, rv))
        else:
            manager.remove_claim_pending_allocation(f"uid-{name}")
        if rng.random() < 0.5:
            cc = rng.random() < 0.8
            got = manager.allocated_state(consumable_capacity=cc)
            want = AllocatedState.from_claims(manager.allocated_claims(), consumable_capacity=cc)
            assert got.allocated_devices == want.allocated_devices
            assert got.shared_devices == want.shared_devices
            assert got.aggregated_capacity == want.aggregated_capacity


def test_extended_resource_claims_are_found_by_their_controllers_uid() -> None:
    """The claims annotated as a pod's extended-resource claim, indexed by their controller's
    uid from the informer's events (kemu: upstream's findExtendedResourceClaim walks every
    claim); another pod's, an unannotated one and a deleted one are not found."""
    informer = _Informer()
    manager = DraManager(informer, _Empty(), _Empty())  # type: ignore[arg-type]
    manager.watch_claims(informer)

    def claim(name: str, owner: str, *, annotated: bool = True) -> types_pb2.ResourceClaim:
        c = types_pb2.ResourceClaim()
        c.metadata.namespace, c.metadata.name = NS, name
        c.metadata.resource_version = "1"
        if annotated:
            c.metadata.annotations["resource.kubernetes.io/extended-resource-claim"] = "true"
        c.metadata.owner_references.add(kind="Pod", name=owner, uid=f"uid-{owner}", controller=True)
        return c

    informer.put(claim("p1-extended-resources-a", "p1"))
    informer.put(claim("p2-extended-resources-b", "p2"))
    informer.put(claim("p1-template-claim", "p1", annotated=False))
    assert [c.metadata.name for c in manager.extended_claims_controlled_by("uid-p1")] == [
        "p1-extended-resources-a"
    ]
    moved = claim("p1-extended-resources-a", "p3")  # (an update that changes the owner)
    moved.metadata.resource_version = "2"
    informer.put(moved)
    assert manager.extended_claims_controlled_by("uid-p1") == []
    assert [c.metadata.name for c in manager.extended_claims_controlled_by("uid-p3")] == [
        "p1-extended-resources-a"
    ]
    informer.delete("p2-extended-resources-b")
    assert manager.extended_claims_controlled_by("uid-p2") == []
