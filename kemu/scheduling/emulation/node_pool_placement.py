"""NodePoolPlacement: upstream's test PlacementGenerate plugin (KEP-5732), the one its
scheduler_perf podgroup/tas/ file enables beside TopologyPlacementGenerator
(scheduler-config-multi-placement.yaml) and its integration tests register out of tree
(test/integration/scheduler/podgroup/topology_aware_scheduling: nodePoolPlacement).

One placement, `pool-<pool>`, of the parent's nodes whose `pool` label is the plugin's pool
(`a`, as upstream's; the pluginConfig arg `pool` changes it, a kemu addition); none:
Unschedulable "no nodes in pool <pool>". With TopologyPlacementGenerator the framework keeps the
intersections (1.37), so a group must fit one rack's nodes of the pool.
"""

from __future__ import annotations

from typing import Final

from kemu.scheduling.interface import (
    CycleState,
    Handle,
    Placement,
    PlacementGeneratePlugin,
    PluginArgs,
)
from kemu.scheduling.plugins.helpers import check_arg_keys
from kemu.scheduling.pod_group_state import PodGroupKey
from kemu.scheduling.status import SUCCESS, Code, Status

NAME: Final = "NodePoolPlacement"
POOL_LABEL: Final = "pool"


class NodePoolPlacement(PlacementGeneratePlugin):
    NAME = NAME

    def __init__(self, pool: str) -> None:
        self.pool = pool

    def name(self) -> str:
        return NAME

    def generate_placements(
        self, state: CycleState, group: PodGroupKey, parent: Placement
    ) -> tuple[list[Placement], Status]:
        nodes = tuple(
            n
            for n in parent.nodes
            if n.node is not None and n.node.metadata.labels.get(POOL_LABEL) == self.pool
        )
        if not nodes:
            return [], Status(Code.UNSCHEDULABLE, (f"no nodes in pool {self.pool}",))
        return [Placement(f"pool-{self.pool}", nodes)], SUCCESS


def new(args: PluginArgs, handle: Handle) -> NodePoolPlacement:
    check_arg_keys(args, ("pool",), NAME)
    pool = args.get("pool", "a")
    if not isinstance(pool, str) or not pool:
        raise ValueError(f"{NAME}: pool must be a non-empty string, got {pool!r}")
    return NodePoolPlacement(pool)
