"""The endpointslice controller (upstream pkg/controller/endpointslice/
endpointslice_controller.go with staging/src/k8s.io/endpointslice/reconciler.go): the
EndpointSlices of every Service with a selector, from the pods it selects.

A sync of one Service: each selected pod with an IP, terminating ones included, is an
endpoint (its IP, conditions ready = serving and not terminating, serving = the pod is
Ready, terminating = being deleted; publishNotReadyAddresses makes every endpoint ready and
serving; nodeName, the node's zone, targetRef) under the ports the Service's ports resolve to
on it. Endpoints with the same ports share slices of at most `max_endpoints_per_slice`
(--max-endpoints-per-slice, 100). The slices are named `<service>-<random>`
(generateName), owned by the Service (controller, blockOwnerDeletion: garbage collection
deletes them with it) and labelled `kubernetes.io/service-name` and
`endpointslice.kubernetes.io/managed-by: endpointslice-controller.k8s.io` (plus the
Service's labels and, headless, `service.kubernetes.io/headless`). The reconciler reuses the
Service's existing slices of the same ports, updating those that differ, creates what is
missing and deletes the rest (upstream's reconciler also packs to limit churn; kemu keeps a
stable order by pod name instead). Only IPv4 (kemu's pods have IPv4 addresses)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Final

from controllermanager.controller import (
    ControllerContext,
    process_work_items,
    run_controller,
    workers,
)
from controllermanager.controller_utils import new_controller_ref
from controllermanager.endpoint_util import (
    TOPOLOGY_ZONE,
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
from kemu.machinery.endpoints import (
    ENDPOINTSLICE_CONTROLLER_NAME,
    HEADLESS_LABEL,
    MANAGED_BY_LABEL,
    SERVICE_NAME_LABEL,
)
from kemu.machinery.errors import NotFound
from kemu.machinery.keys import object_key

logger = logging.getLogger(__name__)

NAME: Final = "endpointslice"
DEFAULT_WORKERS: Final = 5
"""--concurrent-service-endpoint-syncs' default."""
MAX_ENDPOINTS_PER_SLICE: Final = 100
IPV4: Final = "IPv4"

Ports = tuple[tuple[str, int, str, str], ...]
"""(name, port, protocol, appProtocol) per Service port resolved on a pod."""


def _ports_of(svc: types_pb2.Service, pod: types_pb2.Pod) -> Ports | None:
    out = []
    for sp in svc.spec.ports:
        number = find_port(pod, sp)
        if number is not None:
            out.append((sp.name, number, sp.protocol or "TCP", sp.app_protocol))
    if svc.spec.ports and not out:
        return None
    return tuple(out)


def endpoint_of(
    svc: types_pb2.Service, pod: types_pb2.Pod, node: types_pb2.Node | None
) -> types_pb2.Endpoint:
    """podToEndpoint."""
    terminating = pod.metadata.HasField("deletion_timestamp")
    is_serving = svc.spec.publish_not_ready_addresses or serving(pod)
    e = types_pb2.Endpoint(addresses=[pod.status.pod_ip], target_ref=pod_ref(pod))
    e.conditions.ready = is_serving and not terminating
    e.conditions.serving = is_serving
    e.conditions.terminating = terminating
    if pod.spec.node_name:
        e.node_name = pod.spec.node_name
    if node is not None and TOPOLOGY_ZONE in node.metadata.labels:
        e.zone = node.metadata.labels[TOPOLOGY_ZONE]
    if pod.spec.hostname and pod.spec.subdomain == svc.metadata.name:
        e.hostname = pod.spec.hostname
    return e


def desired_slices(
    svc: types_pb2.Service,
    pods: Sequence[types_pb2.Pod],
    nodes: dict[str, types_pb2.Node],
    max_per_slice: int = MAX_ENDPOINTS_PER_SLICE,
) -> list[tuple[Ports, list[types_pb2.Endpoint]]]:
    """The endpoints by port set, cut into slices of at most `max_per_slice`; a Service
    with no endpoint has one placeholder slice, without ports or endpoints (upstream's
    placeholder)."""
    groups: dict[Ports, list[types_pb2.Endpoint]] = {}
    for pod in pods:
        ports = _ports_of(svc, pod)
        if ports is None:
            continue
        groups.setdefault(ports, []).append(endpoint_of(svc, pod, nodes.get(pod.spec.node_name)))
    out: list[tuple[Ports, list[types_pb2.Endpoint]]] = []
    for ports in sorted(groups):
        eps = groups[ports]
        out.extend((ports, eps[i : i + max_per_slice]) for i in range(0, len(eps), max_per_slice))
    if not out:
        out.append(((), []))
    return out


def _labels(svc: types_pb2.Service) -> dict[str, str]:
    labels = dict(svc.metadata.labels)
    labels[SERVICE_NAME_LABEL] = svc.metadata.name
    labels[MANAGED_BY_LABEL] = ENDPOINTSLICE_CONTROLLER_NAME
    if is_headless(svc):
        labels[HEADLESS_LABEL] = ""
    return labels


def _fill(
    eps: types_pb2.EndpointSlice,
    svc: types_pb2.Service,
    ports: Ports,
    endpoints: list[types_pb2.Endpoint],
) -> None:
    eps.address_type = IPV4
    eps.metadata.labels.clear()
    eps.metadata.labels.update(_labels(svc))
    del eps.endpoints[:]
    eps.endpoints.extend(endpoints)
    del eps.ports[:]
    for name, number, protocol, app_protocol in ports:
        p = eps.ports.add(name=name, port=number, protocol=protocol)
        if app_protocol:
            p.app_protocol = app_protocol


def _ports_key(eps: types_pb2.EndpointSlice) -> Ports:
    return tuple(
        (p.name, p.port, p.protocol, p.app_protocol if p.HasField("app_protocol") else "")
        for p in eps.ports
    )


