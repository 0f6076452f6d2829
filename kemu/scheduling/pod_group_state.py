"""Pod groups in the scheduler: which group a pod belongs to, per emulated version, and each
group's runtime state (its members: all, unscheduled, assumed, assigned).

Membership (`GroupMembership.of(gates)`, resolved once per process):
- 1.35 (KEP-4671 alpha): `pod.spec.workloadRef{name, podGroup, podGroupReplicaKey}` names a
  Workload and one of its pod groups; the group is that triple in the pod's namespace
  (upstream pkg/scheduler/backend/workloadmanager/podgroupstate.go newPodGroupKey).
- 1.36+ (KEP-5832): `pod.spec.schedulingGroup.podGroupName` names a PodGroup object in the pod's
  namespace (upstream pkg/scheduler/backend/cache, PodGroupStates().Get(ns, name)).
- only with GenericWorkload on (upstream's queue: `isPodGroupMember = isGenericWorkloadEnabled
  && pod.Spec.SchedulingGroup != nil`); with it off the field is ignored and the pod is
  scheduled alone.
- KEP-5836 (keps/sig-scheduling/5836-*, alpha): a pod whose resize is Deferred is never a
  member ("`isPodGroupMember` return[s] false for deferred resize pods"): it is queued, retried
  and preempted for individually.

State (`PodGroupState`, upstream's podGroupState of 1.35's workloadmanager, which 1.36 moved
into the scheduler cache): every member the scheduler knows, split into unscheduled, assumed
(reserved, waiting at Permit or binding) and assigned (bound). At 1.35 GangScheduling's
Reserve/Unreserve assume and forget; from 1.36 the scheduler's own assume and forget do. The
scheduling deadline (1.35) is shared by the group's members at Permit: the first member that
waits sets it 5 minutes ahead; a member that arrives after it passed starts a new one.

The event handlers drive `PodGroupStates` (add/update/delete of pods, assigned or not); a
group's state goes once its last member is deleted.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from kemu.api.v1 import types_pb2
from kemu.component.clock import Clock
from kemu.component.featuregate import GANG_SCHEDULING, GENERIC_WORKLOAD, FeatureGates
from kemu.component.version import Version
from kemu.machinery.resources import is_pod_resize_deferred

if TYPE_CHECKING:
    from kemu.scheduling.composite_pod_groups import WorkloadForest

__all__ = [
    "DEFAULT_POD_GROUP_SCHEDULING_TIMEOUT",
    "GroupMembership",
    "PodGroupKey",
    "PodGroupState",
    "PodGroupStates",
]

DEFAULT_POD_GROUP_SCHEDULING_TIMEOUT: Final = 300.0
"""How long a gang's members wait at Permit for the quorum (upstream
DefaultSchedulingTimeoutDuration, 1.35's workloadmanager; 1.36's plugin permitTimeoutDuration):
5 minutes."""

_POD_GROUP_API_SINCE: Final = Version(1, 36)
_NO_PERMIT_SINCE: Final = Version(1, 37)


@dataclass(frozen=True, slots=True)
class PodGroupKey:
    """One group: its namespace and name. At 1.35 the name is upstream's podGroupKey.GetName():
    "<workload>-<podGroup>[-<replicaKey>]"; from 1.36 the PodGroup object's name. `workload`
    and `pod_group` keep 1.35's parts (the Workload to look up and its pod group entry)."""

    namespace: str
    name: str
    workload: str = ""
    pod_group: str = ""

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


class MembershipField(enum.Enum):
    """Which pod field names the group (none: groups are off)."""

    NONE = "none"
    WORKLOAD_REF = "spec.workloadRef"  # 1.35
    SCHEDULING_GROUP = "spec.schedulingGroup"  # 1.36+


