"""CompositePodGroup trees in the scheduler (KEP-6012, gate CompositePodGroup, alpha 1.37).

A CompositePodGroup (CPG) groups PodGroups and other CPGs: a PodGroup's or a CPG's
`spec.parentCompositePodGroupName` names its parent in the same namespace. The scheduler
schedules a whole tree at once, from its root (a CPG without parent): every leaf PodGroup's
unscheduled members in one pod-group cycle, all or nothing at each gang level.

`WorkloadForest` is upstream's workloadForest (pkg/scheduler/backend/queue/workload_forest.go):
the PodGroups and CPGs observed, and each parent's children, whether the parent was observed
yet or not. With the gate off nothing links: every PodGroup is its own root, and a PodGroup's
parent field is ignored.
- `root_of(key)`: walks the parent links up to the root CPG; a missing parent, a cycle or more
  than WorkloadMaxTreeDepth (4) levels resolve to no root (upstream getRootLookupInfo, the
  hierarchy tracker's FindRootGroupReadiness);
- `tree(root)`: the subtree as `GroupNode`s, children in name order (upstream
  buildQueuedPodGroupInfo; a cycle is cut where it closes);
- `ready_count(key, pods)`: the hierarchy tracker's quorum count (upstream
  gangscheduling/hierarchy_tracker.go): a PodGroup is ready when it has minCount pods (1 for a
  Basic policy), a CPG when it has minGroupCount ready children (1 for Basic), and a CPG's
  count is its ready children.

Pure: no I/O; fed by the scheduler's PodGroup and CompositePodGroup informer events.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Final

from kemu.api.v1 import types_pb2
from kemu.component.featuregate import COMPOSITE_POD_GROUP, GENERIC_WORKLOAD, FeatureGates
from kemu.scheduling.pod_group_state import PodGroupKey, min_count

__all__ = [
    "WORKLOAD_MAX_TREE_DEPTH",
    "CompositePodGroupKey",
    "GroupKey",
    "GroupKind",
    "GroupNode",
    "WorkloadForest",
    "composite_pod_groups_enabled",
    "min_group_count",
]

logger = logging.getLogger(__name__)

WORKLOAD_MAX_TREE_DEPTH: Final = 4
"""upstream schedulingv1beta1.WorkloadMaxTreeDepth."""


class GroupKind(enum.StrEnum):
    """upstream fwk.PodGroupKeyType / fwk.CompositePodGroupKeyType."""

    POD_GROUP = "PodGroup"
    COMPOSITE_POD_GROUP = "CompositePodGroup"


@dataclass(frozen=True, slots=True)
class GroupKey:
    """upstream fwk.EntityKey: a PodGroup or a CompositePodGroup."""

    kind: GroupKind
    namespace: str
    name: str

    @staticmethod
    def pod_group(namespace: str, name: str) -> GroupKey:
        return GroupKey(GroupKind.POD_GROUP, namespace, name)

    @staticmethod
    def composite(namespace: str, name: str) -> GroupKey:
        return GroupKey(GroupKind.COMPOSITE_POD_GROUP, namespace, name)

    def pod_group_key(self) -> PodGroupKey:
        return PodGroupKey(self.namespace, self.name)

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class CompositePodGroupKey(PodGroupKey):
    """A CompositePodGroup where the placement plugins take a group (KEP-5732's extension
    points are called for each CPG of a tree as for a PodGroup; upstream passes the
    GenericPodGroup): never equal to a PodGroup's key of the same name."""

    def group_key(self) -> GroupKey:
        return GroupKey.composite(self.namespace, self.name)


def composite_pod_groups_enabled(gates: FeatureGates) -> bool:
    """The CompositePodGroup gate (1.37 alpha; it needs GenericWorkload)."""
    return gates.enabled(GENERIC_WORKLOAD) and gates.enabled(COMPOSITE_POD_GROUP)


def min_group_count(cpg: types_pb2.CompositePodGroup) -> int:
    """A CPG's quorum of ready children: its gang's minGroupCount, 1 for Basic."""
    policy = cpg.spec.scheduling_policy
    return policy.gang.min_group_count if policy.HasField("gang") else 1


