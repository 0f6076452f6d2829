"""What the DaemonSet controller decides per node (upstream pkg/controller/daemon/util and the
predicates of daemon_controller.go).

- `new_pod` / `add_daemon_tolerations`: a daemon pod tolerates the node conditions a daemon
  must survive (not-ready and unreachable NoExecute; disk, memory and PID pressure and
  unschedulable NoSchedule; network-unavailable for hostNetwork pods).
- `node_should_run_daemon_pod`: (should run, should continue running) for a node: its name,
  node selector and required node affinity must match, and its NoSchedule/NoExecute taints
  be tolerated (a pod already there keeps running unless a NoExecute taint is not).
- `replace_node_name_affinity`: the required node affinity term `metadata.name In [node]`
  that makes the default scheduler put the pod on that node.
- `target_node_name`, `is_pod_updated`, `by_creation_timestamp_and_phase`.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Final

from kemu.api.v1 import types_pb2
from kemu.machinery import apps
from kemu.scheduling.plugins.helpers import (
    OBJECT_NAME_FIELD,
    TAINT_NO_EXECUTE,
    TAINT_NO_SCHEDULE,
    find_matching_untolerated_taint,
    required_node_affinity,
)

TAINT_NODE_NOT_READY: Final = "node.kubernetes.io/not-ready"
TAINT_NODE_UNREACHABLE: Final = "node.kubernetes.io/unreachable"
TAINT_NODE_DISK_PRESSURE: Final = "node.kubernetes.io/disk-pressure"
TAINT_NODE_MEMORY_PRESSURE: Final = "node.kubernetes.io/memory-pressure"
TAINT_NODE_PID_PRESSURE: Final = "node.kubernetes.io/pid-pressure"
TAINT_NODE_UNSCHEDULABLE: Final = "node.kubernetes.io/unschedulable"
TAINT_NODE_NETWORK_UNAVAILABLE: Final = "node.kubernetes.io/network-unavailable"


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


def create_pod_template(
    template: types_pb2.PodTemplateSpec, generation: int | None, hash_: str
) -> types_pb2.PodTemplateSpec:
    """upstream CreatePodTemplate: the daemon tolerations, and the pod-template-generation and
    controller-revision-hash labels."""
    out = types_pb2.PodTemplateSpec()
    out.CopyFrom(template)
    add_daemon_tolerations(out.spec)
    if generation is not None:
        out.metadata.labels[apps.DAEMON_SET_TEMPLATE_GENERATION_KEY] = str(generation)
    if hash_:
        out.metadata.labels[apps.DEFAULT_DAEMON_SET_UNIQUE_LABEL_KEY] = hash_
    return out


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


def replace_node_name_affinity(spec: types_pb2.PodSpec, node_name: str) -> None:
    """upstream ReplaceDaemonSetPodNodeNameNodeAffinity: the required node affinity becomes
    the one term `metadata.name In [node_name]` (the other terms were checked already)."""
    required = spec.affinity.node_affinity.required_during_scheduling_ignored_during_execution
    del required.node_selector_terms[:]
    term = required.node_selector_terms.add()
    term.match_fields.add(key=OBJECT_NAME_FIELD, operator="In", values=[node_name])


def target_node_name(pod: types_pb2.Pod) -> str | None:
    """upstream GetTargetNodeName: spec.nodeName, else the node of the matchFields term."""
    if pod.spec.node_name:
        return pod.spec.node_name
    affinity = pod.spec.affinity.node_affinity
    required = affinity.required_during_scheduling_ignored_during_execution
    for term in required.node_selector_terms:
        for expr in term.match_fields:
            if expr.key == OBJECT_NAME_FIELD and expr.operator == "In" and len(expr.values) == 1:
                return expr.values[0]
    return None


def is_pod_updated(pod: types_pb2.Pod, hash_: str, generation: int | None) -> bool:
    """upstream IsPodUpdated: the pod carries the current hash or template generation."""
    labels = pod.metadata.labels
    generation_matches = generation is not None and labels.get(
        apps.DAEMON_SET_TEMPLATE_GENERATION_KEY
    ) == str(generation)
    hash_matches = bool(hash_) and labels.get(apps.DEFAULT_DAEMON_SET_UNIQUE_LABEL_KEY) == hash_
    return hash_matches or generation_matches


def _created(pod: types_pb2.Pod) -> tuple[int, int]:
    ts = pod.metadata.creation_timestamp
    return ts.seconds, ts.nanos


def _cmp(a: types_pb2.Pod, b: types_pb2.Pod) -> int:
    if bool(a.spec.node_name) != bool(b.spec.node_name):
        return -1 if a.spec.node_name else 1  # scheduled first
    ca, cb = _created(a), _created(b)
    if ca == cb:
        return -1 if a.metadata.name < b.metadata.name else int(a.metadata.name > b.metadata.name)
    return -1 if ca < cb else 1


def by_creation_timestamp_and_phase(pods: Sequence[types_pb2.Pod]) -> list[types_pb2.Pod]:
    """upstream podByCreationTimestampAndPhase: scheduled pods first, then the oldest."""
    return sorted(pods, key=functools.cmp_to_key(_cmp))
