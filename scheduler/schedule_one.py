"""One pod at a time: the scheduling cycle (serial) and the binding cycle (concurrent).

Upstream pkg/scheduler/schedule_one.go. `Scheduler.run` pops pods from the queue; each pod
goes through a scheduling cycle against the cycle's snapshot (PreFilter, Filter with nominated
pods, PostFilter on failure, Score, host selection, assume, Reserve, Permit), then a binding
cycle in its own task (the KEP-5278 expected-placement NNN, WaitOnPermit, PreBind, Bind,
PostBind), so that slow binding never holds up the next pod. Every Pop is paired with Done.

NNN writes follow pkg/scheduler/schedule_one.go handleSchedulingFailure: the nominating info of a failed cycle says whether the
pod's status.nominatedNodeName is set, cleared, or left alone.

KEP-5836 (InPlacePodVerticalScalingSchedulerPreemption, KEP-5836's design, keps/sig-scheduling/5836-*): a running
pod whose resize is Deferred comes through the same cycle, restricted to its node by the
plugins (kemu.scheduling.deferred). It is already in the cache, bound: it is never assumed
(the cache would refuse it) and goes through no Reserve (nothing is to be reserved for a
binding that never comes; upstream's exact path is not known), only Permit, where
DeferredPodScheduling parks it. Every outcome is a failure for it: it goes back to the
unschedulable pool (backoff after an error) even though it has a nodeName, with no
nominatedNodeName (neither the PATCH nor the nominator), no PodScheduled=False and, as in the
alpha, no FailedScheduling event. A preemption it triggers still deletes its victims.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import random
import time
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Final, Protocol

import anyio
import anyio.lowlevel
from anyio.abc import TaskGroup

from kemu.api.v1 import types_pb2
from kemu.client.flowcontrol import ThrottleWaits, measure_waits
from kemu.client.interface import ApiClient
from kemu.client.pod_status import condition_change, patch_pod_status
from kemu.component.clock import Clock
from kemu.component.featuregate import (
    NOMINATED_NODE_NAME_FOR_EXPECTATION,
    POD_OBSERVED_GENERATION_TRACKING,
    PREFER_NOMINATED_NODE,
    FeatureGates,
)
from kemu.component.logs import V
from kemu.component.version_rules import VersionRules
from kemu.machinery.errors import ApiError, Conflict, NotFound
from kemu.machinery.keys import object_key
from kemu.machinery.kinds import EVENT_NORMAL, EVENT_WARNING
from kemu.scheduling.composite_pod_groups import CompositePodGroupKey
from kemu.scheduling.deferred import is_deferred_resize_pod, resize_preemption_enabled
from kemu.scheduling.events import ASSIGNED_POD_DELETE
from kemu.scheduling.filter_score import (
    COLUMNS_WHERE_WORTH_IT,
    ColumnPaths,
    FeasibleNodes,
    FilterError,
    FilterScoreFramework,
    PrioritizedNodes,
    find_feasible_nodes,
    prioritize_nodes,
    select_host,
)
from kemu.scheduling.interface import (
    CycleState,
    EventRecorder,
    FitError,
    NodeToStatus,
    ObjectLister,
    PlacementGeneratePlugin,
    PlacementScorePlugin,
    Plugin,
    PodInPreBind,
    QueuedPodInfo,
    SharedLister,
    set_cycle_pod_info,
)
from kemu.scheduling.nominator import PodLister
from kemu.scheduling.plugins import deferred_pod_scheduling
from kemu.scheduling.pod_group_state import PodGroupKey, PodGroupStates
from kemu.scheduling.snapshot import Snapshot
from kemu.scheduling.status import SKIP, Code, Status, as_error, unresolvable
from kemu.scheduling.types import NodeInfo, PodInfo, PostFilterResult, PreFilterResult
from scheduler.api_dispatcher import APIDispatcher, CallSkipped, PodStatusPatchCall
from scheduler.cache.cache import CacheError
from scheduler.cache.interface import SchedulerCache
from scheduler.cycle_observer import (
    DEFERRED_RESIZE,
    NO_OBSERVER,
    SCHEDULE,
    CycleObserver,
)
from scheduler.metrics import PodGroupMetrics, SchedulerMetrics, fast_inc
from scheduler.queue.interface import SchedulingQueue
from scheduler.queue.pod_group_entity import QueuedPodGroupInfo
from scheduler.schedule_one_composite_pod_group import (
    composite_root,
    in_composite_tree,
    schedule_one_composite_pod_group,
    schedule_one_composite_pod_group_entity,
)
from scheduler.schedule_one_podgroup import schedule_one_pod_group

logger = logging.getLogger(__name__)

TURN_SECONDS: Final = 0.02
"""How long the scheduling loop runs cycles back to back before it lets the process's other
tasks (binding cycles, informers, /metrics) run. Upstream runs those on goroutines beside
scheduleOne; here they share one event loop, and `queue.pop()` returns at once while pods are
queued, so a backlog of thousands ran for seconds with nothing bound and no event seen.
After every cycle is too often: the API calls then go out one by one, and every process
spends more CPU a pod (bench/README, "PreemptionAsync": 5 ms and less cost 30-70% more
than 20 ms; 100 ms and more let the bursts through again)."""

MIN_ROUNDS: Final = 8
"""Rounds of the event loop the others get each turn whatever they do: a reply takes a round
to reach its future and another to resume the task that awaits it, and a cheap round looks
like an idle one."""
IDLE_ROUND_SECONDS: Final = 20e-6
"""After MIN_ROUNDS, a round shorter than this ran nothing but the loop's own poll (an idle
round takes ~5 us on uvloop; a gRPC completion and the step of the task it wakes, 50 us and
more)."""
IDLE_ROUNDS: Final = 3
"""Rounds in a row that look idle before the others' turn ends."""


