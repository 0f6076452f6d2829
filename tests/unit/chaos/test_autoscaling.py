"""The scaling phase's checks over recorded histories: the group's bounds, and no Node deleted
under a live pod bound or nominated to it."""

from __future__ import annotations

from kemu.api.v1 import types_pb2
from kemu.chaos.autoscaling import (
    TO_BE_DELETED,
    CloudSample,
    ScalingRecord,
    check_bounds,
    check_node_deletions,
)
from kemu.chaos.workload import Scaling
from kemu.testing.invariants import NodeHistory, PodHistory, node_deletions_under_pods

SCALING = Scaling(waves=1, pods=2, minSize=1, maxSize=3)


def _node(name: str, rv: int, *, tainted: bool = False) -> types_pb2.Node:
    n = types_pb2.Node(metadata=types_pb2.ObjectMeta(name=name, uid=f"u-{name}"))
    n.metadata.resource_version = str(rv)
    if tainted:
        n.spec.taints.add(key=TO_BE_DELETED, effect="NoSchedule")
    return n


def _pod(
    name: str, rv: int, *, node: str = "", nominated: str = "", phase: str = ""
) -> types_pb2.Pod:
    p = types_pb2.Pod(metadata=types_pb2.ObjectMeta(name=name, namespace="s", uid=f"u-{name}"))
    p.metadata.resource_version = str(rv)
    p.spec.node_name = node
    p.status.nominated_node_name = nominated
    p.status.phase = phase
    return p


def _histories() -> tuple[NodeHistory, PodHistory]:
    nodes, pods = NodeHistory(), PodHistory("s")
    for name, rv in (("g-0", 1), ("g-1", 2)):
        nodes.record("ADDED", _node(name, rv))
    return nodes, pods


def test_a_node_deleted_after_its_pods_are_gone_is_fine() -> None:
    nodes, pods = _histories()
    pods.record("ADDED", _pod("a", 3, node="g-1"))
    pods.record("DELETED", _pod("a", 4, node="g-1"))
    pods.record("ADDED", _pod("done", 5, node="g-1", phase="Succeeded"))
    nodes.record("DELETED", _node("g-1", 6))
    assert check_node_deletions(nodes, pods, SCALING) == []


def test_a_node_deleted_under_a_bound_or_nominated_pod_is_a_violation() -> None:
    nodes, pods = _histories()
    pods.record("ADDED", _pod("bound", 3, node="g-1"))
    pods.record("ADDED", _pod("waiting", 4, nominated="g-0"))
    nodes.record("DELETED", _node("g-1", 5))
    nodes.record("DELETED", _node("g-0", 6))
    out = check_node_deletions(nodes, pods, SCALING)
    assert any("g-1 deleted (rv 5) under bound pod bound" in v for v in out), out
    assert any("g-0 deleted (rv 6) under nominated pod waiting" in v for v in out), out
    assert any("0 Nodes left (minSize 1)" in v for v in out), out


def test_the_shared_check_leaves_out_pods_that_do_not_count_and_nominations_if_asked() -> None:
    nodes, pods = _histories()
    cheap = _pod("cheap", 3, node="g-1")
    cheap.spec.priority = -20
    pods.record("ADDED", cheap)
    pods.record("ADDED", _pod("waiting", 4, nominated="g-0"))
    nodes.record("DELETED", _node("g-1", 5))
    nodes.record("DELETED", _node("g-0", 6))
    assert len(node_deletions_under_pods(nodes, pods)) == 2
    only_bound = node_deletions_under_pods(
        nodes, pods, nominated=False, counts=lambda pod: pod.spec.priority >= -10
    )
    assert only_bound == []


def test_a_node_of_a_deleted_instance_beside_its_replacement_is_fine() -> None:
    # The bounds are on the target size and live instances (check_bounds): a Node lingers
    # until the cloud removes it after its instance.
    nodes, pods = _histories()
    nodes.record("ADDED", _node("g-2", 3))
    nodes.record("ADDED", _node("g-3", 4))
    assert check_node_deletions(nodes, pods, SCALING) == []


def test_cloud_sizes_stay_within_min_and_max() -> None:
    ok = [CloudSample(0.0, 1, 1), CloudSample(1.0, 3, 2), CloudSample(2.0, 1, 3)]
    assert check_bounds(ok, SCALING) == []
    bad = [CloudSample(0.0, 0, 1), CloudSample(1.0, 4, 4)]
    assert check_bounds(bad, SCALING) == [
        "chaos-pool instances 4 above its maxSize 3",
        "chaos-pool target size 0 below its minSize 1",
        "chaos-pool target size 4 above its maxSize 3",
    ]


def test_the_moments_of_the_autoscaler_faults() -> None:
    record = ScalingRecord()
    assert not record.mid_scale_up() and not record.mid_drain()
    record.nodes.record("ADDED", _node("g-0", 1))
    record.samples.append(CloudSample(0.0, 2, 1))
    assert record.mid_scale_up()  # asked for 2, one registered
    record.nodes.record("ADDED", _node("g-1", 2))
    assert not record.mid_scale_up()
    record.nodes.record("MODIFIED", _node("g-1", 3, tainted=True))
    assert record.mid_drain()
    record.nodes.record("DELETED", _node("g-1", 4, tainted=True))
    assert not record.mid_drain()
