"""The serviceaccount controller and the root CA publisher against the fake client
(S-NS-DEF-*)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import pytest

from controllermanager.root_ca_publisher import (
    CA_KEY,
    CLUSTER_CA_PEM,
    DESCRIPTION_ANNOTATION,
    ROOT_CA_CONFIG_MAP,
    Publisher,
)
from controllermanager.serviceaccounts import ServiceAccountsController
from kemu.api.v1 import types_pb2
from kemu.client.fake import FakeClient
from kemu.client.informer import InformerFactory
from kemu.component.clock import FakeClock
from kemu.machinery.namespaces import new_namespace
from kemu.testing.eventually import eventually
from kemu.testing.fake_time import wait_until

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def running(fake: FakeClient, clock: FakeClock) -> AsyncIterator[None]:
    informers = InformerFactory(fake, clock=clock)
    sa = ServiceAccountsController(fake, informers, clock)
    ca = Publisher(fake, informers, clock)
    async with anyio.create_task_group() as tg:
        informers.start(tg)
        await informers.wait_for_cache_sync()
        tg.start_soon(sa.run)
        tg.start_soon(ca.run)
        yield
        tg.cancel_scope.cancel()


def has(fake: FakeClient, resource: str, ns: str, name: str) -> bool:
    return (resource, ns, name) in fake._objects


async def test_s_ns_def_1_every_namespace_gets_default_account_and_root_ca() -> None:
    clock = FakeClock()
    fake = FakeClient(new_namespace("default"), clock=clock)
    async with running(fake, clock):
        await wait_until(lambda: has(fake, "serviceaccounts", "default", "default"))
        await fake.create(new_namespace("team-a"))
        await wait_until(
            lambda: (
                has(fake, "serviceaccounts", "team-a", "default")
                and has(fake, "configmaps", "team-a", ROOT_CA_CONFIG_MAP)
            )
        )
        cm = await fake.get(types_pb2.ConfigMap, ROOT_CA_CONFIG_MAP, "team-a")
        assert cm.data[CA_KEY] == CLUSTER_CA_PEM
        assert cm.data[CA_KEY].startswith("-----BEGIN CERTIFICATE-----")
        assert "kube-apiserver" in cm.metadata.annotations[DESCRIPTION_ANNOTATION]


async def test_s_ns_def_2_deleted_or_edited_defaults_come_back() -> None:
    clock = FakeClock()
    fake = FakeClient(new_namespace("team-b"), clock=clock)
    async with running(fake, clock):
        await wait_until(
            lambda: (
                has(fake, "serviceaccounts", "team-b", "default")
                and has(fake, "configmaps", "team-b", ROOT_CA_CONFIG_MAP)
            )
        )
        await fake.delete(types_pb2.ServiceAccount, "default", "team-b")
        cm = await fake.get(types_pb2.ConfigMap, ROOT_CA_CONFIG_MAP, "team-b")
        cm.data[CA_KEY] = "tampered"
        await fake.update(cm)
        await wait_until(lambda: has(fake, "serviceaccounts", "team-b", "default"))

        async def restored() -> bool:
            got = await fake.get(types_pb2.ConfigMap, ROOT_CA_CONFIG_MAP, "team-b")
            return got.data[CA_KEY] == CLUSTER_CA_PEM

        await eventually(restored, timeout=2, interval=0.01)


async def test_s_ns_def_3_terminating_namespace_gets_nothing() -> None:
    clock = FakeClock()
    ns = new_namespace("going")
    ns.status.phase = "Terminating"
    fake = FakeClient(ns, new_namespace("other"), clock=clock)
    async with running(fake, clock):
        await wait_until(lambda: has(fake, "serviceaccounts", "other", "default"))
        await wait_until(lambda: has(fake, "configmaps", "other", ROOT_CA_CONFIG_MAP))
        assert not has(fake, "serviceaccounts", "going", "default")
        assert not has(fake, "configmaps", "going", ROOT_CA_CONFIG_MAP)
