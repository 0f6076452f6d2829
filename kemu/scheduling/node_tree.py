"""Node names grouped by zone, listed round-robin across zones (upstream node_tree.go).

The scheduler stops searching once it has found enough feasible nodes (numFeasibleNodesToFind),
so the order of the node list matters: listing one node of every zone in turn spreads the nodes
it looks at over the zones instead of filling the first zone.
"""

from __future__ import annotations

import logging
from typing import Final

from kemu.api.v1 import types_pb2
from kemu.machinery.well_known_labels import LABEL_TOPOLOGY_REGION, LABEL_TOPOLOGY_ZONE

logger = logging.getLogger(__name__)

LABEL_ZONE: Final = LABEL_TOPOLOGY_ZONE
LABEL_REGION: Final = LABEL_TOPOLOGY_REGION
LABEL_ZONE_BETA: Final = "failure-domain.beta.kubernetes.io/zone"
LABEL_REGION_BETA: Final = "failure-domain.beta.kubernetes.io/region"


def zone_key(node: types_pb2.Node) -> str:
    """The node's region and zone as one key; "" when it has neither (component-helpers
    GetZoneKey: the GA labels win over the deprecated beta ones)."""
    labels = node.metadata.labels
    region = labels.get(LABEL_REGION) or labels.get(LABEL_REGION_BETA, "")
    zone = labels.get(LABEL_ZONE) or labels.get(LABEL_ZONE_BETA, "")
    if not region and not zone:
        return ""
    # The separator cannot appear in a label value, so the key is unambiguous.
    return f"{region}:\x00:{zone}"


class NodeTree:
    """Node names per zone, in insertion order; zones in the order they first appeared.

    Not a tree any more than upstream's: a map of zone to names. Each name is in one zone.
    """

    __slots__ = ("_tree", "_zone_of")

    def __init__(self) -> None:
        # dict used as an ordered set: O(1) removal, insertion order kept.
        self._tree: dict[str, dict[str, None]] = {}
        self._zone_of: dict[str, str] = {}

    @property
    def num_nodes(self) -> int:
        return len(self._zone_of)

    def __contains__(self, name: object) -> bool:
        return name in self._zone_of

    def add_node(self, node: types_pb2.Node) -> bool:
        """Adds the node; False (and no change) when it is already there."""
        name = node.metadata.name
        if name in self._zone_of:
            return False
        zone = zone_key(node)
        self._tree.setdefault(zone, {})[name] = None
        self._zone_of[name] = zone
        return True

    def remove_node(self, name: str) -> bool:
        """Removes the node; False when it is not there."""
        zone = self._zone_of.pop(name, None)
        if zone is None:
            return False
        names = self._tree[zone]
        del names[name]
        if not names:
            del self._tree[zone]
        return True

    def update_node(self, node: types_pb2.Node) -> bool:
        """Moves the node to its new zone if its zone labels changed; True when the order
        changed (the node moved, or was not there and was added)."""
        name = node.metadata.name
        zone = self._zone_of.get(name)
        if zone is not None and zone == zone_key(node):
            return False
        self.remove_node(name)
        self.add_node(node)
        return True

    def list(self) -> list[str]:
        """All node names: the first node of every zone, then the second of every zone, ..."""
        if len(self._tree) == 1:
            return list(next(iter(self._tree.values())))
        out: list[str] = []
        active = [iter(names) for names in self._tree.values()]
        while active:
            still = []
            for it in active:
                name = next(it, None)
                if name is not None:
                    out.append(name)
                    still.append(it)
            active = still
        return out
