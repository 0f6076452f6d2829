"""The kubelet on real processes: etcd, apiserver, scheduler and kubelets."""

from __future__ import annotations

import functools
import time
from collections.abc import Iterator

import pytest

from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.machinery.errors import Invalid, NotFound
from kemu.testing import Cluster, eventually, make_pod
from kemu.testing.names import unique_name
from kemu.testing.namespaces import create_namespace

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

SHUTDOWN = "kubelet.kemu.io/shutdown-duration"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root = tmp_path_factory.mktemp("kubelet")
    with Cluster(root) as c:
        c.start_etcd()
        c.start_apiserver()
        c.start_scheduler()
        c.start_kubelet(
            "n1",
            capacity={"cpu": "4", "memory": "8Gi", "pods": "110"},
            extra_args=[
                "--root-dir", str(root / "kubelet-n1"),
                "--node-labels", "kemu.io/test=kubelet",
                "--system-reserved", "cpu=100m",
                "--pod-startup-delay", "200ms",
            ],
        )  # fmt: skip
        yield c


async def _pod(c: Client, ns: str, name: str) -> types_pb2.Pod | None:
    try:
        return await c.get(types_pb2.Pod, name, ns)
    except NotFound:
        return None


async def _running(c: Client, ns: str, name: str) -> types_pb2.Pod:
    pod = await _pod(c, ns, name)
    assert pod is not None and pod.status.phase == "Running", pod and pod.status
    return pod


async def _failed(c: Client, ns: str, name: str) -> types_pb2.Pod:
    pod = await c.get(types_pb2.Pod, name, ns)
    assert pod.status.phase == "Failed", pod.status
    return pod


async def _gone_after(c: Client, ns: str, name: str, within: float) -> float:
    start = time.monotonic()

    async def gone() -> bool:
        return await _pod(c, ns, name) is None

    await eventually(gone, timeout=within, interval=0.05)
    return time.monotonic() - start


async def test_the_kubelet_registers_a_ready_node_and_renews_its_lease(cluster):
    async with Client(cluster.server, timeout=10.0) as c:
        node = await c.get(types_pb2.Node, "n1")
        assert node.metadata.labels["kubernetes.io/hostname"] == "n1"
        assert node.metadata.labels["kemu.io/test"] == "kubelet"
        assert dict(node.status.allocatable)["cpu"] == "3900m"
        assert node.status.node_info.kubelet_version == "v1.37.0"
        ready = next(cond for cond in node.status.conditions if cond.type == "Ready")
        assert (ready.status, ready.reason) == ("True", "KubeletReady")
        lease = await c.get(types_pb2.Lease, "n1", "kube-node-lease")
        assert lease.spec.holder_identity == "n1"
        assert lease.spec.lease_duration_seconds == 40


async def test_a_scheduled_pod_becomes_running(cluster):
    async with Client(cluster.server, timeout=10.0) as c:
        ns = await create_namespace(c, "run")
        await c.create(
            make_pod("web").namespace(ns).req(cpu="500m", memory="256Mi")
            .node_selector({"kemu.io/test": "kubelet"}).obj()
        )  # fmt: skip
        pod = await eventually(lambda: _running(c, ns, "web"), timeout=20)
        assert pod.spec.node_name == "n1"
        assert pod.status.HasField("start_time")
        (cs,) = pod.status.container_statuses
        assert cs.ready and cs.state.HasField("running")
        assert dict(cs.allocated_resources) == {"cpu": "500m", "memory": "256Mi"}
        types = {cond.type: cond.status for cond in pod.status.conditions}
        assert types["Ready"] == types["PodScheduled"] == "True"