@dataclass(frozen=True, slots=True)
class GroupMembership:
    """How this process tells a pod's group, resolved once from the gates (see the module
    docstring). `gang`: the gang plugin's behaviour is on (GangScheduling at 1.35/1.36; folded
    into GenericWorkload at 1.37); `group_cycle`: pods of a group go through the pod-group
    scheduling cycle (1.36+); `permit`: GangScheduling holds members at Permit (1.35, 1.36);
    `resize_preemption`: KEP-5836's gate (a deferred resize is never a member)."""

    field: MembershipField
    gang: bool = False
    group_cycle: bool = False
    permit: bool = False
    resize_preemption: bool = False

    @staticmethod
    def of(gates: FeatureGates, *, resize_preemption: bool = False) -> GroupMembership:
        if not gates.enabled(GENERIC_WORKLOAD):
            return GroupMembership(MembershipField.NONE)
        version = gates.version
        pod_group_api = version >= _POD_GROUP_API_SINCE
        return GroupMembership(
            MembershipField.SCHEDULING_GROUP if pod_group_api else MembershipField.WORKLOAD_REF,
            gang=gates.enabled(GANG_SCHEDULING),
            group_cycle=pod_group_api,
            permit=version < _NO_PERMIT_SINCE,
            resize_preemption=resize_preemption,
        )

    @property
    def enabled(self) -> bool:
        return self.field is not MembershipField.NONE

    def key(self, pod: types_pb2.Pod) -> PodGroupKey | None:
        """The pod's group, or None when it is in none (or groups are off)."""
        field = self.field
        if field is MembershipField.NONE:
            return None
        if self.resize_preemption and pod.spec.node_name and is_pod_resize_deferred(pod):
            return None  # KEP-5836: queued and preempted for individually
        ns = pod.metadata.namespace
        if field is MembershipField.SCHEDULING_GROUP:
            if not pod.spec.HasField("scheduling_group"):
                return None
            group = pod.spec.scheduling_group
            if not group.HasField("pod_group_name"):
                return None
            return PodGroupKey(ns, group.pod_group_name)
        if not pod.spec.HasField("workload_ref"):
            return None
        ref = pod.spec.workload_ref
        name = f"{ref.name}-{ref.pod_group}"
        if ref.pod_group_replica_key:
            name = f"{name}-{ref.pod_group_replica_key}"
        return PodGroupKey(ns, name, ref.name, ref.pod_group)


def min_count(policy: types_pb2.PodGroupSchedulingPolicy) -> int | None:
    """The gang's minCount, or None for a Basic (or empty) policy."""
    if policy.HasField("gang"):
        return policy.gang.min_count
    return None


class PodGroupState:
    """One group's members by uid; see the module docstring (upstream podGroupState)."""

    def __init__(self, key: PodGroupKey, clock: Clock) -> None:
        self.key = key
        self._clock = clock
        self._all: dict[str, types_pb2.Pod] = {}
        self._unscheduled: set[str] = set()
        self._assumed: set[str] = set()
        self._assigned: set[str] = set()
        # An assumed member's node (the pod object keeps no nodeName until bound).
        self._assumed_nodes: dict[str, str] = {}
        self._deadline: float | None = None

    # ------------------------------------------------------------ informer events

    def add_pod(self, pod: types_pb2.Pod) -> None:
        uid = pod.metadata.uid
        self._all[uid] = pod
        if pod.spec.node_name:
            self._assigned.add(uid)
            self._unscheduled.discard(uid)
            self._assumed.discard(uid)
            self._assumed_nodes.pop(uid, None)
        elif uid not in self._assumed:
            self._unscheduled.add(uid)

    def update_pod(self, old: types_pb2.Pod, new: types_pb2.Pod) -> None:
        uid = new.metadata.uid
        self._all[uid] = new
        if new.spec.node_name and not old.spec.node_name:
            self._assigned.add(uid)
            self._unscheduled.discard(uid)
            self._assumed.discard(uid)
            self._assumed_nodes.pop(uid, None)
        elif uid not in self._assumed and uid not in self._assigned:
            self._unscheduled.add(uid)

    def delete_pod(self, uid: str) -> None:
        self._all.pop(uid, None)
        self._assumed_nodes.pop(uid, None)
        self._unscheduled.discard(uid)
        self._assumed.discard(uid)
        self._assigned.discard(uid)

    def empty(self) -> bool:
        return not self._all

    # ------------------------------------------------------------ the cycles

    def assume_pod(self, uid: str, node: str = "") -> None:
        """The member reached Reserve (1.35) or was assumed by the scheduler (1.36+), on
        `node`."""
        pod = self._all.get(uid)
        if pod is None:
            return  # deleted meanwhile
        (self._assigned if pod.spec.node_name else self._assumed).add(uid)
        if node and not pod.spec.node_name:
            self._assumed_nodes[uid] = node
        self._unscheduled.discard(uid)

    def forget_pod(self, uid: str) -> None:
        """The member's reservation is undone: back to unscheduled (or assigned if bound)."""
        pod = self._all.get(uid)
        if pod is None:
            return
        self._assumed.discard(uid)
        self._assumed_nodes.pop(uid, None)
        (self._assigned if pod.spec.node_name else self._unscheduled).add(uid)

    def scheduling_timeout(self) -> float:
        """Seconds until the group's shared deadline at Permit (1.35 SchedulingTimeout): a new
        deadline when there is none or the last one passed."""
        now = self._clock.monotonic()
        if self._deadline is None or self._deadline < now:
            self._deadline = now + DEFAULT_POD_GROUP_SCHEDULING_TIMEOUT
        return self._deadline - now

    # ------------------------------------------------------------ reads

    def all_pods_count(self) -> int:
        return len(self._all)

    def scheduled_pods_count(self) -> int:
        """Assumed or assigned members."""
        return len(self._assumed) + len(self._assigned)

    def all_pods(self) -> list[types_pb2.Pod]:
        return list(self._all.values())

    def unscheduled_pods(self) -> list[types_pb2.Pod]:
        return [self._all[uid] for uid in self._unscheduled]

    def scheduled_pods(self) -> list[tuple[types_pb2.Pod, str]]:
        """The assumed and assigned members with their nodes (upstream ScheduledPods); an
        assumed one whose node was not told has ""."""
        out = [(self._all[uid], self._assumed_nodes.get(uid, "")) for uid in self._assumed]
        out.extend((self._all[uid], self._all[uid].spec.node_name) for uid in self._assigned)
        return out

    def assumed_pods(self) -> set[str]:
        return set(self._assumed)

    def assigned_pods(self) -> set[str]:
        return set(self._assigned)

    def __repr__(self) -> str:
        return (
            f"PodGroupState({self.key}, all={len(self._all)}, unscheduled={len(self._unscheduled)}, "
            f"assumed={len(self._assumed)}, assigned={len(self._assigned)})"
        )


