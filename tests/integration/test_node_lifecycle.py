"""The node lifecycle controller, the taint eviction controller and the pod garbage collector
on real processes (etcd, apiserver, controller-manager with short periods). No kubelet runs:
the test plays one, writing a Node with a Ready condition and heartbeat, renewing its Lease in
kube-node-lease, and writing its pods' statuses."""

from __future__ import annotations

import time
from collections.abc import Iterator

import anyio
import pytest
from google.protobuf.timestamp_pb2 import Timestamp

from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.machinery.errors import NotFound
from kemu.testing import Cluster, eventually, make_node, make_pod
from kemu.testing.names import unique_name
from kemu.testing.namespaces import create_namespace

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

PERIOD = 0.5
GRACE = 4.0
QUARANTINE = 2.0
SLACK = 10.0
RENEW_INTERVAL = 0.5
TERMINATED_THRESHOLD = 2
NODE_LEASE_NAMESPACE = "kube-node-lease"
UNREACHABLE = {
    ("node.kubernetes.io/unreachable", "NoSchedule"),
    ("node.kubernetes.io/unreachable", "NoExecute"),
}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with Cluster(tmp_path_factory.mktemp("nodelifecycle")) as c:
        c.start_etcd()
        # DefaultTolerationSeconds' flags, as upstream's apiserver has them (default 300 each).
        c.start_apiserver(
            extra_args=[
                "--default-not-ready-toleration-seconds", "301",
                "--default-unreachable-toleration-seconds", "302",
            ]
        )  # fmt: skip
        c.start_controllermanager(
            extra_args=[
                "--node-monitor-period", f"{PERIOD}s",
                "--node-monitor-grace-period", f"{GRACE}s",
                "--pod-gc-quarantine", f"{QUARANTINE}s",
                "--pod-gc-check-period", f"{PERIOD}s",
                "--terminated-pod-gc-threshold", str(TERMINATED_THRESHOLD),
            ]
        )  # fmt: skip
        yield c


def _stamp(ts: Timestamp) -> None:
    ts.FromNanoseconds(time.time_ns())