async def test_a_pod_that_does_not_fit_fails_with_out_of_cpu(cluster):
    async with Client(cluster.server, timeout=10.0) as c:
        ns = await create_namespace(c, "big")
        await c.create(make_pod("big").namespace(ns).req(cpu="64").node("n1").obj())

        pod = await eventually(functools.partial(_failed, c, ns, "big"), timeout=10)
        assert pod.status.reason == "OutOfcpu"
        assert pod.status.message.startswith(
            "Pod was rejected: Node didn't have enough resource: cpu, requested: 64000, used: "
        )
        assert pod.status.message.endswith(", capacity: 3900")


async def test_the_kubelet_preempts_lower_priority_pods_to_admit_a_critical_pod(cluster):
    """Upstream's CriticalPodAdmissionHandler (pkg/kubelet/preemption): a
    system-cluster-critical pod bound to a full node is not rejected; the kubelet kills the
    Burstable pod whose cpu it needs (Failed, Preempting, DisruptionTarget
    TerminationByKubelet, a Warning event) and runs it. The BestEffort pod, which frees no
    cpu, stays. A node of its own, tainted so that the scheduler leaves it alone."""
    cluster.start_kubelet(
        "crit",
        capacity={"cpu": "2", "memory": "4Gi", "pods": "10"},
        extra_args=["--register-with-taints", "kemu.io/test=crit:NoSchedule"],
    )
    async with Client(cluster.server, timeout=10.0) as c:
        ns = await create_namespace(c, "critical")
        await c.create(make_pod("low").namespace(ns).node("crit").req(cpu="1500m").grace(1).obj())
        await c.create(make_pod("best-effort").namespace(ns).node("crit").obj())
        for name in ("low", "best-effort"):
            await eventually(functools.partial(_running, c, ns, name), timeout=10)
        critical = make_pod("critical").namespace(ns).node("crit").req(cpu="1")
        await c.create(critical.priority_class("system-cluster-critical").obj())
        await eventually(functools.partial(_running, c, ns, "critical"), timeout=10)

        low = await eventually(functools.partial(_failed, c, ns, "low"), timeout=10)
        assert (low.status.reason, low.status.message) == (
            "Preempting",
            "Preempted in order to admit critical pod",
        )
        target = next(x for x in low.status.conditions if x.type == "DisruptionTarget")
        assert (target.status, target.reason, target.message) == (
            "True",
            "TerminationByKubelet",
            "Pod was preempted by Kubelet to accommodate a critical pod.",
        )
        assert not low.metadata.HasField("deletion_timestamp")  # killed, not deleted
        assert (await _running(c, ns, "best-effort")).status.phase == "Running"
        events = (await c.list(types_pb2.Event, ns)).items
        assert [
            (e.involved_object.name, e.type, e.message) for e in events if e.reason == "Preempting"
        ] == [("low", "Warning", "Preempted in order to admit critical pod")]


async def test_the_kubelet_admits_a_pod_by_its_pod_level_requests(cluster):
    """KEP-2837 (PodLevelResources on from 1.34): the kubelet's predicateAdmitHandler counts
    a pod as the scheduler's NodeInfo does, its spec.resources requests replacing the
    containers' sum: a pod bound to the node (spec.nodeName, no scheduler) asking 64 cpu at
    pod level and 100m in its container is rejected OutOfcpu, requested 64000."""
    async with Client(cluster.server, timeout=10.0) as c:
        ns = await create_namespace(c, "pod-level")
        big = make_pod("big").namespace(ns).req(cpu="100m").pod_req(cpu="64").node("n1")
        await c.create(big.obj())

        pod = await eventually(functools.partial(_failed, c, ns, "big"), timeout=10)
        assert pod.status.reason == "OutOfcpu"
        assert pod.status.message.startswith(
            "Pod was rejected: Node didn't have enough resource: cpu, requested: 64000, used: "
        )


