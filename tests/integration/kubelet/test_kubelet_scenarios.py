"""Kubelet in-place resize scenarios (KEP-1287, pkg/kubelet/allocation: S-IPR-1, -2, -3) and the node lifecycle of
a killed kubelet, on real processes: etcd, apiserver, kubelets (one hollow kubelet gives every
S-IPR-1 row its own node) and a controller-manager. Resizes go through the pods/resize
subresource; what is asserted is what the API shows on the pod (conditions, allocatedResources,
resources) and node. Pods are bound by creating them with spec.nodeName (no scheduler).

The periodic resize retry is set to 10 minutes, so a Deferred resize accepted within seconds was
retried on an event (a pod removed, a resize actuated), not on the timer.
"""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field

import anyio
import pytest

from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.testing import Cluster, eventually, make_pod
from kemu.testing.builders import make_priority_class
from kemu.testing.names import unique_name
from kemu.testing.namespaces import create_namespace

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

ACTUATION_DELAY = 0.8
"""--resize-actuation-delay: how long a resize stays PodResizeInProgress."""
RETRY_PERIOD = "10m"
TABLE_NODES = 30
PENDING = "PodResizePending"
IN_PROGRESS = "PodResizeInProgress"
POLL = 0.02

Resources = Mapping[str, str]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with Cluster(tmp_path_factory.mktemp("kubelet-scenarios")) as c:
        c.start_etcd()
        c.start_apiserver()
        yield c


@pytest.fixture(scope="module")
def table_nodes(cluster: Cluster) -> Iterator[Iterator[str]]:
    """S-IPR-1's nodes (allocatable cpu 4, memory 4Gi), one per row, in one hollow kubelet."""
    prefix = unique_name("ipr1")
    cluster.start_component(
        "kubelet",
        f"kubelet-{prefix}",
        [
            "--server", cluster.server,
            "--nodes", str(TABLE_NODES),
            "--node-name-prefix", prefix,
            "--capacity", "cpu=4,memory=4Gi,pods=110",
            "--root-dir", "",
            "--pod-startup-delay", "50ms",
            "--resize-actuation-delay", f"{ACTUATION_DELAY}s",
            "--resize-retry-period", RETRY_PERIOD,
        ],
    )  # fmt: skip
    yield (f"{prefix}-{i}" for i in range(TABLE_NODES))


def _kubelet(cluster: Cluster, node: str, capacity: str) -> None:
    cluster.start_kubelet(
        node,
        capacity=capacity,
        extra_args=[
            "--pod-startup-delay", "50ms",
            "--resize-actuation-delay", f"{ACTUATION_DELAY}s",
            "--resize-retry-period", RETRY_PERIOD,
        ],
    )  # fmt: skip


# ---------------------------------------------------------------- helpers


async def _running(c: Client, ns: str, name: str) -> types_pb2.Pod:
    pod = await c.get(types_pb2.Pod, name, ns)
    assert pod.status.phase == "Running", pod.status
    return pod


async def _all_running(c: Client, ns: str, *names: str) -> None:
    for name in names:
        await eventually(functools.partial(_running, c, ns, name), timeout=10, interval=0.05)


def _conditions(pod: types_pb2.Pod) -> dict[str, types_pb2.PodCondition]:
    return {x.type: x for x in pod.status.conditions if x.type in (PENDING, IN_PROGRESS)}


def _target(pod: types_pb2.Pod, sidecar: bool) -> types_pb2.Container:
    return pod.spec.init_containers[0] if sidecar else pod.spec.containers[0]


def _status(pod: types_pb2.Pod, sidecar: bool) -> types_pb2.ContainerStatus:
    statuses = pod.status.init_container_statuses if sidecar else pod.status.container_statuses
    name = "sidecar" if sidecar else "c"
    (cs,) = [x for x in statuses if x.name == name]
    return cs


async def _resize(
    c: Client,
    ns: str,
    name: str,
    requests: Resources,
    limits: Resources | None = None,
    *,
    sidecar: bool = False,
) -> types_pb2.Pod:
    pod = await c.get(types_pb2.Pod, name, ns)
    res = _target(pod, sidecar).resources
    res.requests.clear()
    res.requests.update(requests)
    if limits is not None:
        res.limits.clear()
        res.limits.update(limits)
    return await c.resize(pod)


