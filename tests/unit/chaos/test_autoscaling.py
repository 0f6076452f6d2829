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
    n.spec.provider_id = f"kemu://{name}"
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


def _sample(target: int, *instances: str, node_events: int = 0) -> CloudSample:
    return CloudSample(0.0, target, frozenset(f"kemu://{i}" for i in instances), node_events)


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
    assert check_node_deletions(nodes, pods, [], SCALING) == []


def test_a_node_deleted_under_a_bound_or_nominated_pod_is_a_violation() -> None:
    nodes, pods = _histories()
    pods.record("ADDED", _pod("bound", 3, node="g-1"))
    pods.record("ADDED", _pod("waiting", 4, nominated="g-0"))
    nodes.record("DELETED", _node("g-1", 5))
    nodes.record("DELETED", _node("g-0", 6))
    out = check_node_deletions(nodes, pods, [], SCALING)
    assert any("g-1 deleted (rv 5) under bound pod bound" in v for v in out), out
    assert any("g-0 deleted (rv 6) under nominated pod waiting" in v for v in out), out
    assert any("0 Nodes left and 0 instances booting (minSize 1)" in v for v in out), out


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
    assert check_node_deletions(nodes, pods, [], SCALING) == []


def test_the_last_node_deleted_while_its_replacement_boots_is_fine() -> None:
    # CI AG: g-1 unready and unneeded, g-2's instance booting (scaled up for the wave), the
    # target at 2; the autoscaler deletes g-1 (target 1 = minSize) before g-2 registers.
    nodes, pods = _histories()
    nodes.record("DELETED", _node("g-0", 3))
    booting = [_sample(2, "g-1", "g-2", node_events=nodes.recorded)]
    nodes.record("DELETED", _node("g-1", 4))
    assert check_node_deletions(nodes, pods, booting, SCALING) == []
    # Without the booting instance, or with only instances that had Nodes, it is a violation.
    registered = [_sample(2, "g-0", "g-1", node_events=booting[0].node_events)]
    for samples in ([], registered):
        out = check_node_deletions(nodes, pods, samples, SCALING)
        assert out == ["g-1 deleted at rv 4: 0 Nodes left and 0 instances booting (minSize 1)"]
    # A sample taken after the deletion was recorded does not count for it.
    late = [_sample(2, "g-2", node_events=nodes.recorded)]
    assert len(check_node_deletions(nodes, pods, late, SCALING)) == 1


def test_cloud_sizes_stay_within_min_and_max() -> None:
    ok = [_sample(1, "a"), _sample(3, "a", "b"), _sample(1, "a", "b", "c")]
    assert check_bounds(ok, SCALING) == []
    bad = [_sample(0, "a"), _sample(4, "a", "b", "c", "d")]
    assert check_bounds(bad, SCALING) == [
        "chaos-pool instances 4 above its maxSize 3",
        "chaos-pool target size 0 below its minSize 1",
        "chaos-pool target size 4 above its maxSize 3",
    ]


def test_the_moments_of_the_autoscaler_faults() -> None:
    record = ScalingRecord()
    assert not record.mid_scale_up() and not record.mid_drain()
    record.nodes.record("ADDED", _node("g-0", 1))
    record.samples.append(_sample(2, "g-0", node_events=record.nodes.recorded))
    assert record.mid_scale_up()  # asked for 2, one registered
    record.nodes.record("ADDED", _node("g-1", 2))
    assert not record.mid_scale_up()
    record.nodes.record("MODIFIED", _node("g-1", 3, tainted=True))
    assert record.mid_drain()
    record.nodes.record("DELETED", _node("g-1", 4, tainted=True))
    assert not record.mid_drain()
