"""What the DaemonSet controller decides per node (upstream pkg/controller/daemon/util and the
predicates of daemon_controller.go).

- `create_pod_template`: the template with the daemon tolerations
  (kemu.scheduling.daemon, which also says which nodes should run a daemon pod) and labels.
- `replace_node_name_affinity`: the required node affinity term `metadata.name In [node]`
  that makes the default scheduler put the pod on that node.
- `target_node_name`, `is_pod_updated`, `by_creation_timestamp_and_phase`.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from kemu.api.v1 import types_pb2
from kemu.machinery import apps
from kemu.scheduling.daemon import add_daemon_tolerations
from kemu.scheduling.plugins.helpers import OBJECT_NAME_FIELD


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
