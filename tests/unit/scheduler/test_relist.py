"""After the pod informer relists (its watch was Gone), the scheduler's cache and queue hold the
informer's objects: one copy of each pod, not the pre-relist one beside the listed one (issue #16
item 4: at 50,000 pods a relist doubled the scheduler's memory)."""

from __future__ import annotations

import pytest

from kemu.api.v1 import types_pb2
from kemu.client.fake import FakeClient
from kemu.client.informer import Informer
from kemu.component.clock import FakeClock
from kemu.machinery.errors import Unavailable
from kemu.scheduling.interface import SCHEDULER_POD_FIELD_SELECTOR
from kemu.testing.builders import make_node, make_pod
from kemu.testing.fake_time import advance, wait_until
from tests.unit.scheduling.deferred_builders import SCHEDULER

from .harness import Env, env, settle


def _setup(client: FakeClient) -> None:
    client.add(make_node("n1").capacity(cpu="4", memory="8Gi", pods="10").obj())
    for name in ("bound", "bound-changed"):
        client.add(make_pod(name).scheduler_name(SCHEDULER).req(cpu="100m").node("n1").obj())
    for name in ("pending", "pending-changed"):
        client.add(make_pod(name).scheduler_name(SCHEDULER).req(cpu="100m").obj())


def _pods(e: Env) -> Informer[types_pb2.Pod]:
    factory = e.fwk.informer_factory()
    assert factory is not None
    informer = factory.informer(types_pb2.Pod, field_selector=SCHEDULER_POD_FIELD_SELECTOR)
    assert isinstance(informer, Informer)
    return informer


@pytest.mark.anyio
async def test_after_a_relist_the_cache_and_queue_hold_the_informers_pods() -> None:
    async with env(setup=_setup) as e:
        pods = _pods(e)
        lister = pods.lister
        before = {p.metadata.name: p for p in lister.list()}
        lists = pods.lists
        await wait_until(lambda: e.client.open_watches >= 1)
        # The pod watch breaks; two pods change before the informer resumes, and the history
        # it would resume from is gone: it relists.
        e.client.drop_watches(Unavailable("connection reset"))
        for name in ("bound-changed", "pending-changed"):
            await e.client.patch(types_pb2.Pod, name, {"metadata": {"labels": {"v": "2"}}})
        e.client.compact()
        assert isinstance(e.client.clock, FakeClock)
        await advance(e.client.clock, 15)
        await wait_until(lambda: pods.lists == lists + 1)
        await settle()

        for name in ("bound", "bound-changed"):
            informer_pod = lister.get(name)
            assert informer_pod is not None
            assert e.cache.get_pod(informer_pod) is informer_pod, name
        assert lister.get("bound") is before["bound"]  # unchanged: the pre-relist object kept
        assert lister.get("bound-changed").metadata.labels["v"] == "2"  # type: ignore[union-attr]
        queued = {p.metadata.name: p for p in e.queue.pods_in_active_q()}
        assert sorted(queued) == ["pending", "pending-changed"]
        for name, p in queued.items():
            assert p is lister.get(name), name
        assert queued["pending-changed"].metadata.labels["v"] == "2"
