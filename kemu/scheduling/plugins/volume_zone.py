"""VolumeZone: a pod's bound volumes' zone and region labels must match the node's (upstream
volumezone/volume_zone.go).

PreFilter reads each claim of the pod: a claim without a volume whose class binds at the first
consumer is left to VolumeBinding; any other unbound claim is UnschedulableAndUnresolvable
("PersistentVolumeClaim had no pv name and storageClass name", "PersistentVolume had no
name"); a claim, class or volume that does not exist is UnschedulableAndUnresolvable with its
NotFound message. The bound volumes' topology labels (topology.kubernetes.io/zone and /region,
and the beta failure-domain ones; a value may list several zones joined by "__") are the
state; none: Skip.

Filter: a node with none of those labels fits (a single-zone cluster); otherwise each volume
label must be on the node (a beta label may match the node's GA one) with one of the listed
values, else UnschedulableAndUnresolvable "node(s) had no available volume zone".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from kemu.api.v1 import types_pb2
from kemu.machinery.resources import is_pod_resize_deferred
from kemu.machinery.storage import (
    WAIT_FOR_FIRST_CONSUMER,
    claim_class,
)
from kemu.machinery.well_known_labels import LABEL_TOPOLOGY_REGION, LABEL_TOPOLOGY_ZONE
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
from kemu.scheduling.plugins.volumes import (
    VolumeListers,
    has_claims,
    pod_claim_names,
    volume_listers,
)
from kemu.scheduling.status import SKIP, SUCCESS, Status, as_error, unresolvable
from kemu.scheduling.types import NodeInfo, PreFilterResult

NAME: Final = "VolumeZone"
PRE_FILTER_STATE_KEY: Final = "PreFilter" + NAME

ERR_REASON_CONFLICT: Final = "node(s) had no available volume zone"

LABEL_FAILURE_DOMAIN_BETA_ZONE: Final = "failure-domain.beta.kubernetes.io/zone"
LABEL_FAILURE_DOMAIN_BETA_REGION: Final = "failure-domain.beta.kubernetes.io/region"
TOPOLOGY_LABELS: Final = (
    LABEL_FAILURE_DOMAIN_BETA_ZONE,
    LABEL_FAILURE_DOMAIN_BETA_REGION,
    LABEL_TOPOLOGY_ZONE,
    LABEL_TOPOLOGY_REGION,
)
_GA_LABEL: Final = {
    LABEL_FAILURE_DOMAIN_BETA_ZONE: LABEL_TOPOLOGY_ZONE,
    LABEL_FAILURE_DOMAIN_BETA_REGION: LABEL_TOPOLOGY_REGION,
}
_CONFLICT: Final = unresolvable(ERR_REASON_CONFLICT)


@dataclass(frozen=True, slots=True)
class PVTopology:
    pv_name: str
    key: str
    values: frozenset[str]


def pv_topologies(pv: types_pb2.PersistentVolume) -> list[PVTopology]:
    """The volume's topology labels (getPVTopologies; LabelZonesToSet splits on "__")."""
    out: list[PVTopology] = []
    labels = pv.metadata.labels
    for key in TOPOLOGY_LABELS:
        value = labels.get(key)
        if value is None:
            continue
        zones = frozenset(z.strip() for z in value.split("__") if z.strip())
        if zones:
            out.append(PVTopology(pv.metadata.name, key, zones))
    return out


class _State:
    __slots__ = ("topologies",)

    def __init__(self, topologies: list[PVTopology]) -> None:
        self.topologies = topologies

    def clone(self) -> _State:
        return self


