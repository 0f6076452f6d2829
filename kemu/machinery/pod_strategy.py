"""Rules of the pods resource that the apiserver applies and the fake client mirrors (upstream
pkg/registry/core/pod/strategy.go and pkg/apis/core defaults)."""

from __future__ import annotations

from typing import Final

from google.protobuf.message import Message

from kemu.api.v1 import types_pb2
from kemu.machinery.convert import timestamp
from kemu.machinery.delete_options import check_preconditions
from kemu.machinery.errors import Conflict

# spec.terminationGracePeriodSeconds when the pod does not set it (upstream's default).
DEFAULT_TERMINATION_GRACE_SECONDS: Final = 30
TERMINAL_PHASES: Final = ("Succeeded", "Failed")


def graceful_deletion_period(obj: Message, requested: int | None) -> int | None:
    """Seconds of graceful termination for a DELETE with `requested` grace (None: the pod's
    own), or None to delete from storage now (upstream CheckGracefulDelete).

    Only pods terminate gracefully, and only when a kubelet will finish them: a pod that is
    not bound to a node, or has already ended, goes at once; so does a grace of 0.
    """
    if not isinstance(obj, types_pb2.Pod):
        return None
    if not obj.spec.node_name or obj.status.phase in TERMINAL_PHASES:
        return None
    grace = requested
    if grace is None:
        grace = (
            obj.spec.termination_grace_period_seconds
            if obj.spec.HasField("termination_grace_period_seconds")
            else DEFAULT_TERMINATION_GRACE_SECONDS
        )
    return grace or None


def begin_graceful_deletion(meta: types_pb2.ObjectMeta, now: float, grace: int) -> bool:
    """Marks `meta` (of a copy the caller then writes) deleted at `now + grace`: sets
    deletionTimestamp and deletionGracePeriodSeconds. False, leaving `meta` alone, when it
    already has that deadline or an earlier one: a shorter grace period replaces the deadline,
    a longer one never does (upstream BeforeDelete)."""
    deadline = now + grace
    if meta.HasField("deletion_timestamp") and meta.deletion_timestamp.ToNanoseconds() <= int(
        deadline * 1e9
    ):
        return False
    meta.deletion_timestamp.CopyFrom(timestamp(deadline))
    meta.deletion_grace_period_seconds = grace
    return True


def default_requests_from_limits(spec: types_pb2.PodSpec) -> None:
    """A container limit without a request defaults the request to the limit (upstream
    SetDefaults_Pod), for init and app containers."""
    for c in (*spec.init_containers, *spec.containers):
        for name, value in c.resources.limits.items():
            if name not in c.resources.requests:
                c.resources.requests[name] = value


def check_binding_preconditions(pod: types_pb2.Pod, *, uid: str, resource_version: str) -> None:
    """The storage preconditions of a pods/binding (upstream BindingREST setPodNodeAndMetadata):
    a binding that names the pod's uid (and resourceVersion) binds only that pod, never a
    namesake created since. An empty value is no precondition. Conflict as upstream's."""
    try:
        check_preconditions(
            pod.metadata, uid=uid or None, resource_version=resource_version or None
        )
    except Conflict as e:
        raise Conflict(
            f'Operation cannot be fulfilled on pods "{pod.metadata.name}": {e.message}'
        ) from None


def check_bindable(pod: types_pb2.Pod) -> None:
    """Conflict when the stored pod cannot take a binding: it is being deleted, already on a
    node, or still gated (upstream's pods/binding update function)."""
    name = pod.metadata.name
    if pod.metadata.HasField("deletion_timestamp"):
        why = f"pod {name} is being deleted, cannot be assigned to a host"
    elif pod.spec.node_name:
        why = f'pod {name} is already assigned to node "{pod.spec.node_name}"'
    elif pod.spec.scheduling_gates:
        why = f"pod {name} has non-empty .spec.schedulingGates"
    else:
        return
    raise Conflict(f'Operation cannot be fulfilled on pods/binding "{name}": {why}')


SCHEDULING_GATED: Final = "SchedulingGated"
SCHEDULING_GATED_MESSAGE: Final = "Scheduling is blocked due to non-empty scheduling gates"


def apply_scheduling_gated_condition(pod: types_pb2.Pod, now: float) -> None:
    """A new pod with scheduling gates starts PodScheduled=False reason SchedulingGated
    (upstream's pod strategy PrepareForCreate, applySchedulingGatedCondition), unless it
    already has a PodScheduled condition."""
    if not pod.spec.scheduling_gates:
        return
    if any(c.type == "PodScheduled" for c in pod.status.conditions):
        return
    c = pod.status.conditions.add(
        type="PodScheduled",
        status="False",
        reason=SCHEDULING_GATED,
        message=SCHEDULING_GATED_MESSAGE,
    )
    c.last_transition_time.CopyFrom(timestamp(now))
