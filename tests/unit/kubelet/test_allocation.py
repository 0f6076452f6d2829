"""In-place resize on FakeClient + FakeClock: upstream's TestHandlePodResourcesResize table
(S-IPR-1), the retry list's order (S-IPR-3) and triggers (S-IPR-2), admission against resized
pods (S-IPR-5), events and the checkpoint."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from google.protobuf.message import Message
from prometheus_client import CollectorRegistry

from kemu.api.v1 import types_pb2
from kemu.client.events import EventRecorder
from kemu.client.fake import FakeClient
from kemu.component.clock import FakeClock
from kemu.component.featuregate import FeatureGates
from kemu.component.version import Version
from kemu.testing.builders import make_pod
from kemu.testing.eventually import eventually
from kemu.testing.fake_time import settle
from kubelet.allocation import Pending, decide, held_by_others
from kubelet.app import pod_worker_options
from kubelet.pod_manager import NodePods
from kubelet.resize_retry import (
    TRIGGER_POD_RESIZED,
    TRIGGER_POD_TERMINATED,
    TRIGGER_PODS_REMOVED,
    retry_key,
)
from kubelet.runtime import ContainerAllocation, PodRuntime, PodState
from kubelet.settings import PodWorkerOptions

from .helpers import Env, advance, running_workers

pytestmark = pytest.mark.anyio

GI = 1024**3
MI = 1024**2
NODE = {"cpu": 4000, "memory": 4 * GI, "pods": 110}
PENDING = "PodResizePending"
IN_PROGRESS = "PodResizeInProgress"


class Recorder(EventRecorder):
    """Keeps the events instead of sending them."""

    def __init__(self, fake: FakeClient, clock: FakeClock) -> None:
        super().__init__(fake, "kubelet", clock=clock)
        self.events: list[tuple[str, str, str, str]] = []

    def event(
        self,
        obj: Message,
        event_type: str,
        reason: str,
        action: str,
        message: str,
        *,
        related: Message | None = None,
    ) -> None:
        assert isinstance(obj, types_pb2.Pod)
        self.events.append((obj.metadata.name, event_type, reason, message))


def pod(
    name: str, cpu: str = "1", memory: str = "1Gi", priority: int | None = None
) -> types_pb2.Pod:
    b = make_pod(name).req(cpu=cpu, memory=memory).node("n1")
    if priority is not None:
        b = b.priority(priority)
    return b.obj()


async def start(env: Env, *pods: types_pb2.Pod) -> None:
    for p in pods:
        await env.fake.create(p)
    await settle()
    await advance(env.clock, 0.5)

    async def all_running() -> bool:
        for p in pods:
            assert (await env.phase(p.metadata.name)) == "Running"
        return True

    await wait_until_async(all_running)


async def wait_until_async(check: Callable[[], Awaitable[object]], within: float = 2.0) -> None:
    await eventually(check, timeout=within, interval=0.001)


async def resize(env: Env, name: str, cpu: str, memory: str) -> types_pb2.Pod:
    p = await env.pod(name)
    r = p.spec.containers[0].resources
    r.requests["cpu"], r.requests["memory"] = cpu, memory
    out = await env.fake.resize(p)
    await settle()
    return out


def conditions(p: types_pb2.Pod) -> dict[str, types_pb2.PodCondition]:
    return {c.type: c for c in p.status.conditions if c.type in (PENDING, IN_PROGRESS)}


def allocated(p: types_pb2.Pod) -> dict[str, str]:
    return dict(p.status.container_statuses[0].allocated_resources)


def actual(p: types_pb2.Pod) -> dict[str, str]:
    return dict(p.status.container_statuses[0].resources.requests)


async def settled_pod(env: Env, name: str) -> types_pb2.Pod:
    """The pod once the kubelet has written the status its runtime implies."""
    await settle(200)
    return await env.pod(name)


ORIGINAL = {"cpu": "1", "memory": "1Gi"}


@pytest.mark.parametrize(
    ("cpu", "memory", "accepted", "pending", "message"),
    [
        ("500m", "500Mi", True, None, ""),
        ("1500m", "500Mi", True, None, ""),
        ("500m", "1500Mi", True, None, ""),
        ("2500m", "2500Mi", False, "Deferred", "Node didn't have enough resource: "),
        ("500m", "2500Mi", False, "Deferred", "Node didn't have enough resource: memory"),
        (
            "1",
            "4500Mi",
            False,
            "Infeasible",
            "Node didn't have enough capacity: memory, requested: 4718592000, capacity: 4294967296",
        ),
        (
            "5",
            "1Gi",
            False,
            "Infeasible",
            "Node didn't have enough capacity: cpu, requested: 5000, capacity: 4000",
        ),
        ("1", "1Gi", False, None, ""),  # no change
    ],
)
async def test_handle_pod_resources_resize_table(cpu, memory, accepted, pending, message):
    async with running_workers(nodes={"n1": NODE}) as env:
        await start(env, pod("p1"), pod("p2"), pod("p3"))
        resized = await resize(env, "p1", cpu, memory)
        p = await settled_pod(env, "p1")
        conds = conditions(p)
        if accepted:
            assert allocated(p) == {"cpu": cpu, "memory": memory}
            assert actual(p) == ORIGINAL  # not actuated yet
            assert set(conds) == {IN_PROGRESS}
            assert conds[IN_PROGRESS].observed_generation == resized.metadata.generation
            await advance(env.clock, 0.5)
            p = await settled_pod(env, "p1")
            assert actual(p) == allocated(p) == {"cpu": cpu, "memory": memory}
            assert conditions(p) == {}
        else:
            assert allocated(p) == ORIGINAL
            assert actual(p) == ORIGINAL
            if pending is None:
                assert conds == {}
            else:
                assert set(conds) == {PENDING}
                c = conds[PENDING]
                assert (c.status, c.reason) == ("True", pending)
                assert c.message.startswith(message), c.message
                assert c.observed_generation == resized.metadata.generation


async def test_resize_events_and_conditions_written_by_others_are_kept():
    clock = FakeClock()
    fake = FakeClient(clock=clock)
    recorder = Recorder(fake, clock)
    async with running_workers(
        nodes={"n1": NODE}, fake=fake, clock=clock, recorder=recorder
    ) as env:
        await env.fake.create(make_pod("p1").req(cpu="1", memory="1Gi").node("n1")
                              .condition("DisruptionTarget", reason="X").obj())  # fmt: skip
        await start(env, pod("p2"))
        await resize(env, "p1", "3500m", "1Gi")  # p2 holds 1 cpu: Deferred
        await resize(env, "p1", "5", "1Gi")  # Infeasible
        await resize(env, "p1", "2", "1Gi")  # fits
        await settle(200)
        resize_events = [(n, t, r) for n, t, r, _ in recorder.events if r.startswith("Resize")]
        assert resize_events == [
            ("p1", "Warning", "ResizeDeferred"),
            ("p1", "Warning", "ResizeInfeasible"),
            ("p1", "Normal", "ResizeStarted"),
        ]
        p = await env.pod("p1")
        assert {c.type for c in p.status.conditions} >= {"DisruptionTarget", IN_PROGRESS}
        started = recorder.events[-1][3]
        name, generation = p.spec.containers[0].name, p.metadata.generation
        assert started == (
            f'Pod resize started: {{"containers":[{{"name":"{name}","resources":{{"requests":'
            f'{{"cpu":"2","memory":"1Gi"}}}}}}],"generation":{generation}}}'
        )
        deferred = next(m for _, _, r, m in recorder.events if r == "ResizeDeferred")
        assert deferred.startswith("Node didn't have enough resource: cpu, requested: 3500")


async def test_an_infeasible_resize_is_not_retried_but_a_new_one_that_fits_is_accepted():
    async with running_workers(nodes={"n1": NODE}) as env:
        await start(env, pod("p1"), pod("p2"), pod("p3"))
        await resize(env, "p1", "5", "1Gi")
        p = await settled_pod(env, "p1")
        assert conditions(p)[PENDING].reason == "Infeasible"
        assert not env.node().deferred
        await env.fake.delete(types_pb2.Pod, "p2", grace_period_seconds=0)
        p = await settled_pod(env, "p1")
        assert conditions(p)[PENDING].reason == "Infeasible"
        assert allocated(p) == ORIGINAL
        await resize(env, "p1", "3", "1Gi")  # room p2 left
        p = await settled_pod(env, "p1")
        assert allocated(p)["cpu"] == "3"
        assert set(conditions(p)) == {IN_PROGRESS}


async def test_other_pods_count_at_allocation_not_at_their_pending_desired_size():
    async with running_workers(nodes={"n1": NODE}) as env:
        await start(env, pod("a"), pod("b"))
        await resize(env, "a", "3500m", "1Gi")  # Deferred: b holds 1 of the 4
        assert conditions(await settled_pod(env, "a"))[PENDING].reason == "Deferred"
        # b's upsize fits when a counts at its allocated 1 cpu (not its desired 3.5).
        await resize(env, "b", "3", "1Gi")
        assert allocated(await settled_pod(env, "b"))["cpu"] == "3"


async def test_a_new_pod_is_rejected_from_room_a_resize_took():
    async with running_workers(nodes={"n1": NODE}) as env:
        await start(env, pod("a"))
        await resize(env, "a", "3", "1Gi")
        assert allocated(await settled_pod(env, "a"))["cpu"] == "3"
        await env.fake.create(pod("late", cpu="2"))
        await settle(200)

        async def rejected() -> bool:
            p = await env.pod("late")
            assert (p.status.phase, p.status.reason) == ("Failed", "OutOfcpu"), p.status
            return True

        await wait_until_async(rejected)


async def test_a_downsize_frees_room_only_once_actuated():
    async with running_workers(nodes={"n1": NODE}) as env:
        await start(env, pod("a", cpu="3"), pod("b"))
        await resize(env, "a", "1", "1Gi")  # accepted, actuated in 0.5 s
        await resize(env, "b", "3", "1Gi")  # a still runs with 3 cpu: Deferred
        assert conditions(await settled_pod(env, "b"))[PENDING].reason == "Deferred"
        await advance(env.clock, 0.5)  # a actuated: trigger pod_resized
        b = await settled_pod(env, "b")
        assert allocated(b)["cpu"] == "3"
        assert env.workers.allocation_manager.deferred_resizes_accepted == {TRIGGER_POD_RESIZED: 1}


async def test_retry_order_higher_priority_is_accepted_and_the_older_stays_deferred():
    """S-IPR-3: the node has no free cpu; A (priority 0, pending first) and B (priority 100)
    each want one more cpu; deleting a pod that holds one cpu lets B in; A, evaluated next
    against B's new allocation, stays Deferred."""
    async with running_workers(nodes={"n1": NODE}) as env:
        await start(
            env,
            pod("a", memory="100Mi", priority=0),
            pod("b", memory="100Mi", priority=100),
            pod("c", cpu="1", memory="100Mi"),
            pod("d", cpu="1", memory="100Mi"),
        )
        await resize(env, "a", "2", "100Mi")
        await settled_pod(env, "a")
        await advance(env.clock, 1.0)
        await resize(env, "b", "2", "100Mi")
        await settled_pod(env, "b")
        await env.fake.delete(types_pb2.Pod, "c", grace_period_seconds=0)
        b = await settled_pod(env, "b")
        a = await settled_pod(env, "a")
        assert allocated(b)["cpu"] == "2"
        assert set(conditions(b)) == {IN_PROGRESS}
        assert allocated(a)["cpu"] == "1"
        assert conditions(a)[PENDING].reason == "Deferred"
        assert env.node().deferred == {a.metadata.uid}
        # a force delete marks the pod (grace 0) before removing it, as upstream: the kubelet
        # kills it on the first event, which frees its room
        assert env.workers.allocation_manager.deferred_resizes_accepted == {
            TRIGGER_POD_TERMINATED: 1
        }