def _parent(obj: types_pb2.PodGroup | types_pb2.CompositePodGroup) -> str | None:
    spec = obj.spec
    return (
        spec.parent_composite_pod_group_name
        if spec.HasField("parent_composite_pod_group_name")
        else None
    )


@dataclass
class GroupNode:
    """One group of a tree being scheduled (upstream framework.PodGroupInfo): a PodGroup
    (a leaf) or a CompositePodGroup with its children."""

    key: GroupKey
    pod_group: types_pb2.PodGroup | None = None
    composite: types_pb2.CompositePodGroup | None = None
    children: list[GroupNode] = field(default_factory=list)

    def leaves(self) -> Iterator[GroupNode]:
        """The PodGroups under (or at) this node, depth first in the children's order."""
        if self.pod_group is not None:
            yield self
            return
        for child in self.children:
            yield from child.leaves()

    def walk(self) -> Iterator[GroupNode]:
        yield self
        for child in self.children:
            yield from child.walk()


class WorkloadForest:
    """See the module docstring. `enabled`: the CompositePodGroup gate."""

    def __init__(self, *, enabled: bool) -> None:
        self.enabled = enabled
        self._pod_groups: dict[GroupKey, types_pb2.PodGroup] = {}
        self._composites: dict[GroupKey, types_pb2.CompositePodGroup] = {}
        self._children: dict[GroupKey, set[GroupKey]] = {}
        self._parents: dict[GroupKey, GroupKey] = {}

    # ------------------------------------------------------------ informer events

    def add_pod_group(self, pg: types_pb2.PodGroup) -> None:
        key = GroupKey.pod_group(pg.metadata.namespace, pg.metadata.name)
        self._pod_groups[key] = pg
        self._link(key, _parent(pg))

    def delete_pod_group(self, pg: types_pb2.PodGroup) -> None:
        key = GroupKey.pod_group(pg.metadata.namespace, pg.metadata.name)
        self._pod_groups.pop(key, None)
        self._unlink(key)

    def add_composite_pod_group(self, cpg: types_pb2.CompositePodGroup) -> None:
        key = GroupKey.composite(cpg.metadata.namespace, cpg.metadata.name)
        self._composites[key] = cpg
        self._link(key, _parent(cpg))

    def delete_composite_pod_group(self, cpg: types_pb2.CompositePodGroup) -> None:
        key = GroupKey.composite(cpg.metadata.namespace, cpg.metadata.name)
        self._composites.pop(key, None)
        self._unlink(key)

    def _link(self, key: GroupKey, parent_name: str | None) -> None:
        # (the parent field is immutable; an update re-links to the same parent)
        self._unlink(key)
        if not self.enabled or parent_name is None:
            return
        parent = GroupKey.composite(key.namespace, parent_name)
        self._parents[key] = parent
        self._children.setdefault(parent, set()).add(key)

    def _unlink(self, key: GroupKey) -> None:
        parent = self._parents.pop(key, None)
        if parent is None:
            return
        siblings = self._children.get(parent)
        if siblings is not None:
            siblings.discard(key)
            if not siblings:
                del self._children[parent]

    # ------------------------------------------------------------ reads

    def pod_group(self, key: PodGroupKey) -> types_pb2.PodGroup | None:
        return self._pod_groups.get(GroupKey.pod_group(key.namespace, key.name))

    def composite_pod_group(self, key: GroupKey) -> types_pb2.CompositePodGroup | None:
        return self._composites.get(key)

    def parent_of(self, key: GroupKey) -> GroupKey | None:
        return self._parents.get(key)

    def root_of(self, key: GroupKey) -> GroupKey | None:
        """The root of the tree `key` is in (itself when it has no parent); None when a
        parent is not observed yet, the links loop, or the tree is deeper than
        WORKLOAD_MAX_TREE_DEPTH."""
        if key.kind is GroupKind.POD_GROUP and key not in self._pod_groups:
            return None
        if key.kind is GroupKind.COMPOSITE_POD_GROUP and key not in self._composites:
            return None
        current = key
        for _ in range(WORKLOAD_MAX_TREE_DEPTH + 1):
            parent = self._parents.get(current)
            if parent is None:
                return current
            if parent not in self._composites:
                return None
            current = parent
        logger.error("hierarchy exceeded maximum tree depth when getting root info: %s", key)
        return None

    def in_tree(self, key: PodGroupKey) -> bool:
        """Whether the PodGroup has a parent (is scheduled as part of a CPG tree)."""
        return GroupKey.pod_group(key.namespace, key.name) in self._parents

    def tree(self, root: GroupKey) -> GroupNode | None:
        """The subtree under `root` (see the module docstring)."""
        return self._node(root, set())

    def _node(self, key: GroupKey, visited: set[GroupKey]) -> GroupNode | None:
        if key in visited:
            logger.error(
                "Cycle detected in composite pod group hierarchy when building PodGroupInfo: %s",
                key,
            )
            return None
        visited.add(key)
        if key.kind is GroupKind.POD_GROUP:
            pg = self._pod_groups.get(key)
            return None if pg is None else GroupNode(key, pod_group=pg)
        cpg = self._composites.get(key)
        if cpg is None:
            return None
        node = GroupNode(key, composite=cpg)
        for child_key in sorted(self._children.get(key, ()), key=lambda k: (k.name, k.kind)):
            child = self._node(child_key, visited)
            if child is not None:
                node.children.append(child)
        return node

    def ready_count(self, key: GroupKey, pods: Callable[[PodGroupKey], int]) -> int:
        """The tracker's readyChildrenCount: a PodGroup's pods, a CPG's ready children
        (`pods` counts a PodGroup's known pods)."""
        return self._ready_count(key, pods, 0)

    def _ready_count(self, key: GroupKey, pods: Callable[[PodGroupKey], int], depth: int) -> int:
        if key.kind is GroupKind.POD_GROUP:
            return pods(key.pod_group_key())
        if depth > WORKLOAD_MAX_TREE_DEPTH:
            return 0
        ready = 0
        for child in self._children.get(key, ()):
            if self._ready(child, pods, depth + 1):
                ready += 1
        return ready

    def _ready(self, key: GroupKey, pods: Callable[[PodGroupKey], int], depth: int) -> bool:
        count = self._ready_count(key, pods, depth)
        if key.kind is GroupKind.POD_GROUP:
            pg = self._pod_groups.get(key)
            if pg is None:
                return count >= 1
            minimum = min_count(pg.spec.scheduling_policy)
            return count >= (1 if minimum is None else minimum)
        cpg = self._composites.get(key)
        return count >= (1 if cpg is None else min_group_count(cpg))

    def ancestry(
        self, key: PodGroupKey
    ) -> list[tuple[PodGroupKey, types_pb2.PodGroup | types_pb2.CompositePodGroup]]:
        """The PodGroup and its ancestors as observed, from it up (upstream
        traverseHierarchyUp: a parent not observed, or a loop, ends the walk; at most
        WorkloadMaxTreeDepth levels); empty when the PodGroup is not observed. The CPGs'
        keys are `CompositePodGroupKey`s."""
        out: list[tuple[PodGroupKey, types_pb2.PodGroup | types_pb2.CompositePodGroup]] = []
        current = GroupKey.pod_group(key.namespace, key.name)
        pg = self._pod_groups.get(current)
        if pg is None:
            return out
        out.append((PodGroupKey(key.namespace, key.name), pg))
        seen = {current}
        for _ in range(WORKLOAD_MAX_TREE_DEPTH):
            parent = self._parents.get(current)
            if parent is None or parent in seen:
                break
            cpg = self._composites.get(parent)
            if cpg is None:
                break
            seen.add(parent)
            out.append((CompositePodGroupKey(parent.namespace, parent.name), cpg))
            current = parent
        return out

    def leaves_of(self, key: GroupKey) -> list[PodGroupKey]:
        """The PodGroups of the subtree under `key`."""
        tree = self.tree(key)
        return [leaf.key.pod_group_key() for leaf in tree.leaves()] if tree is not None else []

    def same_tree(self, a: GroupKey, b: GroupKey) -> bool:
        """upstream areSameHierarchy: both resolve to the same root."""
        if not self.enabled:
            return a == b
        root_a = self.root_of(a)
        return root_a is not None and root_a == self.root_of(b)
