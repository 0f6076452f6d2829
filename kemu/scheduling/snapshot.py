"""The snapshot one scheduling cycle works on (upstream backend/cache/snapshot.go).

The scheduler calls `Cache.update_snapshot(snapshot)` at the start of every cycle; the cycle
then reads only the snapshot, so nothing the informers deliver meanwhile changes what it sees.

Contract:
- Every NodeInfo in a snapshot is a clone owned by the snapshot, and the cache never mutates it:
  `update_snapshot` replaces the NodeInfo of a changed node with a new clone. A NodeInfo taken
  from the snapshot therefore stays consistent for as long as anyone holds it (preemption's
  dry runs, an asynchronous task started by a plugin). Callers must not mutate them either:
  clone first (`NodeInfo.clone()`), as preemption does for its what-if runs.
- The lists returned by `list()` and the `have_pods_with_*` methods belong to the snapshot and
  are updated in place between cycles: read them during the cycle, copy them to keep them.
- Only nodes with a Node object are in the snapshot (a removed node whose pods have not all been
  deleted yet stays in the cache, not here).
"""

from __future__ import annotations

import builtins
from bisect import bisect_left
from collections.abc import Iterable

from kemu.api.v1 import types_pb2
from kemu.machinery.resources import SCHEDULER_DEFAULTS, PodResourcesOptions
from kemu.scheduling.columns import NodeColumns
from kemu.scheduling.node_tree import NodeTree
from kemu.scheduling.topology_counts import AffinityIndex
from kemu.scheduling.types import NodeInfo, PodInfo


