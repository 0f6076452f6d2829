"""Pod status: what the kubelet reports for a pod (`build_status`) and how it is written
(`StatusManager.write`), as upstream's generateAPIPodStatus and status manager.

The kubelet owns the phase, startTime, container statuses and the conditions PodScheduled,
Initialized, Ready, ContainersReady and PodReadyToStartContainers (upstream's
PodConditionsByKubelet); every other condition (DisruptionTarget, ...) is kept as the API has
it, except the resize conditions PodResizePending and PodResizeInProgress, which the kubelet
owns too (what they should be is kubelet.allocation's `resize_conditions`; no
PodResizePreemptionDisabled, as the merged KEP-5836 kubelet). A pod it runs is
PodScheduled=True, also one created with spec.nodeName that no scheduler saw (its
lastTransitionTime the kubelet's first write; a scheduled pod keeps the binding's); a rejected
pod has none, as upstream's status manager drops the kubelet's conditions that rejectPod's
status lacks (mergePodStatus).

Addresses (kubelet.network): hostIP/hostIPs are the node's IP; podIP/podIPs the pod's IP from
the node's pod CIDR, or the node's IP for a hostNetwork pod, which keeps the first it got.

Container statuses report each container's allocated resources and its actual ones (the
allocation, or the size it still runs at while a resize is being actuated).

With PodObservedGenerationTracking (KEP-5067) the status carries observedGeneration, the pod
generation the kubelet last synced (so a resize, which bumps the generation, can be seen to have
been observed), and so does every condition the kubelet writes (the resize conditions: the
generation of the resize they are about). Without the gate these are 0, unless already set
(upstream keeps a value in use, as the apiserver does). Container resources are reported only
with InPlacePodVerticalScaling (`report_resources`), as upstream: the apiserver tells from them
whether the kubelet can resize.

Each write is an update_status of the whole status with the pod's resourceVersion; on Conflict
the pod is read again and the status rebuilt on it, so conditions others wrote meanwhile are
kept.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Final

from kemu.api.v1 import types_pb2
from kemu.client.interface import ApiClient
from kemu.component.clock import Clock
from kemu.machinery.convert import timestamp
from kemu.machinery.errors import Conflict, NotFound
from kemu.machinery.eviction import DISRUPTION_TARGET
from kemu.machinery.pod_conditions import condition_observed_generation, update_pod_condition
from kemu.machinery.qos import compute_qos_class
from kubelet.allocation import resize_conditions
from kubelet.pod_manager import NodePods
from kubelet.preemption import (
    DISRUPTION_MESSAGE,
    DISRUPTION_REASON,
    PREEMPT_MESSAGE,
    PREEMPT_REASON,
)
from kubelet.runtime import EXIT_OK, ContainerAllocation, PodRuntime, PodState

KUBELET_CONDITIONS: Final = (
    "PodScheduled",
    "PodReadyToStartContainers",
    "Initialized",
    "Ready",
    "ContainersReady",
)
"""The pod conditions the kubelet owns besides the resize ones; it never touches the others."""

_WRITE_ATTEMPTS: Final = 5


def status_observed_generation(pod: types_pb2.Pod, *, gate: bool) -> int:
    """upstream's CalculatePodStatusObservedGeneration."""
    if gate or pod.status.observed_generation:
        return pod.metadata.generation
    return 0


def _drop_conditions(status: types_pb2.PodStatus, types: Iterable[str]) -> None:
    drop = set(types)
    keep = [c for c in status.conditions if c.type not in drop]
    if len(keep) != len(status.conditions):
        del status.conditions[:]
        status.conditions.extend(keep)