async def test_a_removed_pod_frees_its_room_in_a_pods_removed_retry_at_once():
    """S-IPR-3 with the removal seen alone (a watch that delivers the DELETE without the
    write that marked the pod): HandlePodRemoves retries the Deferred resizes as it takes the
    pod out of the pod manager, so b is accepted by that retry (trigger pods_removed) before
    any worker runs, and never by a sync of its own that would find the room first and count
    under no trigger."""
    async with running_workers(nodes={"n1": NODE}) as env:
        await start(
            env,
            pod("a", memory="100Mi", priority=0),
            pod("b", memory="100Mi", priority=100),
            pod("c", cpu="1", memory="100Mi"),
            pod("d", cpu="1", memory="100Mi"),
        )
        await resize(env, "a", "2", "100Mi")
        await settled_pod(env, "a")
        await advance(env.clock, 1.0)
        await resize(env, "b", "2", "100Mi")
        await settled_pod(env, "b")
        b_uid = (await env.pod("b")).metadata.uid
        assert b_uid in env.node().deferred

        env.workers.on_pod_delete(await env.pod("c"))  # no await between: no worker runs

        assert env.workers.allocation_manager.deferred_resizes_accepted == {TRIGGER_PODS_REMOVED: 1}
        assert b_uid not in env.node().deferred
        assert env.node().runtimes[b_uid].requests["cpu"] == 2000


