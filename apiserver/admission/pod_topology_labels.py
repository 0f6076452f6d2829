"""The PodTopologyLabels admission plugin (upstream plugin/pkg/admission/podtopologylabels,
KEP-4742; gate PodTopologyLabelsAdmission, alpha 1.33, on from 1.35): a pod bound to a node
gets the node's topology.kubernetes.io/zone and topology.kubernetes.io/region labels (those
it has), overwriting the pod's own, so that the downward API can expose them. On a
pods/binding create the labels are added to the Binding, whose labels the binding storage
copies onto the pod (BindingREST, with the gate); on a pod created already bound (spec.nodeName
set) they are added to the pod. A node that does not exist gives no labels."""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Final

from kemu.api.v1 import types_pb2
from kemu.machinery.well_known_labels import LABEL_TOPOLOGY_REGION, LABEL_TOPOLOGY_ZONE

TOPOLOGY_LABELS: Final = (LABEL_TOPOLOGY_ZONE, LABEL_TOPOLOGY_REGION)
"""The plugin's default configuration (its Config.Labels), as kube-apiserver runs it."""


def copy_topology_labels(
    labels: MutableMapping[str, str], node: types_pb2.Node | None, keys: tuple[str, ...]
) -> None:
    """Copies the node's labels of `keys` into `labels`, overwriting (mergeLabels)."""
    if node is None:
        return
    node_labels: Mapping[str, str] = node.metadata.labels
    for key in keys:
        value = node_labels.get(key)
        if value is not None:
            labels[key] = value