def _container_status(
    c: types_pb2.Container,
    rt: PodRuntime,
    *,
    running: bool,
    exit_code: int | None,
    finished_at: float | None,
    report_resources: bool,
) -> types_pb2.ContainerStatus:
    cs = types_pb2.ContainerStatus(
        name=c.name, image=c.image, restart_count=rt.restarts.get(c.name, 0)
    )
    started_at = rt.restarted_at.get(
        c.name, rt.started_at if rt.started_at is not None else rt.start_at
    )
    if running:
        cs.state.running.started_at.CopyFrom(timestamp(started_at))
        cs.ready = True
        cs.started = True
    else:
        _terminated(
            cs.state.terminated,
            exit_code if exit_code is not None else EXIT_OK,
            started_at,
            finished_at if finished_at is not None else started_at,
        )
        cs.ready = False
        cs.started = False
    last = rt.last_terminated.get(c.name)
    if last is not None:  # a restarted container: its previous instance's end
        _terminated(cs.last_state.terminated, last.exit_code, last.started_at, last.finished_at)
    if not report_resources:
        return cs
    alloc = rt.allocation.get(c.name) or ContainerAllocation(
        dict(c.resources.requests), dict(c.resources.limits)
    )
    cs.allocated_resources.update(alloc.requests)
    # Actual resources: reported for every container, running or not (the apiserver refuses
    # a resize of a running pod whose kubelet does not report them).
    actual = alloc if rt.actual is None else rt.actual.get(c.name, alloc)
    cs.resources.SetInParent()
    cs.resources.requests.update(actual.requests)
    cs.resources.limits.update(actual.limits)
    return cs


def _terminated(
    term: types_pb2.ContainerStateTerminated, exit_code: int, started: float, finished: float
) -> None:
    term.exit_code = exit_code
    term.reason = "Completed" if exit_code == EXIT_OK else "Error"
    term.started_at.CopyFrom(timestamp(started))
    term.finished_at.CopyFrom(timestamp(finished))


def _rejected_status(status: types_pb2.PodStatus, rt: PodRuntime) -> None:
    status.phase = "Failed"
    status.reason = rt.reason
    status.message = f"Pod was rejected: {rt.message}"
    _drop_conditions(status, KUBELET_CONDITIONS)


def _preparing_status(
    status: types_pb2.PodStatus,
    pod: types_pb2.Pod,
    rt: PodRuntime,
    now: float,
    options: StatusOptions,
) -> None:
    """A pod whose sandbox waits for its ResourceClaims (kubelet.dra_manager): Pending, no
    sandbox (PodReadyToStartContainers False), its containers Waiting ContainerCreating (init
    containers first: PodInitializing), as upstream's generateAPIPodStatus reports a pod whose
    SyncPod fails before the sandbox."""
    status.start_time.CopyFrom(timestamp(rt.admitted_at))
    status.phase = "Pending"
    status.reason = ""
    status.message = ""
    inits = [c.name for c in pod.spec.init_containers]
    apps = [c.name for c in pod.spec.containers]
    gate, generation = options.observed_generation, pod.metadata.generation
    for type_, value, why, message in (
        ("PodScheduled", "True", "", ""),
        ("PodReadyToStartContainers", "False", "", ""),
        (
            ("Initialized", "False", "ContainersNotInitialized", _unready(inits, "incomplete"))
            if inits
            else ("Initialized", "True", "", "")
        ),
        ("Ready", "False", "ContainersNotReady", _unready(apps, "unready")),
        ("ContainersReady", "False", "ContainersNotReady", _unready(apps, "unready")),
    ):
        observed = condition_observed_generation(status, type_, generation, tracking=gate)
        condition = types_pb2.PodCondition(
            type=type_, status=value, reason=why, message=message, observed_generation=observed
        )
        update_pod_condition(status, condition, now)
    _set_addresses(status, pod, rt, options)
    waiting = "PodInitializing" if inits else "ContainerCreating"
    for field, containers, reason in (
        (status.init_container_statuses, pod.spec.init_containers, "PodInitializing"),
        (status.container_statuses, pod.spec.containers, waiting),
    ):
        del field[:]
        for c in containers:
            cs = field.add(name=c.name, image=c.image, ready=False, started=False)
            cs.state.waiting.reason = reason


def _unready(names: list[str], what: str) -> str:
    return f"containers with {what} status: [{' '.join(names)}]"


@dataclass(frozen=True)
class StatusOptions:
    """What the kubelet's version and gates make it report."""

    observed_generation: bool = True
    """Gate PodObservedGenerationTracking."""
    report_resources: bool = True
    """Gate InPlacePodVerticalScaling: containerStatuses[].resources and allocatedResources."""
    host_ip: str = ""
    """The node's IP (status.hostIP, hostIPs); "" reports none."""
    host_ips: bool = True
    """Gate PodHostIPs (KEP-2681): report status.hostIPs besides hostIP."""
    disruption_conditions: bool = True
    """Gate PodDisruptionConditions: DisruptionTarget on a pod the kubelet preempted."""