async def test_chain_reaction_after_a_pod_is_deleted():
    """S-IPR-2: deleting p1 makes room for p2's resize only; p2's actuation (which lowers its
    memory) makes room for p3's, p3's (which lowers its cpu) for p4's; no periodic retry."""
    async with running_workers(
        nodes={"n1": NODE},
        options=PodWorkerOptions(startup_delay=0.5, workers=4, resize_retry_period=3600),
    ) as env:
        await start(env, pod("p1"), pod("p2"), pod("p3"), pod("p4"))
        await resize(env, "p2", "2", "512Mi")
        await settled_pod(env, "p2")
        await advance(env.clock, 0.1)
        await resize(env, "p3", "500m", "2560Mi")
        await settled_pod(env, "p3")
        await advance(env.clock, 0.1)
        await resize(env, "p4", "1500m", "1Gi")
        for name in ("p2", "p3", "p4"):
            assert conditions(await settled_pod(env, name))[PENDING].reason == "Deferred"

        await env.fake.delete(types_pb2.Pod, "p1", grace_period_seconds=0)
        assert allocated(await settled_pod(env, "p2"))["cpu"] == "2"
        assert conditions(await settled_pod(env, "p3"))[PENDING].reason == "Deferred"
        assert conditions(await settled_pod(env, "p4"))[PENDING].reason == "Deferred"

        await advance(env.clock, 0.5)  # p2 actuated
        assert allocated(await settled_pod(env, "p3"))["memory"] == "2560Mi"
        assert conditions(await settled_pod(env, "p4"))[PENDING].reason == "Deferred"

        await advance(env.clock, 0.5)  # p3 actuated
        p4 = await settled_pod(env, "p4")
        assert allocated(p4)["cpu"] == "1500m"
        assert env.workers.allocation_manager.deferred_resizes_accepted == {
            TRIGGER_POD_TERMINATED: 1,  # marked with grace 0 before it is removed
            TRIGGER_POD_RESIZED: 2,
        }
        await advance(env.clock, 0.5)
        p4 = await settled_pod(env, "p4")
        assert actual(p4) == allocated(p4) and conditions(p4) == {}


