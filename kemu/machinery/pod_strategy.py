"""Rules of the pods resource that the apiserver applies and the fake client mirrors (upstream
pkg/registry/core/pod/strategy.go and pkg/apis/core defaults)."""

from __future__ import annotations

from typing import Final

from kemu.api.v1 import types_pb2
from kemu.machinery.convert import timestamp
from kemu.machinery.delete_options import check_preconditions
from kemu.machinery.errors import Conflict, Invalid
from kemu.machinery.quantity import format_resource
from kemu.machinery.resources import (
    HUGEPAGES_PREFIX,
    PodResourcesOptions,
    is_supported_pod_level_resource,
    pod_limits,
    pod_requests,
)

# spec.terminationGracePeriodSeconds when the pod does not set it (upstream's default).
DEFAULT_TERMINATION_GRACE_SECONDS: Final = 30
TERMINAL_PHASES: Final = ("Succeeded", "Failed")


def check_graceful_delete(pod: types_pb2.Pod, requested: int | None) -> int:
    """The grace period of a first DELETE of `pod` with `requested` grace (None: the pod's
    own); upstream podStrategy.CheckGracefulDelete, which makes every pod deletion graceful:
    a pod is always marked (deletionTimestamp = now + period) before it is removed, with a
    period of 0 when it is not bound to a node or has already ended. A negative request has
    already become 1 (`normalize_grace`).
    """
    if requested is not None:
        period = requested
    elif pod.spec.HasField("termination_grace_period_seconds"):
        period = pod.spec.termination_grace_period_seconds
    else:
        # Defaulting always sets it on the apiserver; objects that skipped it (the fake
        # client's) get the default too.
        period = DEFAULT_TERMINATION_GRACE_SECONDS
    if not pod.spec.node_name or pod.status.phase in TERMINAL_PHASES:
        period = 0
    return 1 if period < 0 else period


def spec_grace_seconds(pod: types_pb2.Pod) -> int:
    """The pod's spec.terminationGracePeriodSeconds, the default (30) where it is unset."""
    if pod.spec.HasField("termination_grace_period_seconds"):
        return pod.spec.termination_grace_period_seconds
    return DEFAULT_TERMINATION_GRACE_SECONDS


def normalize_grace(requested: int | None) -> int | None:
    """A negative gracePeriodSeconds means 1 s on the delete path (upstream BeforeDelete)."""
    if requested is not None and requested < 0:
        return 1
    return requested


def shorten_graceful_deletion(meta: types_pb2.ObjectMeta, requested: int | None) -> bool:
    """A DELETE of an object whose graceful deletion is pending (deletionTimestamp set,
    deletionGracePeriodSeconds > 0): only a shorter grace period changes it, and the new
    deadline counts from when the deletion began (deadline - old grace + new grace), as
    upstream's BeforeDelete. False (nothing changes) for no grace or one not shorter."""
    current = meta.deletion_grace_period_seconds
    if requested is None or requested >= current:
        return False
    start_ns = meta.deletion_timestamp.ToNanoseconds() - current * 1_000_000_000
    meta.deletion_timestamp.FromNanoseconds(start_ns + requested * 1_000_000_000)
    meta.deletion_grace_period_seconds = requested
    return True


LATEST_TIMESTAMP: Final = 253402300799
"""9999-12-31T23:59:59Z: the latest time a Timestamp (and RFC 3339, upstream's JSON) holds."""


def begin_graceful_deletion(meta: types_pb2.ObjectMeta, now: float, grace: int) -> None:
    """Marks `meta` (of a copy the caller then writes) for deletion at `now + grace`, with a
    generation bump (upstream BeforeDelete's first graceful deletion). Invalid when that time
    cannot be written (upstream's Go arithmetic overflows there; kemu names the field)."""
    if now + grace > LATEST_TIMESTAMP:
        raise Invalid.field(
            "gracePeriodSeconds",
            f"Invalid value: {grace}: the deletion time it gives is past "
            "9999-12-31T23:59:59Z, the latest a timestamp can hold",
        )
    meta.deletion_timestamp.CopyFrom(timestamp(now + grace))
    meta.deletion_grace_period_seconds = grace
    if meta.generation > 0:
        meta.generation += 1


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