async def others_turn(budget: float) -> None:
    """Lets the process's other tasks (binding cycles, the Calls stream's reader, informers)
    run until they look idle or have had `budget` seconds. One round was not enough: each
    round moves every waiting task by one step and an API call takes two or three, so with a
    backlog queued the binding cycles got a few replies a turn, finished in a burst once the
    queue was empty, and 2500 pods queued at once (ExtendedResource_25Classes/5000pods_500nodes)
    had their calls time out after 30 s (upstream's binding goroutines run beside
    scheduleOne)."""
    start = time.perf_counter()
    end = start + budget
    rounds = idle = 0
    while True:
        await anyio.lowlevel.checkpoint()
        now = time.perf_counter()
        rounds += 1
        if now >= end:
            return
        if rounds > MIN_ROUNDS:
            idle = idle + 1 if now - start < IDLE_ROUND_SECONDS else 0
            if idle >= IDLE_ROUNDS:
                return
        start = now


__all__ = [
    "CycleSettings",
    "FeasibleNodes",
    "FitError",
    "NoNodesAvailable",
    "ScheduleResult",
    "Scheduler",
    "SchedulingError",
    "num_feasible_nodes_to_find",
]

MIN_FEASIBLE_NODES_TO_FIND: Final = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND: Final = 5
BASE_PERCENTAGE_OF_NODES_TO_SCORE: Final = 50
NO_NODES_AVAILABLE: Final = "no nodes available to schedule pods"
POD_SCHEDULED: Final = "PodScheduled"
# The extension points after the node is chosen, as the cycle observer names them.
RESERVE: Final = "Reserve"
PERMIT: Final = "Permit"
WAIT_ON_PERMIT: Final = "WaitOnPermit"
PRE_BIND: Final = "PreBind"
BIND: Final = "Bind"


