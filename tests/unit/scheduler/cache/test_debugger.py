"""The scheduler's cache debugger wired as scheduler/app.py wires it (over the unit harness's
FakeClient): the cache's nodes and the cache's and queue's pods against the informers and a
fresh list. A cache that lost an object behind the informer's back, or an informer that missed
an update, is found; a healthy scheduler, an assumed pod and another scheduler's pods are not."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from kemu.api.v1 import types_pb2
from kemu.client.comparer import CacheComparer, informer_sources
from kemu.client.informer import Informer
from kemu.component.clock import FakeClock
from kemu.scheduling.interface import SCHEDULER_POD_FIELD_SELECTOR
from kemu.testing.builders import make_pod
from kemu.testing.fake_time import advance
from scheduler.cache.debugger import CacheDumper, cache_sources
from tests.unit.scheduling.deferred_builders import SCHEDULER

from ..harness import Env, env

CACHE_PODS = "scheduler cache and queue pods"
CACHE_NODES = "scheduler cache nodes"


def _informers(e: Env) -> tuple[Informer[types_pb2.Pod], Informer[types_pb2.Node]]:
    factory = e.fwk.informer_factory()
    assert factory is not None
    pods = factory.informer(types_pb2.Pod, field_selector=SCHEDULER_POD_FIELD_SELECTOR)
    nodes = factory.informer(types_pb2.Node)
    assert isinstance(pods, Informer) and isinstance(nodes, Informer)
    return pods, nodes


def _comparer(e: Env) -> CacheComparer:
    pods, nodes = _informers(e)
    factory = e.fwk.informer_factory()
    assert factory is not None and isinstance(e.client.clock, FakeClock)
    return CacheComparer(
        "kube-scheduler",
        lambda: [
            *informer_sources(factory),  # type: ignore[arg-type]
            *cache_sources(e.cache, e.queue, pods, nodes, [SCHEDULER]),
        ],
        clock=e.client.clock,
    )


async def _compare(e: Env) -> dict[str, Any]:
    """The wired comparer's result."""
    comparer = _comparer(e)
    assert isinstance(e.client.clock, FakeClock)
    async with anyio.create_task_group() as tg:
        tg.start_soon(comparer.compare_all)
        # Up to two catch-up rounds of 5 s for each of the sources.
        await advance(e.client.clock, 100.0, step=0.5)
    last = comparer.report()["last"]
    assert isinstance(last, dict)
    assert last["errors"] == []
    return last


async def _differences(e: Env) -> list[tuple[str, str, str, str]]:
    """(cache, against, key, kind) of every difference the wired comparer reports."""
    last = await _compare(e)
    return sorted(
        (d["cache"], d["against"], d["key"], d["difference"]) for d in last["differences"]
    )


async def _populated(e: Env) -> dict[str, types_pb2.Pod]:
    e.node("n1", cpu="4")
    pods = {
        "bound": e.add(make_pod("bound").scheduler_name(SCHEDULER).req(cpu="1").node("n1").obj()),
        "pending": e.add(make_pod("pending").scheduler_name(SCHEDULER).req(cpu="1").obj()),
        # Another scheduler's pending pod is none of this one's business.
        "other": e.add(make_pod("other").scheduler_name("other-scheduler").req(cpu="1").obj()),
    }
    await anyio.wait_all_tasks_blocked()
    return pods


@pytest.mark.anyio
async def test_a_healthy_scheduler_has_no_differences() -> None:
    async with env() as e:
        await _populated(e)
        assert e.cached("bound") and e.where("pending") == "active"
        last = await _compare(e)
        assert last["differences"] == []
        caches = {(c["cache"], c["against"]): c["objects"] for c in last["caches"]}
        for against in ("informers", "apiserver"):
            assert caches[(CACHE_PODS, against)] == 2  # bound and pending, not "other"
            assert caches[(CACHE_NODES, against)] == 1