def preempted(rt: PodRuntime) -> bool:
    """Whether the kubelet is killing (or killed) the pod for a critical one."""
    return rt.reason == PREEMPT_REASON and rt.state in (PodState.TERMINATING, PodState.TERMINATED)


def _preempted_status(
    status: types_pb2.PodStatus, pod: types_pb2.Pod, now: float, options: StatusOptions
) -> None:
    """What upstream's killPodFunc status function writes on a victim, from the start of
    its termination: Failed, Preempting, and DisruptionTarget/TerminationByKubelet."""
    status.phase = "Failed"
    status.reason = PREEMPT_REASON
    status.message = PREEMPT_MESSAGE
    if options.disruption_conditions:
        observed = condition_observed_generation(
            status, DISRUPTION_TARGET, pod.metadata.generation, tracking=options.observed_generation
        )
        condition = types_pb2.PodCondition(
            type=DISRUPTION_TARGET,
            status="True",
            reason=DISRUPTION_REASON,
            message=DISRUPTION_MESSAGE,
            observed_generation=observed,
        )
        update_pod_condition(status, condition, now)


def _admitted_status(
    status: types_pb2.PodStatus,
    pod: types_pb2.Pod,
    rt: PodRuntime,
    now: float,
    options: StatusOptions,
) -> None:
    status.start_time.CopyFrom(timestamp(rt.admitted_at))
    status.reason = ""
    status.message = ""
    running = rt.state in (PodState.RUNNING, PodState.TERMINATING)
    if running:
        status.phase = "Running"
    else:
        status.phase = "Succeeded" if rt.exit_code in (None, EXIT_OK) else "Failed"
    _set_pod_conditions(status, pod, running, now, options)
    _set_resize_conditions(status, rt, now, options)
    _set_addresses(status, pod, rt, options)
    _convert_to_api_container_statuses(status, pod, rt, running, options)


def _set_pod_conditions(
    status: types_pb2.PodStatus,
    pod: types_pb2.Pod,
    running: bool,
    now: float,
    options: StatusOptions,
) -> None:
    """The kubelet-owned conditions of an admitted pod: Ready and ContainersReady follow
    whether it runs, PodCompleted once it has finished."""
    ready, reason = ("True", "") if running else ("False", "PodCompleted")
    gate, generation = options.observed_generation, pod.metadata.generation
    for type_, value, why in (
        ("PodScheduled", "True", ""),
        ("PodReadyToStartContainers", "True" if running else "False", ""),
        ("Initialized", "True", reason),
        ("Ready", ready, reason),
        ("ContainersReady", ready, reason),
    ):
        observed = condition_observed_generation(status, type_, generation, tracking=gate)
        condition = types_pb2.PodCondition(
            type=type_, status=value, reason=why, observed_generation=observed
        )
        update_pod_condition(status, condition, now)


def _set_resize_conditions(
    status: types_pb2.PodStatus, rt: PodRuntime, now: float, options: StatusOptions
) -> None:
    """PodResizePending/PodResizeInProgress as the pod's resize stands (dropped when none)."""
    for type_, want in resize_conditions(rt, now).items():
        if want is None:
            _drop_conditions(status, (type_,))
            continue
        observed = condition_observed_generation(
            status, type_, want.observed_generation, tracking=options.observed_generation
        )
        condition = types_pb2.PodCondition(
            type=type_,
            status="True",
            reason=want.reason,
            message=want.message,
            observed_generation=observed,
        )
        # lastTransitionTime: when the resize came to this state, not now.
        update_pod_condition(status, condition, want.since)


def _convert_to_api_container_statuses(
    status: types_pb2.PodStatus,
    pod: types_pb2.Pod,
    rt: PodRuntime,
    running: bool,
    options: StatusOptions,
) -> None:
    """upstream convertToAPIContainerStatuses, for the app and the init containers."""
    report = options.report_resources
    exit_code = rt.exit_code
    del status.container_statuses[:]
    for c in pod.spec.containers:
        status.container_statuses.append(
            _container_status(
                c,
                rt,
                running=running,
                exit_code=exit_code,
                finished_at=rt.finished_at,
                report_resources=report,
            )
        )
    del status.init_container_statuses[:]
    for ic in pod.spec.init_containers:
        sidecar = ic.HasField("restart_policy") and ic.restart_policy == "Always"
        if sidecar:
            cs = _container_status(
                ic,
                rt,
                running=running,
                exit_code=exit_code,
                finished_at=rt.finished_at,
                report_resources=report,
            )
        else:  # ran to completion before the app containers started
            cs = _container_status(
                ic,
                rt,
                running=False,
                exit_code=EXIT_OK,
                finished_at=rt.started_at,
                report_resources=report,
            )
        status.init_container_statuses.append(cs)


