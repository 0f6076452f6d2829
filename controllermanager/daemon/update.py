"""upstream pkg/controller/daemon/update.go: the RollingUpdate strategy, as a plan.

Without surge, old pods are deleted so that at most maxUnavailable (of the desired number,
rounded up) are unavailable, the manage loop recreating them at the new revision; with
maxSurge > 0 the new pod starts beside the old one, which is deleted once the new one is
available. `rolling_update` returns what upstream's rollingUpdate hands to syncNodes: the pods
to delete and the nodes that need a new pod.
"""

from __future__ import annotations

from controllermanager import daemon_util
from controllermanager.controller_utils import is_pod_available
from kemu.api.v1 import types_pb2
from kemu.machinery import apps
from kemu.scheduling import daemon


def updated_desired_node_counts(
    ds: types_pb2.DaemonSet, nodes: list[types_pb2.Node]
) -> tuple[int, int, int]:
    """upstream updatedDesiredNodeCounts: (maxSurge, maxUnavailable, desired)."""
    desired = sum(1 for n in nodes if daemon.node_should_run_daemon_pod(n, ds)[0])
    ru = ds.spec.update_strategy.rolling_update
    surge = (
        apps.scaled_value(ru.max_surge, desired, round_up=True) if ru.HasField("max_surge") else 0
    )
    unavailable = (
        apps.scaled_value(ru.max_unavailable, desired, round_up=True)
        if ru.HasField("max_unavailable")
        else 1
    )
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable, desired


def find_updated_pods_on_node(
    ds: types_pb2.DaemonSet, pods: list[types_pb2.Pod], hash_: str
) -> tuple[types_pb2.Pod | None, types_pb2.Pod | None, bool]:
    """upstream findUpdatedPodsOnNode: (new pod, old pod, at most one of each)."""
    generation = apps.template_generation(ds)
    new: types_pb2.Pod | None = None
    old: types_pb2.Pod | None = None
    for pod in pods:
        if pod.metadata.HasField("deletion_timestamp"):
            continue
        if daemon_util.is_pod_updated(pod, hash_, generation):
            if new is not None:
                return None, None, False
            new = pod
        else:
            if old is not None:
                return None, None, False
            old = pod
    return new, old, True


def rolling_update(
    ds: types_pb2.DaemonSet,
    nodes: list[types_pb2.Node],
    by_node: dict[str, list[types_pb2.Pod]],
    hash_: str,
    now: float,
) -> tuple[list[types_pb2.Pod], list[str]]:
    """upstream rollingUpdate: (pods to delete, nodes needing a new pod)."""
    max_surge, max_unavailable, _ = updated_desired_node_counts(ds, nodes)
    if max_surge == 0:
        return _without_surge(ds, by_node, hash_, now, max_unavailable), []
    return _with_surge(ds, nodes, by_node, hash_, now, max_surge)


def _without_surge(
    ds: types_pb2.DaemonSet,
    by_node: dict[str, list[types_pb2.Pod]],
    hash_: str,
    now: float,
    max_unavailable: int,
) -> list[types_pb2.Pod]:
    mrs = ds.spec.min_ready_seconds
    unavailable = 0
    allowed: list[types_pb2.Pod] = []
    candidates: list[types_pb2.Pod] = []
    for node_pods in by_node.values():
        new, old, ok = find_updated_pods_on_node(ds, node_pods, hash_)
        if not ok or (new is None) == (old is None):
            unavailable += 1  # the manage loop creates or deletes here
        elif new is not None:
            if not is_pod_available(new, mrs, now):
                unavailable += 1
        elif old is not None:
            if not is_pod_available(old, mrs, now):
                allowed.append(old)
            elif unavailable < max_unavailable:
                candidates.append(old)
    remaining = max(0, min(max_unavailable - unavailable, len(candidates)))
    return allowed + candidates[:remaining]


def _with_surge(
    ds: types_pb2.DaemonSet,
    nodes: list[types_pb2.Node],
    by_node: dict[str, list[types_pb2.Pod]],
    hash_: str,
    now: float,
    max_surge: int,
) -> tuple[list[types_pb2.Pod], list[str]]:
    mrs = ds.spec.min_ready_seconds
    old_to_delete: list[types_pb2.Pod] = []
    should_not_run: list[types_pb2.Pod] = []
    candidate_nodes: list[str] = []
    allowed_nodes: list[str] = []
    surging = 0
    node_by_name = {n.metadata.name: n for n in nodes}
    for node_name, node_pods in by_node.items():
        new, old, ok = find_updated_pods_on_node(ds, node_pods, hash_)
        if not ok:
            surging += 1
            continue
        if old is None:
            continue
        if new is None:
            if not is_pod_available(old, mrs, now):
                node = node_by_name.get(node_name)
                if node is None or not daemon.node_should_run_daemon_pod(node, ds)[0]:
                    should_not_run.append(old)
                    continue
                allowed_nodes.append(node_name)
            elif surging < max_surge:
                candidate_nodes.append(node_name)
            continue
        if not is_pod_available(new, mrs, now):
            surging += 1
            continue
        old_to_delete.append(old)
    remaining = max(0, min(max_surge - surging, len(candidate_nodes)))
    return old_to_delete + should_not_run, allowed_nodes + candidate_nodes[:remaining]