async def test_the_checkpoint_keeps_the_allocation_and_a_resize_in_progress(tmp_path: Path):
    clock = FakeClock()
    fake = FakeClient(clock=clock)
    async with running_workers(
        nodes={"n1": NODE}, fake=fake, clock=clock, root_dir=tmp_path
    ) as env:
        await start(env, pod("a"), pod("b"))
        await resize(env, "a", "2", "1Gi")
        await resize(env, "b", "3", "1Gi")  # Deferred
        assert set(conditions(await settled_pod(env, "a"))) == {IN_PROGRESS}
        assert conditions(await settled_pod(env, "b"))[PENDING].reason == "Deferred"
    # The kubelet restarts with the same API state: nothing is re-decided from scratch.
    async with running_workers(
        nodes={"n1": NODE}, fake=fake, clock=clock, root_dir=tmp_path
    ) as env:
        a = env.workers.runtime((await env.pod("a")).metadata.uid)
        assert a is not None and a.actual is not None
        (alloc,) = a.allocation.values()
        assert alloc.requests["cpu"] == "2"
        assert env.node().deferred == {(await env.pod("b")).metadata.uid}
        await advance(env.clock, 0.5)
        a_pod = await settled_pod(env, "a")
        assert actual(a_pod) == allocated(a_pod) == {"cpu": "2", "memory": "1Gi"}
        assert conditions(a_pod) == {}
        assert conditions(await settled_pod(env, "b"))[PENDING].reason == "Deferred"