async def test_graceful_termination_follows_shutdown_and_grace_periods(cluster):
    """S-KL-TERM-1: an ordinary pod's containers exit on SIGTERM at once (a pause or nginx
    container does within a second): deleted with its 30 s grace period, it is gone in about
    a second. The shutdown annotation gives a container a shutdown time of its own, or
    `never` (it ignores SIGTERM: killed at the end of the grace period)."""
    async with Client(cluster.server, timeout=10.0) as c:
        ns = await create_namespace(c, "term")
        await c.create(make_pod("ordinary").namespace(ns).node("n1").grace(30).obj())
        await c.create(
            make_pod("quick").namespace(ns).node("n1").grace(20).annotation(SHUTDOWN, "2s").obj()
        )
        await c.create(
            make_pod("stubborn").namespace(ns).node("n1").grace(3).annotation(SHUTDOWN, "30s").obj()
        )
        forced = make_pod("forced").namespace(ns).node("n1").grace(30)
        await c.create(forced.annotation(SHUTDOWN, "never").obj())
        for name in ("ordinary", "quick", "stubborn", "forced"):
            await eventually(functools.partial(_running, c, ns, name), timeout=10)

        await c.delete(types_pb2.Pod, "ordinary", ns)
        took = await _gone_after(c, ns, "ordinary", within=10)
        assert took <= 2, f"ordinary went after {took:.2f}s"

        await c.delete(types_pb2.Pod, "quick", ns)
        took = await _gone_after(c, ns, "quick", within=10)
        assert 1.5 <= took <= 5, f"quick went after {took:.2f}s"

        await c.delete(types_pb2.Pod, "stubborn", ns)
        took = await _gone_after(c, ns, "stubborn", within=10)
        assert 2.5 <= took <= 6, f"stubborn went after {took:.2f}s"

        await c.delete(types_pb2.Pod, "forced", ns)
        pod = await c.get(types_pb2.Pod, "forced", ns)
        assert pod.metadata.HasField("deletion_timestamp")
        await c.delete(types_pb2.Pod, "forced", ns, grace_period_seconds=0)
        took = await _gone_after(c, ns, "forced", within=5)
        assert took <= 1


async def test_a_restarted_kubelet_keeps_running_pods_and_finishes_a_terminating_one(
    cluster, tmp_path
):
    node = unique_name("restart")
    cluster.start_kubelet(
        node,
        capacity={"cpu": "2", "memory": "4Gi"},
        extra_args=["--root-dir", str(tmp_path), "--pod-startup-delay", "100ms"],
    )
    async with Client(cluster.server, timeout=10.0) as c:
        ns = await create_namespace(c, "restart")
        await c.create(make_pod("keeps").namespace(ns).node(node).req(cpu="1").obj())
        await c.create(
            make_pod("ends").namespace(ns).node(node).req(cpu="1").grace(30)
            .annotation(SHUTDOWN, "4s").obj()
        )  # fmt: skip
        before = await eventually(lambda: _running(c, ns, "keeps"), timeout=10)
        await eventually(lambda: _running(c, ns, "ends"), timeout=10)
        await c.delete(types_pb2.Pod, "ends", ns)
        deleted_at = time.monotonic()

        cluster.kill(f"kubelet-{node}")
        cluster.restart(f"kubelet-{node}")

        await _gone_after(c, ns, "ends", within=15)
        took = time.monotonic() - deleted_at
        assert 3.5 <= took <= 10, f"the terminating pod went after {took:.2f}s"
        after = await _running(c, ns, "keeps")
        assert after.status.start_time == before.status.start_time
        assert after.status.container_statuses == before.status.container_statuses
        # Its room is still taken: a pod that needs it is rejected, as before the restart.
        await c.create(make_pod("late").namespace(ns).node(node).req(cpu="1500m").obj())

        async def rejected() -> bool:
            pod = await c.get(types_pb2.Pod, "late", ns)
            assert pod.status.reason == "OutOfcpu", pod.status
            return True

        await eventually(rejected, timeout=10)
        assert (await _running(c, ns, "keeps")).metadata.uid == before.metadata.uid


