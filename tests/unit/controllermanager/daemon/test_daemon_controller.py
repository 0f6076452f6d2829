"""The DaemonSet controller against the fake client: which nodes get a pod, the pod it
creates, new nodes and deleted pods, status, and a rolling update within maxUnavailable."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import pytest

from controllermanager import daemon_util
from controllermanager.daemon.daemon_controller import DaemonSetController
from kemu.api.v1 import types_pb2
from kemu.client.fake import FakeClient
from kemu.client.informer import InformerFactory
from kemu.component.clock import FakeClock
from kemu.machinery import apps
from kemu.scheduling import daemon
from kemu.testing.builders import make_daemon_set, make_node
from kemu.testing.fake_time import wait_until

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def running(fake: FakeClient, clock: FakeClock) -> AsyncIterator[DaemonSetController]:
    informers = InformerFactory(fake, clock=clock)
    dsc = DaemonSetController(fake, informers, clock)
    async with anyio.create_task_group() as tg:
        informers.start(tg)
        await informers.wait_for_cache_sync()
        tg.start_soon(dsc.run)
        yield dsc
        tg.cancel_scope.cancel()


def live_pods(fake: FakeClient) -> list[types_pb2.Pod]:
    out = []
    for (resource, _, _), obj in fake._objects.items():
        if isinstance(obj, types_pb2.Pod) and resource == "pods":
            if not obj.metadata.HasField("deletion_timestamp"):
                out.append(obj)
    return out


def by_node(fake: FakeClient) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for p in live_pods(fake):
        out.setdefault(daemon_util.target_node_name(p) or "", []).append(p.metadata.name)
    return out


def ds_status(fake: FakeClient, name: str = "agent") -> types_pb2.DaemonSetStatus:
    ds = fake._objects[("daemonsets", "default", name)]
    assert isinstance(ds, types_pb2.DaemonSet)
    return ds.status


def test_node_should_run_daemon_pod_follows_selector_affinity_and_taints() -> None:
    ds = make_daemon_set("agent").node_selector(role="worker").obj()
    worker = make_node("w").labels(role="worker").obj()
    assert daemon.node_should_run_daemon_pod(worker, ds) == (True, True)
    other = make_node("o").labels(role="db").obj()
    assert daemon.node_should_run_daemon_pod(other, ds) == (False, False)
    no_schedule = make_node("t").labels(role="worker").taint("dedicated", "x", "NoSchedule").obj()
    assert daemon.node_should_run_daemon_pod(no_schedule, ds) == (False, True)
    no_execute = make_node("e").labels(role="worker").taint("dedicated", "x", "NoExecute").obj()
    assert daemon.node_should_run_daemon_pod(no_execute, ds) == (False, False)
    # The tolerations every daemon pod gets: a cordoned or not-ready node keeps its daemon.
    cordoned = (
        make_node("c")
        .labels(role="worker")
        .taint("node.kubernetes.io/unschedulable", "", "NoSchedule")
        .obj()
    )
    assert daemon.node_should_run_daemon_pod(cordoned, ds) == (True, True)
    tolerating = make_daemon_set("agent").toleration("dedicated").obj()
    assert daemon.node_should_run_daemon_pod(no_execute, tolerating) == (True, True)


async def test_one_pod_per_eligible_node_with_affinity_tolerations_and_labels() -> None:
    clock = FakeClock()
    ds = make_daemon_set("agent").obj()
    ds.metadata.annotations[apps.TEMPLATE_GENERATION_ANNOTATION] = "1"
    fake = FakeClient(
        ds,
        make_node("n1").obj(),
        make_node("n2").obj(),
        make_node("tainted").taint("dedicated", "x", "NoSchedule").obj(),
        clock=clock,
    )
    async with running(fake, clock):
        await wait_until(lambda: sorted(by_node(fake)) == ["n1", "n2"])
        pod = live_pods(fake)[0]
        assert pod.metadata.labels["pod-template-generation"] == "1"
        assert pod.metadata.labels["controller-revision-hash"]
        term = pod.spec.affinity.node_affinity.required_during_scheduling_ignored_during_execution
        (expr,) = term.node_selector_terms[0].match_fields
        assert (expr.key, expr.operator) == ("metadata.name", "In")
        keys = {(t.key, t.effect) for t in pod.spec.tolerations}
        assert ("node.kubernetes.io/unreachable", "NoExecute") in keys
        assert ("node.kubernetes.io/unschedulable", "NoSchedule") in keys
        await wait_until(lambda: ds_status(fake).current_number_scheduled == 2)
        assert ds_status(fake).desired_number_scheduled == 2
        assert ds_status(fake).number_unavailable == 2
        # A node that joins gets its pod; a deleted pod is replaced.
        await fake.create(make_node("n3").obj())
        await wait_until(lambda: sorted(by_node(fake)) == ["n1", "n2", "n3"])
        victim = by_node(fake)["n1"][0]
        await fake.delete(types_pb2.Pod, victim)
        await wait_until(lambda: by_node(fake).get("n1", [victim]) != [victim])
        assert sum(len(v) for v in by_node(fake).values()) == 3


async def test_rolling_update_replaces_at_most_max_unavailable_at_a_time() -> None:
    clock = FakeClock()
    nodes = [make_node(f"n{i}").obj() for i in range(4)]
    fake = FakeClient(make_daemon_set("agent").obj(), *nodes, clock=clock)
    ready = {"status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    async with running(fake, clock):
        await wait_until(lambda: len(live_pods(fake)) == 4)
        for p in live_pods(fake):
            await fake.patch(types_pb2.Pod, p.metadata.name, ready, subresource="status")
        await wait_until(lambda: ds_status(fake).number_available == 4)
        old = {p.metadata.name for p in live_pods(fake)}
        await fake.patch(
            types_pb2.DaemonSet,
            "agent",
            {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "v2"}]}}}},
        )

        def is_ready(p: types_pb2.Pod) -> bool:
            return any(c.type == "Ready" and c.status == "True" for c in p.status.conditions)

        def unready_new() -> list[types_pb2.Pod]:
            return [p for p in live_pods(fake) if p.metadata.name not in old and not is_ready(p)]

        rounds = 0
        while not all(p.metadata.name not in old for p in live_pods(fake)):
            await wait_until(lambda: unready_new())
            available = sum(1 for p in live_pods(fake) if is_ready(p))
            assert available >= 3, f"only {available} of 4 available during the update"
            for p in unready_new():
                await fake.patch(types_pb2.Pod, p.metadata.name, ready, subresource="status")
            rounds += 1
            await wait_until(lambda: not unready_new())
        assert rounds == 4  # one node at a time (maxUnavailable 1)
        await wait_until(lambda: ds_status(fake).updated_number_scheduled == 4)
        assert all(p.spec.containers[0].image == "v2" for p in live_pods(fake))