class Snapshot:
    """A SharedLister and NodeInfoLister over clones of the cache's NodeInfos.

    The fields are maintained by `Cache.update_snapshot` (same package); everyone else reads
    through the lister methods.
    """

    __slots__ = (
        "_affinity",
        "_affinity_rows",
        "_anti_affinity",
        "_anti_affinity_rows",
        "_columns",
        "_index",
        "_list",
        "_map",
        "_placement",
        "_pos",
        "generation",
        "tree_version",
    )

    def __init__(self) -> None:
        self._map: dict[str, NodeInfo] = {}
        # The node order of the cache's NodeTree; _pos maps a name to its index in _list.
        self._list: list[NodeInfo] = []
        self._pos: dict[str, int] = {}
        # The affinity lists, in node order; _*_rows holds each entry's index in _list
        # (sorted), so that a node is found, added or removed with a bisection.
        self._affinity: list[NodeInfo] = []
        self._affinity_rows: list[int] = []
        self._anti_affinity: list[NodeInfo] = []
        self._anti_affinity_rows: list[int] = []
        # The nodes in columns for the batch path (kemu.scheduling.columns), built on first use
        # after the node list changed, then kept up to date row by row by `replace`.
        self._columns: NodeColumns | None = None
        # InterPodAffinity's per-row counts (kemu.scheduling.topology_counts), built on first
        # use after the node list changed, then kept up to date row by row by `replace`.
        self._index: AffinityIndex | None = None
        # The nodes of the placement the pod-group cycle assumed (KEP-5732), or None: all.
        self._placement: frozenset[str] | None = None
        # The newest NodeInfo generation this snapshot has seen (0: nothing yet).
        self.generation = 0
        # The NodeTree version the node order was built from (-1: never built).
        self.tree_version = -1

    @classmethod
    def from_objects(
        cls,
        pods: Iterable[types_pb2.Pod],
        nodes: Iterable[types_pb2.Node],
        counting: PodResourcesOptions = SCHEDULER_DEFAULTS,
    ) -> Snapshot:
        """A snapshot built directly from objects, for tests and simulations (upstream
        NewSnapshot). Pods count on the node named by spec.nodeName; pods on nodes not listed
        are ignored. Node order as `Cache` would give it (zones spread). `counting` counts the
        pods as `Cache` does (the default: the newest rules)."""
        tree = NodeTree()
        infos: dict[str, NodeInfo] = {}
        for node in nodes:
            infos[node.metadata.name] = NodeInfo(node)
            tree.add_node(node)
        for pod in pods:
            ni = infos.get(pod.spec.node_name)
            if ni is not None:
                ni.add_pod_info(PodInfo(pod, counting))
        s = cls()
        s.reset(infos, tree.list())
        s.generation = max((ni.generation for ni in infos.values()), default=0)
        return s

    # ------------------------------------------------------------ SharedLister

    def node_infos(self) -> Snapshot:
        return self

    # ------------------------------------------------------------ NodeInfoLister

    def list(self) -> builtins.list[NodeInfo]:
        """Every node, in the NodeTree order (zones interleaved)."""
        return self._list

    def get(self, name: str) -> NodeInfo | None:
        return self._map.get(name)

    def in_order(self, names: Iterable[str]) -> builtins.list[NodeInfo]:
        """The nodes named in `names` that the snapshot has, in the NodeTree order (a
        PreFilterResult's: upstream gets each from the snapshot and leaves unknown names out),
        at the cost of the names, not of the nodes."""
        rows = sorted(row for name in names if (row := self._pos.get(name)) is not None)
        return [self._list[row] for row in rows]

    # ------------------------------------------------------------ placements

    def assume_placement(self, names: frozenset[str]) -> None:
        """Restricts `nodes_in_placement` to these nodes (upstream Snapshot.AssumePlacement),
        until `forget_placement`; `update_snapshot` keeps it. The pod-group cycle's members
        are then filtered on these nodes only; `list()` still has every node (the plugins'
        cluster-wide view, the columns' rows). A placement of every node is no restriction."""
        whole = len(names) >= len(self._map) and names.issuperset(self._map)
        self._placement = None if whole else names

    def forget_placement(self) -> None:
        self._placement = None

    def assumed_placement(self) -> frozenset[str] | None:
        """The assumed placement's node names, or None (upstream GetPlacement): a nested
        placement algorithm puts its parent's back with `assume_placement` when done."""
        return self._placement

    def in_placement(self, name: str) -> bool:
        return self._placement is None or name in self._placement

    def nodes_in_placement(self) -> builtins.list[NodeInfo]:
        """The assumed placement's nodes in the NodeTree order, or every node."""
        if self._placement is None:
            return self._list
        return self.in_order(self._placement)

    def have_pods_with_affinity_list(self) -> builtins.list[NodeInfo]:
        """Nodes with at least one pod that has (anti-)affinity terms, required or preferred."""
        return self._affinity

    def have_pods_with_required_anti_affinity_list(self) -> builtins.list[NodeInfo]:
        """Nodes with at least one pod that has required anti-affinity terms."""
        return self._anti_affinity

    def num_nodes(self) -> int:
        return len(self._list)

    def columns(self) -> NodeColumns:
        """The nodes of `list()` in columns, row i being `list()[i]` (kemu's batch path)."""
        if self._columns is None:
            self._columns = NodeColumns(self._list, self._pos)
        return self._columns

    def affinity_index(self) -> AffinityIndex:
        """InterPodAffinity's counts over the rows of `list()` (kemu.scheduling.topology_counts)."""
        if self._index is None:
            self._index = AffinityIndex(self._list)
        return self._index

    # ------------------------------------------------------------ maintenance (Cache only)

    def replace(self, name: str, clone: NodeInfo) -> tuple[bool, bool, bool]:
        """Puts `clone` in place of the node's NodeInfo without touching the node order.

        Returns (is_new, affinity_membership_changed, anti_affinity_membership_changed): a new
        node needs the lists rebuilt. Otherwise the clone takes the old one's place in every
        list it is in, entering or leaving the affinity lists in node order (the last two are
        always False now: nothing is left to rebuild; kept for callers).
        """
        old = self._map.get(name)
        self._map[name] = clone
        if old is None:
            return True, False, False
        pos = self._pos.get(name)
        if pos is None:
            return True, False, False
        self._list[pos] = clone
        if self._columns is not None:
            self._columns.set_row(pos, clone)
        if self._index is not None:
            self._index.replace(pos, clone)
        _place(
            self._affinity,
            self._affinity_rows,
            pos,
            clone,
            bool(old.pods_with_affinity),
            bool(clone.pods_with_affinity),
        )
        _place(
            self._anti_affinity,
            self._anti_affinity_rows,
            pos,
            clone,
            bool(old.pods_with_required_anti_affinity),
            bool(clone.pods_with_required_anti_affinity),
        )
        return False, False, False

    def rebuild_lists(self, order: Iterable[str]) -> None:
        """Rebuilds every list in `order`, the NodeTree's; NodeInfos of nodes not in it are
        dropped (removed nodes). Names missing from the map are skipped."""
        infos: dict[str, NodeInfo] = {}
        self._list = []
        self._pos = {}
        self._columns = None
        self._index = None
        for name in order:
            ni = self._map.get(name)
            if ni is not None:
                infos[name] = ni
                self._pos[name] = len(self._list)
                self._list.append(ni)
        self._map = infos
        self.rebuild_affinity_lists()

    def reset(self, infos: dict[str, NodeInfo], order: Iterable[str]) -> None:
        """Replaces the whole content with `infos` (clones the snapshot now owns)."""
        self._map = infos
        self.rebuild_lists(order)

    def rebuild_affinity_lists(self) -> None:
        self._affinity, self._affinity_rows = [], []
        self._anti_affinity, self._anti_affinity_rows = [], []
        for pos, ni in enumerate(self._list):
            if ni.pods_with_affinity:
                self._affinity_rows.append(pos)
                self._affinity.append(ni)
            if ni.pods_with_required_anti_affinity:
                self._anti_affinity_rows.append(pos)
                self._anti_affinity.append(ni)

    def __repr__(self) -> str:
        return f"Snapshot(nodes={len(self._list)}, generation={self.generation})"


def _place(
    infos: builtins.list[NodeInfo],
    rows: builtins.list[int],
    row: int,
    clone: NodeInfo,
    was_in: bool,
    is_in: bool,
) -> None:
    """Keeps one affinity list (in node order, `rows` its entries' rows) right for the node at
    `row`, now `clone`."""
    if not was_in and not is_in:
        return
    i = bisect_left(rows, row)
    if was_in and is_in:
        infos[i] = clone
    elif is_in:
        rows.insert(i, row)
        infos.insert(i, clone)
    else:
        del rows[i]
        del infos[i]
