"""VolumeRestrictions: a claim with the ReadWriteOncePod access mode is used by one pod at
most (upstream volumerestrictions/volume_restrictions.go). The disk conflicts of the same
plugin (GCE PD, AWS EBS, RBD, iSCSI volumes mounted by two pods) have no volume sources in
kemu's pod spec and are not modelled.

PreFilter reads the pod's claims (a claim that does not exist: UnschedulableAndUnresolvable
`persistentvolumeclaim "NAME" not found`), keeps those with ReadWriteOncePod and counts how
many of them some pod of the snapshot (bound or assumed) already uses. Skip when the pod has
no claims, or none of its ReadWriteOncePod claims is in use: a pod without volumes costs one
pass over its volumes.

Filter: Unschedulable "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod
access mode already in-use by another pod" (1.33+; "node has pod using PersistentVolumeClaim
with the same name and ReadWriteOncePod access mode" before, kubernetes#129145) on every node
while the count is positive. The conflict is
cluster-wide, but preemption's dry run on the holder's node removes the holder (RemovePod
lowers the count), so the preemptor may evict it there (S-PRE-19).

Events (upstream's, with queueing hints): a pod deleted that used one of the pod's claims; a
claim of the pod added; a node added.
"""

from __future__ import annotations

from typing import Final

from kemu.api.v1 import types_pb2
from kemu.component.version_rules import VersionRules
from kemu.machinery.resources import is_pod_resize_deferred
from kemu.machinery.storage import (
    READ_WRITE_ONCE_POD,
)
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
    claim_key,
    has_claims,
    pod_claim_names,
    volume_listers,
)
from kemu.scheduling.status import (
    SKIP,
    SUCCESS,
    Status,
    as_error,
    unresolvable,
    unschedulable,
)
from kemu.scheduling.types import NodeInfo, PodInfo, PreFilterResult

NAME: Final = "VolumeRestrictions"
PRE_FILTER_STATE_KEY: Final = "PreFilter" + NAME

ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT: Final = (
    "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode "
    "already in-use by another pod"
)
ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT_BEFORE_1_33: Final = (
    "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode"
)


def conflict_reason(rules: VersionRules) -> str:
    """The conflict's reason at the rules' version (VersionRules rwop_conflict_in_use_message)."""
    if rules.rwop_conflict_in_use_message:
        return ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT
    return ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT_BEFORE_1_33


class _PreFilterState:
    __slots__ = ("conflicts", "rwop_claims")

    def __init__(self, rwop_claims: frozenset[str], conflicts: int) -> None:
        self.rwop_claims = rwop_claims  # "namespace/name" of the pod's ReadWriteOncePod claims
        self.conflicts = conflicts  # how many of them pods in the snapshot use

    def clone(self) -> _PreFilterState:
        return _PreFilterState(self.rwop_claims, self.conflicts)

    def update_with_pod(self, other: types_pb2.Pod, multiplier: int) -> None:
        ns = other.metadata.namespace
        for name in pod_claim_names(other):
            if claim_key(ns, name) in self.rwop_claims:
                self.conflicts += multiplier


def _claims_used(nodes: list[NodeInfo], wanted: frozenset[str]) -> int:
    """How many of `wanted` some pod on the nodes uses (upstream IsPVCUsedByPods per claim)."""
    used: set[str] = set()
    for ni in nodes:
        for pi in ni.pods:
            p = pi.pod
            if not p.spec.volumes:
                continue
            ns = p.metadata.namespace
            for name in pod_claim_names(p):
                key = claim_key(ns, name)
                if key in wanted:
                    used.add(key)
    return len(used)