def test_the_checkpoint_keeps_what_a_resize_in_progress_holds():
    alloc = {"c": ContainerAllocation({"cpu": "1"}, {})}
    rt = PodRuntime("u", "default", "p", PodState.RUNNING, allocation=alloc, requests={"cpu": 1000})
    rt.actual = {"c": ContainerAllocation({"cpu": "2"}, {})}
    rt.held_requests = {"cpu": 2000}
    data = rt.to_json()
    assert PodRuntime.from_json(data).held() == {"cpu": 2000}
    # A checkpoint written before heldRequests kept the actual sum (actualRequests).
    del data["heldRequests"]
    data["actualRequests"] = {"cpu": 2000, "memory": 5}
    assert PodRuntime.from_json(data).held() == {"cpu": 2000, "memory": 5}
    # No resize in progress: the allocation's requests.
    del data["actual"]
    assert PodRuntime.from_json(data).held() == {"cpu": 1000}


def two_containers(name: str, a: str, b: str) -> types_pb2.Pod:
    p = make_pod(name).node("n1").container("a").req(cpu=a).container("b").req(cpu=b).obj()
    del p.spec.containers[0]  # the builder's default container
    return p


@pytest.mark.parametrize(("minor", "late_admitted"), [(36, False), (37, True)])
async def test_a_resize_in_progress_holds_by_the_emulated_versions_rule(
    minor: int, late_admitted: bool
):
    """cpu moves from a to b (a=2 b=1 -> a=1 b=2) on a 4-cpu node. Until actuated, 1.36's
    kubelet holds each container at its larger size (2 + 2 = 4 cpu), 1.37's the larger sum
    (3 cpu), so a 1-cpu pod created meanwhile is rejected at 1.36 and admitted at 1.37."""
    options = pod_worker_options(
        PodWorkerOptions(startup_delay=0.5, workers=4),
        FeatureGates.for_version(Version(1, minor)),
    )
    assert options.counting.per_container_max is (minor < 37)
    async with running_workers(nodes={"n1": NODE}, options=options) as env:
        await start(env, two_containers("m", "2", "1"))
        m = await env.pod("m")
        m.spec.containers[0].resources.requests["cpu"] = "1"
        m.spec.containers[1].resources.requests["cpu"] = "2"
        await env.fake.resize(m)
        m = await settled_pod(env, "m")
        assert set(conditions(m)) == {IN_PROGRESS}
        await env.fake.create(make_pod("late").node("n1").req(cpu="1").obj())
        await settle(200)

        async def decided() -> bool:
            rt = env.workers.runtime((await env.pod("late")).metadata.uid)
            assert rt is not None
            assert (rt.state != PodState.REJECTED) is late_admitted, (rt.state, rt.message)
            if not late_admitted:
                assert rt.reason == "OutOfcpu"
            return True

        await wait_until_async(decided)


def test_decide_and_retry_key():
    others = [{"cpu": 1000, "memory": GI}, {"cpu": 1000, "memory": GI}]
    alloc = {"cpu": 4000, "memory": 4 * GI, "pods": 110}
    own = {"cpu": 1000, "memory": GI}
    assert decide({"cpu": 2000, "memory": GI}, own, others, alloc).pending is None
    d = decide({"cpu": 2500, "memory": 2500 * MI}, own, others, alloc)
    assert d.pending == Pending.DEFERRED
    assert d.message.startswith("Node didn't have enough resource: cpu, requested: 2500, used:")
    # Memory is reported before cpu when both exceed the node.
    d = decide({"cpu": 5000, "memory": 5 * GI}, own, [], alloc)
    assert d.pending == Pending.INFEASIBLE and "capacity: memory" in d.message
    # Non-increasing resizes first, then priority, then Guaranteed, then age.
    down = retry_key(pod("x", cpu="500m"), {"cpu": 1000, "memory": GI}, 5.0)
    high = retry_key(pod("y", cpu="2", priority=10), {"cpu": 1000, "memory": GI}, 9.0)
    old = retry_key(pod("z", cpu="2"), {"cpu": 1000, "memory": GI}, 1.0)
    new = retry_key(pod("w", cpu="2"), {"cpu": 1000, "memory": GI}, 2.0)
    none = retry_key(pod("v", cpu="2"), {"cpu": 1000, "memory": GI}, None)
    assert sorted([none, new, old, high, down]) == [down, high, old, new, none]