async def test_a_hollow_kubelet_runs_several_nodes(cluster):
    prefix = unique_name("hollow")
    cluster.start_component(
        "kubelet",
        f"kubelet-{prefix}",
        [
            "--server", cluster.server,
            "--nodes", "5",
            "--node-name-prefix", prefix,
            "--capacity", "cpu=1,memory=1Gi,pods=10",
            "--root-dir", "",
            "--node-lease-renew-interval", "2s",
        ],
    )  # fmt: skip
    async with Client(cluster.server, timeout=10.0) as c:
        ns = await create_namespace(c, "hollow")
        names = [f"{prefix}-{i}" for i in range(5)]
        for name in names:
            node = await c.get(types_pb2.Node, name)
            assert any(x.type == "Ready" and x.status == "True" for x in node.status.conditions)
        for i, name in enumerate(names):
            await c.create(make_pod(f"p{i}").namespace(ns).node(name).req(cpu="1").obj())
        for i in range(5):
            await eventually(functools.partial(_running, c, ns, f"p{i}"), timeout=10)
        first = {
            name: (
                await c.get(types_pb2.Lease, name, "kube-node-lease")
            ).spec.renew_time.ToMicroseconds()
            for name in names
        }

        async def all_renewed() -> bool:
            for name in names:
                lease = await c.get(types_pb2.Lease, name, "kube-node-lease")
                assert lease.spec.renew_time.ToMicroseconds() > first[name], name
            return True

        await eventually(all_renewed, timeout=5)


def _resize_conditions(pod: types_pb2.Pod) -> dict[str, types_pb2.PodCondition]:
    return {
        cond.type: cond
        for cond in pod.status.conditions
        if cond.type in ("PodResizePending", "PodResizeInProgress")
    }


async def _resize(c: Client, ns: str, name: str, cpu: str) -> types_pb2.Pod:
    pod = await c.get(types_pb2.Pod, name, ns)
    pod.spec.containers[0].resources.requests["cpu"] = cpu
    return await c.resize(pod)


@pytest.mark.parametrize("kep_5836", [False, True], ids=["gate-off", "gate-on"])
async def test_a_critical_pods_resize_preempts_on_the_kubelet_unless_kep_5836_is_on(
    cluster, kep_5836
):
    """Upstream's canResizePod runs the admit handlers, the critical-pod preemption among
    them: a system-cluster-critical pod's resize that does not fit kills the lower-priority
    pod it needs the room of and is accepted. With InPlacePodVerticalScalingSchedulerPreemption
    (KEP-5836) the kubelet preempts for no resize: it stays Deferred for the scheduler."""
    node = unique_name("crit-resize")
    cluster.start_kubelet(
        node,
        capacity={"cpu": "2", "memory": "4Gi", "pods": "10"},
        feature_gates={"InPlacePodVerticalScalingSchedulerPreemption": kep_5836},
        extra_args=[
            "--register-with-taints", "kemu.io/test=crit:NoSchedule",
            "--pod-startup-delay", "100ms",
            "--resize-actuation-delay", "100ms",
        ],
    )  # fmt: skip
    async with Client(cluster.server, timeout=10.0) as c:
        ns = await create_namespace(c, "crit-resize")
        await c.create(make_pod("low").namespace(ns).node(node).req(cpu="1").grace(1).obj())
        critical = make_pod("critical").namespace(ns).node(node).req(cpu="500m")
        await c.create(critical.priority_class("system-cluster-critical").obj())
        for name in ("low", "critical"):
            await eventually(functools.partial(_running, c, ns, name), timeout=10)
        await _resize(c, ns, "critical", "1500m")

        async def decided() -> types_pb2.Pod:
            pod = await c.get(types_pb2.Pod, "critical", ns)
            (cs,) = pod.status.container_statuses
            if kep_5836:
                pending = _resize_conditions(pod).get("PodResizePending")
                assert pending is not None and pending.reason == "Deferred", pod.status
            else:
                assert cs.resources.requests["cpu"] == "1500m", cs
            return pod

        await eventually(decided, timeout=10, interval=0.05)

        async def low_is(phase: str, reason: str) -> bool:
            low = await c.get(types_pb2.Pod, "low", ns)
            assert (low.status.phase, low.status.reason) == (phase, reason), low.status
            return True

        # Gate on: Deferred, not accepted, is the kubelet's whole decision (a preemption
        # would have accepted it); low keeps running.
        await eventually(
            lambda: low_is("Running", "") if kep_5836 else low_is("Failed", "Preempting"),
            timeout=10,
        )


