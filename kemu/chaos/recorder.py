"""What a chaos run records while it runs: two independent pod watchers (their histories
are compared for gaps), binding times, and the scheduler lease's holders."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import anyio

from kemu.api.v1 import types_pb2
from kemu.client.interface import ApiClient
from kemu.machinery.errors import ApiError
from kemu.testing.invariants import PodHistory, PodVersion

SCHEDULER_LEASE = "kube-scheduler"
LEASE_NAMESPACE = "kube-system"


class TimedPodHistory(PodHistory):
    """A PodHistory that also notes when (time.monotonic) each pod was first seen bound."""

    def __init__(self, namespace: str) -> None:
        super().__init__(namespace)
        self.bound_at: dict[str, float] = {}
        self.listed = 0

    def record(self, event_type: str, obj: types_pb2.Pod) -> PodVersion:
        version = super().record(event_type, obj)
        if obj.spec.node_name and obj.metadata.uid not in self.bound_at:
            self.bound_at[obj.metadata.uid] = time.monotonic()
        return version


@dataclass(frozen=True)
class LeaseVersion:
    resource_version: int
    holder: str
    seen_at: float


@dataclass
class LeaseRecorder:
    """Polls the scheduler's lease; every version seen (a change of holder is what matters:
    renewals between two polls are not all seen)."""

    versions: list[LeaseVersion] = field(default_factory=list)

    async def run(self, client: ApiClient, interval: float = 0.1) -> None:
        while True:
            try:
                lease = await client.get(types_pb2.Lease, SCHEDULER_LEASE, LEASE_NAMESPACE)
            except ApiError:
                pass
            else:
                rv = int(lease.metadata.resource_version)
                if not self.versions or self.versions[-1].resource_version != rv:
                    holder = lease.spec.holder_identity
                    self.versions.append(LeaseVersion(rv, holder, time.monotonic()))
            await anyio.sleep(interval)

    def holder_at(self, resource_version: int) -> str | None:
        """The holder in the newest recorded lease version older than `resource_version`."""
        holder = None
        for v in self.versions:
            if v.resource_version < resource_version:
                holder = v.holder
        return holder

    def first_change_after(self, t: float, holder: str) -> float | None:
        """When a holder other than `holder` (and not empty) was first seen after time t."""
        for v in self.versions:
            if v.seen_at >= t and v.holder and v.holder != holder:
                return v.seen_at
        return None
