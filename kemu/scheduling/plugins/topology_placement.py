"""TopologyPlacementGenerator (KEP-5732, TopologyAwareWorkloadScheduling): upstream
pkg/scheduler/framework/plugins/topologyaware/topology_placement.go (commit 008b3652959c).

A PlacementGenerate plugin. For a PodGroup with `spec.schedulingConstraints.topology` (the API
allows one entry; its `key` is a node label), one placement per value of that label among the
parent placement's nodes (nodes without the label are in none), named after the value (the
domain). Once members are assumed or bound, only their domain: a group that already runs in
rack-a stays in rack-a. A PodGroup without topology constraints gets the parent placement.

Errors (the cycle fails with them): the PodGroup not in the informer's cache; a scheduled
member's node unknown to the snapshot ("cannot determine domain for already scheduled pods:
getting node for pod NS/NAME: ..."), without the label ("... no topology domain found for pod
NS/NAME"), or members in two domains ("... more than 1 domain found for pod group: A, B").
kemu orders the placements by domain name (upstream: Go's map order).

A CompositePodGroup of a tree being scheduled (KEP-6012; `CompositePodGroupKey`) is placed the
same way by its own constraint, its scheduled members being those of every PodGroup under it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from kemu.api.v1 import types_pb2
from kemu.machinery.keys import object_key
from kemu.scheduling.composite_pod_groups import CompositePodGroupKey
from kemu.scheduling.interface import (
    CycleState,
    Handle,
    ObjectLister,
    Placement,
    PlacementGeneratePlugin,
    PluginArgs,
)
from kemu.scheduling.plugins.helpers import check_arg_keys
from kemu.scheduling.pod_group_state import GroupMembership, MembershipField, PodGroupKey
from kemu.scheduling.status import SUCCESS, Status, as_error
from kemu.scheduling.types import NodeInfo

NAME: Final = "TopologyPlacementGenerator"


class TopologyPlacement(PlacementGeneratePlugin):
    NAME = NAME

    def __init__(self, handle: Handle) -> None:
        self.handle = handle
        factory = handle.informer_factory()
        # (PodGroups exist for it only with GenericWorkload: without, no informer, which the
        # scheduler's RBAC role would refuse; every group is then one it does not know)
        grouped = GroupMembership.of(handle.gates).field is MembershipField.SCHEDULING_GROUP
        self._pod_groups: ObjectLister[types_pb2.PodGroup] | None = (
            factory.informer(types_pb2.PodGroup).lister if factory is not None and grouped else None
        )

    def name(self) -> str:
        return NAME

    def generate_placements(
        self, state: CycleState, group: PodGroupKey, parent: Placement
    ) -> tuple[list[Placement], Status]:
        topology, error = self._topology(group)
        if error:
            return [], as_error(error)
        if not topology:
            return [parent], SUCCESS
        key = topology[0].key  # the API allows one constraint
        required, err = self._scheduled_domain(group, key)
        if err:
            return [], as_error(f"cannot determine domain for already scheduled pods: {err}")
        domains: dict[str, list[NodeInfo]] = {}
        for node in parent.nodes:
            if node.node is None:
                continue
            domain = node.node.metadata.labels.get(key)
            if domain is None or (required is not None and domain != required):
                continue
            domains.setdefault(domain, []).append(node)
        return [Placement(d, tuple(domains[d])) for d in sorted(domains)], SUCCESS

    def _topology(self, group: PodGroupKey) -> tuple[Sequence[types_pb2.TopologyConstraint], str]:
        """The group's topology constraints, or why they cannot be read."""
        if isinstance(group, CompositePodGroupKey):
            states = self.handle.pod_group_states()
            forest = states.forest if states is not None else None
            cpg = forest.composite_pod_group(group.group_key()) if forest is not None else None
            if cpg is None:
                return (), f'compositepodgroup.scheduling.k8s.io "{group.name}" not found'
            return cpg.spec.scheduling_constraints.topology, ""
        pg = (
            self._pod_groups.get(group.name, group.namespace)
            if self._pod_groups is not None
            else None
        )
        if pg is None:
            return (), f'podgroup.scheduling.k8s.io "{group.name}" not found'
        return pg.spec.scheduling_constraints.topology, ""

    def _scheduled_domain(self, group: PodGroupKey, key: str) -> tuple[str | None, str]:
        """The domain of the group's assumed and bound members (None: there are none), or
        the error that says why it cannot be told."""
        states = self.handle.pod_group_states()
        if states is None:
            return None, ""
        leaves = [group]
        if isinstance(group, CompositePodGroupKey):
            forest = states.forest
            leaves = forest.leaves_of(group.group_key()) if forest is not None else []
        scheduled = [
            member
            for leaf in leaves
            if (state := states.get(leaf)) is not None
            for member in state.scheduled_pods()
        ]
        nodes = self.handle.snapshot_shared_lister().node_infos()
        domain: str | None = None
        for pod, node_name in scheduled:
            node = nodes.get(node_name) if node_name else None
            if node is None or node.node is None:
                return None, (
                    f"getting node for pod {object_key(pod)}: "
                    f'nodeinfo not found for node name "{node_name}"'
                )
            value = node.node.metadata.labels.get(key)
            if value is None:
                return None, f"no topology domain found for pod {object_key(pod)}"
            if domain is not None and domain != value:
                return None, f"more than 1 domain found for pod group: {domain}, {value}"
            domain = value
        return domain, ""


def new(args: PluginArgs, handle: Handle) -> TopologyPlacement:
    check_arg_keys(args, (), NAME)
    return TopologyPlacement(handle)
