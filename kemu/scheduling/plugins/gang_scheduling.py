"""GangScheduling: all or nothing for the pods of a group with a Gang policy (KEP-4671;
upstream pkg/scheduler/framework/plugins/gangscheduling/gangscheduling.go).

A no-op unless GenericWorkload is on, and GangScheduling too before 1.37 (folded into
GenericWorkload then); which group a pod is in: kemu.scheduling.pod_group_state.

Per emulated version (the upstream file at each):
- 1.35 (Workload v1alpha1, `spec.workloadRef`): PreEnqueue, Reserve/Unreserve, Permit. The
  group's policy is the Workload's pod group entry of that name. PreEnqueue holds a member
  until the Workload exists (`waiting for pods's workload "w" to appear in scheduling queue`,
  upstream's typo), its entry exists (`pod group "g" doesn't exist for a workload "w"`) and the
  scheduler knows minCount members (`waiting for minCount pods from a gang to appear in
  scheduling queue`). Reserve marks the member assumed in its group, Unreserve forgets it.
  Permit waits (`waiting for minCount pods from a gang to be waiting on permit`) until
  assumed+assigned >= minCount, activating the group's unscheduled members, with the group's
  shared 5-minute deadline; the member that completes the quorum allows every assumed one.
  Events: Pod/Add (same workloadRef) and Workload/Add (same name).
- 1.36 (PodGroup v1alpha2, `spec.schedulingGroup.podGroupName`): PreEnqueue (`waiting for
  pods's pod group "g" to appear in scheduling queue`), Permit (`waiting for minCount pods from
  a gang to be scheduled`, 5 minutes from each member's Permit) and PlacementFeasible; the
  scheduler itself marks members assumed. Events: UnscheduledPod/Add, AssignedPod/Add (same
  group), PodGroup/Add (same name), PodGroup/Update (minCount went down; a non-gang policy on
  either side queues, "unexpected").
- 1.37 (PodGroup v1beta1): PreEnqueue (typo fixed: `waiting for pod's pod group ...`) and
  PlacementFeasible only: no Permit, the pod-group cycle is all or nothing by itself.

PlacementFeasible (1.36+, called by the pod-group cycle before the first member and after
each): with `remaining` members not yet tried and `scheduled` (assumed+assigned) members,
`remaining+scheduled < minCount` is Unschedulable `minCount (m) cannot be satisfied: s
scheduled, r remaining`, `scheduled < minCount` is Wait `minCount (m) is not yet satisfied:
...`, otherwise Success. At 1.37 a Basic group counts as minCount 1 (upstream getMinCount):
it is placed once one member is; at 1.36 it is always Success.

CompositePodGroups (1.37, gate CompositePodGroup; upstream's preEnqueueWithHierarchies and
checkCPGHierarchyReadiness, kemu.scheduling.composite_pod_groups for the trees): a member of a
PodGroup with a parent is held (`waiting for composite pod group "root" tree to meet quorum`)
until the tree's root CPG is known and has minGroupCount ready children (a PodGroup is ready
with minCount pods, a CPG with minGroupCount ready children; Basic counts 1). The pod-group
cycle asks PlacementFeasible for each CPG of the tree too, counting its children: remaining
children not yet tried and children scheduled, against minGroupCount (1 for Basic), with the
same messages. Events: CompositePodGroup/Add; the pod and PodGroup hints queue a pod whose
tree is the added object's (upstream areSameHierarchy).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Final

from kemu.api.v1 import types_pb2
from kemu.component.version import Version
from kemu.machinery.keys import object_key
from kemu.scheduling.composite_pod_groups import GroupKey, WorkloadForest, min_group_count
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
    Handle,
    ObjectLister,
    PluginArgs,
)
from kemu.scheduling.plugins.helpers import check_arg_keys
from kemu.scheduling.pod_group_state import (
    DEFAULT_POD_GROUP_SCHEDULING_TIMEOUT,
    GroupMembership,
    MembershipField,
    PodGroupKey,
    PodGroupState,
    PodGroupStates,
    min_count,
)
from kemu.scheduling.status import SUCCESS, Code, Status, as_error, unresolvable

logger = logging.getLogger(__name__)

NAME: Final = "GangScheduling"

PERMIT_TIMEOUT: Final = DEFAULT_POD_GROUP_SCHEDULING_TIMEOUT
"""1.36's permitTimeoutDuration (5 minutes)."""

WAITING_FOR_MIN_COUNT_IN_QUEUE: Final = (
    "waiting for minCount pods from a gang to appear in scheduling queue"
)
WAITING_ON_PERMIT_1_35: Final = "waiting for minCount pods from a gang to be waiting on permit"
WAITING_TO_BE_SCHEDULED: Final = "waiting for minCount pods from a gang to be scheduled"


