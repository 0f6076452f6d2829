"""The node lifecycle controller, the taint eviction controller and the pod garbage collector
on real processes (etcd, apiserver, controller-manager) on the virtual clock, at upstream's
default timers: the node monitor's 5 s period and 50 s grace period, the pod GC's 20 s check
period and 40 s quarantine, DefaultTolerationSeconds. The clock holds (rate 0) and each test
moves it (`advance_clock`), so each timer is checked at its virtual instant: not a second
before, and done a period after. No kubelet runs: the test plays one, writing a Node with a
Ready condition and heartbeat, renewing its Lease in kube-node-lease, stamped with the
cluster's time. The last test runs on its own cluster, in real time (nothing there waits on a
timer)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import anyio
import anyio.to_thread
import pytest
from google.protobuf.timestamp_pb2 import Timestamp

from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.machinery.errors import NotFound
from kemu.machinery.virtual_time import ClockMode
from kemu.testing import Cluster, eventually, make_node, make_pod
from kemu.testing.cluster_time import START_SECONDS, advance_to, cluster_now
from kemu.testing.invariants import record_nodes
from kemu.testing.names import unique_name
from kemu.testing.namespaces import create_namespace

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

PERIOD = 5.0
"""--node-monitor-period's default."""
GRACE = 50.0
"""--node-monitor-grace-period's default (from 1.32)."""
GC_PERIOD = 20.0
"""The pod GC's check period (upstream's gcCheckPeriod)."""
QUARANTINE = 40.0
"""The pod GC's quarantine of a pod whose node is missing (upstream's quarantineTime)."""
RENEW_INTERVAL = 10.0
"""The kubelet's lease renew interval (a quarter of its 40 s lease duration)."""
MARGIN = 1.0
"""How far before a timer's instant nothing has happened yet, and after its period it has."""
NOT_READY_TOLERATION, UNREACHABLE_TOLERATION = 301, 302
TERMINATED_THRESHOLD = 2
NODE_LEASE_NAMESPACE = "kube-node-lease"
UNREACHABLE = {
    ("node.kubernetes.io/unreachable", "NoSchedule"),
    ("node.kubernetes.io/unreachable", "NoExecute"),
}
SLACK = 10.0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with Cluster(tmp_path_factory.mktemp("nodelifecycle"), clock=ClockMode.VIRTUAL) as c:
        c.start_etcd()
        # DefaultTolerationSeconds' flags, as upstream's apiserver has them (default 300 each).
        c.start_apiserver(
            extra_args=[
                "--default-not-ready-toleration-seconds", str(NOT_READY_TOLERATION),
                "--default-unreachable-toleration-seconds", str(UNREACHABLE_TOLERATION),
            ]
        )  # fmt: skip
        yield c


@pytest.fixture(scope="module")
async def c(cluster: Cluster) -> AsyncIterator[Client]:
    """A client of the module's cluster, whose clock holds from before the controller-manager
    starts: every test moves it itself."""
    async with Client(cluster.server, timeout=10.0) as client:
        await client.set_clock_rate(0)
        manager = cluster.start_controllermanager(
            extra_args=["--terminated-pod-gc-threshold", str(TERMINATED_THRESHOLD)],
            wait=False,
        )
        # its first lists pass its rate limiter's burst: time to start, then up and done
        await client.advance_clock(START_SECONDS)
        await anyio.to_thread.run_sync(manager.wait_ready)
        yield client


