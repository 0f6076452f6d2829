"""The in-flight limit: which requests count, the 429 past the limit, and the gRPC wrapper
with kemu's client backing off until a slot frees."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from prometheus_client import CollectorRegistry

from apiserver.clock.activity import Activity
from apiserver.endpoints.inflight import (
    MUTATING,
    READ_ONLY,
    InflightMetrics,
    MaxInflight,
    RequestInfo,
    grpc_request_info,
    limit_unary,
)
from apiserver.endpoints.rest.request_info import request_info
from kemu.api.v1 import api_pb2, types_pb2
from kemu.client.client import Client, Transport
from kemu.machinery import kinds
from kemu.machinery.errors import TooManyRequests
from kemu.machinery.virtual_time import CLOCK_IDENTITY_KEY
from kemu.testing.fake_time import wait_until
from tests.unit.version_server import version_server


def _limiter(max_requests_inflight: int, max_mutating_requests_inflight: int) -> MaxInflight:
    return MaxInflight(
        max_requests_inflight,
        max_mutating_requests_inflight,
        InflightMetrics(CollectorRegistry()),
    )


def test_past_the_limit_a_request_is_refused_with_retry_after_and_counted() -> None:
    registry = CollectorRegistry()
    limiter = MaxInflight(2, 1, InflightMetrics(registry))
    get = RequestInfo("get", "pods", "default")
    create = RequestInfo("create", "pods", "default")
    with limiter.acquire(get), limiter.acquire(get), limiter.acquire(create):
        assert (limiter.inflight(READ_ONLY), limiter.inflight(MUTATING)) == (2, 1)
        with pytest.raises(TooManyRequests) as info:
            limiter.acquire(get)
        assert info.value.retry_after_seconds == 1
        with pytest.raises(TooManyRequests):
            limiter.acquire(RequestInfo("patch", "pods", "default"))
        # The two kinds are bounded apart: a read does not take a write's place.
        sample = registry.get_sample_value
        assert sample("apiserver_current_inflight_requests", {"request_kind": "readOnly"}) == 2
        assert sample("apiserver_dropped_requests_total", {"request_kind": "mutating"}) == 1
    assert (limiter.inflight(READ_ONLY), limiter.inflight(MUTATING)) == (0, 0)
    assert sample("apiserver_dropped_requests_total", {"request_kind": "readOnly"}) == 1
    with limiter.acquire(get):  # the slots were given back
        pass


def test_watches_health_probes_and_system_leases_take_no_slot() -> None:
    limiter = _limiter(1, 1)
    held = [
        limiter.acquire(RequestInfo("get", "pods", "default")),
        limiter.acquire(RequestInfo("update", "pods", "default")),
    ]
    for exempt in (
        RequestInfo("watch", "pods", "default"),
        RequestInfo("get", path="/healthz"),
        RequestInfo("get", path="/readyz/etcd"),
        RequestInfo("get", path="/livez"),
        RequestInfo("update", "leases", "kube-system"),
        RequestInfo("create", "leases", "kube-node-lease"),
        RequestInfo("get", "leases", "kube-node-lease"),
    ):
        with limiter.acquire(exempt):
            pass
    for counted in (
        RequestInfo("update", "leases", "default"),  # not leader election
        RequestInfo("delete", "leases", "kube-system"),  # not a renewal
        RequestInfo("list", "leases", "kube-node-lease"),
        RequestInfo("get", path="/version"),
    ):
        with pytest.raises(TooManyRequests):
            limiter.acquire(counted)
    assert len(held) == 2


def test_zero_means_no_limit_and_negative_limits_are_refused() -> None:
    limiter = _limiter(0, 1)
    slots = [limiter.acquire(RequestInfo("list", "pods")) for _ in range(1000)]
    assert len(slots) == 1000 and limiter.limited
    assert not _limiter(0, 0).limited
    with pytest.raises(ValueError, match="--max-mutating-requests-inflight: -1"):
        _limiter(1, -1)


@pytest.mark.parametrize(
    ("method", "path", "query", "expected"),
    [
        ("GET", "/api/v1/namespaces/ns/pods/p", {}, RequestInfo("get", "pods", "ns", name="p")),
        ("GET", "/api/v1/namespaces/ns/pods", {}, RequestInfo("list", "pods", "ns")),
        ("GET", "/api/v1/pods", {"watch": "true"}, RequestInfo("watch", "pods")),
        ("GET", "/api/v1/watch/namespaces/ns/pods", {}, RequestInfo("watch", "pods", "ns")),
        (
            "POST",
            "/api/v1/namespaces/ns/pods/p/binding",
            {},
            RequestInfo("create", "pods", "ns", subresource="binding", name="p"),
        ),
        (
            "PUT",
            "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-scheduler",
            {},
            RequestInfo(
                "update",
                "leases",
                "kube-system",
                api_group="coordination.k8s.io",
                name="kube-scheduler",
            ),
        ),
        ("DELETE", "/api/v1/namespaces/ns/pods", {}, RequestInfo("deletecollection", "pods", "ns")),
        ("PATCH", "/api/v1/nodes/n", {}, RequestInfo("patch", "nodes", name="n")),
        ("GET", "/api/v1/namespaces/ns", {}, RequestInfo("get", "namespaces", name="ns")),
        (
            "PUT",
            "/api/v1/namespaces/ns/finalize",
            {},
            RequestInfo("update", "namespaces", subresource="finalize", name="ns"),
        ),
        ("GET", "/readyz", {}, RequestInfo("get", path="/readyz")),
        ("GET", "/apis", {}, RequestInfo("get", path="/apis")),
    ],
)
def test_the_rest_request_info_is_upstreams(
    method: str, path: str, query: dict[str, str], expected: RequestInfo
) -> None:
    assert request_info(method, path, query) == expected


def test_grpc_request_info_reads_the_lease_namespace_from_the_object() -> None:
    lease = types_pb2.Lease(metadata=types_pb2.ObjectMeta(name="l", namespace="kube-system"))
    update = api_pb2.UpdateRequest(object=kinds.wrap(lease))
    assert grpc_request_info("Update", update) == RequestInfo(
        "update", "leases", "kube-system", api_group="coordination.k8s.io", name="l"
    )
    pod = types_pb2.Pod(metadata=types_pb2.ObjectMeta(name="p", namespace="kube-system"))
    create = api_pb2.CreateRequest(object=kinds.wrap(pod))
    assert grpc_request_info("Create", create).name == ""  # (a create names no object)
    patch = api_pb2.PatchRequest(resource="pods", namespace="ns", name="p", subresource="status")
    assert grpc_request_info("Patch", patch) == RequestInfo(
        "patch", "pods", "ns", subresource="status", name="p"
    )
    evict = api_pb2.Eviction(metadata=types_pb2.ObjectMeta(name="p", namespace="ns"))
    assert grpc_request_info("Evict", evict) == RequestInfo(
        "create", "pods", "ns", subresource="eviction", name="p"
    )
    assert grpc_request_info("Create", create).kind == MUTATING
    assert not grpc_request_info("Create", create).exempt
    assert grpc_request_info("Bind", api_pb2.Binding()).kind == MUTATING
    assert grpc_request_info("Version", api_pb2.VersionRequest()).kind == READ_ONLY


def test_an_update_batch_is_classified_as_its_items_when_they_agree() -> None:
    def update(namespace: str, name: str) -> api_pb2.UpdateRequest:
        lease = types_pb2.Lease(metadata=types_pb2.ObjectMeta(name=name, namespace=namespace))
        return api_pb2.UpdateRequest(object=kinds.wrap(lease))

    heartbeats = api_pb2.UpdateBatchRequest(
        items=[update("kube-node-lease", "n1"), update("kube-node-lease", "n2")]
    )
    info = grpc_request_info("UpdateBatch", heartbeats)
    assert info == RequestInfo(
        "update", "leases", "kube-node-lease", api_group="coordination.k8s.io"
    )
    assert info.exempt
    mixed = api_pb2.UpdateBatchRequest(items=[update("kube-node-lease", "n1"), update("ns", "x")])
    assert grpc_request_info("UpdateBatch", mixed) == RequestInfo("update")
    assert not grpc_request_info("UpdateBatch", mixed).exempt


class _Held:
    """A Version handler that holds every call until released."""

    def __init__(self) -> None:
        self.release = anyio.Event()
        self.calls = 0

    async def version(self, request: Any, context: Any) -> api_pb2.VersionInfo:
        self.calls += 1
        await self.release.wait()
        return api_pb2.VersionInfo(server=api_pb2.ComponentVersion(emulated_version="1.37"))


@asynccontextmanager
async def _version_client(
    behaviour: Any, transport: Transport = Transport.UNARY
) -> AsyncIterator[Client]:
    """A client (over `transport`) of a server whose Version method is `behaviour` (then the
    limit)."""
    async with version_server(behaviour) as address:
        client = Client(address, timeout=10.0, transport=transport)
        try:
            yield client
        finally:
            await client.close()


# (both transports: the Calls stream serves each call behind the same limit)
_TRANSPORTS = pytest.mark.parametrize("transport", list(Transport), ids=lambda t: t.value)


@pytest.mark.anyio
@_TRANSPORTS
async def test_a_client_refused_by_the_limit_backs_off_and_is_served_once_a_slot_frees(
    transport: Transport,
) -> None:
    held = _Held()
    registry = CollectorRegistry()
    limiter = MaxInflight(1, 1, InflightMetrics(registry))
    limited = limit_unary("Version", held.version, limiter)
    async with _version_client(limited, transport) as client:
        results: list[str] = []

        async def call() -> None:
            results.append((await client.version()).server.emulated_version)

        async with anyio.create_task_group() as tg:
            tg.start_soon(call)
            await wait_until(lambda: held.calls == 1, within=5)
            tg.start_soon(call)  # refused: the one slot is taken
            dropped = "apiserver_dropped_requests_total"
            await wait_until(
                lambda: (registry.get_sample_value(dropped, {"request_kind": READ_ONLY}) or 0) >= 1,
                within=5,
            )
            held.release.set()
        assert results == ["1.37", "1.37"]
        assert held.calls == 2 and limiter.inflight(READ_ONLY) == 0


def _identity(context: Any) -> str:
    return str(dict(context.invocation_metadata() or ()).get(CLOCK_IDENTITY_KEY, ""))


@pytest.mark.anyio
@_TRANSPORTS
async def test_a_refused_call_of_a_component_in_a_clock_session_is_counted_as_received(
    transport: Transport,
) -> None:
    # The caller counts every attempt as made; a 429 from the limit that the apiserver did not
    # count left the two apart for ever, and the event-driven clock waiting for the missing
    # call (a 1,000-node day stalled so when its kubelet's pods terminated together).
    held = _Held()
    activity = Activity()

    async def served(request: Any, context: Any) -> api_pb2.VersionInfo:
        with activity.request(_identity(context)):  # as Calls.serve counts
            return await held.version(request, context)

    limited = limit_unary(
        "Version",
        served,
        _limiter(1, 1),
        refused=lambda context: activity.refused(_identity(context)),
    )
    async with _version_client(limited, transport) as client:
        client.clock_identity = "kubelet-1"
        async with anyio.create_task_group() as tg:
            tg.start_soon(client.version)
            await wait_until(lambda: held.calls == 1, within=5)
            tg.start_soon(client.version)  # refused at least once: the one slot is taken
            await wait_until(lambda: client.requests_sent >= 3, within=5)
            held.release.set()
        assert held.calls == 2
        assert activity.calls.count["kubelet-1"] == client.requests_sent >= 3