def waiting_for_tree_quorum(root: str) -> str:
    return f'waiting for composite pod group "{root}" tree to meet quorum'


_TYPO_FIXED_SINCE: Final = Version(1, 37)
_BASIC_COUNTS_ONE_SINCE: Final = Version(1, 37)


@dataclass(frozen=True, slots=True)
class PlacementProgress:
    """Where a pod-group cycle stands (upstream 1.37 framework.PlacementProgress): members
    not yet tried, and members assumed or assigned (the cycle's own assumptions included)."""

    remaining: int
    scheduled: int


class GangScheduling(EnqueueExtensions):
    """See the module docstring. The extension points it has at the emulated version are the
    ones the profile runs (its class implements them all; each is a no-op where upstream's
    version has none)."""

    NAME = NAME

    def __init__(self, handle: Handle, membership: GroupMembership) -> None:
        self.handle = handle
        self.membership = membership
        self.enabled = membership.enabled and membership.gang
        self._workloads: ObjectLister[types_pb2.Workload] | None = None
        self._pod_groups: ObjectLister[types_pb2.PodGroup] | None = None
        factory = handle.informer_factory()
        if self.enabled and factory is not None:
            if membership.field is MembershipField.WORKLOAD_REF:
                self._workloads = factory.informer(types_pb2.Workload).lister
            else:
                self._pod_groups = factory.informer(types_pb2.PodGroup).lister
        self._pods_s = "pod's" if handle.gates.version >= _TYPO_FIXED_SINCE else "pods's"

    def name(self) -> str:
        return NAME

    # ------------------------------------------------------------ lookups

    def _states(self) -> PodGroupStates | None:
        return self.handle.pod_group_states()

    def _state(self, key: PodGroupKey) -> PodGroupState | None:
        states = self._states()
        return None if states is None else states.get(key)

    def policy(self, key: PodGroupKey) -> tuple[types_pb2.PodGroupSchedulingPolicy | None, Status]:
        """The group's policy, or None with the PreEnqueue status that says why not."""
        if self._workloads is not None:
            workload = self._workloads.get(key.workload, key.namespace)
            if workload is None:
                return None, unresolvable(
                    f'waiting for {self._pods_s} workload "{key.workload}" to appear in '
                    "scheduling queue"
                )
            for template in workload.spec.pod_group_templates:
                if template.name == key.pod_group:
                    return template.scheduling_policy, SUCCESS
            return None, unresolvable(
                f'pod group "{key.pod_group}" doesn\'t exist for a workload "{key.workload}"'
            )
        if self._pod_groups is not None:
            pg = self._pod_groups.get(key.name, key.namespace)
            if pg is None:
                return None, unresolvable(
                    f'waiting for {self._pods_s} pod group "{key.name}" to appear in '
                    "scheduling queue"
                )
            return pg.spec.scheduling_policy, SUCCESS
        return None, as_error("no lister for the pod's group")

    def _min_count_of(self, key: PodGroupKey) -> tuple[int | None, Status]:
        policy, status = self.policy(key)
        if policy is None:
            return None, status
        return min_count(policy), SUCCESS

    # ------------------------------------------------------------ PreEnqueue

    def pre_enqueue(self, pod: types_pb2.Pod) -> Status:
        if not self.enabled:
            return SUCCESS
        key = self.membership.key(pod)
        if key is None:
            return SUCCESS
        forest = self._forest()
        if forest is not None and forest.in_tree(key):
            policy, status = self.policy(key)
            if policy is None:
                return status
            return self._tree_ready(forest, key)
        minimum, status = self._min_count_of(key)
        if minimum is None:
            return status  # not found (held) or Basic (Success)
        state = self._state(key)
        if state is None or state.all_pods_count() < minimum:
            return unresolvable(WAITING_FOR_MIN_COUNT_IN_QUEUE)
        return SUCCESS

    def _forest(self) -> WorkloadForest | None:
        states = self._states()
        forest = states.forest if states is not None else None
        return forest if forest is not None and forest.enabled else None

    def _pods_count(self, key: PodGroupKey) -> int:
        state = self._state(key)
        return 0 if state is None else state.all_pods_count()

    def _tree_ready(self, forest: WorkloadForest, key: PodGroupKey) -> Status:
        """upstream checkCPGHierarchyReadiness, from the PodGroup's parent."""
        parent = forest.parent_of(GroupKey.pod_group(key.namespace, key.name))
        assert parent is not None
        root = forest.root_of(parent)
        cpg = forest.composite_pod_group(root) if root is not None else None
        if root is None or cpg is None:
            return unresolvable(waiting_for_tree_quorum(parent.name))
        if forest.ready_count(root, self._pods_count) < min_group_count(cpg):
            return unresolvable(waiting_for_tree_quorum(root.name))
        return SUCCESS

    # ------------------------------------------------------------ Reserve (1.35)

    def reserve(self, state: CycleState, pod: types_pb2.Pod, node_name: str) -> Status:
        if self.enabled and self.membership.field is MembershipField.WORKLOAD_REF:
            states = self._states()
            if states is not None:
                states.assume_pod(pod)
        return SUCCESS

    def unreserve(self, state: CycleState, pod: types_pb2.Pod, node_name: str) -> None:
        if self.enabled and self.membership.field is MembershipField.WORKLOAD_REF:
            states = self._states()
            if states is not None:
                states.forget_pod(pod)

    # ------------------------------------------------------------ Permit (1.35, 1.36)

    def permit(self, state: CycleState, pod: types_pb2.Pod, node_name: str) -> tuple[Status, float]:
        if not (self.enabled and self.membership.permit):
            return SUCCESS, 0.0
        key = self.membership.key(pod)
        if key is None:
            return SUCCESS, 0.0
        policy, status = self.policy(key)
        if policy is None:
            # Upstream wraps the lister's NotFound (a deleted group): an Error, retried.
            if self._workloads is not None:
                if status.is_rejected() and "doesn't exist" in status.message():
                    return as_error(status.message()), 0.0
                return as_error(
                    f"failed to get workload {key.namespace}/{key.workload}: "
                    f'workload.scheduling.k8s.io "{key.workload}" not found'
                ), 0.0
            return as_error(
                f"failed to get podGroup {key.namespace}/{key.name}: "
                f'podgroup.scheduling.k8s.io "{key.name}" not found'
            ), 0.0
        minimum = min_count(policy)
        if minimum is None:
            return SUCCESS, 0.0
        group = self._state(key)
        if group is None:
            return as_error("internal pod group state doesn't exist for a pod's workload"), 0.0
        if group.scheduled_pods_count() < minimum:
            unscheduled = group.unscheduled_pods()
            if state.pod_group_scheduling_cycle is None:
                # (in a pod-group cycle the others are being tried with it: in flight, an
                # Activate would requeue them at once when the group fails)
                self.handle.activate(unscheduled)
            logger.debug(
                "Quorum is not met for gang %s: %s waits (activated %d)",
                key,
                object_key(pod),
                len(unscheduled),
            )
            if self.membership.field is MembershipField.WORKLOAD_REF:
                return Status(Code.WAIT, (WAITING_ON_PERMIT_1_35,)), group.scheduling_timeout()
            return Status(Code.WAIT, (WAITING_TO_BE_SCHEDULED,)), PERMIT_TIMEOUT
        assumed = group.assumed_pods()
        logger.debug("Quorum is met for gang %s: allowing %d pods", key, len(assumed))
        for uid in assumed:
            waiting = self.handle.get_waiting_pod(uid)
            if waiting is not None:
                waiting.allow(NAME)
        return SUCCESS, 0.0

    # ------------------------------------------------------------ PlacementFeasible (1.36+)

    def placement_feasible(self, key: PodGroupKey, progress: PlacementProgress) -> Status:
        if not self.enabled:
            return SUCCESS
        policy, status = self.policy(key)
        if policy is None:
            return as_error(
                f"failed to get podGroup {key} to compute gang feasibility: {status.message()}"
            )
        minimum = min_count(policy)
        if minimum is None:
            if self.handle.gates.version < _BASIC_COUNTS_ONE_SINCE:
                return SUCCESS
            minimum = 1  # upstream getMinCount: a Basic group needs one pod placed
        return _min_count_feasible(minimum, progress)

    def composite_placement_feasible(
        self, cpg: types_pb2.CompositePodGroup, progress: PlacementProgress
    ) -> Status:
        """PlacementFeasible for a CompositePodGroup of the tree being scheduled: its
        children, against minGroupCount (1 for Basic: upstream getMinCount)."""
        if not self.enabled:
            return SUCCESS
        return _min_count_feasible(min_group_count(cpg), progress)

    # ------------------------------------------------------------ events

    def events_to_register(self) -> list[ClusterEventWithHint]:
        if not self.enabled:
            return []
        if self.membership.field is MembershipField.WORKLOAD_REF:
            return [
                ClusterEventWithHint(
                    ClusterEvent(EventResource.POD, ActionType.ADD),
                    self.is_schedulable_after_pod_added,
                ),
                ClusterEventWithHint(
                    ClusterEvent(EventResource.WORKLOAD, ActionType.ADD),
                    self.is_schedulable_after_workload_added,
                ),
            ]
        return [
            ClusterEventWithHint(
                ClusterEvent(EventResource.UNSCHEDULED_POD, ActionType.ADD),
                self.is_schedulable_after_pod_added,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.ASSIGNED_POD, ActionType.ADD),
                self.is_schedulable_after_pod_added,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD_GROUP, ActionType.ADD),
                self.is_schedulable_after_pod_group_added,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD_GROUP, ActionType.UPDATE_OBJECT),
                self.is_schedulable_after_pod_group_updated,
            ),
            *(
                [
                    ClusterEventWithHint(
                        ClusterEvent(EventResource.COMPOSITE_POD_GROUP, ActionType.ADD),
                        self.is_schedulable_after_composite_pod_group_added,
                    )
                ]
                if self._forest() is not None
                else []
            ),
        ]

    def _same_tree(self, key: PodGroupKey, target: GroupKey) -> bool:
        """upstream areSameHierarchy (the same group with CompositePodGroup off)."""
        forest = self._forest()
        own = GroupKey.pod_group(key.namespace, key.name)
        if forest is None:
            return own == target
        return own == target or forest.same_tree(own, target)

    def is_schedulable_after_pod_added(
        self, pod: types_pb2.Pod, old: object, new: object
    ) -> QueueingHint:
        """Queue when the added pod is in the pod's group (or its tree)."""
        if not isinstance(new, types_pb2.Pod):
            return QueueingHint.QUEUE
        key, added = self.membership.key(pod), self.membership.key(new)
        if key is None or added is None:
            return QueueingHint.SKIP
        if key == added or self._same_tree(key, GroupKey.pod_group(added.namespace, added.name)):
            return QueueingHint.QUEUE
        return QueueingHint.SKIP

    def is_schedulable_after_workload_added(
        self, pod: types_pb2.Pod, old: object, new: object
    ) -> QueueingHint:
        if not isinstance(new, types_pb2.Workload):
            return QueueingHint.QUEUE
        key = self.membership.key(pod)
        if (
            key is None
            or key.namespace != new.metadata.namespace
            or key.workload != new.metadata.name
        ):
            return QueueingHint.SKIP
        return QueueingHint.QUEUE

    def is_schedulable_after_pod_group_added(
        self, pod: types_pb2.Pod, old: object, new: object
    ) -> QueueingHint:
        if not isinstance(new, types_pb2.PodGroup):
            return QueueingHint.QUEUE
        key = self.membership.key(pod)
        target = GroupKey.pod_group(new.metadata.namespace, new.metadata.name)
        if key is None or not self._same_tree(key, target):
            return QueueingHint.SKIP
        return QueueingHint.QUEUE

    def is_schedulable_after_composite_pod_group_added(
        self, pod: types_pb2.Pod, old: object, new: object
    ) -> QueueingHint:
        if not isinstance(new, types_pb2.CompositePodGroup):
            return QueueingHint.QUEUE
        key = self.membership.key(pod)
        target = GroupKey.composite(new.metadata.namespace, new.metadata.name)
        if key is None or not self._same_tree(key, target):
            return QueueingHint.SKIP
        return QueueingHint.QUEUE

    def is_schedulable_after_pod_group_updated(
        self, pod: types_pb2.Pod, old: object, new: object
    ) -> QueueingHint:
        """Queue when the pod's group's minCount went down."""
        if not isinstance(old, types_pb2.PodGroup) or not isinstance(new, types_pb2.PodGroup):
            return QueueingHint.QUEUE
        if self.is_schedulable_after_pod_group_added(pod, None, new) is QueueingHint.SKIP:
            return QueueingHint.SKIP
        old_min, new_min = (
            min_count(old.spec.scheduling_policy),
            min_count(new.spec.scheduling_policy),
        )
        if old_min is None or new_min is None:
            return QueueingHint.QUEUE  # upstream 1.36: "unexpected, enqueuing pod"
        return QueueingHint.QUEUE if new_min < old_min else QueueingHint.SKIP


def _min_count_feasible(minimum: int, progress: PlacementProgress) -> Status:
    scheduled, remaining = progress.scheduled, progress.remaining
    if remaining + scheduled < minimum:
        return Status(
            Code.UNSCHEDULABLE,
            (
                f"minCount ({minimum}) cannot be satisfied: {scheduled} scheduled, "
                f"{remaining} remaining",
            ),
        )
    if scheduled < minimum:
        return Status(
            Code.WAIT,
            (
                f"minCount ({minimum}) is not yet satisfied: {scheduled} scheduled, "
                f"{remaining} remaining",
            ),
        )
    return SUCCESS


def new(args: PluginArgs, handle: Handle) -> GangScheduling:
    check_arg_keys(args, (), NAME)
    states = handle.pod_group_states()
    membership = states.membership if states is not None else GroupMembership.of(handle.gates)
    return GangScheduling(handle, membership)