class FakeKubelet:
    """Writes what a kubelet writes for its node: the Node (Ready, heartbeat) and its Lease,
    stamped with the cluster's time. `renewed_at` is its last lease renewal's."""

    def __init__(self, client: Client, name: str) -> None:
        self.client = client
        self.name = name
        self.renewed_at = 0.0

    async def _stamp(self, *stamps: Timestamp) -> float:
        now = await cluster_now(self.client)
        for ts in stamps:
            ts.FromNanoseconds(round(now * 1e9))
        return now

    async def register(self) -> None:
        node = make_node(self.name).capacity(cpu="4", memory="8Gi", pods="110").obj()
        ready = node.status.conditions.add(type="Ready", status="True", reason="KubeletReady")
        await self._stamp(ready.last_heartbeat_time, ready.last_transition_time)
        await self.client.create(node)
        lease = types_pb2.Lease()
        lease.metadata.name = self.name
        lease.metadata.namespace = NODE_LEASE_NAMESPACE
        lease.spec.holder_identity = self.name
        lease.spec.lease_duration_seconds = 40
        self.renewed_at = await self._stamp(lease.spec.renew_time)
        await self.client.create(lease)

    async def renew(self) -> None:
        lease = await self.client.get(types_pb2.Lease, self.name, NODE_LEASE_NAMESPACE)
        self.renewed_at = await self._stamp(lease.spec.renew_time)
        await self.client.update(lease)

    async def renew_for(self, seconds: float) -> None:
        """Renews every RENEW_INTERVAL of virtual time for `seconds`, the clock moved along."""
        until = await cluster_now(self.client) + seconds
        while await cluster_now(self.client) < until:
            await self.renew()
            await self.client.advance_clock(RENEW_INTERVAL)

    async def post_ready(self) -> None:
        node = await self.client.get(types_pb2.Node, self.name)
        for cond in node.status.conditions:
            if cond.type == "Ready":
                if cond.status != "True":
                    await self._stamp(cond.last_transition_time)
                cond.status, cond.reason, cond.message = "True", "KubeletReady", ""
                await self._stamp(cond.last_heartbeat_time)
        await self.client.update_status(node)


async def _node(c: Client, name: str) -> tuple[str, set[tuple[str, str]]]:
    node = await c.get(types_pb2.Node, name)
    ready = next(cond.status for cond in node.status.conditions if cond.type == "Ready")
    taints = {
        (t.key, t.effect) for t in node.spec.taints if t.key.startswith("node.kubernetes.io/")
    }
    return ready, taints


async def _gone(c: Client, name: str, ns: str) -> bool:
    try:
        await c.get(types_pb2.Pod, name, ns)
    except NotFound:
        return True
    return False


async def test_a_silent_node_goes_unknown_and_tainted_and_recovers(c: Client) -> None:
    name = unique_name("node")
    kubelet = FakeKubelet(c, name)
    await kubelet.register()

    # Renewing for longer than the grace period keeps it Ready and untainted.
    await kubelet.renew_for(GRACE + 2 * PERIOD)
    assert await _node(c, name) == ("True", set())

    # Silent: Ready up to the grace period after its last renewal, Unknown with both
    # unreachable taints a monitor period later.
    await advance_to(c, kubelet.renewed_at + GRACE - MARGIN)
    assert await _node(c, name) == ("True", set()), "not before the grace period"
    await advance_to(c, kubelet.renewed_at + GRACE + PERIOD + MARGIN)
    assert await _node(c, name) == ("Unknown", UNREACHABLE)
    node = await c.get(types_pb2.Node, name)
    ready = next(cond for cond in node.status.conditions if cond.type == "Ready")
    assert (ready.reason, ready.message) == (
        "NodeStatusUnknown",
        "Kubelet stopped posting node status.",
    )
    no_execute = next(t for t in node.spec.taints if t.effect == "NoExecute")
    tainted_at = no_execute.time_added.ToNanoseconds() / 1e9
    assert kubelet.renewed_at + GRACE < tainted_at <= kubelet.renewed_at + GRACE + PERIOD

    # Back: the lease is renewed and Ready=True posted; both taints go, at once.
    await kubelet.renew()
    await kubelet.post_ready()
    await c.advance_clock(0)
    assert await _node(c, name) == ("True", set())

    # and it stays so while the kubelet renews, over two grace periods (every version).
    async with record_nodes(c) as nodes:
        await kubelet.renew_for(2 * GRACE)
        assert await _node(c, name) == ("True", set())
    seen = {(_ready_of(v.node), len(v.node.spec.taints)) for v in nodes.by_name()[name]}
    assert seen == {("True", 0)}, seen

    events = await c.list(types_pb2.Event, "default")
    assert any(e.reason == "NodeNotReady" and e.involved_object.name == name for e in events.items)


