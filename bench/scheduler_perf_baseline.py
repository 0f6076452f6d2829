"""The preemption API baseline of bench.scheduler_perf: what the apiserver alone can take for
the API calls of PreemptionBasic's preemptors, with no scheduling work (the analogue of the
bind-only baseline of SchedulingBasic, which bench.scheduler_perf runs itself).

For each measured preemptor the scheduler makes (scheduler.preemption_executor and
scheduler.schedule_one, at kemu's default gates): the preemptor's create (the bench's); for each
of its victims a status PATCH adding DisruptionTarget=True (reason PreemptionByScheduler, the
conditions written whole under a resourceVersion precondition) then a DELETE with a uid
precondition, and a Preempted event; the preemptor's FailedScheduling event and its status
PATCH (PodScheduled=False, reason Unschedulable, the FitError message, and
status.nominatedNodeName); then, once its victims are gone, its binding and a Scheduled event.
With SchedulerAsyncPreemption (on by default) the victims but the last are preempted in
parallel and the last after them, while the preemptor's status PATCH goes out; without it the
victims are preempted (in parallel) before the status PATCH.

The baseline makes these calls itself on the same cluster after the workload's ops: untimed,
it creates the victims (copies of the low-priority op's pods, for a scheduler no profile
serves) and binds them to the preemptors' nodes (preemptor i on node i mod nodes); timed, it
creates copies of the measured pods with the same creates in flight as the measured phase, and
as each create returns runs that preemptor's calls in its own task (as the scheduler's
preemption tasks and binding cycles run beside its cycles). The bodies are built with the
scheduler's own helpers (kemu.client.pod_status, kemu.machinery.pod_conditions) and the
events are written by kemu's EventRecorder, as the scheduler's are. The binding is sent as soon
as the last victim's DELETE has returned (the scheduler waits for its informer to show the
deletions and for a scheduling cycle: the baseline is the bound without those waits).
Preemptors/s is measured as created_to_bound: from the first create until the bench's watch has
seen the last preemptor bound.
"""

from __future__ import annotations

import math
import socket
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Final, Protocol

import anyio

from bench.common import Clock, rate, run_concurrent
from kemu.api.v1 import types_pb2
from kemu.client.events import EventApi, EventRecorder
from kemu.client.interface import ApiClient
from kemu.client.pod_status import condition_change, patch_pod_status
from kemu.machinery.errors import ApiError
from kemu.machinery.eviction import DISRUPTION_TARGET
from kemu.machinery.kinds import EVENT_NORMAL, EVENT_WARNING
from kemu.scheduling.interface import EventRecorder as EventRecorderLike
from kemu.scheduling.interface import NoEvents

PREEMPTION_BASELINE_NAMESPACE: Final = "preemption-baseline"
PREEMPTION_BY_SCHEDULER: Final = "PreemptionByScheduler"
POD_SCHEDULED: Final = "PodScheduled"
UNSCHEDULABLE: Final = "Unschedulable"
DEFAULT_SCHEDULER: Final = "default-scheduler"
SCHEDULER_COMPONENT: Final = "kube-scheduler"


class Tracker(Protocol):
    """What the baseline needs of bench.scheduler_perf.BindTracker."""

    bound_at: dict[int, list[float]]

    def expect(self, op_index: int, pods: Sequence[types_pb2.Pod]) -> None: ...

    async def wait_op(self, op_index: int, within: float) -> None: ...


def for_no_scheduler(
    pod: types_pb2.Pod, namespace: str, name: str, scheduler_name: str
) -> types_pb2.Pod:
    """A copy of `pod` renamed into `namespace`, unbound, for `scheduler_name` (one no profile
    serves, so the scheduler leaves it to the bench)."""
    copy = types_pb2.Pod()
    copy.CopyFrom(pod)
    copy.metadata.namespace = namespace
    copy.metadata.name = name
    copy.spec.scheduler_name = scheduler_name
    copy.spec.node_name = ""
    return copy


@dataclass(frozen=True)
class PreemptionPlan:
    """The baseline's pods: per preemptor (in creation order) its node and its victims."""

    preemptors: list[types_pb2.Pod]
    nodes: list[str]
    victims: list[list[types_pb2.Pod]]
    message: str  # the preemptors' PodScheduled=False message (the FitError's)


