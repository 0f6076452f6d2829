"""The status the kubelet reports and how it writes it: built on the pod's current status
(conditions others own are kept, the resize conditions as kubelet.allocation says, allocated
and actual resources per container), and written with a resourceVersion CAS."""

from __future__ import annotations

import pytest

from kemu.api.v1 import types_pb2
from kemu.testing.builders import make_pod
from kubelet.runtime import ContainerAllocation, PodRuntime, PodState
from kubelet.status_manager import StatusOptions, build_status

from .helpers import advance, running_workers, wait_running

pytestmark = pytest.mark.anyio

NOW = 1_700_000_000.0


def running(p: types_pb2.Pod, **fields: object) -> PodRuntime:
    rt = PodRuntime(
        p.metadata.uid,
        p.metadata.namespace,
        p.metadata.name,
        PodState.RUNNING,
        allocation={"c": ContainerAllocation({"cpu": "1"}, {"cpu": "1"})},
        requests={"cpu": 1000},
        admitted_at=NOW - 10,
        start_at=NOW - 9,
        started_at=NOW - 9,
    )
    for name, value in fields.items():
        setattr(rt, name, value)
    return rt


def conditions(status: types_pb2.PodStatus) -> list[tuple[str, str, str]]:
    return [(c.type, c.status, c.reason) for c in status.conditions]


def test_a_rejected_pod_fails_and_loses_only_the_kubelet_conditions() -> None:
    """PodScheduled is the kubelet's too (PodConditionsByKubelet): rejectPod's status has
    none, and mergePodStatus keeps only the others' conditions."""
    p = (
        make_pod("p")
        .node("n1")
        .condition("PodScheduled")
        .condition("Ready")
        .condition("DisruptionTarget")
        .obj()
    )
    rt = PodRuntime("u", "default", "p", PodState.REJECTED, reason="OutOfcpu", message="no room")
    status = build_status(p, rt, NOW)
    assert (status.phase, status.reason, status.message) == (
        "Failed",
        "OutOfcpu",
        "Pod was rejected: no room",
    )
    assert conditions(status) == [("DisruptionTarget", "True", "")]
    assert not status.container_statuses
    assert not status.host_ip and not status.pod_ip


def test_a_pod_created_on_its_node_is_scheduled_and_has_the_addresses() -> None:
    """generateAPIPodStatus: PodScheduled=True on every pod the kubelet runs, also one no
    scheduler saw; hostIP(s) the node's, podIP(s) its own."""
    p = make_pod("p").node("n1").obj()
    rt = running(p, pod_ip="10.244.1.2")
    status = build_status(p, rt, NOW, StatusOptions(host_ip="172.18.0.2"))
    scheduled = next(c for c in status.conditions if c.type == "PodScheduled")
    assert (scheduled.status, scheduled.reason) == ("True", "")
    assert scheduled.last_transition_time.seconds == NOW
    assert (status.host_ip, [i.ip for i in status.host_ips]) == ("172.18.0.2", ["172.18.0.2"])
    assert (status.pod_ip, [i.ip for i in status.pod_ips]) == ("10.244.1.2", ["10.244.1.2"])
    # Without PodHostIPs (before 1.29) a kubelet reports hostIP only.
    old = build_status(p, rt, NOW, StatusOptions(host_ip="172.18.0.2", host_ips=False))
    assert (old.host_ip, list(old.host_ips)) == ("172.18.0.2", [])


def test_a_scheduled_pod_keeps_the_binding_transition_time() -> None:
    p = make_pod("p").node("n1").obj()
    bound = p.status.conditions.add(type="PodScheduled", status="True")
    bound.last_transition_time.seconds = int(NOW) - 60
    status = build_status(p, running(p), NOW)
    (scheduled,) = (c for c in status.conditions if c.type == "PodScheduled")
    assert scheduled.last_transition_time.seconds == NOW - 60


def test_a_host_network_pod_has_the_node_ip() -> None:
    p = make_pod("p").node("n1").obj()
    p.spec.host_network = True
    status = build_status(p, running(p), NOW, StatusOptions(host_ip="172.18.0.2"))
    assert (status.pod_ip, [i.ip for i in status.pod_ips]) == ("172.18.0.2", ["172.18.0.2"])