class VolumeZone(PreFilterPlugin, FilterPlugin, EnqueueExtensions):
    NAME = NAME

    def __init__(self, listers: VolumeListers, *, skip_deferred: bool = False) -> None:
        self.skip_deferred = skip_deferred
        self.listers = listers

    def name(self) -> str:
        return NAME

    def pod_topologies(self, pod: types_pb2.Pod) -> tuple[list[PVTopology], Status]:
        """upstream getPVbyPod."""
        out: list[PVTopology] = []
        ns = pod.metadata.namespace
        for name in pod_claim_names(pod):
            if not name:
                return [], unresolvable("PersistentVolumeClaim had no name")
            claim = self.listers.claims.get(name, ns)
            if claim is None:
                return [], unresolvable(f'persistentvolumeclaim "{name}" not found')
            pv_name = claim.spec.volume_name
            if not pv_name:
                sc_name = claim_class(claim)
                if not sc_name:
                    return [], unresolvable(
                        "PersistentVolumeClaim had no pv name and storageClass name"
                    )
                sc = self.listers.classes.get(sc_name)
                if sc is None:
                    return [], unresolvable(f'storageclass.storage.k8s.io "{sc_name}" not found')
                if sc.volume_binding_mode == WAIT_FOR_FIRST_CONSUMER:
                    continue  # VolumeBinding's
                return [], unresolvable("PersistentVolume had no name")
            pv = self.listers.volumes.get(pv_name)
            if pv is None:
                return [], unresolvable(f'persistentvolume "{pv_name}" not found')
            out.extend(pv_topologies(pv))
        return out, SUCCESS

    def pre_filter(
        self, state: CycleState, pod: types_pb2.Pod, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        if self.skip_deferred and is_pod_resize_deferred(pod):
            return None, SKIP  # KEP-5836: nothing to say about a deferred resize
        if not has_claims(pod):
            return None, SKIP
        topologies, status = self.pod_topologies(pod)
        if not status.is_success():
            return None, status
        if not topologies:
            return None, SKIP
        state.write(PRE_FILTER_STATE_KEY, _State(topologies))
        return None, SUCCESS

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return None

    def filter(self, state: CycleState, pod: types_pb2.Pod, node: NodeInfo) -> Status:
        s = state.read(PRE_FILTER_STATE_KEY)
        if not isinstance(s, _State):
            return as_error(f"reading {PRE_FILTER_STATE_KEY!r} from cycleState: not found")
        labels = node.labels
        if not any(key in labels for key in TOPOLOGY_LABELS):
            return SUCCESS  # a node without zones: a single-zone cluster
        for t in s.topologies:
            value = labels.get(t.key)
            if value is None:
                value = labels.get(_GA_LABEL.get(t.key, t.key))
            if value is None or value not in t.values:
                return _CONFLICT
        return SUCCESS

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(EventResource.STORAGE_CLASS, ActionType.ADD),
                self.is_schedulable_after_storage_class_added,
            ),
            ClusterEventWithHint(
                # (Upstream adds UpdateNodeTaint only without queueing hints.)
                ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.PVC, ActionType.ADD | ActionType.UPDATE_OBJECT),
                self.is_schedulable_after_claim_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.PV, ActionType.ADD | ActionType.UPDATE_OBJECT),
                self.is_schedulable_after_volume_change,
            ),
        ]

    def is_schedulable_after_storage_class_added(
        self, pod: types_pb2.Pod, old: object, new: object
    ) -> QueueingHint:
        if isinstance(new, types_pb2.StorageClass) and (
            new.volume_binding_mode != WAIT_FOR_FIRST_CONSUMER
        ):
            return QueueingHint.SKIP
        return QueueingHint.QUEUE

    def is_schedulable_after_claim_change(
        self, pod: types_pb2.Pod, old: object, new: object
    ) -> QueueingHint:
        if not isinstance(new, types_pb2.PersistentVolumeClaim):
            return QueueingHint.QUEUE
        if new.metadata.namespace == pod.metadata.namespace and new.metadata.name in set(
            pod_claim_names(pod)
        ):
            return QueueingHint.QUEUE
        return QueueingHint.SKIP

    def is_schedulable_after_volume_change(
        self, pod: types_pb2.Pod, old: object, new: object
    ) -> QueueingHint:
        if not isinstance(old, types_pb2.PersistentVolume) or not isinstance(
            new, types_pb2.PersistentVolume
        ):
            return QueueingHint.QUEUE
        if pv_topologies(old) != pv_topologies(new):
            return QueueingHint.QUEUE
        return QueueingHint.SKIP


def new(args: PluginArgs, handle: Handle) -> VolumeZone:
    return VolumeZone(volume_listers(handle), skip_deferred=resize_preemption_enabled(handle.gates))