class FakeKubelet:
    """Writes what a kubelet writes for its node: the Node (Ready, heartbeat) and its Lease."""

    def __init__(self, client: Client, name: str) -> None:
        self.client = client
        self.name = name

    async def register(self) -> None:
        node = make_node(self.name).capacity(cpu="4", memory="8Gi", pods="110").obj()
        ready = node.status.conditions.add(type="Ready", status="True", reason="KubeletReady")
        _stamp(ready.last_heartbeat_time)
        _stamp(ready.last_transition_time)
        await self.client.create(node)
        lease = types_pb2.Lease()
        lease.metadata.name = self.name
        lease.metadata.namespace = NODE_LEASE_NAMESPACE
        lease.spec.holder_identity = self.name
        lease.spec.lease_duration_seconds = 40
        _stamp(lease.spec.renew_time)
        await self.client.create(lease)

    async def renew(self) -> None:
        lease = await self.client.get(types_pb2.Lease, self.name, NODE_LEASE_NAMESPACE)
        _stamp(lease.spec.renew_time)
        await self.client.update(lease)

    async def renew_for(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            await self.renew()
            await anyio.sleep(RENEW_INTERVAL)

    async def post_ready(self) -> None:
        node = await self.client.get(types_pb2.Node, self.name)
        for cond in node.status.conditions:
            if cond.type == "Ready":
                if cond.status != "True":
                    _stamp(cond.last_transition_time)
                cond.status, cond.reason, cond.message = "True", "KubeletReady", ""
                _stamp(cond.last_heartbeat_time)
        await self.client.update_status(node)


async def _node(c: Client, name: str) -> tuple[str, set[tuple[str, str]]]:
    node = await c.get(types_pb2.Node, name)
    ready = next(cond.status for cond in node.status.conditions if cond.type == "Ready")
    taints = {
        (t.key, t.effect) for t in node.spec.taints if t.key.startswith("node.kubernetes.io/")
    }
    return ready, taints


async def test_a_silent_node_goes_unknown_and_tainted_and_recovers(cluster: Cluster) -> None:
    name = unique_name("node")
    async with Client(cluster.server, timeout=10.0) as c:
        kubelet = FakeKubelet(c, name)
        await kubelet.register()

        # Renewing for longer than the grace period keeps it Ready and untainted.
        await kubelet.renew_for(GRACE + 2 * PERIOD)
        assert await _node(c, name) == ("True", set())

        # Silent: Unknown with both unreachable taints within grace + period + slack.
        silent_at = time.monotonic()

        async def unknown_and_tainted() -> bool:
            assert await _node(c, name) == ("Unknown", UNREACHABLE)
            return True

        await eventually(unknown_and_tainted, timeout=GRACE + PERIOD + SLACK, interval=0.1)
        assert time.monotonic() - silent_at >= GRACE - RENEW_INTERVAL, "not before the grace"
        node = await c.get(types_pb2.Node, name)
        ready = next(cond for cond in node.status.conditions if cond.type == "Ready")
        assert (ready.reason, ready.message) == (
            "NodeStatusUnknown",
            "Kubelet stopped posting node status.",
        )
        no_execute = next(t for t in node.spec.taints if t.effect == "NoExecute")
        assert no_execute.HasField("time_added")

        # Back: the lease is renewed and Ready=True posted; both taints go.
        await kubelet.renew()
        await kubelet.post_ready()

        async def recovered() -> bool:
            assert await _node(c, name) == ("True", set())
            return True

        async with anyio.create_task_group() as tg:
            tg.start_soon(kubelet.renew_for, GRACE + SLACK)
            await eventually(recovered, timeout=SLACK, interval=0.1)
            # and it stays so while the kubelet renews
            await anyio.sleep(GRACE + 2 * PERIOD)
            assert await _node(c, name) == ("True", set())
            tg.cancel_scope.cancel()

        events = await c.list(types_pb2.Event, "default")
        assert any(
            e.reason == "NodeNotReady" and e.involved_object.name == name for e in events.items
        )


async def test_a_bare_node_without_a_kubelet_is_left_alone(cluster: Cluster) -> None:
    name = unique_name("bare")
    async with Client(cluster.server, timeout=10.0) as c:
        await c.create(make_node(name).capacity(cpu="4").ready().obj())
        created = await c.get(types_pb2.Node, name)
        # A period-based wait is the point here: nothing may happen over several grace periods.
        await anyio.sleep(GRACE + 4 * PERIOD)
        node = await c.get(types_pb2.Node, name)
        assert node.metadata.resource_version == created.metadata.resource_version


async def test_pods_bound_to_missing_nodes_are_deleted_after_the_quarantine(
    cluster: Cluster,
) -> None:
    ghost = unique_name("ghost")
    real = unique_name("real")
    async with Client(cluster.server, timeout=10.0) as c:
        ns = await create_namespace(c, "podgc")
        kubelet = FakeKubelet(c, real)
        await kubelet.register()
        bound_at = 0.0
        for pod_name, node_name in (("orphan", ghost), ("kept", real), ("doomed", real)):
            await c.create(make_pod(pod_name).namespace(ns).obj())
            await c.bind(ns, pod_name, node_name)
            if pod_name == "orphan":
                # (the quarantine runs from when the pod GC sees it bound: the orphan's own
                # binding is the lower bound, not the last one)
                bound_at = time.monotonic()

        async def gone(pod_name: str) -> bool:
            try:
                await c.get(types_pb2.Pod, pod_name, ns)
            except NotFound:
                return True
            return False

        await eventually(lambda: gone("orphan"), timeout=QUARANTINE + SLACK, interval=0.1)
        assert time.monotonic() - bound_at >= QUARANTINE, "not before the quarantine"
        assert not await gone("kept"), "a pod on an existing node stays"

        # The node of the others is deleted: its pods go after the quarantine too, and a
        # terminating one among them with them.
        await c.delete(types_pb2.Pod, "doomed", ns, grace_period_seconds=600)
        doomed = await c.get(types_pb2.Pod, "doomed", ns)
        assert doomed.metadata.HasField("deletion_timestamp")
        await c.delete(types_pb2.Node, real)
        deleted_at = time.monotonic()
        await eventually(lambda: gone("kept"), timeout=QUARANTINE + SLACK, interval=0.1)
        await eventually(lambda: gone("doomed"), timeout=SLACK, interval=0.1)
        assert time.monotonic() - deleted_at >= QUARANTINE


async def _run_pod(c: Client, ns: str, name: str, node: str, tolerate_unreachable: int | None):
    """A pod bound to `node` whose status says Running and Ready, as its kubelet would write."""
    pod = make_pod(name).namespace(ns).node(node).obj()
    if tolerate_unreachable is not None:
        pod.spec.tolerations.add(
            key="node.kubernetes.io/unreachable",
            operator="Exists",
            effect="NoExecute",
            toleration_seconds=tolerate_unreachable,
        )
    created = await c.create(pod)
    created.status.phase = "Running"
    created.status.conditions.add(type="Ready", status="True")
    return await c.update_status(created)


def _condition(pod: types_pb2.Pod, type_: str) -> types_pb2.PodCondition | None:
    return next((cond for cond in pod.status.conditions if cond.type == type_), None)


async def test_pods_of_a_silent_node_are_marked_not_ready_and_evicted_after_their_toleration(
    cluster: Cluster,
) -> None:
    """MarkPodsNotReady, DefaultTolerationSeconds and the taint eviction controller: a pod
    tolerating unreachable for 1 s is evicted (DisruptionTarget DeletionByTaintManager, then a
    graceful delete), one with the apiserver's default (its flags: 302 s) is only marked not Ready."""
    name = unique_name("silent")
    async with Client(cluster.server, timeout=10.0) as c:
        ns = await create_namespace(c, "evict")
        kubelet = FakeKubelet(c, name)
        await kubelet.register()
        await _run_pod(c, ns, "short", name, tolerate_unreachable=1)
        default = await _run_pod(c, ns, "default", name, tolerate_unreachable=None)
        assert {(t.key, t.effect, t.toleration_seconds) for t in default.spec.tolerations} == {
            ("node.kubernetes.io/not-ready", "NoExecute", 301),  # the apiserver's flags
            ("node.kubernetes.io/unreachable", "NoExecute", 302),
        }
        silent_at = time.monotonic()

        async def evicted() -> types_pb2.Pod:
            pod = await c.get(types_pb2.Pod, "short", ns)
            assert pod.metadata.HasField("deletion_timestamp"), pod.status
            return pod

        short = await eventually(evicted, timeout=GRACE + PERIOD + 1 + SLACK, interval=0.1)
        assert time.monotonic() - silent_at >= GRACE + 1 - RENEW_INTERVAL
        cond = _condition(short, "DisruptionTarget")
        assert cond is not None
        assert (cond.status, cond.reason, cond.message) == (
            "True",
            "DeletionByTaintManager",
            "Taint manager: deleting due to NoExecute taint",
        )

        async def not_ready() -> bool:
            pod = await c.get(types_pb2.Pod, "default", ns)
            ready = _condition(pod, "Ready")
            assert ready is not None and ready.status == "False", pod.status
            assert not pod.metadata.HasField("deletion_timestamp")
            return True

        await eventually(not_ready, timeout=SLACK, interval=0.1)
        events = await c.list(types_pb2.Event, ns)
        reasons = {(e.involved_object.name, e.reason) for e in events.items}
        assert {("default", "NodeNotReady"), ("short", "TaintManagerEviction")} <= reasons


async def test_terminating_pods_on_an_out_of_service_node_are_force_deleted(
    cluster: Cluster,
) -> None:
    """gcTerminating: a pod stuck terminating on a node that is down (not Ready) goes once an
    operator taints the node out-of-service, long before its grace period ends."""
    name = unique_name("oos")
    async with Client(cluster.server, timeout=10.0) as c:
        ns = await create_namespace(c, "oos")
        node = make_node(name).capacity(cpu="4").obj()
        node.status.conditions.add(type="Ready", status="False", reason="KubeletNotReady")
        await c.create(node)
        await _run_pod(c, ns, "stuck", name, tolerate_unreachable=None)
        await c.delete(types_pb2.Pod, "stuck", ns, grace_period_seconds=600)
        # Nothing finishes it: its kubelet is down.
        await anyio.sleep(3 * PERIOD)
        assert (await c.get(types_pb2.Pod, "stuck", ns)).metadata.HasField("deletion_timestamp")
        node = await c.get(types_pb2.Node, name)
        node.spec.taints.add(key="node.kubernetes.io/out-of-service", effect="NoExecute")
        await c.update(node)

        async def gone() -> bool:
            try:
                await c.get(types_pb2.Pod, "stuck", ns)
            except NotFound:
                return True
            return False

        await eventually(gone, timeout=PERIOD + SLACK, interval=0.1)


async def test_terminated_pods_above_the_threshold_are_deleted_oldest_first(
    cluster: Cluster,
) -> None:
    """gcTerminated with --terminated-pod-gc-threshold 2: of four finished pods, the two
    created first go; running pods are not counted."""
    name = unique_name("done")
    async with Client(cluster.server, timeout=10.0) as c:
        ns = await create_namespace(c, "finished")
        await c.create(make_node(name).capacity(cpu="4").ready().obj())
        await _run_pod(c, ns, "running", name, tolerate_unreachable=None)
        names = [f"done-{i}" for i in range(4)]
        created = []
        for pod_name in names:
            created.append(await c.create(make_pod(pod_name).namespace(ns).node(name).obj()))
        for pod in created:
            pod.status.phase = "Succeeded"
            await c.update_status(pod)

        async def collected() -> bool:
            left = {p.metadata.name for p in (await c.list(types_pb2.Pod, ns)).items}
            assert left == {"running", "done-2", "done-3"}, left
            return True

        await eventually(collected, timeout=PERIOD + SLACK, interval=0.1)


async def test_separate_taint_eviction_controller_decides_whether_disabling_it_stops_evictions(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """SeparateTaintEvictionController (KEP-3902, 1.29-1.36): at emulated 1.28 the taint
    eviction belongs to the node lifecycle controller, so `--controllers=*,-taint-eviction-
    controller` still evicts a pod that does not tolerate its node's NoExecute taint; at 1.37
    that flag turns the eviction off. Its own cluster: bare tainted nodes, no kubelet."""
    with Cluster(tmp_path_factory.mktemp("separate-taint-eviction")) as c:
        c.start_etcd()
        c.start_apiserver()
        flags = ["--controllers", "*,-taint-eviction-controller"]
        async with Client(c.server, timeout=10.0) as client:
            ns = await create_namespace(client, "taint-eviction")

            async def tainted_node_with_pod(name: str) -> None:
                node = make_node(name).capacity(cpu="4", pods="10")
                await client.create(node.taint("example.com/evict", effect="NoExecute").obj())
                await client.create(make_pod(name).namespace(ns).node(name).obj())

            async def evicted(name: str) -> bool:
                pod = await client.get(types_pb2.Pod, name, ns)
                return pod.metadata.HasField("deletion_timestamp")

            await tainted_node_with_pod(unique_name("old"))
            old = c.start_controllermanager(
                name="cm-1-28", emulated_version="1.28", extra_args=flags
            )
            (old_pod,) = (await client.list(types_pb2.Pod, ns)).items
            await eventually(lambda: evicted(old_pod.metadata.name), timeout=SLACK)
            c.terminate(old.name)

            new_name = unique_name("new")
            c.start_controllermanager(name="cm-1-37", extra_args=flags)
            await tainted_node_with_pod(new_name)
            with anyio.move_on_after(3.0):
                while True:
                    assert not await evicted(new_name)
                    await anyio.sleep(0.2)