def _set_addresses(
    status: types_pb2.PodStatus, pod: types_pb2.Pod, rt: PodRuntime, options: StatusOptions
) -> None:
    """generateAPIPodStatus's addresses: hostIP/hostIPs (with PodHostIPs) the node's,
    podIP/podIPs the pod's (kubelet.network); a hostNetwork pod's IP is the host's, set
    once."""
    host_ip = options.host_ip
    if host_ip:
        status.host_ip = host_ip
        if options.host_ips:
            del status.host_ips[:]
            status.host_ips.add(ip=host_ip)
    pod_ip = rt.pod_ip
    if pod.spec.host_network:
        pod_ip = status.pod_ip or host_ip
    if pod_ip:
        status.pod_ip = pod_ip
        del status.pod_ips[:]
        status.pod_ips.add(ip=pod_ip)


def build_status(
    pod: types_pb2.Pod, rt: PodRuntime, now: float, options: StatusOptions | None = None
) -> types_pb2.PodStatus:
    """The status the pod should have in state `rt.state`, built on its current status."""
    options = options or StatusOptions()
    status = types_pb2.PodStatus()
    status.CopyFrom(pod.status)
    if not status.qos_class:
        status.qos_class = compute_qos_class(pod)
    status.observed_generation = status_observed_generation(pod, gate=options.observed_generation)
    if rt.state == PodState.REJECTED:
        _rejected_status(status, rt)
    elif rt.state == PodState.PREPARING:
        _preparing_status(status, pod, rt, now, options)
    else:
        _admitted_status(status, pod, rt, now, options)
        if preempted(rt):
            _preempted_status(status, pod, now, options)
    return status


class StatusManager:
    """Writes the status the kubelet reports for a pod; see the module docstring."""

    def __init__(
        self,
        client: ApiClient,
        *,
        clock: Clock,
        options: StatusOptions | None = None,
        client_of: Callable[[str], ApiClient] | None = None,
    ) -> None:
        """`options`: what the version and gates make the kubelet report (its per-node
        fields are filled in for each write). `client_of`: a node's client, by its name (a
        hollow process's nodes each write as their node's user); None: `client`."""
        self._client = client
        self._client_of = client_of or (lambda _node: client)
        self._clock = clock
        self._options = options or StatusOptions()

    @staticmethod
    def reports(rt: PodRuntime) -> bool:
        """Whether a pod in rt's state has a status to report."""
        if rt.state in (
            PodState.PREPARING,
            PodState.RUNNING,
            PodState.SUCCEEDED,
            PodState.REJECTED,
        ) or preempted(rt):
            return True
        # A terminated pod whose containers ran reports how they ended, just before it goes.
        return rt.state == PodState.TERMINATED and rt.started_at is not None

    async def write(
        self, node: NodePods, pod: types_pb2.Pod, rt: PodRuntime
    ) -> types_pb2.Pod | None:
        """Makes the API's status match rt; the pod as written, or None if it is gone."""
        options = dataclasses.replace(
            self._options,
            host_ip=node.node_ip,
        )
        for _ in range(_WRITE_ATTEMPTS):
            status = build_status(pod, rt, self._clock.now(), options)
            if status == pod.status:
                return pod
            new = types_pb2.Pod()
            new.CopyFrom(pod)
            new.status.CopyFrom(status)
            try:
                written = await self._client_of(node.name).update_status(new)
            except NotFound:
                return None
            except Conflict:
                try:
                    pod = await self._client_of(node.name).get(types_pb2.Pod, rt.name, rt.namespace)
                except NotFound:
                    return None
                if pod.metadata.uid != rt.uid:
                    return None
                continue
            node.remember(written)
            return written
        raise Conflict(f"pod {rt.key}: status kept changing under {_WRITE_ATTEMPTS} writes")