async def test_in_place_resize_is_allocated_then_actuated_or_deferred_until_room_appears(
    cluster, tmp_path
):
    node = unique_name("resize")
    cluster.start_kubelet(
        node,
        capacity={"cpu": "2", "memory": "4Gi"},
        extra_args=[
            "--root-dir", str(tmp_path),
            "--pod-startup-delay", "100ms",
            "--resize-actuation-delay", "1s",
        ],
    )  # fmt: skip
    async with Client(cluster.server, timeout=10.0) as c:
        ns = await create_namespace(c, "resize")
        for name in ("a", "b"):
            await c.create(make_pod(name).namespace(ns).node(node).req(cpu="500m").obj())
        for name in ("a", "b"):
            await eventually(functools.partial(_running, c, ns, name), timeout=10)

        # A resize that fits: allocated at once, in progress, then actuated.
        resized = await _resize(c, ns, "a", "1")

        async def in_progress() -> types_pb2.Pod:
            pod = await c.get(types_pb2.Pod, "a", ns)
            (cs,) = pod.status.container_statuses
            assert cs.allocated_resources["cpu"] == "1", cs
            assert cs.resources.requests["cpu"] == "500m", cs
            conds = _resize_conditions(pod)
            assert set(conds) == {"PodResizeInProgress"}, conds
            assert conds["PodResizeInProgress"].observed_generation == resized.metadata.generation
            return pod

        await eventually(in_progress, timeout=5, interval=0.05)

        async def actuated() -> types_pb2.Pod:
            pod = await c.get(types_pb2.Pod, "a", ns)
            (cs,) = pod.status.container_statuses
            assert cs.resources.requests["cpu"] == cs.allocated_resources["cpu"] == "1", cs
            assert _resize_conditions(pod) == {}
            return pod

        await eventually(actuated, timeout=5, interval=0.05)

        # b wants 1500m next to a's 1 cpu on a 2-cpu node: Deferred.
        await _resize(c, ns, "b", "1500m")

        async def deferred() -> types_pb2.Pod:
            pod = await c.get(types_pb2.Pod, "b", ns)
            cond = _resize_conditions(pod).get("PodResizePending")
            assert cond is not None and cond.reason == "Deferred", pod.status.conditions
            assert cond.message == (
                "Node didn't have enough resource: cpu, requested: 1500, used: 1000, capacity: 2000"
            )
            assert pod.status.container_statuses[0].allocated_resources["cpu"] == "500m"
            return pod

        await eventually(deferred, timeout=5, interval=0.05)

        # A new pod may not take the room a's resize got (1 + 500m + 1 > 2).
        await c.create(make_pod("late").namespace(ns).node(node).req(cpu="1").obj())

        async def rejected() -> bool:
            pod = await c.get(types_pb2.Pod, "late", ns)
            assert pod.status.reason == "OutOfcpu", pod.status
            return True

        await eventually(rejected, timeout=10)

        # Deleting a makes room: b's resize is accepted without waiting for a periodic retry.
        await c.delete(types_pb2.Pod, "a", ns, grace_period_seconds=0)

        async def b_resized() -> bool:
            pod = await c.get(types_pb2.Pod, "b", ns)
            (cs,) = pod.status.container_statuses
            assert cs.allocated_resources["cpu"] == cs.resources.requests["cpu"] == "1500m", cs
            assert _resize_conditions(pod) == {}
            return True

        await eventually(b_resized, timeout=5, interval=0.05)


