"""The endpoint and endpointslice controllers against the fake client (S-EPS-*)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import pytest

from controllermanager.endpoints import EndpointsController
from controllermanager.endpointslice import EndpointSliceController
from kemu.api.v1 import types_pb2
from kemu.client.fake import FakeClient
from kemu.client.informer import InformerFactory
from kemu.component.clock import FakeClock
from kemu.machinery.endpoints import (
    ENDPOINTSLICE_CONTROLLER_NAME,
    MANAGED_BY_LABEL,
    SERVICE_NAME_LABEL,
)
from kemu.machinery.printers import format_discovery_endpoints, format_endpoints
from kemu.testing.builders import make_node, make_pod
from kemu.testing.fake_time import wait_until

pytestmark = pytest.mark.anyio


def service(name: str = "web", selector: dict[str, str] | None = None) -> types_pb2.Service:
    svc = types_pb2.Service()
    svc.metadata.name, svc.metadata.namespace, svc.metadata.uid = name, "default", f"uid-{name}"
    svc.metadata.labels["team"] = "a"
    svc.spec.selector.update(selector if selector is not None else {"app": "web"})
    svc.spec.cluster_ip = "10.96.0.10"
    p = svc.spec.ports.add(name="http", protocol="TCP", port=80)
    p.target_port.str_val = "web"
    return svc


def pod(name: str, ip: str, *, ready: bool = True) -> types_pb2.Pod:
    p = (
        make_pod(name)
        .labels(app="web")
        .node("n1")
        .phase("Running")
        .condition("Ready", "True" if ready else "False")
        .port(8080, name="web")
        .obj()
    )
    p.status.pod_ip = ip
    return p


@asynccontextmanager
async def running(fake: FakeClock | FakeClient, clock: FakeClock) -> AsyncIterator[None]:
    assert isinstance(fake, FakeClient)
    informers = InformerFactory(fake, clock=clock)
    eps = EndpointsController(fake, informers, clock)
    slices = EndpointSliceController(fake, informers, clock)
    async with anyio.create_task_group() as tg:
        informers.start(tg)
        await informers.wait_for_cache_sync()
        tg.start_soon(eps.run)
        tg.start_soon(slices.run)
        yield
        tg.cancel_scope.cancel()


def slices_of(fake: FakeClient, svc: str = "web") -> list[types_pb2.EndpointSlice]:
    return [
        o
        for (resource, _, _), o in fake._objects.items()
        if resource == "endpointslices"
        and isinstance(o, types_pb2.EndpointSlice)
        and o.metadata.labels.get(SERVICE_NAME_LABEL) == svc
    ]


def endpoints_of(fake: FakeClient, name: str = "web") -> types_pb2.Endpoints | None:
    ep = fake._objects.get(("endpoints", "default", name))
    assert ep is None or isinstance(ep, types_pb2.Endpoints)
    return ep


async def test_s_eps_1_service_gets_endpoints_and_a_slice_of_its_ready_pods() -> None:
    clock = FakeClock()
    node = make_node("n1").label("topology.kubernetes.io/zone", "z1").obj()
    fake = FakeClient(
        service(), pod("a", "10.0.0.1"), pod("b", "10.0.0.2", ready=False), node, clock=clock
    )
    other = make_pod("x").labels(app="other").phase("Running").obj()
    other.status.pod_ip = "10.0.0.9"
    await fake.create(other)
    async with running(fake, clock):
        await wait_until(lambda: endpoints_of(fake) is not None and slices_of(fake))
        ep = endpoints_of(fake)
        assert ep is not None
        (subset,) = ep.subsets
        assert [a.ip for a in subset.addresses] == ["10.0.0.1"]
        assert [a.ip for a in subset.not_ready_addresses] == ["10.0.0.2"]
        assert subset.addresses[0].target_ref.name == "a"
        assert subset.addresses[0].node_name == "n1"
        assert [(p.name, p.port, p.protocol) for p in subset.ports] == [("http", 8080, "TCP")]
        assert ep.metadata.labels["team"] == "a"
        assert format_endpoints(ep) == "10.0.0.1:8080"
        (eps,) = slices_of(fake)
        assert eps.address_type == "IPv4"
        assert eps.metadata.labels[MANAGED_BY_LABEL] == ENDPOINTSLICE_CONTROLLER_NAME
        assert eps.metadata.generate_name == "web-"
        ref = eps.metadata.owner_references[0]
        assert (ref.kind, ref.name, ref.controller) == ("Service", "web", True)
        by_pod = {e.target_ref.name: e for e in eps.endpoints}
        assert set(by_pod) == {"a", "b"}
        assert by_pod["a"].conditions.ready and by_pod["a"].conditions.serving
        assert not by_pod["b"].conditions.ready and not by_pod["b"].conditions.serving
        assert by_pod["a"].zone == "z1"
        assert [(p.name, p.port) for p in eps.ports] == [("http", 8080)]
        assert format_discovery_endpoints(list(eps.endpoints)) == "10.0.0.1,10.0.0.2"


async def test_s_eps_2_terminating_pod_is_serving_not_ready_in_the_slice_and_gone_from_endpoints() -> (
    None
):
    clock = FakeClock()
    fake = FakeClient(service(), pod("a", "10.0.0.1"), pod("b", "10.0.0.2"), clock=clock)
    async with running(fake, clock):
        await wait_until(lambda: slices_of(fake) and len(slices_of(fake)[0].endpoints) == 2)
        await fake.delete(types_pb2.Pod, "b", "default", grace_period_seconds=30)
        b = await fake.get(types_pb2.Pod, "b", "default")
        assert b.metadata.HasField("deletion_timestamp")  # a bound pod: graceful

        def settled() -> bool:
            ep = endpoints_of(fake)
            s = slices_of(fake)
            if ep is None or not s:
                return False
            term = [e for e in s[0].endpoints if e.conditions.terminating]
            return [a.ip for a in ep.subsets[0].addresses] == ["10.0.0.1"] and len(term) == 1

        await wait_until(settled)
        (t,) = [e for e in slices_of(fake)[0].endpoints if e.conditions.terminating]
        assert t.conditions.serving and not t.conditions.ready


async def test_s_eps_3_pod_readiness_change_and_deletion_update_the_slice() -> None:
    clock = FakeClock()
    fake = FakeClient(service(), pod("a", "10.0.0.1", ready=False), clock=clock)
    async with running(fake, clock):
        await wait_until(lambda: slices_of(fake) and slices_of(fake)[0].endpoints)
        a = await fake.get(types_pb2.Pod, "a", "default")
        a.status.conditions[0].status = "True"
        await fake.update_status(a)
        await wait_until(lambda: slices_of(fake)[0].endpoints[0].conditions.ready)
        await fake.delete(types_pb2.Pod, "a", "default", grace_period_seconds=0)
        await wait_until(lambda: not slices_of(fake)[0].endpoints)
        await wait_until(lambda: not endpoints_of(fake).subsets)  # type: ignore[union-attr]
        (eps,) = slices_of(fake)
        assert format_discovery_endpoints(list(eps.endpoints)) == "<unset>"


async def test_s_eps_4_service_without_selector_is_left_alone() -> None:
    clock = FakeClock()
    fake = FakeClient(service("manual", selector={}), pod("a", "10.0.0.1"), clock=clock)
    mine = types_pb2.Endpoints()
    mine.metadata.name, mine.metadata.namespace = "manual", "default"
    mine.subsets.add().addresses.add(ip="192.168.1.1")
    await fake.create(mine)
    async with running(fake, clock):
        await anyio.sleep(0.2)
        ep = endpoints_of(fake, "manual")
        assert ep is not None and ep.subsets[0].addresses[0].ip == "192.168.1.1"
        assert not slices_of(fake, "manual")


async def test_s_eps_5_slices_hold_at_most_max_endpoints() -> None:
    clock = FakeClock()
    pods = [pod(f"p{i}", f"10.0.1.{i}") for i in range(5)]
    fake = FakeClient(service(), *pods, clock=clock)
    informers = InformerFactory(fake, clock=clock)
    ctrl = EndpointSliceController(fake, informers, clock, max_endpoints_per_slice=2)
    async with anyio.create_task_group() as tg:
        informers.start(tg)
        await informers.wait_for_cache_sync()
        tg.start_soon(ctrl.run)
        await wait_until(lambda: sum(len(s.endpoints) for s in slices_of(fake)) == 5)
        assert sorted(len(s.endpoints) for s in slices_of(fake)) == [1, 2, 2]
        tg.cancel_scope.cancel()
