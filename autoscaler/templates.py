"""Node-group templates as the autoscaler simulates them (upstream cluster-autoscaler
simulator/node_info_utils.go TemplateNodeInfoFromNodeGroupTemplate, with forceDaemonSets, and
utils/daemonset GetDaemonSetPodsForNode).

A fresh node of a group is the cloud's template Node plus the pod of every DaemonSet that would
run on it (kemu.scheduling.daemon: node name, selector, required affinity, taints): the scale-up
checks a pending pod against that, the estimator packs pods next to those daemon pods, and an
upcoming node counts them too. A pod that fits only a template without its daemons triggers no
scale-up. Every copy put into a snapshot carries the daemon pods under its own name.

A group's template also carries the node-local ResourceSlices a new node publishes (the cloud's
NodeGroupTemplateNodeInfo: upstream TemplateNodeInfo's LocalResourceSlices); each copy gets
them sanitized to its own name and pool (upstream simulator/dynamicresources/utils/sanitize.go
SanitizedNodeResourceSlices), so a pod whose claims fit only a group's devices scales that
group up, from zero too.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from kemu.api.v1 import types_pb2
from kemu.scheduling.daemon import new_pod, node_should_run_daemon_pod
from kemu.scheduling.dra_snapshot import sanitized_slices
from kemu.scheduling.simulator import ClusterSnapshot

HOSTNAME_LABEL: Final = "kubernetes.io/hostname"


def template_name(group: str) -> str:
    return f"template-node-for-{group}"


def named_template(template: types_pb2.Node, name: str) -> types_pb2.Node:
    """A copy of `template` named `name` (its hostname label too, as upstream sanitizeNode)."""
    node = types_pb2.Node()
    node.CopyFrom(template)
    node.metadata.name = name
    node.metadata.labels[HOSTNAME_LABEL] = name
    return node


@dataclass(frozen=True)
class TemplateNodeInfo:
    """A group's template node and the daemon pods a fresh node of the group runs."""

    node: types_pb2.Node
    daemon_pods: tuple[types_pb2.Pod, ...] = ()
    resource_slices: tuple[types_pb2.ResourceSlice, ...] = ()
    """The template node's node-local slices (nodeName and pool: the template's name)."""

    @property
    def name(self) -> str:
        return self.node.metadata.name

    def add_copy(self, snapshot: ClusterSnapshot, name: str) -> None:
        """Adds a node like the template, named `name`, with its daemon pods, to `snapshot`
        (upstream FreshNodeInfoFromTemplateNodeInfo)."""
        snapshot.add_node(
            named_template(self.node, name), sanitized_slices(self.resource_slices, name)
        )
        for template_pod in self.daemon_pods:
            pod = types_pb2.Pod()
            pod.CopyFrom(template_pod)
            pod.metadata.name = f"{template_pod.metadata.name}-{name}"
            pod.metadata.uid = f"{template_pod.metadata.uid}-{name}"
            pod.spec.node_name = name
            snapshot.add_pod(pod, name)


def template_node_info(
    group: str,
    node: types_pb2.Node,
    daemonsets: Iterable[types_pb2.DaemonSet],
    resource_slices: Sequence[types_pb2.ResourceSlice] = (),
) -> TemplateNodeInfo:
    """The group's template (`node` and its `resource_slices`, from the cloud) with a pod of
    each DaemonSet that should run on it, as its controller would create it (daemon
    tolerations, the DaemonSet as the controller owner)."""
    template = named_template(node, template_name(group))
    pods: list[types_pb2.Pod] = []
    for ds in sorted(daemonsets, key=lambda d: (d.metadata.namespace, d.metadata.name)):
        if not node_should_run_daemon_pod(template, ds)[0]:
            continue
        pod = new_pod(ds, template.metadata.name)
        pod.metadata.namespace = ds.metadata.namespace
        pod.metadata.name = f"{ds.metadata.name}-pod"
        pod.metadata.uid = f"template-{ds.metadata.uid}"
        pod.metadata.labels.update(ds.spec.template.metadata.labels)
        pod.metadata.owner_references.add(
            api_version="apps/v1",
            kind="DaemonSet",
            name=ds.metadata.name,
            uid=ds.metadata.uid,
            controller=True,
        )
        pods.append(pod)
    slices = tuple(sanitized_slices(resource_slices, template.metadata.name))
    return TemplateNodeInfo(template, tuple(pods), slices)