async def test_a_resize_in_progress_survives_a_kubelet_kill(cluster, tmp_path):
    node = unique_name("resize-kill")
    cluster.start_kubelet(
        node,
        capacity={"cpu": "2", "memory": "4Gi"},
        extra_args=[
            "--root-dir", str(tmp_path),
            "--pod-startup-delay", "100ms",
            "--resize-actuation-delay", "3s",
        ],
    )  # fmt: skip
    async with Client(cluster.server, timeout=10.0) as c:
        ns = await create_namespace(c, "resize-kill")
        await c.create(make_pod("a").namespace(ns).node(node).req(cpu="500m").obj())
        before = await eventually(lambda: _running(c, ns, "a"), timeout=10)
        await _resize(c, ns, "a", "1500m")

        async def allocated() -> bool:
            pod = await c.get(types_pb2.Pod, "a", ns)
            assert pod.status.container_statuses[0].allocated_resources["cpu"] == "1500m"
            assert "PodResizeInProgress" in _resize_conditions(pod)
            return True

        await eventually(allocated, timeout=5, interval=0.05)
        cluster.kill(f"kubelet-{node}")
        cluster.restart(f"kubelet-{node}")

        async def actuated() -> types_pb2.Pod:
            pod = await c.get(types_pb2.Pod, "a", ns)
            (cs,) = pod.status.container_statuses
            assert cs.allocated_resources["cpu"] == cs.resources.requests["cpu"] == "1500m", cs
            assert _resize_conditions(pod) == {}
            return pod

        after = await eventually(actuated, timeout=10, interval=0.05)
        assert after.status.start_time == before.status.start_time
        # The room the resize took is still taken after the restart.
        await c.create(make_pod("late").namespace(ns).node(node).req(cpu="1").obj())

        async def rejected() -> bool:
            pod = await c.get(types_pb2.Pod, "late", ns)
            assert pod.status.reason == "OutOfcpu", pod.status
            return True

        await eventually(rejected, timeout=10)


async def test_observed_generation_tells_when_the_kubelet_has_seen_a_resize(cluster):
    """PodObservedGenerationTracking (GA in 1.35): the kubelet reports the generation it
    synced in status.observedGeneration and on the conditions it owns."""
    async with Client(cluster.server, timeout=10.0) as c:
        ns = await create_namespace(c, "observed")
        await c.create(make_pod("web").namespace(ns).node("n1").req(cpu="100m").obj())
        pod = await eventually(functools.partial(_running, c, ns, "web"), timeout=10)
        assert (pod.metadata.generation, pod.status.observed_generation) == (1, 1)
        resized = await _resize(c, ns, "web", "200m")
        assert resized.metadata.generation == 2

        async def observed() -> types_pb2.Pod:
            pod = await c.get(types_pb2.Pod, "web", ns)
            assert pod.status.observed_generation == 2, pod.status
            return pod

        pod = await eventually(observed, timeout=5, interval=0.05)
        owned = {cond.type: cond.observed_generation for cond in pod.status.conditions}
        assert owned["Ready"] == owned["ContainersReady"] == 2, owned


async def test_a_restart_container_resize_policy_restarts_the_container(cluster):
    """computePodResizeAction: a cpu resize of a container whose resizePolicy for cpu is
    RestartContainer restarts it (restartCount 1); its memory policy NotRequired does not."""
    async with Client(cluster.server, timeout=10.0) as c:
        ns = await create_namespace(c, "restart")
        pod = make_pod("r").namespace(ns).node("n1").req(cpu="100m", memory="64Mi").obj()
        pod.spec.containers[0].resize_policy.add(
            resource_name="cpu", restart_policy="RestartContainer"
        )
        pod.spec.containers[0].resize_policy.add(
            resource_name="memory", restart_policy="NotRequired"
        )
        await c.create(pod)
        await eventually(functools.partial(_running, c, ns, "r"), timeout=10)
        await _resize(c, ns, "r", "200m")

        async def restarted() -> types_pb2.ContainerStatus:
            (cs,) = (await c.get(types_pb2.Pod, "r", ns)).status.container_statuses
            assert cs.restart_count == 1 and cs.resources.requests["cpu"] == "200m", cs
            return cs

        await eventually(restarted, timeout=5, interval=0.05)
        current = await c.get(types_pb2.Pod, "r", ns)
        current.spec.containers[0].resources.limits["memory"] = "128Mi"
        current.spec.containers[0].resources.requests["memory"] = "128Mi"
        await c.resize(current)

        async def resized_in_place() -> bool:
            (cs,) = (await c.get(types_pb2.Pod, "r", ns)).status.container_statuses
            assert cs.resources.limits["memory"] == "128Mi", cs
            assert cs.restart_count == 1, cs
            return True

        await eventually(resized_in_place, timeout=5, interval=0.05)