class VolumeRestrictions(PreFilterPlugin, FilterPlugin, PreFilterExtensions, EnqueueExtensions):
    NAME = NAME

    def __init__(
        self,
        handle: Handle,
        listers: VolumeListers,
        *,
        skip_deferred: bool = False,
        reason: str = ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT,
    ) -> None:
        self.skip_deferred = skip_deferred
        self.reason = reason
        self.handle = handle
        self.listers = listers

    def name(self) -> str:
        return NAME

    def pre_filter(
        self, state: CycleState, pod: types_pb2.Pod, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        if self.skip_deferred and is_pod_resize_deferred(pod):
            return None, SKIP  # KEP-5836: nothing to say about a deferred resize
        if not has_claims(pod):
            return None, SKIP
        ns = pod.metadata.namespace
        rwop: set[str] = set()
        for name in pod_claim_names(pod):
            claim = self.listers.claims.get(name, ns)
            if claim is None:
                return None, unresolvable(f'persistentvolumeclaim "{name}" not found')
            if READ_WRITE_ONCE_POD in claim.spec.access_modes:
                rwop.add(claim_key(ns, name))
        if not rwop:
            return None, SKIP
        wanted = frozenset(rwop)
        all_nodes = self.handle.snapshot_shared_lister().node_infos().list()
        conflicts = _claims_used(all_nodes, wanted)
        if not conflicts:
            return None, SKIP
        state.write(PRE_FILTER_STATE_KEY, _PreFilterState(wanted, conflicts))
        return None, SUCCESS

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return self

    def add_pod(
        self, state: CycleState, pod: types_pb2.Pod, pod_to_add: PodInfo, node: NodeInfo
    ) -> Status:
        s = state.read(PRE_FILTER_STATE_KEY)
        if not isinstance(s, _PreFilterState):
            return as_error(f"reading {PRE_FILTER_STATE_KEY!r} from cycleState: not found")
        s.update_with_pod(pod_to_add.pod, 1)
        return SUCCESS

    def remove_pod(
        self, state: CycleState, pod: types_pb2.Pod, pod_to_remove: PodInfo, node: NodeInfo
    ) -> Status:
        s = state.read(PRE_FILTER_STATE_KEY)
        if not isinstance(s, _PreFilterState):
            return as_error(f"reading {PRE_FILTER_STATE_KEY!r} from cycleState: not found")
        s.update_with_pod(pod_to_remove.pod, -1)
        return SUCCESS

    def filter(self, state: CycleState, pod: types_pb2.Pod, node: NodeInfo) -> Status:
        s = state.read(PRE_FILTER_STATE_KEY)
        if not isinstance(s, _PreFilterState):
            return as_error(f"reading {PRE_FILTER_STATE_KEY!r} from cycleState: not found")
        if s.conflicts > 0:
            return unschedulable(self.reason)
        return SUCCESS

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            # spec.volumes is immutable: only a deletion releases a claim.
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD, ActionType.DELETE),
                self.is_schedulable_after_pod_deleted,
            ),
            # A claim must exist for its access modes to be read.
            ClusterEventWithHint(
                ClusterEvent(EventResource.PVC, ActionType.ADD),
                self.is_schedulable_after_claim_change,
            ),
            ClusterEventWithHint(ClusterEvent(EventResource.NODE, ActionType.ADD)),
        ]

    def is_schedulable_after_pod_deleted(
        self, pod: types_pb2.Pod, old: object, new: object
    ) -> QueueingHint:
        """Queue when the deleted pod used one of the pod's claims."""
        if not isinstance(old, types_pb2.Pod):
            return QueueingHint.QUEUE
        if old.metadata.namespace != pod.metadata.namespace:
            return QueueingHint.SKIP
        mine = set(pod_claim_names(pod))
        if any(name in mine for name in pod_claim_names(old)):
            return QueueingHint.QUEUE
        return QueueingHint.SKIP

    def is_schedulable_after_claim_change(
        self, pod: types_pb2.Pod, old: object, new: object
    ) -> QueueingHint:
        """Queue when the claim is one of the pod's."""
        if not isinstance(new, types_pb2.PersistentVolumeClaim):
            return QueueingHint.QUEUE
        if new.metadata.namespace != pod.metadata.namespace:
            return QueueingHint.SKIP
        if new.metadata.name in set(pod_claim_names(pod)):
            return QueueingHint.QUEUE
        return QueueingHint.SKIP


def new(args: PluginArgs, handle: Handle) -> VolumeRestrictions:
    return VolumeRestrictions(
        handle,
        volume_listers(handle),
        skip_deferred=resize_preemption_enabled(handle.gates),
        reason=conflict_reason(VersionRules.at(handle.gates.version)),
    )