def num_feasible_nodes_to_find(percentage: int, num_all_nodes: int) -> int:
    """How many feasible nodes to look for before scoring (upstream numFeasibleNodesToFind)."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    adaptive = percentage
    if adaptive <= 0:
        adaptive = BASE_PERCENTAGE_OF_NODES_TO_SCORE - num_all_nodes // 125
        if adaptive < MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND:
            adaptive = MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND
    num = num_all_nodes * adaptive // 100
    return max(num, MIN_FEASIBLE_NODES_TO_FIND)


class SchedulingError(Exception):
    """A cycle that failed for another reason than 'no node fits'."""

    def __init__(self, status: Status) -> None:
        super().__init__(status.message() or str(status))
        self.status = status


class NoNodesAvailable(SchedulingError):
    """The cluster has no node (upstream ErrNoNodesAvailable): the pod is unschedulable, not
    failed with an error (UnschedulableAndUnresolvable, no rejecting plugin, so it is retried
    after its backoff or when a node is added)."""

    def __init__(self) -> None:
        super().__init__(Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (NO_NODES_AVAILABLE,)))


# ---------------------------------------------------------------- what the scheduler drives


class FrameworkLike(FilterScoreFramework, Protocol):
    """The subset of kemu.scheduling.runtime.Framework the cycles use (the part that filters
    and scores, FilterScoreFramework, included)."""

    def profile_name(self) -> str: ...

    @property
    def event_recorder(self) -> EventRecorder: ...

    @property
    def rng(self) -> random.Random: ...

    def percentage_of_nodes_to_score(self) -> int: ...

    def set_snapshot(self, snapshot: SharedLister) -> None: ...

    def set_background(self, tg: TaskGroup | None) -> None: ...

    def has_post_filter_plugins(self) -> bool: ...

    def plugin(self, name: str) -> Plugin | None: ...

    def placement_generate_plugins(self) -> list[PlacementGeneratePlugin]: ...

    def placement_score_plugins(self) -> list[tuple[PlacementScorePlugin, int]]: ...

    def run_pre_filter_plugins(
        self, state: CycleState, pod: types_pb2.Pod, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status, set[str]]: ...

    async def run_post_filter_plugins(
        self, state: CycleState, pod: types_pb2.Pod, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status]: ...

    def run_pre_score_plugins(
        self, state: CycleState, pod: types_pb2.Pod, nodes: list[NodeInfo]
    ) -> Status: ...

    def run_reserve_plugins_reserve(
        self, state: CycleState, pod: types_pb2.Pod, node: str
    ) -> Status: ...

    def run_reserve_plugins_unreserve(
        self, state: CycleState, pod: types_pb2.Pod, node: str
    ) -> None: ...

    def run_permit_plugins(self, state: CycleState, pod: types_pb2.Pod, node: str) -> Status: ...

    def will_wait_on_permit(self, pod: types_pb2.Pod) -> bool: ...

    def reject_waiting_pod(self, uid: str) -> bool: ...

    def add_pod_in_pre_bind(self, uid: str) -> PodInPreBind: ...

    def remove_pod_in_pre_bind(self, uid: str) -> None: ...

    async def wait_on_permit(self, pod: types_pb2.Pod) -> Status: ...

    def run_pre_bind_pre_flights(
        self, state: CycleState, pod: types_pb2.Pod, node: str
    ) -> Status: ...

    async def run_pre_bind_plugins(
        self, state: CycleState, pod: types_pb2.Pod, node: str
    ) -> Status: ...

    async def run_bind_plugins(
        self, state: CycleState, pod: types_pb2.Pod, node: str
    ) -> Status: ...

    def run_post_bind_plugins(self, state: CycleState, pod: types_pb2.Pod, node: str) -> None: ...


@dataclass(frozen=True, slots=True)
class CycleSettings:
    """How the cycles run, resolved once: the feature gates and the emulated version's rules
    without a gate (kemu.component.version_rules), where the column forms run (`paths`;
    `--no-batch`: never), and how long the loop runs cycles before the process's other tasks
    get their turn (`turn_seconds`, the host's seconds whatever the cluster's clock)."""

    gates: FeatureGates
    rules: VersionRules
    paths: ColumnPaths = COLUMNS_WHERE_WORTH_IT
    turn_seconds: float = TURN_SECONDS

    @staticmethod
    def of(
        gates: FeatureGates,
        *,
        paths: ColumnPaths = COLUMNS_WHERE_WORTH_IT,
        turn_seconds: float = TURN_SECONDS,
    ) -> CycleSettings:
        """The settings at `gates` (its version's rules)."""
        return CycleSettings(gates, VersionRules.at(gates.version), paths, turn_seconds)


@dataclass(frozen=True)
class ScheduleResult:
    suggested_host: str
    evaluated_nodes: int
    feasible_nodes: int
    filter_evaluations: int = 0
    """Nodes run through Filter in the cycle, the nominated node's try included (the
    KEP-1923 figure of kemu's metrics)."""


# ---------------------------------------------------------------- the scheduler


class Scheduler:
    """Upstream's Scheduler (pkg/scheduler/scheduler.go) and its cycles (schedule_one.go).
    `pod_lister`: the informer's lister of pods (their latest API copies); `observer`: what
    sees each cycle (the decision record with --record-decisions). The random tie-break
    between equally scored nodes draws from the profile's random source (its handle's `rng`,
    seeded by --seed)."""

    def __init__(
        self,
        *,
        client: ApiClient,
        cache: SchedulerCache,
        queue: SchedulingQueue,
        profiles: dict[str, FrameworkLike],
        pod_lister: PodLister,
        clock: Clock,
        metrics: SchedulerMetrics,
        settings: CycleSettings,
        observer: CycleObserver = NO_OBSERVER,
        pod_groups: PodGroupStates | None = None,
        pod_group_lister: ObjectLister[types_pb2.PodGroup] | None = None,
        pod_group_metrics: PodGroupMetrics | None = None,
        api_dispatcher: APIDispatcher | None = None,
    ) -> None:
        self.client = client
        # SchedulerAsyncAPICalls: the failure handler's status patches queued to it
        # (scheduler.api_dispatcher); None with the gate off.
        self.api_dispatcher = api_dispatcher
        self.cache = cache
        self.queue = queue
        self.profiles = profiles
        self.pod_lister = pod_lister
        self.clock = clock
        self.metrics = metrics
        self.settings = settings
        self.gates = settings.gates
        self.observer = observer
        self.snapshot = Snapshot()
        self.next_start_node_index = 0
        self.cycles = 0
        self.resize_preemption = resize_preemption_enabled(settings.gates)
        # Pod groups (GenericWorkload): from 1.36 the scheduler's own assume and forget mark
        # a member assumed in its group (1.35: GangScheduling's Reserve/Unreserve).
        self.pod_groups = pod_groups
        self.pod_group_lister = pod_group_lister
        self.pod_group_metrics = pod_group_metrics
        self._binding_tasks: TaskGroup | None = None
        self._cycle_cpu_start = 0.0  # time.thread_time() at the current cycle's start
        self._filter_evaluations: dict[str, Callable[[float], None]] = {}

    # ------------------------------------------------------------ loop

    async def run(self) -> None:
        """Schedules pods until cancelled; binding cycles run as sibling tasks."""
        turn = self.settings.turn_seconds
        async with anyio.create_task_group() as tg:
            self._binding_tasks = tg
            # Plugins' background work (asynchronous preemption) lives as long as the loop.
            for fwk in self.profiles.values():
                fwk.set_background(tg)
            try:
                turn_ends = time.monotonic() + turn
                while True:
                    qpi = await self.queue.pop()
                    if qpi is None:
                        return
                    await self.schedule_one(qpi)
                    if time.monotonic() >= turn_ends:  # the others' turn (TURN_SECONDS)
                        await others_turn(turn)
                        turn_ends = time.monotonic() + turn
            finally:
                for fwk in self.profiles.values():
                    fwk.set_background(None)

    async def schedule_one(self, qpi: QueuedPodInfo) -> None:
        """upstream ScheduleOne: the scheduling cycle of one pod, then its binding cycle in
        its own task."""
        pod = qpi.pod
        fwk = self.profiles.get(pod.spec.scheduler_name)
        if fwk is None:
            logger.error(
                "no profile for scheduler name %r of pod %s",
                pod.spec.scheduler_name,
                object_key(pod),
            )
            self.queue.done(pod.metadata.uid)
            return
        # (1.37: the queue hands over a pod group as one entity, scheduler.queue.pod_group_entity)
        entity = isinstance(qpi, QueuedPodGroupInfo)
        if isinstance(qpi, QueuedPodGroupInfo) and isinstance(qpi.group, CompositePodGroupKey):
            # KEP-6012 at 1.37: a CompositePodGroup tree queued as one entity (its root's).
            await schedule_one_composite_pod_group_entity(self, qpi, metrics=self.pod_group_metrics)
            return
        group = qpi.group if isinstance(qpi, QueuedPodGroupInfo) else self._pod_group_of(pod)
        if group is not None and not entity and in_composite_tree(self, group):
            # KEP-6012: the group is in a CompositePodGroup tree, scheduled from its root.
            await schedule_one_composite_pod_group(
                self, qpi, group, composite_root(self, group), metrics=self.pod_group_metrics
            )
            return
        if group is not None:
            # 1.36+: the pod's whole group is scheduled together (schedule_one_podgroup.py).
            await schedule_one_pod_group(
                self,
                qpi,
                group,
                metrics=self.pod_group_metrics,
                pod_group_lister=self.pod_group_lister,
            )
            return
        if self.skip_pod_schedule(fwk, pod):
            self.queue.done(pod.metadata.uid)
            return
        self.cycles += 1
        start = self.clock.monotonic()
        self._cycle_cpu_start = time.thread_time()
        state = self.new_cycle_state(qpi.pod_info)
        cycle = DEFERRED_RESIZE if self._is_deferred(pod) else SCHEDULE
        self.observer.cycle_started(pod, profile=fwk.profile_name(), cycle=cycle)
        outcome = await self.scheduling_cycle(fwk, state, qpi, start)
        if outcome is None:
            self.queue.done(pod.metadata.uid)
            return
        assumed, node = outcome
        self._start_binding_cycle(fwk, state, qpi, assumed, node, start)

    def new_cycle_state(self, pod_info: PodInfo) -> CycleState:
        """The CycleState of a new cycle for `pod_info.pod`, `pod_info` being the queue's
        (built by the cache's counting rules, which are the plugins' when both come from the
        scheduler's gates): the plugins read it (cycle_pod_info) instead of building their
        own."""
        state = CycleState()
        set_cycle_pod_info(state, pod_info, self.cache.counting)
        return state

    def skip_pod_schedule(self, fwk: FrameworkLike, pod: types_pb2.Pod) -> bool:
        if pod.metadata.HasField("deletion_timestamp"):
            fwk.event_recorder.event(
                pod,
                EVENT_WARNING,
                "FailedScheduling",
                "Scheduling",
                f"skip schedule deleting pod: {object_key(pod)}",
            )
            logger.debug("skipping %s: it is being deleted", object_key(pod))
            return True
        if self.cache.is_assumed_pod(pod):
            logger.debug("skipping %s: it is assumed", object_key(pod))
            return True
        return False

    def _pod_group_of(self, pod: types_pb2.Pod) -> PodGroupKey | None:
        """The group whose cycle the pod goes through (1.36+, GenericWorkload), if any."""
        groups = self.pod_groups
        if groups is None or not groups.membership.group_cycle:
            return None
        return groups.membership.key(pod)

    def assume_in_pod_group(self, assumed: types_pb2.Pod) -> None:
        """1.36+: the cache's assume marks the member assumed in its group's state."""
        if self.pod_groups is not None and self.pod_groups.membership.group_cycle:
            self.pod_groups.assume_pod(assumed)

    def forget_in_pod_group(self, assumed: types_pb2.Pod) -> None:
        if self.pod_groups is not None and self.pod_groups.membership.group_cycle:
            self.pod_groups.forget_pod(assumed)

    def _is_deferred(self, pod: types_pb2.Pod) -> bool:
        """A running pod queued for its Deferred resize (KEP-5836)."""
        return self.resize_preemption and is_deferred_resize_pod(pod)

    # ------------------------------------------------------------ scheduling cycle

    async def scheduling_cycle(
        self, fwk: FrameworkLike, state: CycleState, qpi: QueuedPodInfo, start: float
    ) -> tuple[types_pb2.Pod, str] | None:
        """upstream schedulingCycle: the node for the pod (SchedulePod, PostFilter on a
        FitError), assume, Reserve, Permit. The assumed pod and its node, or None when the
        cycle failed (handled: the pod is back in the queue)."""
        pod = qpi.pod
        # upstream's SchedulingAlgorithmLatency runs from the cycle's start (before its
        # CycleState) to the end of SchedulePod, or, when SchedulePod fails, to the end of
        # PostFilter (observed in a defer when schedulingCycle returns).
        try:
            result = self.schedule_pod(fwk, state, pod)
        except FitError as fit:
            await self._unschedulable(fwk, state, qpi, fit, start)
            return None
        except SchedulingError as e:
            self._observe_algorithm(start)
            await self.handle_scheduling_failure(fwk, qpi, e.status, PostFilterResult(""), start)
            return None
        algorithm_seconds = self._observe_algorithm(start)
        node = result.suggested_host
        self.observer.scheduled(
            pod,
            node=node,
            nodes=self.snapshot.num_nodes(),
            evaluated=result.evaluated_nodes,
            feasible=result.feasible_nodes,
        )
        if pod.status.nominated_node_name:
            # What KEP-1923 saves: the final cycle of a nominated pod (kemu's A/B metrics).
            profile = fwk.profile_name()
            self.metrics.nominated_pod_filter_evaluations.labels(profile).observe(
                result.filter_evaluations
            )
            self.metrics.nominated_pod_algorithm_duration.labels(profile).observe(algorithm_seconds)
        if self._is_deferred(pod):
            self.observer.parked(pod)
            await self._park_deferred(fwk, state, qpi, node, start)
            return None
        assumed = await self.assume_reserve_permit(fwk, state, qpi, node, start)
        return None if assumed is None else (assumed, node)

    async def assume_reserve_permit(
        self, fwk: FrameworkLike, state: CycleState, qpi: QueuedPodInfo, node: str, start: float
    ) -> types_pb2.Pod | None:
        """The end of a scheduling cycle once the node is chosen (upstream assumeAndReserve
        and the Permit that follows): the assumed pod, or None when Reserve or Permit failed
        (handled: the pod is back in the queue)."""
        pod = qpi.pod
        # Assume: the cache counts the pod on the node before it is bound.
        assumed = types_pb2.Pod()
        assumed.CopyFrom(pod)
        assumed.spec.node_name = node
        self.cache.assume_pod(assumed)
        self.assume_in_pod_group(assumed)
        # An assumed pod no longer reserves a node through its nomination (pkg/scheduler/backend/queue/nominator.go).
        self.queue.delete_nominated_pod_if_exists(pod)
        since = self.clock.monotonic()
        status = fwk.run_reserve_plugins_reserve(state, assumed, node)
        self.observer.phase(pod, RESERVE, status, since)
        if status.is_success():
            since = self.clock.monotonic()
            status = fwk.run_permit_plugins(state, assumed, node)
            self.observer.phase(pod, PERMIT, status, since)
            if status.is_success() or status.is_wait():
                return assumed
        fwk.run_reserve_plugins_unreserve(state, assumed, node)
        self.cache.forget_pod(assumed)
        self.forget_in_pod_group(assumed)
        plugins = {status.plugin} if status.is_rejected() else set()
        await self.handle_scheduling_failure(fwk, qpi, status, PostFilterResult(""), start, plugins)
        return None

    async def prepare_for_binding_cycle(
        self, fwk: FrameworkLike, state: CycleState, qpi: QueuedPodInfo, node: str, start: float
    ) -> bool:
        """A member of a pod group that the group's cycle placed (upstream
        prepareForBindingCycle, then runBindingCycle): assumed, reserved and permitted for
        real, then to its binding cycle. False when Reserve or Permit refused it."""
        assumed = await self.assume_reserve_permit(fwk, state, qpi, node, start)
        if assumed is None:
            return False
        self._start_binding_cycle(fwk, state, qpi, assumed, node, start)
        return True

    def _start_binding_cycle(
        self,
        fwk: FrameworkLike,
        state: CycleState,
        qpi: QueuedPodInfo,
        assumed: types_pb2.Pod,
        node: str,
        start: float,
    ) -> None:
        """The binding cycle of `assumed` in its own task (upstream's `go runBindingCycle`)."""
        assert self._binding_tasks is not None
        self._binding_tasks.start_soon(
            self.binding_cycle,
            fwk,
            state,
            qpi,
            assumed,
            node,
            start,
            name=f"bind {object_key(qpi.pod)}",
        )

    async def _unschedulable(
        self,
        fwk: FrameworkLike,
        state: CycleState,
        qpi: QueuedPodInfo,
        fit: FitError,
        start: float,
    ) -> None:
        """No node fits: PostFilter (preemption) may nominate one; the pod goes back to the
        queue as unschedulable by the plugins that rejected it."""
        pod = qpi.pod
        nominating: PostFilterResult | None = PostFilterResult("")
        if fwk.has_post_filter_plugins():
            post_result, post_status = await fwk.run_post_filter_plugins(state, pod, fit.statuses)
            fit.post_filter_msg = post_status.message()
            if post_status.code == Code.ERROR:
                logger.error("PostFilter for %s failed: %s", object_key(pod), post_status)
            nominating = post_result
        self._observe_algorithm(start)
        self.observer.unschedulable(pod, fit, nominating)
        status = Status(Code.UNSCHEDULABLE, (str(fit),))
        plugins = fit.unschedulable_plugins or _plugins_of(fit)
        await self.handle_scheduling_failure(fwk, qpi, status, nominating, start, plugins)

    async def _park_deferred(
        self, fwk: FrameworkLike, state: CycleState, qpi: QueuedPodInfo, node: str, start: float
    ) -> None:
        """The resize of a deferred pod fits on its node: Permit (DeferredPodScheduling) parks
        it in the unschedulable pool until the kubelet actuates it. No assume, no Reserve:
        the cache already counts the pod there, at its desired size."""
        pod = qpi.pod
        status = fwk.run_permit_plugins(state, pod, node)
        if status.is_success() or status.is_wait():
            # A profile without DeferredPodScheduling: the pod is bound already, so it must
            # not go to binding whatever Permit says. Park it the same way.
            if status.is_wait():
                fwk.reject_waiting_pod(pod.metadata.uid)
            status = Status(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                (deferred_pod_scheduling.WAITING_FOR_KUBELET,),
                deferred_pod_scheduling.NAME,
            )
        plugins = {status.plugin} if status.is_rejected() and status.plugin else set()
        await self.handle_scheduling_failure(fwk, qpi, status, None, start, plugins)

    def schedule_pod(
        self, fwk: FrameworkLike, state: CycleState, pod: types_pb2.Pod
    ) -> ScheduleResult:
        """upstream schedulePod: the node for `pod`, or FitError / SchedulingError."""
        self.cache.update_snapshot(self.snapshot)
        fwk.set_snapshot(self.snapshot)
        # (a pod-group cycle's assumed placement, KEP-5732: its nodes only)
        all_nodes = self.snapshot.nodes_in_placement()
        if not all_nodes:
            raise NoNodesAvailable()
        found, statuses, unschedulable_plugins = self.find_nodes_that_fit_pod(
            fwk, state, pod, all_nodes
        )
        feasible = found.nodes
        if not feasible:
            raise FitError(
                pod,
                len(all_nodes),
                statuses,
                pre_filter_msg=statuses.absent.message() if statuses.pre_filter_rejected else "",
                unschedulable_plugins=unschedulable_plugins,
            )
        if len(feasible) == 1:
            return ScheduleResult(feasible[0].name, 1 + len(statuses), 1, found.evaluated)
        status = fwk.run_pre_score_plugins(state, pod, feasible)
        if not status.is_success():
            raise SchedulingError(status)
        scores = self.prioritize_nodes(fwk, state, pod, found)
        host = self.select_host(fwk, pod, scores)
        return ScheduleResult(host, len(feasible) + len(statuses), len(feasible), found.evaluated)

    def find_nodes_that_fit_pod(
        self,
        fwk: FrameworkLike,
        state: CycleState,
        pod: types_pb2.Pod,
        all_nodes: list[NodeInfo],
    ) -> tuple[FeasibleNodes, NodeToStatus, set[str]]:
        """upstream findNodesThatFitPod: PreFilter, then the nominated node alone
        (PreferNominatedNode), then Filter over the nodes PreFilter left (of `all_nodes`: the
        snapshot's, or an assumed placement's)."""
        statuses = NodeToStatus()
        pre_result, status, unschedulable_plugins = fwk.run_pre_filter_plugins(
            state, pod, all_nodes
        )
        if not status.is_success():
            if not status.is_rejected():
                raise SchedulingError(status)
            # Every node gets the PreFilter's rejection, so preemption sees one status.
            statuses.absent = status
            statuses.pre_filter_rejected = True
            return FeasibleNodes([]), statuses, unschedulable_plugins

        nnn = pod.status.nominated_node_name
        tried_nominated = 0
        if nnn and self.gates.enabled(PREFER_NOMINATED_NODE):
            node = self.snapshot.node_infos().get(nnn)
            if node is not None and not self.snapshot.in_placement(nnn):
                node = None
            if node is not None and node.node is not None:
                feasible = self.find_nodes_that_pass_filters(
                    fwk, state, pod, NodeToStatus(), [node], rotate=False
                )
                if feasible.nodes:
                    return feasible, statuses, unschedulable_plugins
                tried_nominated = feasible.evaluated
                logger.debug(
                    "nominated node %s of %s did not pass the filters", nnn, object_key(pod)
                )

        nodes = all_nodes
        if pre_result is not None and (allowed := pre_result.node_names) is not None:
            # (upstream: the named nodes from the snapshot, one status for every other node,
            # SetAbsentNodesStatus: a DaemonSet pod's cycle costs its node, not the cluster's)
            nodes = self.snapshot.in_order(n for n in allowed if self.snapshot.in_placement(n))
            self.observer.pre_filter_narrowed(pod, len(nodes))
            statuses.absent = unresolvable(
                f"node(s) didn't satisfy plugin(s) [{', '.join(sorted(unschedulable_plugins))}]"
                if unschedulable_plugins
                else "node(s) didn't satisfy plugin(s)"
            )
        feasible = self.find_nodes_that_pass_filters(fwk, state, pod, statuses, nodes)
        if tried_nominated:
            feasible = dataclasses.replace(feasible, evaluated=feasible.evaluated + tried_nominated)
        unschedulable_plugins |= statuses.plugins()
        return feasible, statuses, unschedulable_plugins

    def find_nodes_that_pass_filters(
        self,
        fwk: FrameworkLike,
        state: CycleState,
        pod: types_pb2.Pod,
        statuses: NodeToStatus,
        nodes: list[NodeInfo],
        *,
        rotate: bool = True,
    ) -> FeasibleNodes:
        """upstream findNodesThatPassFilters: up to numFeasibleNodesToFind feasible nodes of
        `nodes` from the rotating start index (`rotate`; the nominated node alone: from its
        start, node by node, the index left alone), over node columns where the settings
        and the plugins allow (kemu.scheduling.filter_score); rejected nodes get their
        Status in `statuses`; an error raises SchedulingError."""
        n = len(nodes)
        if n == 0:
            return FeasibleNodes([])
        to_find = num_feasible_nodes_to_find(fwk.percentage_of_nodes_to_score(), n)
        start = self.next_start_node_index % n if rotate else 0
        columns = self.settings.paths.columns_for(self.snapshot, n) if rotate else None
        try:
            found = find_feasible_nodes(
                fwk, state, pod, nodes, statuses, start=start, to_find=to_find, columns=columns
            )
        except FilterError as e:
            raise SchedulingError(e.status) from None
        if found.evaluated:
            self._count_filter_evaluations(fwk, found.evaluated)
        if rotate:
            self.next_start_node_index = (start + found.checked) % n
        return found

    def prioritize_nodes(
        self, fwk: FrameworkLike, state: CycleState, pod: types_pb2.Pod, found: FeasibleNodes
    ) -> PrioritizedNodes:
        """upstream prioritizeNodes: the feasible nodes' scores (kemu.scheduling.filter_score:
        over node columns when the Filter pass found them so and the plugins allow)."""
        plugin_scores = self.observer.plugin_scores()
        scores, status = prioritize_nodes(fwk, state, pod, found, plugin_scores=plugin_scores)
        if not status.is_success():
            raise SchedulingError(status)
        return scores

    def select_host(self, fwk: FrameworkLike, pod: types_pb2.Pod, scores: PrioritizedNodes) -> str:
        """upstream selectHost: the highest score; ties broken uniformly at random
        (reservoir sampling, as upstream, the same draws in both forms)."""
        index = select_host(scores, fwk.rng)
        self.observer.scored(pod, scores, index)
        return scores.nodes[index].name

    # ------------------------------------------------------------ binding cycle

    async def binding_cycle(
        self,
        fwk: FrameworkLike,
        state: CycleState,
        qpi: QueuedPodInfo,
        assumed: types_pb2.Pod,
        node: str,
        start: float,
    ) -> None:
        """upstream bindingCycle (and its caller's error handling): WaitOnPermit, PreBind,
        Bind, PostBind; on failure, handleBindingCycleError."""
        try:
            status, rejected_at_permit = await self._bind(fwk, state, assumed, node)
            self.observer.bound(assumed, status.is_success())
            if status.is_success():
                self._scheduled(fwk, qpi, assumed, node, start)
                return
            await self.handle_binding_cycle_error(
                fwk, state, qpi, assumed, node, start, status, rejected_at_permit
            )
        finally:
            # Normally done already, after WaitOnPermit or by the failure handler.
            self.queue.done(assumed.metadata.uid)

    async def _bind(
        self, fwk: FrameworkLike, state: CycleState, assumed: types_pb2.Pod, node: str
    ) -> tuple[Status, bool]:
        """The binding cycle's extension points; the status, and whether it is a rejection
        at WaitOnPermit (the only point of the binding cycle that makes a pod
        unschedulable). From 1.36 a pod with PreBind work is registered in PreBind while it
        runs, so that a preemption can cancel it in memory (kemu.scheduling.pods_in_pre_bind;
        upstream's bindingCycle tests its pre-flight status outside the KEP-5278 gate). Each
        point's API calls' waits for the client's rate limiter are recorded with it."""
        with measure_waits() as waits:
            return await self._bind_points(fwk, state, assumed, node, waits)

    async def _bind_points(
        self,
        fwk: FrameworkLike,
        state: CycleState,
        assumed: types_pb2.Pod,
        node: str,
        waits: ThrottleWaits,
    ) -> tuple[Status, bool]:
        observer = self.observer
        nnn_expectation = self.gates.enabled(NOMINATED_NODE_NAME_FOR_EXPECTATION)
        in_memory = self.settings.rules.preempt_pre_bind_in_memory
        preflight: Status = SKIP
        if nnn_expectation or in_memory:
            preflight = fwk.run_pre_bind_pre_flights(state, assumed, node)
            if not preflight.is_success() and not preflight.is_skip():
                return preflight, False
        if nnn_expectation and (preflight.is_success() or fwk.will_wait_on_permit(assumed)):
            # KEP-5278: the expected placement is visible while PreBind works or Permit waits.
            await self._patch_nominated_node(assumed, node)
            observer.expected_node(assumed, node)
        since = self.clock.monotonic()
        waited = fwk.will_wait_on_permit(assumed)
        status = await fwk.wait_on_permit(assumed)
        if waited:  # (a pod no Permit plugin holds passes at once: nothing to tell)
            observer.phase(assumed, WAIT_ON_PERMIT, status, since, waits.take())
        if not status.is_success():
            return status, status.is_rejected()
        # Nothing after Permit makes the pod unschedulable, so the in-flight events are no
        # longer needed: Done now, as upstream, frees them while PreBind and Bind run.
        uid = assumed.metadata.uid
        self.queue.done(uid)
        registered = in_memory and preflight.is_success()
        if registered:
            fwk.add_pod_in_pre_bind(uid)
        since = self.clock.monotonic()
        try:
            status = await fwk.run_pre_bind_plugins(state, assumed, node)
        finally:
            if registered:
                fwk.remove_pod_in_pre_bind(uid)
        observer.phase(assumed, PRE_BIND, status, since, waits.take())
        if not status.is_success():
            return status, False
        since = self.clock.monotonic()
        status = await fwk.run_bind_plugins(state, assumed, node)
        observer.phase(assumed, BIND, status, since, waits.take())
        if status.is_skip():
            return as_error("all bind plugins skipped"), False
        if not status.is_success():
            return status, False
        self.cache.finish_binding(assumed)
        fwk.run_post_bind_plugins(state, assumed, node)
        return status, False

    async def handle_binding_cycle_error(
        self,
        fwk: FrameworkLike,
        state: CycleState,
        qpi: QueuedPodInfo,
        assumed: types_pb2.Pod,
        node: str,
        start: float,
        status: Status,
        rejected_at_permit: bool,
    ) -> None:
        """Upstream handleBindingCycleError: unreserve, forget, and tell the queue that the
        resources the assumed pod held are free (an AssignedPodDelete). Only a rejection at
        WaitOnPermit makes the pod unschedulable (with the rejecting plugin); a PreBind or
        Bind failure is an error, retried after backoff. The pod's own forget never requeues
        it: after a rejection the event is sent once the pod is back in the queue, with the
        pod itself excluded. A pod the deletion handler already forgot sends nothing."""
        fwk.run_reserve_plugins_unreserve(state, assumed, node)
        try:
            forgotten = self.cache.forget_pod(assumed)
        except CacheError as e:
            logger.error("scheduler cache ForgetPod failed: %s", e)
            forgotten = False
        self.forget_in_pod_group(assumed)
        if forgotten and not status.is_rejected():
            self.queue.move_all_to_active_or_backoff_queue(ASSIGNED_POD_DELETE, assumed, None)
        plugins = {status.plugin} if rejected_at_permit and status.plugin else set()
        await self.handle_scheduling_failure(fwk, qpi, status, PostFilterResult(""), start, plugins)
        if forgotten and status.is_rejected():
            uid = assumed.metadata.uid
            self.queue.move_all_to_active_or_backoff_queue(
                ASSIGNED_POD_DELETE, assumed, None, lambda p: p.metadata.uid != uid
            )

    def _scheduled(
        self,
        fwk: FrameworkLike,
        qpi: QueuedPodInfo,
        assumed: types_pb2.Pod,
        node: str,
        start: float,
    ) -> None:
        profile = fwk.profile_name()
        now = self.clock.monotonic()
        self.metrics.schedule_attempts.labels("scheduled", profile).inc()
        self.metrics.scheduling_attempt_duration.labels("scheduled", profile).observe(now - start)
        if qpi.initial_attempt_timestamp is not None:
            self.metrics.pod_scheduling_sli_duration.labels(
                SchedulerMetrics.attempts_label(qpi.attempts)
            ).observe(now - qpi.initial_attempt_timestamp)
        self.metrics.pod_scheduling_attempts.observe(qpi.attempts)
        fwk.event_recorder.event(
            assumed,
            EVENT_NORMAL,
            "Scheduled",
            "Binding",
            f"Successfully assigned {object_key(assumed)} to {node}",
        )
        # upstream's "Successfully bound pod to node" is V(2) (pkg/scheduler/schedule_one.go):
        # at -v=0 a bound pod costs no log line (kemu.chaos runs its schedulers at -v=2 and
        # reads this line).
        logger.log(V(2), "bound %s to %s", object_key(assumed), node)

    # ------------------------------------------------------------ failures

    def _clears_nnn_on_failure(self) -> bool:
        """1.34 alpha of KEP-5278 kept NNN after failures when its gate was on (pkg/scheduler/schedule_one.go handleSchedulingFailure);
        1.35 went back to clearing it (version_rules: nominated_node_name_kept_on_failure)."""
        return not (
            self.settings.rules.nominated_node_name_kept_on_failure
            and self.gates.enabled(NOMINATED_NODE_NAME_FOR_EXPECTATION)
        )

    async def handle_scheduling_failure(
        self,
        fwk: FrameworkLike,
        qpi: QueuedPodInfo,
        status: Status,
        nominating: PostFilterResult | None,
        start: float,
        unschedulable_plugins: AbstractSet[str] = frozenset(),
    ) -> None:
        """upstream handleSchedulingFailure: metrics, the log line, the pod back to the queue
        as the informer has it now, the nominator told, FailedScheduling and the status
        PATCH (PodScheduled=False, NNN as `nominating` says). The pod is found by name; from
        1.34 (version rule `scheduling_failure_checks_uid`) a namesake of another uid is left
        alone."""
        pod = qpi.pod
        profile = fwk.profile_name()
        rejected = status.is_rejected()
        result = "unschedulable" if rejected else "error"
        self.observer.failed(pod, status)
        self.metrics.schedule_attempts.labels(result, profile).inc()
        self.metrics.scheduling_attempt_duration.labels(result, profile).observe(
            self.clock.monotonic() - start
        )
        reason = "Unschedulable" if rejected else "SchedulerError"
        message = status.message() or str(status)
        if message == NO_NODES_AVAILABLE:
            logger.info(
                "unable to schedule %s: no nodes are registered to the cluster", object_key(pod)
            )
        elif rejected:
            logger.info("unable to schedule %s: %s", object_key(pod), message)
        else:
            logger.warning("error scheduling %s: %s", object_key(pod), message)

        current = self.pod_lister.get(pod.metadata.name, pod.metadata.namespace)
        if current is None:
            logger.debug("%s is gone, not requeued", object_key(pod))
            return
        if (
            current.metadata.uid != pod.metadata.uid
            and self.settings.rules.scheduling_failure_checks_uid
        ):
            # A namesake (the pod was deleted and re-created): the failure is not its own
            # (kubernetes#138324). Before, the new pod was requeued with the old one's
            # rejectors and got its FailedScheduling and PodScheduled=False.
            logger.log(
                V(2),
                "%s was re-created while its scheduling failure was handled (uid %s, now %s): "
                "not requeued, no status update",
                object_key(pod),
                pod.metadata.uid,
                current.metadata.uid,
            )
            return
        deferred = self._is_deferred(current)
        if current.spec.node_name and not deferred:
            logger.debug(
                "%s is already bound to %s, not requeued", object_key(pod), current.spec.node_name
            )
            return
        qpi.unschedulable_plugins = set(unschedulable_plugins) if rejected else set()
        # Requeued as the informer has it now, as upstream (its binding cycle may have ended
        # its flight, so the queue no longer tracks its updates).
        qpi.pod_info = self.cache.pod_info(current)
        self.queue.add_unschedulable_if_not_present(qpi, self.cycles)
        if deferred:
            # KEP-5836: bound and running; its nomination and PodScheduled are left alone.
            logger.debug("deferred resize of %s waits in the queue: %s", object_key(pod), message)
            return

        nominated: str | None = None
        if nominating is not None and nominating.nominated_node_name is not None:
            nominated = nominating.nominated_node_name
            if nominated == "" and not self._clears_nnn_on_failure():
                nominated = None
        # The nominator learns the outcome before the PATCH is sent, so that the next cycles
        # already count (or no longer count) the reservation (pkg/scheduler/backend/queue/nominator.go).
        self.queue.add_nominated_pod(qpi.pod_info, nominated)
        # On the pod as the informer has it (upstream's refreshed podInfo.Pod).
        fwk.event_recorder.event(current, EVENT_WARNING, "FailedScheduling", "Scheduling", message)
        await self.update_pod_status(current, reason, message, nominated)

    async def update_pod_status(
        self, pod: types_pb2.Pod, reason: str, message: str, nominated: str | None
    ) -> None:
        """PodScheduled=False (reason, message) and, when `nominated` is not None, NNN = it
        (upstream updatePod). Skipped when nothing would change; conditions other writers
        added meanwhile are kept (a resourceVersion CAS, retried on a fresh read). The
        condition carries observedGeneration as PodObservedGenerationTracking says. Errors
        are logged (the next cycle retries). With SchedulerAsyncAPICalls the patch is queued
        to the dispatcher and the cycle goes on (upstream handleSchedulingFailure with
        APICacher: PatchPodStatus, not waited for)."""
        if self.api_dispatcher is not None:
            call = PodStatusPatchCall(
                pod,
                reason,
                message,
                nominated,
                now=self.clock.now(),
                tracking=self.gates.enabled(POD_OBSERVED_GENERATION_TRACKING),
            )
            with contextlib.suppress(CallSkipped):
                self.api_dispatcher.add(call)
            return
        change = condition_change(
            POD_SCHEDULED,
            "False",
            reason,
            message,
            now=self.clock.now(),
            tracking=self.gates.enabled(POD_OBSERVED_GENERATION_TRACKING),
            nominated_node_name=nominated,
        )
        try:
            await patch_pod_status(self.client, pod, change)
        except (NotFound, Conflict) as e:
            logger.debug("could not update the status of %s: %s", object_key(pod), e)
        except ApiError as e:
            logger.warning("could not update the status of %s: %s", object_key(pod), e)

    async def _patch_nominated_node(self, pod: types_pb2.Pod, node: str) -> None:
        current = self.pod_lister.get(pod.metadata.name, pod.metadata.namespace) or pod
        if current.status.nominated_node_name == node:
            return
        if self.api_dispatcher is not None:
            # (upstream updatePod with the APICacher: queued, not waited for; the binding
            # that follows takes its place if it is still queued then)
            call = PodStatusPatchCall(current, None, "", node, now=self.clock.now(), tracking=False)
            with contextlib.suppress(CallSkipped):
                self.api_dispatcher.add(call)
            return
        try:
            await self.client.patch(
                types_pb2.Pod,
                pod.metadata.name,
                {"status": {"nominatedNodeName": node}},
                pod.metadata.namespace,
                subresource="status",
            )
        except ApiError as e:
            logger.warning(
                "could not set the nominated node of %s to %s: %s", object_key(pod), node, e
            )

    # ------------------------------------------------------------ metrics

    def _observe_algorithm(self, start: float) -> float:
        """Observes the cycle's scheduling_algorithm_duration (from `start`, by the
        scheduler's clock) and the thread's CPU time over it (kemu's counter); returns the
        duration."""
        seconds = self.clock.monotonic() - start
        self.metrics.scheduling_algorithm_duration.observe(seconds)
        self.metrics.scheduling_algorithm_cpu.inc(time.thread_time() - self._cycle_cpu_start)
        return seconds

    def _count_filter_evaluations(self, fwk: FrameworkLike, checked: int) -> None:
        profile = fwk.profile_name()
        inc = self._filter_evaluations.get(profile)
        if inc is None:  # `labels` takes a lock and checks the values: once per profile
            inc = self._filter_evaluations[profile] = fast_inc(
                self.metrics.filter_evaluations.labels(profile)
            )
        inc(checked)


def _plugins_of(fit: FitError) -> set[str]:
    plugins = {st.plugin for _, st in fit.statuses.items() if st.plugin}
    if fit.statuses.absent.plugin:
        plugins.add(fit.statuses.absent.plugin)
    return plugins
