"""What a chaos run records while it runs: two independent pod watchers (their histories
are compared for gaps), binding times, and every version of the scheduler lease (who held it
at which revision)."""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass

from kemu.api.v1 import types_pb2
from kemu.client.interface import DELETED
from kemu.testing.invariants import LeaseHistory, LeaseVersion, PodHistory, PodVersion

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
class Holding:
    """One version of the scheduler lease: its holder from `resource_version` on."""

    resource_version: int
    holder: str
    seen_at: float


class LeaseRecorder(LeaseHistory):
    """Every version of the scheduler lease, through a watch of its namespace (record_leases):
    a holder that held it for one renewal is seen too, which polling could miss."""

    def __init__(self, holdings: Iterable[Holding] = ()) -> None:
        super().__init__(LEASE_NAMESPACE)
        self.holdings: list[Holding] = list(holdings)

    def record(self, event_type: str, obj: types_pb2.Lease) -> LeaseVersion:
        version = super().record(event_type, obj)
        rv = version.resource_version
        if obj.metadata.name == SCHEDULER_LEASE and event_type != DELETED and rv is not None:
            if not self.holdings or self.holdings[-1].resource_version < rv:
                holder = obj.spec.holder_identity
                self.holdings.append(Holding(rv, holder, time.monotonic()))
        return version

    @property
    def holder(self) -> str:
        """The holder in the newest version seen ("" before any)."""
        return self.holdings[-1].holder if self.holdings else ""

    def holder_at(self, resource_version: int) -> str | None:
        """The holder when the store was at `resource_version`: that of the newest lease
        version older than it (None when none was recorded)."""
        holder = None
        for v in self.holdings:
            if v.resource_version >= resource_version:
                break
            holder = v.holder
        return holder

    def first_change_after(self, t: float, holder: str) -> float | None:
        """When a holder other than `holder` (and not empty) was first seen after time t."""
        for v in self.holdings:
            if v.seen_at >= t and v.holder and v.holder != holder:
                return v.seen_at
        return None