class PodGroupStates:
    """Every group's state, driven by the scheduler's pod events (upstream 1.35
    WorkloadManager; 1.36's cache PodGroupStates). Pods in no group are ignored. `forest`
    (1.37, GenericWorkload): the PodGroups and CompositePodGroups observed and their trees
    (kemu.scheduling.composite_pod_groups), fed by the scheduler's PodGroup and
    CompositePodGroup events."""

    def __init__(
        self, membership: GroupMembership, clock: Clock, forest: WorkloadForest | None = None
    ) -> None:
        self.membership = membership
        self.forest = forest
        self._clock = clock
        self._states: dict[PodGroupKey, PodGroupState] = {}

    def add_pod(self, pod: types_pb2.Pod) -> None:
        key = self.membership.key(pod)
        if key is None:
            return
        state = self._states.get(key)
        if state is None:
            state = self._states[key] = PodGroupState(key, self._clock)
        state.add_pod(pod)

    def update_pod(self, old: types_pb2.Pod, new: types_pb2.Pod) -> None:
        old_key, new_key = self.membership.key(old), self.membership.key(new)
        if old_key is not None and old_key != new_key:
            # (the field is immutable; a deferred resize leaves its group, KEP-5836)
            self._delete(old_key, old.metadata.uid)
        if new_key is None:
            return
        state = self._states.get(new_key)
        if state is None:
            self.add_pod(new)
            return
        state.update_pod(old, new)

    def delete_pod(self, pod: types_pb2.Pod) -> None:
        key = self.membership.key(pod)
        if key is not None:
            self._delete(key, pod.metadata.uid)

    def _delete(self, key: PodGroupKey, uid: str) -> None:
        state = self._states.get(key)
        if state is None:
            return
        state.delete_pod(uid)
        if state.empty():
            del self._states[key]

    def get(self, key: PodGroupKey) -> PodGroupState | None:
        return self._states.get(key)

    def for_pod(self, pod: types_pb2.Pod) -> PodGroupState | None:
        key = self.membership.key(pod)
        return None if key is None else self._states.get(key)

    def assume_pod(self, pod: types_pb2.Pod) -> None:
        state = self.for_pod(pod)
        if state is not None:
            state.assume_pod(pod.metadata.uid, pod.spec.node_name)

    def forget_pod(self, pod: types_pb2.Pod) -> None:
        state = self.for_pod(pod)
        if state is not None:
            state.forget_pod(pod.metadata.uid)

    def __iter__(self) -> Iterator[PodGroupState]:
        return iter(list(self._states.values()))

    def __len__(self) -> int:
        return len(self._states)