def test_a_resize_in_progress_reports_allocated_and_actual_resources_and_its_conditions() -> None:
    p = make_pod("p").req(cpu="2").lim(cpu="2").node("n1").condition("PodScheduled").obj()
    rt = running(
        p,
        allocation={"c": ContainerAllocation({"cpu": "2"}, {"cpu": "2"})},
        actual={"c": ContainerAllocation({"cpu": "1"}, {"cpu": "1"})},
        resize_generation=2,
        pending_reason="Deferred",
        pending_message="Node didn't have enough resource: cpu",
        pending_since=NOW - 5,
        pending_generation=3,
    )
    status = build_status(p, rt, NOW)
    assert status.phase == "Running"
    (cs,) = status.container_statuses
    assert dict(cs.allocated_resources) == {"cpu": "2"}
    assert dict(cs.resources.requests) == {"cpu": "1"}
    by_type = {c.type: c for c in status.conditions}
    pending = by_type["PodResizePending"]
    assert (pending.reason, pending.observed_generation) == ("Deferred", 3)
    assert pending.last_transition_time.ToMicroseconds() == (NOW - 5) * 1_000_000
    assert by_type["PodResizeInProgress"].observed_generation == 2
    assert [c.type for c in status.conditions][:1] == ["PodScheduled"]
    # The kubelet writes no PodResizePreemptionDisabled (KEP-5836 as merged), and does not
    # own one another writer put there: it is kept as it is.
    assert "PodResizePreemptionDisabled" not in by_type
    p.status.conditions.add(type="PodResizePreemptionDisabled", status="True", reason="X")
    kept = {c.type: c for c in build_status(p, rt, NOW).conditions}
    assert kept["PodResizePreemptionDisabled"].reason == "X"


def test_a_finished_resize_drops_its_conditions_and_reports_the_allocation() -> None:
    p = make_pod("p").req(cpu="2").lim(cpu="2").node("n1").obj()
    rt = running(p, allocation={"c": ContainerAllocation({"cpu": "2"}, {"cpu": "2"})})
    p.status.conditions.add(type="PodResizeInProgress", status="True")
    p.status.conditions.add(type="PodResizePending", status="True", reason="Deferred")
    status = build_status(p, rt, NOW)
    assert not {c.type for c in status.conditions} & {"PodResizeInProgress", "PodResizePending"}
    (cs,) = status.container_statuses
    assert dict(cs.resources.requests) == dict(cs.allocated_resources) == {"cpu": "2"}


def test_building_the_same_status_again_changes_nothing() -> None:
    p = make_pod("p").req(cpu="1").lim(cpu="1").node("n1").obj()
    rt = running(p)
    p.status.CopyFrom(build_status(p, rt, NOW))
    assert build_status(p, rt, NOW + 60) == p.status, "a level-based sync writes nothing new"


async def test_status_writes_keep_conditions_written_by_others():
    async with running_workers() as env:
        await env.fake.create(make_pod("p").req(cpu="1", memory="1Gi").node("n1").obj())
        p = await wait_running(env, "p")
        await env.fake.patch(
            types_pb2.Pod,
            "p",
            {
                "status": {
                    "conditions": [
                        *[{"type": c.type, "status": c.status} for c in p.status.conditions],
                        {"type": "DisruptionTarget", "status": "True", "reason": "Preempted"},
                    ]
                }
            },
            subresource="status",
        )
        await env.mark_deleted("p", 1)
        await advance(env.clock, 1.5)
        last = env.last_status_write()
        types = {c.type: c.status for c in last.status.conditions}
        assert types["DisruptionTarget"] == "True"
        assert types["Ready"] == "False"
        assert not await env.exists("p")


async def test_a_conflicting_status_write_is_redone_on_a_fresh_read():
    async with running_workers() as env:
        stale = await env.fake.create(make_pod("p").req(cpu="1", memory="1Gi").node("n1").obj())
        running = await wait_running(env, "p")
        await env.fake.patch(
            types_pb2.Pod,
            "p",
            {
                "status": {
                    "conditions": [
                        *[{"type": c.type, "status": c.status} for c in running.status.conditions],
                        {"type": "DisruptionTarget", "status": "True"},
                    ]
                }
            },
            subresource="status",
        )
        node = env.node()
        rt = node.runtimes[running.metadata.uid]
        env.fake.clear_actions()
        # Written from a stale copy: Conflict, read again, rebuilt on what others wrote.
        written = await env.workers.status_manager.write(node, stale, rt)
        assert written is not None
        assert env.fake.verbs("pods")[:2] == ["update_status", "get"]
        types = {c.type: c.status for c in written.status.conditions}
        assert types["DisruptionTarget"] == "True"
        assert types["Ready"] == "True"
