from __future__ import annotations

import pytest

from kemu.api.v1 import types_pb2
from kemu.machinery.errors import Unavailable
from kemu.scheduling.interface import CycleState
from kemu.scheduling.plugins import default_binder
from kemu.testing.builders import make_pod
from tests.unit.scheduling.plugins.fakes import FakeHandle


@pytest.mark.anyio
async def test_bind_sets_the_node_through_the_api() -> None:
    handle = FakeHandle()
    pod = handle.client.add(make_pod("p").namespace("ns").obj())
    assert isinstance(pod, types_pb2.Pod)
    pl = default_binder.new({}, handle)
    status = await pl.bind(CycleState(), pod, "n1")
    assert status.is_success(), status
    bound = await handle.client.get(types_pb2.Pod, "p", "ns")
    assert bound.spec.node_name == "n1"
    (action,) = [a for a in handle.client.actions if a.verb == "bind"]
    assert (action.namespace, action.name, action.node_name) == ("ns", "p", "n1")
    assert action.uid == pod.metadata.uid


@pytest.mark.anyio
async def test_bind_never_binds_a_namesake_of_the_scheduled_pod() -> None:
    """The binding carries the uid: a pod deleted and re-created under the same name while
    the old one was being bound stays unbound (upstream DefaultBinder's Binding.UID)."""
    handle = FakeHandle()
    old = handle.client.add(make_pod("p").namespace("ns").obj())
    assert isinstance(old, types_pb2.Pod)
    await handle.client.delete(types_pb2.Pod, "p", "ns")
    await handle.client.create(make_pod("p").namespace("ns").obj())
    status = await default_binder.new({}, handle).bind(CycleState(), old, "n1")
    assert status.is_error()
    assert "Precondition failed: UID in precondition" in status.message()
    assert (await handle.client.get(types_pb2.Pod, "p", "ns")).spec.node_name == ""


@pytest.mark.anyio
async def test_bind_of_a_missing_pod_is_an_error() -> None:
    handle = FakeHandle()
    pl = default_binder.new({}, handle)
    status = await pl.bind(CycleState(), make_pod("gone").obj(), "n1")
    assert status.is_error()
    assert "gone" in status.message()


@pytest.mark.anyio
async def test_bind_of_an_already_bound_pod_is_an_error() -> None:
    handle = FakeHandle()
    pod = handle.client.add(make_pod("p").node("n0").obj())
    assert isinstance(pod, types_pb2.Pod)
    status = await default_binder.new({}, handle).bind(CycleState(), pod, "n1")
    assert status.is_error()
    assert "already assigned" in status.message()


@pytest.mark.anyio
async def test_api_unavailable_is_an_error_status_not_an_exception() -> None:
    handle = FakeHandle()
    pod = handle.client.add(make_pod("p").obj())
    assert isinstance(pod, types_pb2.Pod)
    handle.client.fail("bind", Unavailable("apiserver down"))
    status = await default_binder.new({}, handle).bind(CycleState(), pod, "n1")
    assert status.is_error()
    assert isinstance(status.error, Unavailable)