def _ready_of(node: types_pb2.Node) -> str:
    return next((cond.status for cond in node.status.conditions if cond.type == "Ready"), "")


async def test_a_bare_node_without_a_kubelet_is_left_alone(c: Client) -> None:
    name = unique_name("bare")
    await c.create(make_node(name).capacity(cpu="4").ready().obj())
    await c.advance_clock(0)  # the node IPAM controller's podCIDR, the one write it gets
    created = await c.get(types_pb2.Node, name)
    assert created.spec.pod_cidr
    # Several grace periods of virtual time: nothing happens to a node without a lease.
    await c.advance_clock(3 * GRACE)
    node = await c.get(types_pb2.Node, name)
    assert node.metadata.resource_version == created.metadata.resource_version


async def test_pods_bound_to_missing_nodes_are_deleted_after_the_quarantine(c: Client) -> None:
    ghost = unique_name("ghost")
    real = unique_name("real")
    ns = await create_namespace(c, "podgc")
    kubelet = FakeKubelet(c, real)
    await kubelet.register()
    for pod_name, node_name in (("orphan", ghost), ("kept", real), ("doomed", real)):
        await c.create(make_pod(pod_name).namespace(ns).obj())
        await c.bind(ns, pod_name, node_name)
    bound_at = await cluster_now(c)

    # The orphan is quarantined from the first check that sees its node missing, and
    # deleted at the first check after the quarantine.
    await advance_to(c, bound_at + QUARANTINE - MARGIN)
    assert not await _gone(c, "orphan", ns), "not before the quarantine"
    await advance_to(c, bound_at + QUARANTINE + 2 * GC_PERIOD + MARGIN)
    assert await _gone(c, "orphan", ns)
    assert not await _gone(c, "kept", ns), "a pod on an existing node stays"

    # The node of the others is deleted: its pods go after the quarantine too, and a
    # terminating one among them with them.
    await c.delete(types_pb2.Pod, "doomed", ns, grace_period_seconds=600)
    doomed = await c.get(types_pb2.Pod, "doomed", ns)
    assert doomed.metadata.HasField("deletion_timestamp")
    await c.delete(types_pb2.Node, real)
    deleted_at = await cluster_now(c)
    await advance_to(c, deleted_at + QUARANTINE - MARGIN)
    assert not await _gone(c, "kept", ns), "not before the quarantine"
    await advance_to(c, deleted_at + QUARANTINE + 2 * GC_PERIOD + MARGIN)
    assert await _gone(c, "kept", ns)
    assert await _gone(c, "doomed", ns)


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
    c: Client,
) -> None:
    """MarkPodsNotReady, DefaultTolerationSeconds and the taint eviction controller: a pod
    tolerating unreachable for 1 s is evicted 1 s after the taint (DisruptionTarget
    DeletionByTaintManager, then a graceful delete); one with the apiserver's default (its
    flags: 302 s) is marked not Ready with the node, and evicted 302 s after the taint."""
    name = unique_name("silent")
    ns = await create_namespace(c, "evict")
    kubelet = FakeKubelet(c, name)
    await kubelet.register()
    await _run_pod(c, ns, "short", name, tolerate_unreachable=1)
    default = await _run_pod(c, ns, "default", name, tolerate_unreachable=None)
    assert {(t.key, t.effect, t.toleration_seconds) for t in default.spec.tolerations} == {
        ("node.kubernetes.io/not-ready", "NoExecute", NOT_READY_TOLERATION),
        ("node.kubernetes.io/unreachable", "NoExecute", UNREACHABLE_TOLERATION),
    }

    async def evicted(pod_name: str) -> types_pb2.Pod | None:
        pod = await c.get(types_pb2.Pod, pod_name, ns)
        return pod if pod.metadata.HasField("deletion_timestamp") else None

    await advance_to(c, kubelet.renewed_at + GRACE - MARGIN)
    assert await evicted("short") is None, "not before the grace period"
    await advance_to(c, kubelet.renewed_at + GRACE + PERIOD + 1 + MARGIN)
    short = await evicted("short")
    assert short is not None, short
    cond = _condition(short, "DisruptionTarget")
    assert cond is not None
    assert (cond.status, cond.reason, cond.message) == (
        "True",
        "DeletionByTaintManager",
        "Taint manager: deleting due to NoExecute taint",
    )
    node = await c.get(types_pb2.Node, name)
    no_execute = next(t for t in node.spec.taints if t.effect == "NoExecute")
    tainted_at = no_execute.time_added.ToNanoseconds() / 1e9
    assert short.metadata.deletion_timestamp.ToNanoseconds() / 1e9 >= tainted_at + 1

    pod = await c.get(types_pb2.Pod, "default", ns)
    ready = _condition(pod, "Ready")
    assert ready is not None and ready.status == "False", pod.status
    await advance_to(c, tainted_at + UNREACHABLE_TOLERATION - MARGIN)
    assert await evicted("default") is None, "not before its toleration"
    await advance_to(c, tainted_at + UNREACHABLE_TOLERATION + MARGIN)
    assert await evicted("default") is not None

    events = await c.list(types_pb2.Event, ns)
    reasons = {(e.involved_object.name, e.reason) for e in events.items}
    assert {
        ("default", "NodeNotReady"),
        ("short", "TaintManagerEviction"),
        ("default", "TaintManagerEviction"),
    } <= reasons