async def _consistently(check: Callable[[], Awaitable[object]], seconds: float) -> None:
    """`check` holds (does not raise) on every poll for `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        await check()
        await anyio.sleep(0.1)
    await check()


async def _event(c: Client, ns: str, pod: str, reason: str, message: str | None = None) -> None:
    async def recorded() -> bool:
        events = (await c.list(types_pb2.Event, ns)).items
        found = [e for e in events if e.involved_object.name == pod and e.reason == reason]
        assert found, [(e.involved_object.name, e.reason) for e in events]
        if message is not None:
            assert any(e.message == message for e in found), [e.message for e in found]
        return True

    await eventually(recorded, timeout=10, interval=0.1)


def _sample(metrics: str, name: str, labels: str) -> float:
    m = re.search(rf"^{re.escape(name)}\{{{re.escape(labels)}\}} (\S+)$", metrics, re.M)
    return float(m.group(1)) if m else 0.0


# ---------------------------------------------------------------- S-IPR-1


@dataclass(frozen=True)
class Row:
    """One row of upstream's TestHandlePodResourcesResize: pod1 (next to pod2 and pod3, each
    cpu 1 / memory 1Gi, on a node of cpu 4 / memory 4Gi) is resized from `initial` to
    `desired` requests (and limits)."""

    initial: Resources
    desired: Resources
    outcome: str  # "accepted", "Deferred", "Infeasible", "unchanged", "allocated-not-actuated"
    message: str = ""
    initial_limits: Resources = field(default_factory=dict)
    desired_limits: Resources = field(default_factory=dict)


ONE = {"cpu": "1", "memory": "1Gi"}
ROWS = {
    "cpu_down_memory_down": Row(ONE, {"cpu": "500m", "memory": "500Mi"}, "accepted"),
    "cpu_up_memory_down": Row(ONE, {"cpu": "1500m", "memory": "500Mi"}, "accepted"),
    "cpu_down_memory_up": Row(ONE, {"cpu": "500m", "memory": "1500Mi"}, "accepted"),
    "both_up_beyond_free": Row(
        ONE,
        {"cpu": "2500m", "memory": "2500Mi"},
        "Deferred",
        "Node didn't have enough resource: cpu, requested: 2500, used: 2000, capacity: 4000",
    ),
    "memory_up_beyond_free": Row(
        ONE,
        {"cpu": "500m", "memory": "2500Mi"},
        "Deferred",
        "Node didn't have enough resource: memory, requested: 2621440000, used: 2147483648, "
        "capacity: 4294967296",
    ),
    "memory_beyond_allocatable": Row(
        ONE,
        {"cpu": "1", "memory": "4500Mi"},
        "Infeasible",
        "Node didn't have enough capacity: memory, requested: 4718592000, capacity: 4294967296",
    ),
    "cpu_beyond_allocatable": Row(
        ONE,
        {"cpu": "5", "memory": "1Gi"},
        "Infeasible",
        "Node didn't have enough capacity: cpu, requested: 5000, capacity: 4000",
    ),
    "allocated_not_actuated": Row(
        ONE, {"cpu": "500m", "memory": "500Mi"}, "allocated-not-actuated"
    ),
    "no_change": Row(ONE, ONE, "unchanged"),
    "cpu_up_from_minimum": Row(
        {"cpu": "2m", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"}, "accepted"
    ),
    "cpu_down_to_minimum": Row(ONE, {"cpu": "2m", "memory": "1Gi"}, "accepted"),
    "cpu_limit_up": Row(
        {"cpu": "5m", "memory": "1Gi"},
        {"cpu": "5m", "memory": "1Gi"},
        "accepted",
        initial_limits={"cpu": "10m"},
        desired_limits={"cpu": "20m"},
    ),
    "cpu_limit_down": Row(
        {"cpu": "5m", "memory": "1Gi"},
        {"cpu": "5m", "memory": "1Gi"},
        "accepted",
        initial_limits={"cpu": "20m"},
        desired_limits={"cpu": "10m"},
    ),
}


def _row_params() -> list[object]:
    params: list[object] = []
    for kind in ("container", "sidecar"):
        for name, row in ROWS.items():
            params.append(pytest.param(row, kind == "sidecar", id=f"{name}-{kind}"))
        params.append(
            pytest.param(
                None,
                kind == "sidecar",
                id=f"static_pod-{kind}",
                marks=pytest.mark.skip(
                    reason="kemu has no static pods (no file config source): the row "
                    "'Infeasible: In-place resize of static-pods is not supported' cannot occur"
                ),
            )
        )
    return params


@pytest.mark.parametrize(("row", "sidecar"), _row_params())
async def test_s_ipr_1_handle_pod_resources_resize(
    cluster: Cluster, table_nodes: Iterator[str], row: Row, sidecar: bool
) -> None:
    node = next(table_nodes)
    async with Client(cluster.server, timeout=10.0) as c:
        ns = await create_namespace(c, "ipr1")
        pod1 = make_pod("pod1").namespace(ns).node(node)
        if sidecar:
            pod1 = pod1.init_container("sidecar", restart_policy="Always")
        pod1 = pod1.req(row.initial)
        if row.initial_limits:
            pod1 = pod1.lim(row.initial_limits)
        await c.create(pod1.obj())
        for name in ("pod2", "pod3"):
            await c.create(make_pod(name).namespace(ns).node(node).req(ONE).obj())
        await _all_running(c, ns, "pod1", "pod2", "pod3")

        resized = await _resize(
            c, ns, "pod1", row.desired, row.desired_limits or None, sidecar=sidecar
        )
        generation = resized.metadata.generation

        async def unchanged_allocation(pod: types_pb2.Pod) -> None:
            cs = _status(pod, sidecar)
            assert dict(cs.allocated_resources) == dict(row.initial), cs
            assert dict(cs.resources.requests) == dict(row.initial), cs
            assert dict(cs.resources.limits) == dict(row.initial_limits), cs

        if row.outcome in ("Deferred", "Infeasible"):

            async def pending() -> bool:
                pod = await c.get(types_pb2.Pod, "pod1", ns)
                conds = _conditions(pod)
                assert set(conds) == {PENDING}, pod.status.conditions
                cond = conds[PENDING]
                assert (cond.status, cond.reason, cond.message) == (
                    "True",
                    row.outcome,
                    row.message,
                )
                assert cond.observed_generation == generation
                await unchanged_allocation(pod)
                return True

            await eventually(pending, timeout=10, interval=POLL)
            await _event(c, ns, "pod1", f"Resize{row.outcome}", row.message)
            # The other pods keep their room.
            for name in ("pod2", "pod3"):
                other = await _running(c, ns, name)
                assert dict(other.status.container_statuses[0].allocated_resources) == ONE
            return

        if row.outcome == "unchanged":

            async def nothing_happens() -> None:
                pod = await c.get(types_pb2.Pod, "pod1", ns)
                assert _conditions(pod) == {}, pod.status.conditions
                await unchanged_allocation(pod)

            await _consistently(nothing_happens, 2 * ACTUATION_DELAY)
            return

        # Accepted: allocated at once and in progress, actuated after the actuation delay.
        async def in_progress() -> types_pb2.Pod:
            pod = await c.get(types_pb2.Pod, "pod1", ns)
            cs = _status(pod, sidecar)
            assert dict(cs.allocated_resources) == dict(row.desired), cs
            assert dict(cs.resources.requests) == dict(row.initial), cs
            assert dict(cs.resources.limits) == dict(row.initial_limits), cs
            conds = _conditions(pod)
            assert set(conds) == {IN_PROGRESS}, pod.status.conditions
            assert conds[IN_PROGRESS].status == "True"
            assert conds[IN_PROGRESS].observed_generation == generation
            return pod

        async def actuated() -> bool:
            pod = await c.get(types_pb2.Pod, "pod1", ns)
            cs = _status(pod, sidecar)
            assert dict(cs.allocated_resources) == dict(row.desired), cs
            assert dict(cs.resources.requests) == dict(row.desired), cs
            assert dict(cs.resources.limits) == dict(row.desired_limits), cs
            assert _conditions(pod) == {}, pod.status.conditions
            return True

        accepted_at = time.monotonic()
        await eventually(in_progress, timeout=10, interval=POLL)

        if row.outcome == "allocated-not-actuated":
            # The kubelet syncs the pod again (an update) while its new allocation is not yet
            # actuated: desired == allocated, so nothing is re-decided; it stays in progress
            # (never PodResizePending) until actuated.
            await c.patch(types_pb2.Pod, "pod1", {"metadata": {"labels": {"sync": "again"}}}, ns)

            async def in_progress_or_actuated() -> bool:
                try:
                    await in_progress()
                except AssertionError:
                    return await actuated()
                return False

            await eventually(in_progress_or_actuated, timeout=10, interval=POLL)
            await actuated()
        else:
            await eventually(actuated, timeout=10, interval=POLL)
        took = time.monotonic() - accepted_at
        assert took >= ACTUATION_DELAY / 2, f"actuated after {took:.2f}s"
        await _event(c, ns, "pod1", "ResizeStarted")


# ---------------------------------------------------------------- S-IPR-2 / S-IPR-3


async def _deferred(c: Client, ns: str, name: str) -> types_pb2.Pod:
    pod = await c.get(types_pb2.Pod, name, ns)
    cond = _conditions(pod).get(PENDING)
    assert cond is not None and cond.reason == "Deferred", pod.status.conditions
    return pod


def _allocated(pod: types_pb2.Pod) -> dict[str, str]:
    return dict(pod.status.container_statuses[0].allocated_resources)


async def test_s_ipr_2_chain_reaction(cluster: Cluster) -> None:
    """Every pod holds its full share of a full node (cpu 4, memory 4Gi). pod2 wants more
    memory and less cpu, pod3 more cpu and less memory, pod4 more memory: deleting pod1 makes
    room for pod2's resize only; pod2's actuated cpu downsize makes room for pod3's; pod3's
    actuated memory downsize makes room for pod4's."""
    node = unique_name("chain")
    _kubelet(cluster, node, "cpu=4,memory=4Gi,pods=110")
    initial = {
        "pod1": {"cpu": "500m", "memory": "1Gi"},
        "pod2": {"cpu": "1500m", "memory": "1Gi"},
        "pod3": {"cpu": "1", "memory": "1Gi"},
        "pod4": {"cpu": "1", "memory": "1Gi"},
    }
    desired = {
        "pod2": {"cpu": "500m", "memory": "2Gi"},
        "pod3": {"cpu": "2", "memory": "512Mi"},
        "pod4": {"cpu": "1", "memory": "1536Mi"},
    }
    async with Client(cluster.server, timeout=10.0) as c:
        ns = await create_namespace(c, "chain")
        for name, requests in initial.items():
            await c.create(make_pod(name).namespace(ns).node(node).req(requests).obj())
        await _all_running(c, ns, *initial)
        # Deferred one after the other: the retry list holds them oldest first.
        for name, requests in desired.items():
            await _resize(c, ns, name, requests)
            await eventually(functools.partial(_deferred, c, ns, name), timeout=10, interval=POLL)

        await c.delete(types_pb2.Pod, "pod1", ns, grace_period_seconds=0)
        deleted_at = time.monotonic()
        allocated_at: dict[str, float] = {}
        actuated_at: dict[str, float] = {}

        async def chain_done() -> bool:
            for name, requests in desired.items():
                pod = await c.get(types_pb2.Pod, name, ns)
                now = time.monotonic() - deleted_at
                if name not in allocated_at and _allocated(pod) == requests:
                    allocated_at[name] = now
                    assert PENDING not in _conditions(pod), pod.status.conditions
                actual = dict(pod.status.container_statuses[0].resources.requests)
                if name not in actuated_at and actual == requests:
                    actuated_at[name] = now
            return len(actuated_at) == len(desired)

        await eventually(chain_done, timeout=15, interval=POLL)
        # In order, each one only after the previous one's resize was actuated. Observations
        # come from polling three pods one after another, so two changes the kubelet made in
        # that order can be seen a poll apart in either order: compare against the actuation
        # delay, which separates them by construction, not against each other's observation.
        slack = 0.3
        assert allocated_at["pod2"] < allocated_at["pod3"] < allocated_at["pod4"], allocated_at
        assert allocated_at["pod3"] - allocated_at["pod2"] >= ACTUATION_DELAY - slack, allocated_at
        assert allocated_at["pod4"] - allocated_at["pod3"] >= ACTUATION_DELAY - slack, allocated_at
        assert actuated_at["pod2"] <= allocated_at["pod3"] + slack, (allocated_at, actuated_at)
        assert actuated_at["pod3"] <= allocated_at["pod4"] + slack, (allocated_at, actuated_at)
        # Driven by the events, well before any periodic retry (10 minutes).
        assert actuated_at["pod4"] < 4 * ACTUATION_DELAY + 3, (allocated_at, actuated_at)
        for name in desired:
            pod = await c.get(types_pb2.Pod, name, ns)
            assert _conditions(pod) == {}, (name, pod.status.conditions)
        metrics = cluster.component(f"kubelet-{node}").scrape()
        name = "kubelet_pod_deferred_resize_accepted_total"
        assert _freed_by_the_deletion(metrics) == 1, metrics
        assert _sample(metrics, name, 'retry_trigger="pod_resized"') == 2, metrics
        assert _sample(metrics, name, 'retry_trigger="periodic_retry"') == 0, metrics


