"""The kubelet's DRA manager (upstream pkg/kubelet/cm/dra/manager.go: PrepareResources,
UnprepareResources), over the simulated drivers of --dra-slice-file (kemu.machinery.dra_slice_file).

A pod with `spec.resourceClaims` is admitted into PodState.PREPARING: its sandbox is not
created until every claim is prepared. Each sync (PodSyncer) calls `prepare_resources`, which
fetches each claim from the apiserver, as upstream does, and requires of it:

- its name known (a template's claim is recorded in status.resourceClaimStatuses by the
  resourceclaim controller): 'prepare resource claim: pod "ns/name": ResourceClaim not
  created yet';
- that it exists: "fetch ResourceClaim <name>: ...";
- a generated claim owned by the pod;
- the pod in status.reservedFor (the scheduler writes it with the allocation): "pod <name>
  (<uid>) is not allowed to use ResourceClaim <name> (<uid>)";
- each allocated device's driver run by this kubelet: "DRA driver <driver> is not registered".

Until then the pod stays Pending (no container runs), the Event Warning
FailedPrepareDynamicResources "Failed to prepare dynamic resources: <error>" is recorded and
the sync is retried (after PREPARE_RETRY_PERIOD, or at once when one of its claims changes
if the process watches claims: only to answer binding conditions, kubelet/app.py). The claims
are got one by one, never listed, as upstream's: the Node authorizer lets a node get the
claims of its pods and nothing more. Then the drivers' NodePrepareResources, one call per driver,
one after the other, takes the sum of their `kubelet.kemu.io/prepare-delay` on the cluster's
clock, and the containers start after the pod's start-up delay from its end. When the pod
stops, `unprepare_resources` (NodeUnprepareResources) releases them at once.

Metrics: dra_operations_duration_seconds{operation_name, is_error} (PrepareResources: the
simulated duration; UnprepareResources: 0) and dra_resource_claims_in_use{driver_name}.

Not modelled: the container statuses' allocatedResourcesStatus (gate ResourceHealthStatus,
alpha since 1.31, off by default upstream; kemu does not have it) and CDI devices.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Final

from prometheus_client import CollectorRegistry, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from kemu.api.v1 import types_pb2
from kemu.client.events import EventRecorder
from kemu.client.interface import ApiClient
from kemu.machinery.dra_slice_file import DraDrivers
from kemu.machinery.errors import ApiError
from kemu.machinery.kinds import EVENT_WARNING
from kemu.machinery.resourceclaim import (
    ClaimNameError,
    extended_resource_claim_name,
    is_for_pod,
    is_reserved_for_pod,
    not_for_pod_message,
    pod_claim_name,
)
from kubelet.runtime import PodRuntime

logger = logging.getLogger(__name__)

FAILED_PREPARE_REASON: Final = "FailedPrepareDynamicResources"
FAILED_UNPREPARE_REASON: Final = "FailedUnprepareDynamicResources"
PREPARE_RETRY_PERIOD: Final = 10.0
"""Seconds before a pod whose claims are not ready is synced again if no claim event comes
first (upstream's pod worker back-off period)."""
PREPARE_RESOURCES: Final = "PrepareResources"
UNPREPARE_RESOURCES: Final = "UnprepareResources"


@dataclass(frozen=True)
class Prepared:
    """What PrepareResources did for a pod."""

    delay: float
    """How long the drivers' NodePrepareResources take, one after the other."""
    claims: dict[str, list[str]]
    """The pod's claims by uid, each with the drivers of its devices."""


ANY_DRIVER: Final = "<any>"


class ClaimsInUseCollector(Collector):
    """dra_resource_claims_in_use (upstream's claimInfoCollector, kubelet 1.34+): the claims
    prepared for the active pods of these nodes, by driver and across all drivers (`<any>`),
    each claim counted once however many pods share it."""

    def __init__(self, runtimes: Callable[[], Iterable[PodRuntime]]) -> None:
        self._runtimes = runtimes

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily(
            "dra_resource_claims_in_use",
            "The number of ResourceClaims that are currently in use on the node, by driver "
            "name (driver_name label value) and across all drivers (special value <any> for "
            "driver_name). Note that the sum of all by-driver counts is not the total number "
            "of in-use ResourceClaims because the same ResourceClaim might use devices from "
            "different drivers. Instead, use the count for the <any> driver_name.",
            labels=("driver_name",),
        )
        in_use: dict[str, list[str]] = {}
        for rt in self._runtimes():
            if rt.active and rt.prepared_at is not None:
                in_use.update(rt.prepared_claims)
        by_driver: dict[str, int] = {}
        for drivers in in_use.values():
            for d in drivers:
                by_driver[d] = by_driver.get(d, 0) + 1
        family.add_metric((ANY_DRIVER,), len(in_use))
        for d, n in sorted(by_driver.items()):
            family.add_metric((d,), n)
        yield family


class PrepareError(Exception):
    """The pod's claims cannot be prepared yet; the message is upstream's."""


def _pod_claims(pod: types_pb2.Pod) -> list[tuple[str, bool]]:
    """(claim name, whether the pod must own it) of every claim the pod's sandbox needs: its
    spec.resourceClaims (an entry that needs none skipped) and the claim of its DRA-backed
    extended resources, which the scheduler created for it; PrepareError while a template's
    claim is not created yet."""
    out = []
    for pc in pod.spec.resource_claims:
        try:
            name, must_check_owner = pod_claim_name(pod, pc)
        except ClaimNameError as e:
            raise PrepareError(f"prepare resource claim: {e}") from None
        if name is not None:
            out.append((name, must_check_owner))
    extended = extended_resource_claim_name(pod)
    if extended:
        out.append((extended, True))
    return out


class DraManager:
    """Prepares and unprepares the claims of the pods of this process's nodes."""

    def __init__(
        self,
        client: ApiClient,
        drivers: DraDrivers,
        *,
        recorder: EventRecorder | None = None,
        registry: CollectorRegistry | None = None,
        client_of: Callable[[str], ApiClient] | None = None,
    ) -> None:
        """`client_of`: a node's client, by its name (a hollow process's node reads its pods'
        claims as its node's user: the Node authorizer lets it read only those)."""
        self._client_of = client_of or (lambda _node: client)
        self._drivers = drivers
        self._recorder = recorder
        self._durations = (
            None
            if registry is None
            else Histogram(
                "dra_operations_duration_seconds",
                "Latency histogram in seconds for the duration of handling all ResourceClaims "
                "referenced by a pod when the pod starts or stops. Identified by the name of "
                "the operation (PrepareResources or UnprepareResources) and separated by the "
                "success of the operation. The number of failed operations is provided "
                "through the histogram's overall count.",
                ("operation_name", "is_error"),
                registry=registry,
            )
        )

    async def prepare_resources(self, pod: types_pb2.Pod) -> Prepared:
        """The pod's claims as the drivers prepare them; PrepareError (its event recorded)
        while they cannot be prepared."""
        try:
            prepared = await self._prepare(pod)
        except PrepareError as e:
            self._observe(PREPARE_RESOURCES, 0.0, error=True)
            if self._recorder is not None:
                self._recorder.event(
                    pod,
                    EVENT_WARNING,
                    FAILED_PREPARE_REASON,
                    "",
                    f"Failed to prepare dynamic resources: {e}",
                )
            raise
        self._observe(PREPARE_RESOURCES, prepared.delay, error=False)
        return prepared

    async def _prepare(self, pod: types_pb2.Pod) -> Prepared:
        meta = pod.metadata
        drivers: set[str] = set()
        claims: dict[str, list[str]] = {}
        for name, must_check_owner in _pod_claims(pod):
            try:
                claim = await self._client_of(pod.spec.node_name).get(
                    types_pb2.ResourceClaim, name, meta.namespace
                )
            except ApiError as e:
                raise PrepareError(f"fetch ResourceClaim {name}: {e}") from None
            if must_check_owner and not is_for_pod(pod, claim):
                raise PrepareError(not_for_pod_message(pod, claim))
            if not is_reserved_for_pod(pod, claim):
                raise PrepareError(
                    f"pod {meta.name} ({meta.uid}) is not allowed to use ResourceClaim "
                    f"{name} ({claim.metadata.uid})"
                )
            for result in claim.status.allocation.devices.results:
                if self._drivers.driver(result.driver) is None:
                    raise PrepareError(f"DRA driver {result.driver} is not registered")
                drivers.add(result.driver)
            claims[claim.metadata.uid] = sorted(
                {r.driver for r in claim.status.allocation.devices.results}
            )
        delay = 0.0
        for name in sorted(drivers):
            driver = self._drivers.driver(name)
            if driver is not None:
                delay += driver.prepare_delay
        logger.info(
            "pod %s/%s: preparing its claims (drivers %s, %gs)",
            meta.namespace,
            meta.name,
            ", ".join(sorted(drivers)) or "none",
            delay,
        )
        return Prepared(delay, claims)

    def unprepare_resources(self, key: str) -> None:
        """NodeUnprepareResources for pod `key` (namespace/name), which stopped: nothing is
        left to release in the simulation."""
        logger.info("pod %s: claims unprepared", key)
        self._observe(UNPREPARE_RESOURCES, 0.0, error=False)

    def _observe(self, operation: str, seconds: float, *, error: bool) -> None:
        if self._durations is not None:
            self._durations.labels(operation, str(error).lower()).observe(seconds)