@pytest.mark.skew
async def test_skew_a_kubelet_without_in_place_resize_gets_no_resizes(tmp_path):
    """KEP-1287's skew rule against a 1.37 apiserver: a kubelet emulating 1.26 (no such
    feature) or 1.34 with InPlacePodVerticalScaling off reports no container resources, so
    resizing its running pods is refused with upstream's 422; a 1.37 kubelet's are resized."""
    kubelets = {
        "old": ("1.26", None),
        "off": ("1.34", {"InPlacePodVerticalScaling": False}),
        "new": (None, None),
    }
    with Cluster(tmp_path) as cl:
        cl.start_etcd()
        cl.start_apiserver()
        for name, (version, gates) in kubelets.items():
            cl.start_kubelet(
                name,
                emulated_version=version,
                feature_gates=gates,
                extra_args=["--root-dir", str(tmp_path / name), "--pod-startup-delay", "100ms"],
            )
        async with Client(cl.server, timeout=10.0) as c:
            ns = await create_namespace(c, "skew")
            for name in kubelets:
                await c.create(make_pod(name).namespace(ns).node(name).req(cpu="100m").obj())
            for name in kubelets:
                pod = await eventually(functools.partial(_running, c, ns, name), timeout=15)
                (cs,) = pod.status.container_statuses
                assert cs.HasField("resources") is (name == "new"), (name, cs)
            for name in ("old", "off"):
                with pytest.raises(Invalid) as e:
                    await _resize(c, ns, name, "200m")
                assert "Pod running on node without support for resize" in str(e.value)
            assert (await _resize(c, ns, "new", "200m")).metadata.generation == 2


@pytest.mark.skew
async def test_skew_a_kubelet_without_pod_level_resources_refuses_a_pod_that_sets_them(tmp_path):
    """A 1.37 apiserver keeps spec.resources; a kubelet emulating 1.33 (PodLevelResources
    alpha, off) refuses such a pod at admission (upstream's podFeaturesAdmitHandler:
    PodLevelResourcesNotSupported) and runs one without it."""
    with Cluster(tmp_path) as cl:
        cl.start_etcd()
        cl.start_apiserver()
        cl.start_kubelet(
            "old",
            emulated_version="1.33",
            extra_args=["--root-dir", str(tmp_path / "old"), "--pod-startup-delay", "100ms"],
        )
        async with Client(cl.server, timeout=10.0) as c:
            ns = await create_namespace(c, "skew-pod-level")
            with_pod_level = make_pod("pl").namespace(ns).node("old").req(cpu="100m")
            await c.create(with_pod_level.pod_req(cpu="200m").obj())
            await c.create(make_pod("plain").namespace(ns).node("old").req(cpu="100m").obj())

            pod = await eventually(functools.partial(_failed, c, ns, "pl"), timeout=15)
            assert (pod.status.reason, pod.status.message) == (
                "PodLevelResourcesNotSupported",
                "Pod was rejected: PodLevelResources feature gate is disabled",
            )
            await eventually(functools.partial(_running, c, ns, "plain"), timeout=15)
