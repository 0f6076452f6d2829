"""The scheduler on real processes: etcd, apiserver, kube-scheduler; nodes are bare Node
objects (no kubelet), as in scheduler_perf."""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import anyio
import anyio.lowlevel
import pytest

from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.testing import Cluster, eventually, make_node, make_pod
from kemu.testing.names import unique_name
from kemu.testing.namespaces import create_namespace

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

EMULATION_PROFILE = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  plugins:
    multiPoint:
      enabled:
      - name: SlowPreBind
      - name: WaitingPermit
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root = tmp_path_factory.mktemp("scheduler")
    config = root / "scheduler.yaml"
    config.write_text(EMULATION_PROFILE)
    with Cluster(root) as c:
        c.start_etcd()
        c.start_apiserver()
        c.start_scheduler(config=str(config), extra_args=["--seed", "1"])
        yield c


async def _bound_to(c: Client, ns: str, name: str) -> str:
    pod = await c.get(types_pb2.Pod, name, ns)
    assert pod.spec.node_name, f"{ns}/{name} is not bound"
    return pod.spec.node_name


def _nodes(prefix: str, count: int, **capacity: str) -> list[types_pb2.Node]:
    cap = {"cpu": "4", "memory": "8Gi", "pods": "110", **capacity}
    return [
        make_node(f"{prefix}-{i}").capacity(**cap).labels(group=prefix).obj() for i in range(count)
    ]


async def test_least_allocated_spreads_pods_over_nodes(cluster):
    group = unique_name("g")
    async with Client(cluster.server, timeout=10.0) as c:
        ns = await create_namespace(c, "spread")
        for node in _nodes(group, 3):
            await c.create(node)
        for i in range(6):
            await c.create(
                make_pod(f"p{i}")
                .namespace(ns)
                .req(cpu="500m", memory="256Mi")
                .node_selector({"group": group})
                .obj()
            )

        async def all_bound() -> Counter[str]:
            return Counter([await _bound_to(c, ns, f"p{i}") for i in range(6)])

        placement = await eventually(all_bound, timeout=20)
        assert sorted(placement.values()) == [2, 2, 2], placement


async def test_node_selector_taints_and_anti_affinity_are_honoured(cluster):
    group = unique_name("g")
    async with Client(cluster.server, timeout=10.0) as c:
        ns = await create_namespace(c, "rules")
        plain, tainted, labelled = (f"{group}-plain", f"{group}-tainted", f"{group}-ssd")
        await c.create(make_node(plain).capacity(cpu="4", pods="110").labels(group=group).obj())
        await c.create(
            make_node(tainted)
            .capacity(cpu="4", pods="110")
            .labels(group=group)
            .taint("dedicated", "batch", "NoSchedule")
            .obj()
        )
        await c.create(
            make_node(labelled).capacity(cpu="4", pods="110").labels(group=group, disk="ssd").obj()
        )

        await c.create(make_pod("wants-ssd").namespace(ns).node_selector({"disk": "ssd"}).obj())
        await c.create(
            make_pod("tolerates")
            .namespace(ns)
            .node_selector({"group": group})
            .toleration("dedicated", "batch", "NoSchedule")
            .obj()
        )
        for i in range(3):
            await c.create(
                make_pod(f"spread{i}")
                .namespace(ns)
                .labels(app="spread")
                .node_selector({"group": group})
                .anti_affinity({"app": "spread"}, "kubernetes.io/hostname")
                .obj()
            )
        assert await eventually(lambda: _bound_to(c, ns, "wants-ssd"), timeout=20) == labelled
        await eventually(lambda: _bound_to(c, ns, "tolerates"), timeout=20)

        # Anti-affinity: at most one "spread" pod per node; the tainted node takes none of
        # them, so one of the three cannot be placed.
        async def placed() -> list[str]:
            out = []
            for i in range(3):
                pod = await c.get(types_pb2.Pod, f"spread{i}", ns)
                if pod.spec.node_name:
                    out.append(pod.spec.node_name)
            assert len(out) == 2
            return out

        spread = await eventually(placed, timeout=20)
        assert sorted(spread) == sorted([plain, labelled])

        async def third_unschedulable() -> bool:
            for i in range(3):
                pod = await c.get(types_pb2.Pod, f"spread{i}", ns)
                if not pod.spec.node_name:
                    cond = [x for x in pod.status.conditions if x.type == "PodScheduled"]
                    assert cond and cond[0].status == "False" and cond[0].reason == "Unschedulable"
                    assert "anti-affinity" in cond[0].message
                    assert "untolerated taint" in cond[0].message
                    return True
            return False

        await eventually(third_unschedulable, timeout=20)