def merge_match_label_keys(pod: types_pb2.Pod) -> None:
    """KEP-3243's apiserver merge (MatchLabelKeysInPodTopologySpreadSelectorMerge, 1.34): for
    each spread constraint with a labelSelector, every matchLabelKeys key the pod has a label
    for becomes a `key In [value]` requirement of that selector, so controllers and the
    scheduler read one selector (upstream's pod strategy PrepareForCreate)."""
    labels = pod.metadata.labels
    for constraint in pod.spec.topology_spread_constraints:
        if not constraint.HasField("label_selector"):
            continue
        for key in constraint.match_label_keys:
            if key in labels:
                constraint.label_selector.match_expressions.add(
                    key=key, operator="In", values=[labels[key]]
                )


_CONTAINERS_ONLY: Final = PodResourcesOptions(exclude_overhead=True, pod_level_resources=False)
"""The containers aggregated (upstream AggregateContainerRequests/Limits): no status, no
pod-level values, no overhead."""


def default_pod_level_resources(pod: types_pb2.Pod) -> None:
    """SetDefaults_Pod's pod-level part with the PodLevelResources gate (pkg/apis/core/v1/
    defaults.go, after the containers' requests were defaulted from their limits), only for a
    pod that sets some pod-level value:

    * defaultHugePagePodLimits: a hugepages size the containers limit, with neither a
      pod-level request nor limit for it, gets the containers' aggregated limit;
    * defaultPodRequests (only with pod-level limits): a resource without a pod-level request
      gets the containers' aggregated request (cpu and memory: the overcommittable ones), or
      else its pod-level limit.

    Not modelled: defaultPodLimits (pod-level cpu and memory limits from the containers', a
    later addition whose first version kemu has not placed). Quantities the aggregation makes
    are written in kemu's canonical form (`format_resource`)."""
    res = pod.spec.resources
    if not res.limits and not res.requests:
        return
    try:
        aggregated_limits = pod_limits(pod, _CONTAINERS_ONLY)
        aggregated_requests = pod_requests(pod, _CONTAINERS_ONLY)
    except Invalid:
        return  # validation reports the containers' quantities
    for name, value in sorted(aggregated_limits.items()):
        if (
            name.startswith(HUGEPAGES_PREFIX)
            and name not in res.requests
            and name not in res.limits
        ):
            res.limits[name] = format_resource(name, value)
    if not res.limits:
        return
    for name, value in sorted(aggregated_requests.items()):
        overcommit = not name.startswith(HUGEPAGES_PREFIX)
        if name not in res.requests and is_supported_pod_level_resource(name) and overcommit:
            res.requests[name] = format_resource(name, value)
    for name, text in res.limits.items():
        if name not in res.requests and is_supported_pod_level_resource(name):
            res.requests[name] = text


def drop_disabled_pod_level_resources(
    new: types_pb2.PodSpec, old: types_pb2.PodSpec | None, *, enabled: bool
) -> None:
    """upstream's dropDisabledPodLevelResources (pkg/api/pod/util.go): without the
    PodLevelResources gate, spec.resources is dropped from a create or an update unless the
    stored pod already uses it (non-empty requests or limits), so a pod written while the gate
    was on keeps it."""
    if enabled:
        return
    if old is not None and (old.resources.requests or old.resources.limits):
        return
    new.ClearField("resources")


def drop_disabled_pod_status_fields(
    new: types_pb2.Pod,
    old: types_pb2.Pod | None,
    *,
    observed_generation: bool,
    host_ips: bool = True,
) -> None:
    """upstream's dropDisabledPodStatusFields for PodHostIPs and PodObservedGenerationTracking:
    without a gate, its fields (status.hostIPs; status.observedGeneration and the conditions'
    observedGeneration) are dropped from a status write unless the stored pod already uses
    them (so a value written while the gate was on is never wiped by a writer that does not
    know it)."""
    if not host_ips and (old is None or not old.status.host_ips):
        del new.status.host_ips[:]
    if observed_generation:
        return
    in_use = old is not None and (
        old.status.observed_generation != 0
        or any(c.observed_generation for c in old.status.conditions)
    )
    if in_use:
        return
    new.status.observed_generation = 0
    for c in new.status.conditions:
        c.observed_generation = 0