def preemption_plan(
    preemptors: Sequence[types_pb2.Pod],
    low_pods: Sequence[types_pb2.Pod],
    node_names: Sequence[str],
    victims_per_preemptor: int,
    scheduler_name: str,
    insufficient: Sequence[str] = ("cpu",),
) -> PreemptionPlan:
    """Copies of the measured op's pods (`preemptors`) and, for each, `victims_per_preemptor`
    copies of the low-priority op's pods (`low_pods`, taken in turn), all in
    PREEMPTION_BASELINE_NAMESPACE for `scheduler_name`; preemptor i goes to node i mod
    len(node_names). `insufficient` names the resources no node has room for, which make the
    FitError message "0/N nodes are available: N Insufficient cpu." (PostFilter succeeded, so
    it adds nothing)."""
    if not node_names:
        raise ValueError("the preemption API baseline needs nodes")
    if victims_per_preemptor < 1:
        raise ValueError(
            f"victims per preemptor: {victims_per_preemptor} (the baseline needs at least 1)"
        )
    if not low_pods:
        raise ValueError("the preemption API baseline needs the low-priority op's pods")
    ns = PREEMPTION_BASELINE_NAMESPACE
    n = len(node_names)
    out_preemptors, nodes, victims = [], [], []
    for i, pod in enumerate(preemptors):
        out_preemptors.append(
            for_no_scheduler(pod, ns, f"preemptor-{pod.metadata.name}", scheduler_name)
        )
        nodes.append(node_names[i % n])
        mine = []
        for j in range(victims_per_preemptor):
            low = low_pods[(i * victims_per_preemptor + j) % len(low_pods)]
            mine.append(for_no_scheduler(low, ns, f"victim-{i}-{j}", scheduler_name))
        victims.append(mine)
    reasons = ", ".join(f"{n} Insufficient {r}" for r in sorted(insufficient))
    message = f"0/{n} nodes are available: {reasons}." if reasons else f"0/{n} nodes are available:"
    return PreemptionPlan(out_preemptors, nodes, victims, message)


async def set_up_victims(
    client: ApiClient, plan: PreemptionPlan, creators: int
) -> list[list[types_pb2.Pod]]:
    """Untimed: creates every victim and binds it to its preemptor's node (`creators` in
    flight), then lists the namespace for their resourceVersions (as the scheduler's informer
    holds them). Per preemptor, its victims as stored; RuntimeError names a victim that failed
    or is not bound."""
    flat = [(v, plan.nodes[i]) for i, vs in enumerate(plan.victims) for v in vs]

    async def create_and_bind(k: int) -> None:
        victim, node = flat[k]
        created = await client.create(victim)
        await client.bind(
            created.metadata.namespace, created.metadata.name, node, uid=created.metadata.uid
        )

    res = await run_concurrent(len(flat), creators, create_and_bind)
    if res.errors:
        raise RuntimeError(
            f"{res.errors} preemption baseline victims failed; the first: {res.first_error}"
        )
    listed = await client.list_all(types_pb2.Pod, PREEMPTION_BASELINE_NAMESPACE)
    by_name = {p.metadata.name: p for p in listed.items}
    out: list[list[types_pb2.Pod]] = []
    for i, vs in enumerate(plan.victims):
        mine = []
        for v in vs:
            stored = by_name.get(v.metadata.name)
            if stored is None or stored.spec.node_name != plan.nodes[i]:
                raise RuntimeError(
                    f"preemption baseline victim {v.metadata.name} is not bound to {plan.nodes[i]}"
                )
            mine.append(stored)
        out.append(mine)
    return out


@dataclass(frozen=True)
class Calls:
    """How the scheduler's calls are made: the profile that makes them (the bench's pods are
    for a scheduler no profile serves, so the messages name the profile the measured pods
    had), the gates that shape them, and its clock."""

    scheduler_name: str = DEFAULT_SCHEDULER
    async_preemption: bool = True  # SchedulerAsyncPreemption
    tracking: bool = True  # PodObservedGenerationTracking: observedGeneration on conditions
    now: Clock = time.time  # the conditions' lastTransitionTime


async def preempt_victim(
    client: ApiClient,
    preemptor: types_pb2.Pod,
    victim: types_pb2.Pod,
    node: str,
    calls: Calls,
    recorder: EventRecorderLike,
) -> None:
    """The executor's preemption of one victim: DisruptionTarget=True by a status PATCH under
    the victim's resourceVersion (the conditions written whole), a DELETE with its uid, a
    Preempted event. Raises ApiError, or RuntimeError when the victim is already gone."""
    change = condition_change(
        DISRUPTION_TARGET,
        "True",
        PREEMPTION_BY_SCHEDULER,
        f"{calls.scheduler_name}: preempting to accommodate a higher priority pod",
        now=calls.now(),
        tracking=calls.tracking,
    )
    if not await patch_pod_status(client, victim, change):
        raise RuntimeError(f"victim {victim.metadata.name} is gone before its preemption")
    await client.delete(
        types_pb2.Pod, victim.metadata.name, victim.metadata.namespace, uid=victim.metadata.uid
    )
    recorder.event(
        victim,
        EVENT_NORMAL,
        "Preempted",
        "Preempting",
        f"Preempted by pod {preemptor.metadata.uid} on node {node}",
        related=preemptor,
    )


async def mark_unschedulable(
    client: ApiClient,
    preemptor: types_pb2.Pod,
    node: str,
    message: str,
    calls: Calls,
    recorder: EventRecorderLike,
) -> None:
    """The scheduler's failure handling of a preemptor that nominated `node`: a
    FailedScheduling event, then PodScheduled=False (Unschedulable, `message`) and
    status.nominatedNodeName by a status PATCH under its resourceVersion."""
    recorder.event(preemptor, EVENT_WARNING, "FailedScheduling", "Scheduling", message)
    change = condition_change(
        POD_SCHEDULED,
        "False",
        UNSCHEDULABLE,
        message,
        now=calls.now(),
        tracking=calls.tracking,
        nominated_node_name=node,
    )
    if not await patch_pod_status(client, preemptor, change):
        raise RuntimeError(f"preemptor {preemptor.metadata.name} is gone before its status PATCH")