async def test_s_ipr_3_priority_order(cluster: Cluster) -> None:
    """A full node (cpu 3): A (priority 0) and then B (priority 100) want one more cpu each
    and are Deferred; deleting C frees one cpu. B goes first (priority beats age) and gets it;
    A stays Deferred."""
    node = unique_name("prio")
    _kubelet(cluster, node, "cpu=3,memory=4Gi,pods=110")
    high, low = unique_name("high"), unique_name("low")
    async with Client(cluster.server, timeout=10.0) as c:
        ns = await create_namespace(c, "prio")
        await c.create(make_priority_class(high, 100).obj())
        await c.create(make_priority_class(low, 0).obj())
        await c.create(
            make_pod("a").namespace(ns).node(node).priority_class(low).req(cpu="1").obj()
        )
        await c.create(
            make_pod("b").namespace(ns).node(node).priority_class(high).req(cpu="1").obj()
        )
        await c.create(make_pod("c").namespace(ns).node(node).req(cpu="1").obj())
        await _all_running(c, ns, "a", "b", "c")
        for name in ("a", "b"):  # a has been pending longer
            await _resize(c, ns, name, {"cpu": "2"})
            await eventually(functools.partial(_deferred, c, ns, name), timeout=10, interval=POLL)

        await c.delete(types_pb2.Pod, "c", ns, grace_period_seconds=0)
        deleted_at = time.monotonic()

        async def b_allocated() -> bool:
            pod = await c.get(types_pb2.Pod, "b", ns)
            assert _allocated(pod) == {"cpu": "2"}, pod.status
            assert set(_conditions(pod)) == {IN_PROGRESS}, pod.status.conditions
            return True

        await eventually(b_allocated, timeout=10, interval=POLL)
        assert time.monotonic() - deleted_at < 5

        async def a_still_deferred() -> None:
            pod = await _deferred(c, ns, "a")
            assert _allocated(pod) == {"cpu": "1"}, pod.status
            assert _conditions(pod)[PENDING].message == (
                "Node didn't have enough resource: cpu, requested: 2000, used: 2000, capacity: 3000"
            )

        # Through b's actuation (another retry, trigger pod_resized) and after it.
        await _consistently(a_still_deferred, 2 * ACTUATION_DELAY)
        b = await c.get(types_pb2.Pod, "b", ns)
        assert dict(b.status.container_statuses[0].resources.requests) == {"cpu": "2"}
        metrics = cluster.component(f"kubelet-{node}").scrape()
        name = "kubelet_pod_deferred_resize_accepted_total"
        assert _freed_by_the_deletion(metrics) == 1, metrics
        assert _sample(metrics, name, 'retry_trigger="periodic_retry"') == 0, metrics