async def test_unschedulable_pod_gets_the_upstream_message_and_is_scheduled_when_a_node_fits(
    cluster,
):
    group = unique_name("g")
    async with Client(cluster.server, timeout=10.0) as c:
        ns = await create_namespace(c, "fit")
        for node in _nodes(group, 2, cpu="1"):
            await c.create(node)
        await c.create(
            make_pod("big").namespace(ns).req(cpu="2").node_selector({"group": group}).obj()
        )

        async def unschedulable() -> types_pb2.PodCondition:
            pod = await c.get(types_pb2.Pod, "big", ns)
            cond = [x for x in pod.status.conditions if x.type == "PodScheduled"]
            assert cond and cond[0].status == "False", pod.status
            # (the scheduler's nodes and pods come on separate watches: its first attempt may
            # have had one of the two nodes, "1 Insufficient cpu"; the other's NodeAdd queues
            # the pod again, and that attempt counts both)
            assert "2 Insufficient cpu" in cond[0].message, cond[0].message
            return cond[0]

        cond = await eventually(unschedulable, timeout=20)
        assert cond.reason == "Unschedulable"
        assert "0/" in cond.message and "nodes are available" in cond.message
        events = await c.list(types_pb2.Event, ns)
        assert any(
            e.reason == "FailedScheduling" and e.involved_object.name == "big" for e in events.items
        )

        # A node that fits: the NodeAdd event's hint moves the pod at once (no 5-minute flush).
        with anyio.fail_after(15):
            await c.create(
                make_node(f"{group}-big").capacity(cpu="4", pods="110").labels(group=group).obj()
            )
            assert await eventually(lambda: _bound_to(c, ns, "big"), timeout=10) == f"{group}-big"


async def test_slow_prebind_and_waiting_permit_hold_only_their_own_pods(cluster):
    group = unique_name("g")
    async with Client(cluster.server, timeout=10.0) as c:
        ns = await create_namespace(c, "bind")
        for node in _nodes(group, 2):
            await c.create(node)
        await c.create(
            make_pod("slow")
            .namespace(ns)
            .node_selector({"group": group})
            .annotation("scheduling.kemu.io/prebind-delay", "forever")
            .obj()
        )
        await c.create(
            make_pod("waiting")
            .namespace(ns)
            .node_selector({"group": group})
            .annotation("scheduling.kemu.io/permit-wait", "10m")
            .obj()
        )
        for i in range(3):
            await c.create(
                make_pod(f"later{i}").namespace(ns).node_selector({"group": group}).obj()
            )
        for i in range(3):
            await eventually(functools.partial(_bound_to, c, ns, f"later{i}"), timeout=20)
        slow = await c.get(types_pb2.Pod, "slow", ns)
        waiting = await c.get(types_pb2.Pod, "waiting", ns)
        assert not slow.spec.node_name and not waiting.spec.node_name
        # The waiting pod goes once released.
        await c.patch(
            types_pb2.Pod,
            "waiting",
            {"metadata": {"annotations": {"scheduling.kemu.io/permit": "allow"}}},
            ns,
        )
        await eventually(lambda: _bound_to(c, ns, "waiting"), timeout=20)


async def test_two_replicas_with_leader_election_survive_the_leader_dying(
    kemu_cluster_factory, tmp_path: Path
):
    cl: Cluster = kemu_cluster_factory()
    cl.start_etcd()
    cl.start_apiserver()
    election = [
        "--leader-elect",
        "--leader-elect-lease-duration",
        "3s",
        "--leader-elect-renew-deadline",
        "2s",
        "--leader-elect-retry-period",
        "500ms",
    ]
    cl.start_scheduler(name="scheduler-a", extra_args=election)
    cl.start_scheduler(name="scheduler-b", extra_args=election)
    ns = "default"
    async with Client(cl.server, timeout=10.0) as c:
        for node in _nodes("n", 4):
            await c.create(node)
        for i in range(20):
            await c.create(make_pod(f"first{i}").namespace(ns).req(cpu="100m").obj())
        for i in range(20):
            await eventually(functools.partial(_bound_to, c, ns, f"first{i}"), timeout=20)

        leader = None
        for name in ("scheduler-a", "scheduler-b"):
            if (
                'leader_election_master_status{name="kube-scheduler"} 1.0'
                in cl.component(name).scrape()
            ):
                leader = name
        assert leader is not None
        async with anyio.create_task_group() as tg:

            async def create_more() -> None:
                for i in range(30):
                    await c.create(make_pod(f"second{i}").namespace(ns).req(cpu="100m").obj())

            tg.start_soon(create_more)
            await anyio.lowlevel.checkpoint()  # let some creations start before the kill
            cl.kill(leader)
        for i in range(30):
            await eventually(functools.partial(_bound_to, c, ns, f"second{i}"), timeout=40)
        events = (await c.list(types_pb2.Event, ns)).items
        scheduled = Counter(e.involved_object.name for e in events if e.reason == "Scheduled")
        assert all(n <= 1 for n in scheduled.values()), scheduled
        cl.restart(leader)


async def test_metrics_carry_upstream_names(cluster):
    group = unique_name("g")
    async with Client(cluster.server, timeout=10.0) as c:
        ns = await create_namespace(c, "metrics")
        for node in _nodes(group, 1):
            await c.create(node)
        await c.create(make_pod("p").namespace(ns).node_selector({"group": group}).obj())
        await eventually(functools.partial(_bound_to, c, ns, "p"), timeout=20)

    def scraped() -> str:
        text = cluster.component("scheduler").scrape()
        assert (
            'scheduler_schedule_attempts_total{profile="default-scheduler",result="scheduled"}'
            in text
        )
        return str(text)

    text = await eventually(scraped, timeout=10)
    for name in (
        "scheduler_scheduling_attempt_duration_seconds_bucket",
        "scheduler_scheduling_algorithm_duration_seconds_count",
        "scheduler_pod_scheduling_sli_duration_seconds_bucket",
        'scheduler_pending_pods{queue="active"}',
        'scheduler_pending_pods{queue="unschedulable"}',
        "scheduler_framework_extension_point_duration_seconds_bucket",
        'extension_point="PreFilter"',
        'extension_point="Bind"',
    ):
        assert name in text, name