async def preempt_and_bind(
    client: ApiClient,
    preemptor: types_pb2.Pod,
    victims: Sequence[types_pb2.Pod],
    node: str,
    message: str,
    calls: Calls,
    recorder: EventRecorderLike,
) -> None:
    """One preemptor's calls after its create, in the scheduler's order (module docstring),
    its binding last, once every other call has returned. Raises the first failure (ApiError,
    or RuntimeError when a pod is gone)."""
    errors: list[ApiError | RuntimeError] = []

    async def guarded(call: Callable[[], Awaitable[None]]) -> None:
        try:
            await call()
        except (ApiError, RuntimeError) as e:
            errors.append(e)

    def victim(v: types_pb2.Pod) -> Callable[[], Awaitable[None]]:
        return lambda: preempt_victim(client, preemptor, v, node, calls, recorder)

    async def victims_in_turn() -> None:
        # Asynchronous: all but the last in parallel, then the last; else all in parallel.
        together = victims[:-1] if calls.async_preemption else victims
        async with anyio.create_task_group() as tg:
            for v in together:
                tg.start_soon(guarded, victim(v))
        if calls.async_preemption and not errors:
            await guarded(victim(victims[-1]))

    def status() -> Awaitable[None]:
        return mark_unschedulable(client, preemptor, node, message, calls, recorder)

    if calls.async_preemption:
        async with anyio.create_task_group() as tg:
            tg.start_soon(victims_in_turn)
            await guarded(status)
    else:
        await victims_in_turn()
        if not errors:
            await guarded(status)
    if errors:
        raise errors[0]
    await client.bind(
        preemptor.metadata.namespace, preemptor.metadata.name, node, uid=preemptor.metadata.uid
    )
    record_scheduled(recorder, preemptor, node)


def record_scheduled(recorder: EventRecorderLike, pod: types_pb2.Pod, node: str) -> None:
    """The scheduler's Scheduled event of a bound pod (scheduler/schedule_one.py)."""
    recorder.event(
        pod,
        EVENT_NORMAL,
        "Scheduled",
        "Binding",
        f"Successfully assigned {pod.metadata.namespace}/{pod.metadata.name} to {node}",
    )


async def preemption_api_baseline(
    client: ApiClient,
    tracker: Tracker,
    index: int,
    plan: PreemptionPlan,
    victims: Sequence[Sequence[types_pb2.Pod]],
    creators: int,
    within: float,
    *,
    calls: Calls | None = None,
    recorder: EventRecorderLike | None = None,
    clock: Clock = time.monotonic,
) -> float:
    """Timed: the plan's preemptors created with `creators` in flight, each followed in its own
    task by its calls (preempt_and_bind) against its `victims` (as set_up_victims returned
    them). Preemptors/s from the first create until the watch (`tracker`, under the key
    `index`) has seen the last one bound; NaN without preemptors. RuntimeError names the first
    preemptor whose calls failed. Events go to `recorder` (the caller runs its writer), none
    when it is None."""
    pods = plan.preemptors
    if not pods:
        return math.nan
    if len(victims) != len(pods) or any(not vs for vs in victims):
        raise ValueError("the preemption API baseline needs victims for every preemptor")
    calls = calls or Calls()
    rec: EventRecorderLike = recorder if recorder is not None else NoEvents()
    tracker.expect(index, pods)
    failures: list[str] = []

    async with anyio.create_task_group() as tasks:

        async def calls_of(i: int, created: types_pb2.Pod) -> None:
            try:
                await preempt_and_bind(
                    client, created, victims[i], plan.nodes[i], plan.message, calls, rec
                )
            except (ApiError, RuntimeError) as e:
                failures.append(f"{created.metadata.name}: {e}")

        async def create_and_preempt(i: int) -> None:
            created = await client.create(pods[i])
            tasks.start_soon(calls_of, i, created)

        start = clock()
        res = await run_concurrent(len(pods), creators, create_and_preempt)
    if res.errors:
        raise RuntimeError(
            f"{res.errors} preemption baseline pod creates failed; the first: {res.first_error}"
        )
    if failures:
        raise RuntimeError(
            f"{len(failures)} preemption baseline preemptors failed; the first: {failures[0]}"
        )
    await tracker.wait_op(index, within)
    times = tracker.bound_at[index]
    return rate(len(times), max(times, default=start) - start)


def scheduler_recorder(
    client: ApiClient, scheduler_name: str = DEFAULT_SCHEDULER
) -> tuple[EventRecorder, EventRecorderLike]:
    """An EventRecorder as the scheduler's (component kube-scheduler), and the
    recorder of its profile `scheduler_name` (reporting instance <scheduler_name>-<host>); the
    caller runs the first's writer (`run`)."""
    host = socket.gethostname()
    recorder = EventRecorder(client, SCHEDULER_COMPONENT, api=EventApi.EVENTS_V1, host=host)
    return recorder, recorder.for_component(scheduler_name)