class EndpointSliceController:
    """See the module docstring."""

    def __init__(
        self,
        client: ApiClient,
        informers: InformerFactory,
        clock: Clock,
        *,
        workers: int = DEFAULT_WORKERS,
        max_endpoints_per_slice: int = MAX_ENDPOINTS_PER_SLICE,
    ) -> None:
        self._client = client
        self._workers = workers
        self._max = max_endpoints_per_slice
        self._created: dict[str, types_pb2.EndpointSlice] = {}
        """Slices this controller created that its informer has not shown yet (upstream's
        endpointSliceTracker: a sync on a stale cache must not create them twice)."""
        self.queue = WorkQueue(clock, name=NAME)
        self._services: Informer[types_pb2.Service] = informers.informer(types_pb2.Service)
        self._pods: Informer[types_pb2.Pod] = informers.informer(types_pb2.Pod)
        self._nodes: Informer[types_pb2.Node] = informers.informer(types_pb2.Node)
        self._slices: Informer[types_pb2.EndpointSlice] = informers.informer(
            types_pb2.EndpointSlice
        )
        enqueue = self._enqueue
        self._services.add_event_handler(
            FuncHandler(enqueue, lambda _old, new: enqueue(new), enqueue)
        )
        self._pods.add_event_handler(FuncHandler(self._on_pod, self._on_pod_update, self._on_pod))
        self._slices.add_event_handler(
            FuncHandler(self._on_slice, lambda _old, new: self._on_slice(new), self._on_slice)
        )

    @property
    def name(self) -> str:
        return NAME

    def _enqueue(self, svc: types_pb2.Service) -> None:
        self.queue.add(object_key(svc))

    def _on_pod(self, pod: types_pb2.Pod) -> None:
        for svc in services_selecting(self._services.lister, pod):
            self._enqueue(svc)

    def _on_pod_update(self, old: types_pb2.Pod, new: types_pb2.Pod) -> None:
        if old.metadata.resource_version == new.metadata.resource_version:
            return
        for key in pod_changed_services(self._services.lister, old, new):
            self.queue.add(key)

    def _on_slice(self, eps: types_pb2.EndpointSlice) -> None:
        self._created.pop(object_key(eps), None)
        labels = eps.metadata.labels
        if labels.get(MANAGED_BY_LABEL) == ENDPOINTSLICE_CONTROLLER_NAME and (
            svc_name := labels.get(SERVICE_NAME_LABEL)
        ):
            self.queue.add(f"{eps.metadata.namespace}/{svc_name}")

    def _owned_slices(self, namespace: str, name: str) -> list[types_pb2.EndpointSlice]:
        cached = self._slices.lister.list(namespace)
        seen = {s.metadata.name for s in cached}
        pending = [
            s
            for s in self._created.values()
            if s.metadata.namespace == namespace and s.metadata.name not in seen
        ]
        return sorted(
            (
                s
                for s in [*cached, *pending]
                if s.metadata.labels.get(SERVICE_NAME_LABEL) == name
                and s.metadata.labels.get(MANAGED_BY_LABEL) == ENDPOINTSLICE_CONTROLLER_NAME
                and not s.metadata.HasField("deletion_timestamp")
            ),
            key=lambda s: s.metadata.name,
        )

    async def sync(self, key: str) -> None:
        namespace, _, name = key.partition("/")
        svc = self._services.lister.get(name, namespace)
        existing = self._owned_slices(namespace, name)
        if svc is None or not svc.spec.selector or svc.metadata.HasField("deletion_timestamp"):
            # garbage collection deletes a deleted Service's slices (their owner); a Service
            # that lost its selector loses them here
            if svc is not None and not svc.spec.selector:
                await self._delete(existing)
            return
        pods = selected_pods(self._pods.lister, svc, lambda p: should_pod_be_in_endpoints(p, True))
        nodes = {n.metadata.name: n for n in self._nodes.lister.list()}
        wanted = desired_slices(svc, pods, nodes, self._max)
        unused = list(existing)
        for ports, endpoints in wanted:
            current = next((s for s in unused if _ports_key(s) == ports), None)
            if current is None:
                current = next((s for s in unused), None)
            if current is not None:
                unused.remove(current)
                updated = types_pb2.EndpointSlice()
                updated.CopyFrom(current)
                _fill(updated, svc, ports, endpoints)
                if updated != current:
                    await self._client.update(updated)
                continue
            new = types_pb2.EndpointSlice()
            new.metadata.generate_name = f"{name[:57]}-"
            new.metadata.namespace = namespace
            new.metadata.owner_references.append(new_controller_ref(svc))
            _fill(new, svc, ports, endpoints)
            created = await self._client.create(new)
            if self._slices.lister.get(created.metadata.name, namespace) is None:
                self._created[object_key(created)] = created
        await self._delete(unused)

    async def _delete(self, slices: list[types_pb2.EndpointSlice]) -> None:
        for s in slices:
            self._created.pop(object_key(s), None)
            try:
                await self._client.delete(
                    types_pb2.EndpointSlice, s.metadata.name, s.metadata.namespace
                )
            except NotFound:
                pass

    async def _worker(self) -> None:
        await process_work_items(self.queue, self.sync, "syncing service", logger)

    async def run(self) -> None:
        await run_controller(
            "endpoint slice controller",
            logger,
            synced=(self._services, self._pods, self._nodes, self._slices),
            queues=(self.queue,),
            tasks=workers(NAME, self._workers, self._worker),
        )


def new_controller(ctx: ControllerContext) -> EndpointSliceController:
    """The init function registered as "endpointslice"."""
    return EndpointSliceController(ctx.client, ctx.informers, ctx.clock)