def test_other_active_pods_count_at_what_they_hold():
    # While a resize is actuated a pod holds the larger of its allocated and actual sizes
    # (held_requests, computed when the resize is accepted); otherwise its allocation.
    node = NodePods("n1", NODE)
    for uid, state, requests, held in (
        ("self", PodState.RUNNING, {"cpu": 1000}, None),
        ("shrinking", PodState.RUNNING, {"cpu": 500}, {"cpu": 2000}),
        ("growing", PodState.RUNNING, {"cpu": 3000}, {"cpu": 3000, "memory": GI}),
        ("starting", PodState.STARTING, {"cpu": 100}, None),
        ("done", PodState.SUCCEEDED, {"cpu": 4000}, None),
        ("deleted", PodState.RUNNING, {"cpu": 700}, None),
    ):
        node.runtimes[uid] = PodRuntime(
            uid, "default", uid, state, requests=requests, held_requests=held
        )
        if uid != "deleted":  # gone from the API; its worker has not cleaned up yet
            node.api_pods[uid] = types_pb2.Pod()
    assert held_by_others(node, "self") == [
        {"cpu": 2000},
        {"cpu": 3000, "memory": GI},
        {"cpu": 100},
    ]


async def test_resize_is_ignored_with_the_gate_off():
    async with running_workers(
        nodes={"n1": NODE}, options=PodWorkerOptions(startup_delay=0.5, in_place_resize=False)
    ) as env:
        await start(env, pod("a"))
        await resize(env, "a", "2", "1Gi")
        a = await settled_pod(env, "a")
        assert allocated(a) == ORIGINAL and conditions(a) == {}


DISABLED = "PodResizePreemptionDisabled"


def preemption_disabled(p: types_pb2.Pod) -> types_pb2.PodCondition | None:
    return next((c for c in p.status.conditions if c.type == DISABLED), None)


async def test_a_deferred_pod_gets_no_preemption_disabled_condition():
    """KEP-5836 as merged (kubernetes#140000): the kubelet writes PodResizePending and
    PodResizeInProgress only; the KEP rejected a PodResizePreemptionDisabled pod condition."""
    async with running_workers(nodes={"n1": NODE}) as env:
        await start(env, pod("a"), pod("b"))
        await resize(env, "a", "3500m", "1Gi")
        a = await settled_pod(env, "a")
        assert conditions(a)[PENDING].reason == "Deferred"
        assert preemption_disabled(a) is None


async def test_resize_metrics():
    registry = CollectorRegistry()
    async with running_workers(nodes={"n1": NODE}, registry=registry) as env:

        def value(name: str, **labels: str) -> float | None:
            return registry.get_sample_value(name, labels)

        await start(env, pod("a"), pod("b"), pod("c"))
        await resize(env, "a", "500m", "2Gi")  # cpu decrease, memory increase: fits
        await resize(env, "b", "5", "1Gi")  # Infeasible
        await resize(env, "c", "2500m", "1Gi")  # Deferred
        await settle(200)
        requested = "kubelet_container_requested_resizes_total"
        assert value(requested, resource="cpu", requirement="requests", operation="decrease") == 1
        assert (
            value(requested, resource="memory", requirement="requests", operation="increase") == 1
        )
        assert (
            value(
                "kubelet_pod_infeasible_resizes_total",
                reason_detail="insufficient_node_allocatable",
            )
            == 1
        )
        assert value("kubelet_pod_pending_resizes", reason="deferred") == 1
        assert value("kubelet_pod_pending_resizes", reason="infeasible") == 1
        assert value("kubelet_pod_in_progress_resizes") == 1
        await env.fake.delete(types_pb2.Pod, "b", grace_period_seconds=0)
        await settle(200)
        accepted = "kubelet_pod_deferred_resize_accepted_total"
        assert value(accepted, retry_trigger="pod_terminated") == 1  # marked, then removed
        assert value("kubelet_pod_pending_resizes", reason="deferred") == 0
