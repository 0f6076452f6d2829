"""metrics.k8s.io (PodMetrics, NodeMetrics): what metrics-server serves upstream as an aggregated
API, served by kemu's REST edge from the pods' simulated usage (metrics.py builds the bodies)."""

from __future__ import annotations

from collections.abc import Callable

from aiohttp import web

from apiserver.endpoints.lists import Lister
from apiserver.endpoints.rest import discovery, metrics
from apiserver.endpoints.rest.request import json_response
from apiserver.registry.registry import Registry
from kemu.api.v1 import api_pb2, types_pb2
from kemu.machinery.errors import NotFound
from kemu.machinery.kinds import BY_KIND


class MetricsApi:
    def __init__(self, lister: Lister, registry: Registry, now: Callable[[], float]) -> None:
        self._lister = lister
        self._registry = registry
        self._now = now

    async def _list(
        self, request: web.BaseRequest, kind: str, namespace: str = ""
    ) -> list[api_pb2.Object]:
        """The objects of `kind` the request's label and field selectors match (in their
        envelopes)."""
        req = api_pb2.ListRequest(resource=BY_KIND[kind].resource, namespace=namespace)
        req.label_selector = request.query.get("labelSelector", "")
        req.field_selector = request.query.get("fieldSelector", "")
        listed = api_pb2.ListResponse.FromString(await self._lister.list_bytes(req))
        return list(listed.items)

    async def pod_metrics(
        self, request: web.BaseRequest, namespace: str, name: str
    ) -> web.Response:
        if name:
            try:
                pod = (await self._registry.read(BY_KIND["Pod"], namespace or "default", name)).obj
            except NotFound:
                pod = None
            if not isinstance(pod, types_pb2.Pod) or not metrics.has_metrics(pod):
                raise NotFound(f'podmetrics.{discovery.METRICS} "{name}" not found')
            return json_response(metrics.pod_metrics(pod, self._now()))
        now = self._now()
        pods = [item.pod for item in await self._list(request, "Pod", namespace)]
        items = [metrics.pod_metrics(p, now) for p in pods if metrics.has_metrics(p)]
        return json_response(metrics.metrics_list(discovery.POD_METRICS.kind, items))

    async def node_metrics(self, request: web.BaseRequest, name: str) -> web.Response:
        now = self._now()
        if name:
            try:
                node = (await self._registry.read(BY_KIND["Node"], "", name)).obj
            except NotFound:
                raise NotFound(f'nodemetrics.{discovery.METRICS} "{name}" not found') from None
            req = api_pb2.ListRequest(resource="pods", field_selector=f"spec.nodeName={name}")
            listed = api_pb2.ListResponse.FromString(await self._lister.list_bytes(req))
            assert isinstance(node, types_pb2.Node)
            pods = [item.pod for item in listed.items]
            return json_response(metrics.node_metrics(node, pods, now))
        nodes = [item.node for item in await self._list(request, "Node")]
        listed = api_pb2.ListResponse.FromString(
            await self._lister.list_bytes(api_pb2.ListRequest(resource="pods"))
        )
        by_node: dict[str, list[types_pb2.Pod]] = {}
        for item in listed.items:
            by_node.setdefault(item.pod.spec.node_name, []).append(item.pod)
        items = [metrics.node_metrics(n, by_node.get(n.metadata.name, []), now) for n in nodes]
        return json_response(metrics.metrics_list(discovery.NODE_METRICS.kind, items))