@pytest.mark.anyio
async def test_an_assumed_pod_is_not_judged() -> None:
    async with env() as e:
        await _populated(e)
        qpi = await e.queue.pop()
        assert qpi is not None and qpi.pod.metadata.name == "pending"
        # In its binding cycle past Permit (no longer in flight), assumed on n1 while the API
        # has it unbound, and its KEP-5278 nominatedNodeName PATCH, which the handlers leave
        # alone for an assumed pod, made the cache's copy older than the informer's.
        e.cache.assume_pod(qpi.pod, "n1")
        e.queue.done(qpi.pod.metadata.uid)
        await e.client.patch(
            types_pb2.Pod,
            "pending",
            {"status": {"nominatedNodeName": "n1"}},
            "default",
            subresource="status",
        )
        await anyio.wait_all_tasks_blocked()
        assert _informers(e)[0].lister.get("pending").status.nominated_node_name == "n1"  # type: ignore[union-attr]
        assert await _differences(e) == []


@pytest.mark.anyio
async def test_objects_the_cache_and_queue_lost_behind_the_informers_back_are_missing() -> None:
    async with env() as e:
        pods = await _populated(e)
        node = await e.client.get(types_pb2.Node, "n1")
        e.cache.remove_pod(pods["bound"])
        e.queue.delete(pods["pending"])
        e.cache.remove_node(node)
        assert await _differences(e) == [
            (CACHE_PODS, against, f"default/{name}", "missing")
            for against in ("apiserver", "informers")
            for name in ("bound", "pending")
        ] + [(CACHE_NODES, against, "n1", "missing") for against in ("apiserver", "informers")]


@pytest.mark.anyio
async def test_a_missed_pod_update_is_stale_against_the_apiserver_only() -> None:
    async with env() as e:
        await _populated(e)
        # The pod watch never delivers the change: the informer, the cache and the queue agree
        # with each other, not with the apiserver.
        e.client.hold_watches("pods")
        for name in ("bound", "pending"):
            await e.client.patch(types_pb2.Pod, name, {"metadata": {"labels": {"v": "2"}}})
        pod_informer = _informers(e)[0].name
        assert await _differences(e) == sorted(
            [(CACHE_PODS, "apiserver", f"default/{n}", "stale") for n in ("bound", "pending")]
            + [
                (f"informer {pod_informer}", "apiserver", f"default/{n}", "stale")
                for n in ("bound", "pending")
            ]
        )


@pytest.mark.anyio
async def test_the_dumper_logs_every_node_and_the_queue(caplog: pytest.LogCaptureFixture) -> None:
    async with env() as e:
        await _populated(e)
        caplog.set_level("INFO", logger="scheduler.cache.debugger")
        CacheDumper(e.cache, e.queue).dump_all()
        text = caplog.text
        assert "Dump of cached NodeInfo: 1 nodes" in text
        assert "Node n1: requested cpu=1000m" in text and "default/bound" in text
        assert "Dump of scheduling queue: activeQ:1;" in text and "default/pending" in text


@pytest.mark.anyio
async def test_an_unassigned_pod_being_deleted_is_not_the_schedulers_business() -> None:
    async with env() as e:
        await _populated(e)
        pod = make_pod("finalized").scheduler_name(SCHEDULER).req(cpu="1").obj()
        pod.metadata.finalizers.append("example.com/keep")
        e.add(pod)
        await anyio.wait_all_tasks_blocked()
        await e.client.delete(types_pb2.Pod, "finalized", "default")
        await anyio.wait_all_tasks_blocked()
        # Terminating, held by its finalizer: queued, then popped and skipped (upstream
        # skipPodSchedule), after which the queue no longer holds it.
        assert e.where("finalized") == "active"
        assert await _differences(e) == []
        while e.where("finalized"):
            await e.cycle()
        listed = _informers(e)[0].lister.get("finalized")
        assert listed is not None and listed.metadata.HasField("deletion_timestamp")
        assert await _differences(e) == []