async def test_terminating_pods_on_an_out_of_service_node_are_force_deleted(c: Client) -> None:
    """gcTerminating: a pod stuck terminating on a node that is down (not Ready) goes once an
    operator taints the node out-of-service, long before its grace period ends."""
    name = unique_name("oos")
    ns = await create_namespace(c, "oos")
    node = make_node(name).capacity(cpu="4").obj()
    node.status.conditions.add(type="Ready", status="False", reason="KubeletNotReady")
    await c.create(node)
    await _run_pod(c, ns, "stuck", name, tolerate_unreachable=None)
    await c.delete(types_pb2.Pod, "stuck", ns, grace_period_seconds=600)
    # Nothing finishes it over several checks: its kubelet is down.
    await c.advance_clock(3 * GC_PERIOD)
    assert (await c.get(types_pb2.Pod, "stuck", ns)).metadata.HasField("deletion_timestamp")
    node = await c.get(types_pb2.Node, name)
    node.spec.taints.add(key="node.kubernetes.io/out-of-service", effect="NoExecute")
    await c.update(node)
    await c.advance_clock(GC_PERIOD + MARGIN)
    assert await _gone(c, "stuck", ns)


async def test_terminated_pods_above_the_threshold_are_deleted_oldest_first(c: Client) -> None:
    """gcTerminated with --terminated-pod-gc-threshold 2: of four finished pods, created a
    second apart, the two created first go at the next check; running pods are not counted."""
    name = unique_name("done")
    ns = await create_namespace(c, "finished")
    await c.create(make_node(name).capacity(cpu="4").ready().obj())
    await _run_pod(c, ns, "running", name, tolerate_unreachable=None)
    created = []
    for i in range(4):
        created.append(await c.create(make_pod(f"done-{i}").namespace(ns).node(name).obj()))
        await c.advance_clock(1)
    for pod in created:
        pod.status.phase = "Succeeded"
        await c.update_status(pod)
    await c.advance_clock(GC_PERIOD + MARGIN)
    left = {p.metadata.name for p in (await c.list(types_pb2.Pod, ns)).items}
    assert left == {"running", "done-2", "done-3"}, left


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
