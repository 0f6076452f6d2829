"""What a DaemonSet runs on a node (upstream pkg/controller/daemon/util NewPod and
AddOrUpdateDaemonPodTolerations, and daemon_controller.go's NodeShouldRunDaemonPod): the DaemonSet
controller decides with it which nodes get a daemon pod, and the autoscaler which daemon pods a
fresh node of a node group would run (upstream cluster-autoscaler's utils/daemonset
GetDaemonSetPodsForNode imports the same code).

- `new_pod` / `add_daemon_tolerations`: a daemon pod tolerates the node conditions a daemon
  must survive (not-ready and unreachable NoExecute; disk, memory and PID pressure and
  unschedulable NoSchedule; network-unavailable for hostNetwork pods).
- `node_should_run_daemon_pod`: (should run, should continue running) for a node: its name,
  node selector and required node affinity must match, and its NoSchedule/NoExecute taints
  be tolerated (a pod already there keeps running unless a NoExecute taint is not).
"""

from __future__ import annotations

from kemu.api.v1 import types_pb2
from kemu.machinery.taints import (
    TAINT_NODE_DISK_PRESSURE,
    TAINT_NODE_MEMORY_PRESSURE,
    TAINT_NODE_NETWORK_UNAVAILABLE,
    TAINT_NODE_NOT_READY,
    TAINT_NODE_PID_PRESSURE,
    TAINT_NODE_UNREACHABLE,
    TAINT_NODE_UNSCHEDULABLE,
)
from kemu.scheduling.plugins.helpers import (
    TAINT_NO_EXECUTE,
    TAINT_NO_SCHEDULE,
    find_matching_untolerated_taint,
    required_node_affinity,
)


def _add_or_update_toleration(spec: types_pb2.PodSpec, key: str, effect: str) -> None:
    """upstream AddOrUpdateTolerationInPodSpec for an Exists toleration: an equal one is kept,
    one with the same key, operator and effect is replaced."""
    wanted = types_pb2.Toleration(key=key, operator="Exists", effect=effect)
    for i, t in enumerate(spec.tolerations):
        if t.key == key and t.effect == effect and t.operator in ("Exists", ""):
            if t == wanted:
                return
            spec.tolerations[i].CopyFrom(wanted)
            return
    spec.tolerations.append(wanted)


def add_daemon_tolerations(spec: types_pb2.PodSpec) -> None:
    """upstream AddOrUpdateDaemonPodTolerations."""
    _add_or_update_toleration(spec, TAINT_NODE_NOT_READY, TAINT_NO_EXECUTE)
    _add_or_update_toleration(spec, TAINT_NODE_UNREACHABLE, TAINT_NO_EXECUTE)
    _add_or_update_toleration(spec, TAINT_NODE_DISK_PRESSURE, TAINT_NO_SCHEDULE)
    _add_or_update_toleration(spec, TAINT_NODE_MEMORY_PRESSURE, TAINT_NO_SCHEDULE)
    _add_or_update_toleration(spec, TAINT_NODE_PID_PRESSURE, TAINT_NO_SCHEDULE)
    _add_or_update_toleration(spec, TAINT_NODE_UNSCHEDULABLE, TAINT_NO_SCHEDULE)
    if spec.host_network:
        _add_or_update_toleration(spec, TAINT_NODE_NETWORK_UNAVAILABLE, TAINT_NO_SCHEDULE)


def new_pod(ds: types_pb2.DaemonSet, node_name: str) -> types_pb2.Pod:
    """upstream NewPod: the pod the DaemonSet would run on a node (for the predicates)."""
    pod = types_pb2.Pod()
    pod.spec.CopyFrom(ds.spec.template.spec)
    pod.spec.node_name = node_name
    add_daemon_tolerations(pod.spec)
    return pod


def node_should_run_daemon_pod(node: types_pb2.Node, ds: types_pb2.DaemonSet) -> tuple[bool, bool]:
    """upstream NodeShouldRunDaemonPod: (should run, should continue running)."""
    template_node = ds.spec.template.spec.node_name
    name = node.metadata.name
    if template_node and template_node != name:
        return False, False
    pod = new_pod(ds, name)
    if not required_node_affinity(pod).matches(node):
        return False, False
    taints = node.spec.taints
    untolerated = find_matching_untolerated_taint(
        taints,
        pod.spec.tolerations,
        lambda t: t.effect in (TAINT_NO_EXECUTE, TAINT_NO_SCHEDULE),
    )
    if untolerated is None:
        return True, True
    no_execute = find_matching_untolerated_taint(
        taints, pod.spec.tolerations, lambda t: t.effect == TAINT_NO_EXECUTE
    )
    return False, no_execute is None