def _freed_by_the_deletion(metrics: str) -> float:
    """Resizes accepted by the retry that a deleted pod's freed room triggered. A DELETE with
    grace 0 is written (deletionTimestamp) then removed: the kubelet retries when the pod
    terminates (pod_terminated) if it syncs the first write before the removal arrives, or
    when the pod is removed (pods_removed) if not; which one comes first is the watch's timing."""
    name = "kubelet_pod_deferred_resize_accepted_total"
    return _sample(metrics, name, 'retry_trigger="pods_removed"') + _sample(
        metrics, name, 'retry_trigger="pod_terminated"'
    )


# ---------------------------------------------------------------- node lifecycle

UNREACHABLE = {
    ("node.kubernetes.io/unreachable", "NoSchedule"),
    ("node.kubernetes.io/unreachable", "NoExecute"),
}


async def _node_state(c: Client, name: str) -> tuple[str, set[tuple[str, str]]]:
    node = await c.get(types_pb2.Node, name)
    ready = next(x.status for x in node.status.conditions if x.type == "Ready")
    taints = {
        (t.key, t.effect) for t in node.spec.taints if t.key.startswith("node.kubernetes.io/")
    }
    return ready, taints


async def test_node_goes_not_ready_while_its_kubelet_is_down(tmp_path) -> None:
    with Cluster(tmp_path) as cl:
        cl.start_etcd()
        cl.start_apiserver()
        cl.start_controllermanager(
            extra_args=["--node-monitor-period", "0.5s", "--node-monitor-grace-period", "4s"]
        )
        cl.start_kubelet(
            "n1",
            capacity="cpu=4,memory=4Gi,pods=110",
            extra_args=[
                "--node-lease-renew-interval", "1s",
                "--pod-startup-delay", "50ms",
                "--resize-actuation-delay", f"{ACTUATION_DELAY}s",
            ],
        )  # fmt: skip
        async with Client(cl.server, timeout=10.0) as c:
            await c.create(make_pod("a").node("n1").req(cpu="1", memory="1Gi").obj())
            await c.create(make_pod("b").node("n1").req(cpu="500m").obj())
            await _all_running(c, "default", "a", "b")
            await _resize(c, "default", "b", {"cpu": "1500m"})

            async def b_resized() -> types_pb2.Pod:
                pod = await c.get(types_pb2.Pod, "b", "default")
                cs = pod.status.container_statuses[0]
                assert dict(cs.resources.requests) == dict(cs.allocated_resources), cs
                assert dict(cs.allocated_resources) == {"cpu": "1500m"}, cs
                assert _conditions(pod) == {}, pod.status.conditions
                return pod

            await eventually(b_resized, timeout=10, interval=POLL)
            before = {name: await c.get(types_pb2.Pod, name, "default") for name in ("a", "b")}
            assert await _node_state(c, "n1") == ("True", set())

            cl.kill("kubelet-n1")
            killed_at = time.monotonic()

            async def unknown_and_tainted() -> bool:
                assert await _node_state(c, "n1") == ("Unknown", UNREACHABLE)
                return True

            await eventually(unknown_and_tainted, timeout=20, interval=0.1)
            took = time.monotonic() - killed_at
            assert took >= 4 - 1, f"NotReady after {took:.2f}s, before the grace period"
            node = await c.get(types_pb2.Node, "n1")
            ready = next(x for x in node.status.conditions if x.type == "Ready")
            assert ready.reason == "NodeStatusUnknown", ready

            cl.restart("kubelet-n1")

            async def ready_again() -> bool:
                assert await _node_state(c, "n1") == ("True", set())
                return True

            await eventually(ready_again, timeout=20, interval=0.1)
            for name, old in before.items():
                pod = await _running(c, "default", name)
                assert pod.metadata.uid == old.metadata.uid
                assert pod.status.start_time == old.status.start_time
                assert pod.status.container_statuses == old.status.container_statuses, name
                assert _conditions(pod) == {}
            # The restored allocation still counts: 1 + 1.5 of 4 cpus leaves 1.5.
            await c.create(make_pod("late").node("n1").req(cpu="2").obj())

            async def rejected() -> bool:
                pod = await c.get(types_pb2.Pod, "late", "default")
                assert pod.status.reason == "OutOfcpu", pod.status
                return True

            await eventually(rejected, timeout=10, interval=0.1)
