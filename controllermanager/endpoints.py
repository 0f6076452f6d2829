"""The endpoint controller (upstream pkg/controller/endpoint/endpoints_controller.go): the
Endpoints of every Service with a selector, from the pods it selects.

A sync of one Service: each selected pod with an IP (ShouldPodBeInEndpoints, terminating
pods left out) is an address (ip, nodeName, targetRef) for each of the Service's ports that
resolves on it; ready pods go to `addresses`, the others to `notReadyAddresses` (all to
`addresses` with publishNotReadyAddresses); addresses with the same ports share a subset
(RepackSubsets). The Endpoints carry the Service's labels, `service.kubernetes.io/headless`
for a headless Service and `endpointslice.kubernetes.io/skip-mirror: "true"`; they are
written when they changed, and deleted with the Service. A Service without a selector is left
alone (its Endpoints are the user's)."""

from __future__ import annotations

import logging
from typing import Final

from controllermanager.controller import (
    ControllerContext,
    process_work_items,
    run_controller,
    workers,
)
from controllermanager.endpoint_util import (
    find_port,
    is_headless,
    pod_changed_services,
    pod_ref,
    selected_pods,
    services_selecting,
    serving,
    should_pod_be_in_endpoints,
)
from kemu.api.v1 import types_pb2
from kemu.client.informer import FuncHandler, Informer, InformerFactory
from kemu.client.interface import ApiClient
from kemu.client.workqueue import WorkQueue
from kemu.component.clock import Clock
from kemu.machinery.endpoints import HEADLESS_LABEL, SKIP_MIRROR_LABEL
from kemu.machinery.errors import AlreadyExists, NotFound
from kemu.machinery.keys import object_key

logger = logging.getLogger(__name__)

NAME: Final = "endpoint"
DEFAULT_WORKERS: Final = 5
"""--concurrent-endpoint-syncs' default."""


def desired_subsets(
    svc: types_pb2.Service, pods: list[types_pb2.Pod]
) -> list[types_pb2.EndpointSubset]:
    """The Service's subsets from its selected pods (see the module docstring)."""
    by_ports: dict[tuple[tuple[str, int, str], ...], types_pb2.EndpointSubset] = {}
    publish = svc.spec.publish_not_ready_addresses
    for pod in pods:
        ports: list[tuple[str, int, str]] = []
        for sp in svc.spec.ports:
            number = find_port(pod, sp)
            if number is not None:
                ports.append((sp.name, number, sp.protocol or "TCP"))
        if svc.spec.ports and not ports:
            continue
        key = tuple(sorted(ports))
        subset = by_ports.get(key)
        if subset is None:
            subset = by_ports[key] = types_pb2.EndpointSubset()
            for name, number, protocol in key:
                subset.ports.add(name=name, port=number, protocol=protocol)
        address = types_pb2.EndpointAddress(ip=pod.status.pod_ip, target_ref=pod_ref(pod))
        if pod.spec.node_name:
            address.node_name = pod.spec.node_name
        if pod.spec.hostname and pod.spec.subdomain == svc.metadata.name:
            address.hostname = pod.spec.hostname
        (subset.addresses if publish or serving(pod) else subset.not_ready_addresses).append(
            address
        )
    return [by_ports[k] for k in sorted(by_ports)]


def desired_endpoints(
    svc: types_pb2.Service, pods: list[types_pb2.Pod], current: types_pb2.Endpoints | None
) -> types_pb2.Endpoints:
    ep = types_pb2.Endpoints()
    if current is not None:
        ep.metadata.CopyFrom(current.metadata)
    else:
        ep.metadata.name, ep.metadata.namespace = svc.metadata.name, svc.metadata.namespace
    ep.metadata.labels.clear()
    ep.metadata.labels.update(svc.metadata.labels)
    ep.metadata.labels[SKIP_MIRROR_LABEL] = "true"
    if is_headless(svc):
        ep.metadata.labels[HEADLESS_LABEL] = ""
    ep.subsets.extend(desired_subsets(svc, pods))
    return ep


class EndpointsController:
    """See the module docstring."""

    def __init__(
        self,
        client: ApiClient,
        informers: InformerFactory,
        clock: Clock,
        *,
        workers: int = DEFAULT_WORKERS,
    ) -> None:
        self._client = client
        self._workers = workers
        self.queue = WorkQueue(clock, name=NAME)
        self._services: Informer[types_pb2.Service] = informers.informer(types_pb2.Service)
        self._pods: Informer[types_pb2.Pod] = informers.informer(types_pb2.Pod)
        self._endpoints: Informer[types_pb2.Endpoints] = informers.informer(types_pb2.Endpoints)
        enqueue = self._enqueue
        self._services.add_event_handler(
            FuncHandler(enqueue, lambda _old, new: enqueue(new), enqueue)
        )
        self._pods.add_event_handler(FuncHandler(self._on_pod, self._on_pod_update, self._on_pod))
        self._endpoints.add_event_handler(FuncHandler(on_delete=self._on_endpoints_delete))

    @property
    def name(self) -> str:
        return NAME

    def _enqueue(self, obj: types_pb2.Service) -> None:
        self.queue.add(object_key(obj))

    def _on_pod(self, pod: types_pb2.Pod) -> None:
        for svc in services_selecting(self._services.lister, pod):
            self._enqueue(svc)

    def _on_pod_update(self, old: types_pb2.Pod, new: types_pb2.Pod) -> None:
        if old.metadata.resource_version == new.metadata.resource_version:
            return
        for key in pod_changed_services(self._services.lister, old, new):
            self.queue.add(key)

    def _on_endpoints_delete(self, ep: types_pb2.Endpoints) -> None:
        if self._services.lister.get(ep.metadata.name, ep.metadata.namespace) is not None:
            self.queue.add(object_key(ep))

    async def sync(self, key: str) -> None:
        namespace, _, name = key.partition("/")
        svc = self._services.lister.get(name, namespace)
        current = self._endpoints.lister.get(name, namespace)
        if svc is None:
            if current is not None and SKIP_MIRROR_LABEL in current.metadata.labels:
                try:
                    await self._client.delete(types_pb2.Endpoints, name, namespace)
                except NotFound:
                    pass
            return
        if not svc.spec.selector:
            return
        pods = selected_pods(self._pods.lister, svc, lambda p: should_pod_be_in_endpoints(p, False))
        want = desired_endpoints(svc, pods, current)
        if current is None:
            try:
                await self._client.create(want)
            except AlreadyExists:
                pass  # the informer has it soon: synced again then
            return
        if want != current:
            await self._client.update(want)

    async def _worker(self) -> None:
        await process_work_items(self.queue, self.sync, "syncing service", logger)

    async def run(self) -> None:
        await run_controller(
            "endpoint controller",
            logger,
            synced=(self._services, self._pods, self._endpoints),
            queues=(self.queue,),
            tasks=workers(NAME, self._workers, self._worker),
        )


def new_controller(ctx: ControllerContext) -> EndpointsController:
    """The init function registered as "endpoint"."""
    return EndpointsController(ctx.client, ctx.informers, ctx.clock)
