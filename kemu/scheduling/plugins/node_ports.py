"""NodePorts: a pod fits a node only if none of its host ports is in use there (upstream
nodeports/node_ports.go).

PreFilter collects the pod's host ports (containers and restartable init containers, as
upstream's GetHostPorts) and Skips a pod that has none, so the plugin costs nothing for most
pods. Filter: Unschedulable "node(s) didn't have free ports for the requested pod ports" when
one of them conflicts with `NodeInfo.used_ports` (same protocol and port, on the same host IP
or on 0.0.0.0). Preemption may free ports: the dry run removes victims from a cloned NodeInfo,
which gives their ports back, and the state here depends on the pod alone.

Events: an assigned or nominated pod deleted that held one of the pod's host ports (ports are
immutable, so pod updates are not registered); a node added.

KEP-5836: a running pod whose resize was Deferred already holds its ports on its node; with
InPlacePodVerticalScalingSchedulerPreemption it Skips this plugin at PreFilter (its own ports
would otherwise conflict with themselves), as the other non-resource filters do.
"""

from __future__ import annotations

from typing import Final

import numpy as np

from kemu.api.v1 import types_pb2
from kemu.machinery.resources import is_pod_resize_deferred
from kemu.scheduling.arrays import BoolArray, IntArray
from kemu.scheduling.columns import NodeColumns, per_node_rows
from kemu.scheduling.deferred import resize_preemption_enabled
from kemu.scheduling.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
)
from kemu.scheduling.interface import (
    CycleState,
    EnqueueExtensions,
    FilterPlugin,
    Handle,
    PluginArgs,
    PreFilterExtensions,
    PreFilterPlugin,
)
from kemu.scheduling.status import SKIP, SUCCESS, Status, as_error, unschedulable
from kemu.scheduling.types import (
    HostPort,
    HostPortInfo,
    NodeInfo,
    PreFilterResult,
    get_host_ports,
)

NAME: Final = "NodePorts"
PRE_FILTER_STATE_KEY: Final = "PreFilter" + NAME

ERR_REASON: Final = "node(s) didn't have free ports for the requested pod ports"
_PORTS_FAILED: Final = unschedulable(ERR_REASON)


class _PreFilterState:
    __slots__ = ("ports",)

    def __init__(self, ports: tuple[HostPort, ...]) -> None:
        self.ports = ports

    def clone(self) -> _PreFilterState:
        return self  # the pod's own ports: other pods coming and going do not change them


def fits_ports(want: tuple[HostPort, ...], in_use: HostPortInfo) -> bool:
    """No wanted port conflicts with the ports in use."""
    return not any(in_use.check_conflict(hp) for hp in want)


def fits(pod: types_pb2.Pod, node: NodeInfo) -> bool:
    """Whether the pod's host ports are free on the node (upstream nodeports.Fits)."""
    return fits_ports(get_host_ports(pod), node.used_ports)


class NodePorts(PreFilterPlugin, FilterPlugin, EnqueueExtensions):
    NAME = NAME

    def __init__(self, *, skip_deferred: bool = False) -> None:
        self.skip_deferred = skip_deferred

    def name(self) -> str:
        return NAME

    def pre_filter(
        self, state: CycleState, pod: types_pb2.Pod, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        if self.skip_deferred and is_pod_resize_deferred(pod):
            return None, SKIP
        ports = get_host_ports(pod)
        if not ports:
            return None, SKIP
        state.write(PRE_FILTER_STATE_KEY, _PreFilterState(ports))
        return None, SUCCESS

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return None

    def filter(self, state: CycleState, pod: types_pb2.Pod, node: NodeInfo) -> Status:
        s = state.read(PRE_FILTER_STATE_KEY)
        if not isinstance(s, _PreFilterState):
            return as_error(f"reading {PRE_FILTER_STATE_KEY!r} from cycleState: not found")
        if fits_ports(s.ports, node.used_ports):
            return SUCCESS
        return unschedulable(ERR_REASON)

    def filter_columns(
        self, state: CycleState, pod: types_pb2.Pod, columns: NodeColumns, rows: IntArray
    ) -> BoolArray | None:
        """`filter` over rows: a node with no host port in use fits; the others are checked
        one by one (kemu.scheduling.columns)."""
        s = state.read(PRE_FILTER_STATE_KEY)
        if not isinstance(s, _PreFilterState):
            return None
        ports = s.ports
        free: BoolArray = ~columns.ports[rows]
        return per_node_rows(rows, free, columns, lambda ni: fits_ports(ports, ni.used_ports))

    def reject_columns(
        self, state: CycleState, pod: types_pb2.Pod, columns: NodeColumns, rows: IntArray
    ) -> tuple[IntArray, list[Status]] | None:
        """The rows whose ports conflict get `filter`'s rejection
        (kemu.scheduling.columns.ColumnRejectPlugin)."""
        s = state.read(PRE_FILTER_STATE_KEY)
        if not isinstance(s, _PreFilterState):
            return None
        infos = columns.infos
        which = np.fromiter(
            (-1 if fits_ports(s.ports, infos[r].used_ports) else 0 for r in rows.tolist()),
            dtype=np.int64,
            count=len(rows),
        )
        return which, [_PORTS_FAILED]

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            # Ports are immutable: only a deletion frees one.
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD, ActionType.DELETE),
                self.is_schedulable_after_pod_deleted,
            ),
            # Always worth a retry (upstream registers it without a hint).
            ClusterEventWithHint(ClusterEvent(EventResource.NODE, ActionType.ADD)),
        ]

    def is_schedulable_after_pod_deleted(
        self, pod: types_pb2.Pod, old: object, new: object
    ) -> QueueingHint:
        """Queue only when the deleted pod was placed (bound or nominated) and held one of the
        ports this pod wants."""
        if not isinstance(old, types_pb2.Pod):
            return QueueingHint.QUEUE
        if not old.spec.node_name and not old.status.nominated_node_name:
            return QueueingHint.SKIP
        freed = get_host_ports(old)
        if not freed:
            return QueueingHint.SKIP
        in_use = HostPortInfo()
        for hp in freed:
            in_use.add(hp)
        if fits_ports(get_host_ports(pod), in_use):
            return QueueingHint.SKIP
        return QueueingHint.QUEUE


def new(args: PluginArgs, handle: Handle) -> NodePorts:
    return NodePorts(skip_deferred=resize_preemption_enabled(handle.gates))
