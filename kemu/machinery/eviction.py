"""The decisions of the pods/eviction subresource (upstream
pkg/registry/core/pod/storage/eviction.go), pure so that they can be tested without a server:
which PodDisruptionBudgets guard a pod, whether a PDB may be skipped, the check-and-decrement
of a PDB's status, and the DisruptionTarget condition an evicted pod gets.

The apiserver's eviction REST (apiserver/registry/eviction.py) applies them inside its
read-CAS loops.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from kemu.api.v1 import types_pb2
from kemu.machinery.convert import timestamp
from kemu.machinery.errors import Cause, Forbidden, InternalError, TooManyRequests
from kemu.machinery.labels import selector_from_label_selector
from kemu.machinery.pod_conditions import is_pod_ready
from kemu.machinery.pod_strategy import TERMINAL_PHASES

MAX_DISRUPTED_POD_SIZE: Final = 2000
"""A PDB whose status.disruptedPods has more entries refuses evictions (the disruption
controller has not caught up with the evictions already approved)."""

DISRUPTION_TARGET: Final = "DisruptionTarget"
EVICTION_REASON: Final = "EvictionByEvictionAPI"
EVICTION_MESSAGE: Final = "Eviction API: evicting"

ALWAYS_ALLOW: Final = "AlwaysAllow"
IF_HEALTHY_BUDGET: Final = "IfHealthyBudget"

DISRUPTION_ALLOWED_CONDITION: Final = "DisruptionAllowed"
INSUFFICIENT_PODS_REASON: Final = "InsufficientPods"

TOO_MANY_REQUESTS_MESSAGE: Final = (
    "Cannot evict pod as it would violate the pod's disruption budget."
)
MULTIPLE_PDBS_MESSAGE: Final = (
    "This pod has more than one PodDisruptionBudget, which the eviction subresource does not "
    "support."
)


def can_ignore_pdb(pod: types_pb2.Pod) -> bool:
    """A pod that is Pending, has ended or is already being deleted disrupts nothing more:
    it is deleted without looking at budgets (upstream canIgnorePDB)."""
    return pod.status.phase in (*TERMINAL_PHASES, "Pending") or pod.metadata.HasField(
        "deletion_timestamp"
    )


def should_enforce_resource_version(pod: types_pb2.Pod) -> bool:
    """Whether a PDB-free eviction pins the DELETE to the resourceVersion it read, so that it
    does not race with the pod becoming Running and Ready (upstream
    shouldEnforceResourceVersion: not for pods that ended or are being deleted)."""
    return pod.status.phase not in TERMINAL_PHASES and not pod.metadata.HasField(
        "deletion_timestamp"
    )


def matching_pdbs(
    pod: types_pb2.Pod, pdbs: Iterable[types_pb2.PodDisruptionBudget]
) -> list[types_pb2.PodDisruptionBudget]:
    """The PDBs of the pod's namespace whose selector matches its labels; an empty or invalid
    selector matches nothing (upstream getPodDisruptionBudgets)."""
    out = []
    for pdb in pdbs:
        if pdb.metadata.namespace != pod.metadata.namespace:
            continue
        selector = pdb.spec.selector
        if not selector.match_labels and not selector.match_expressions:
            continue
        try:
            matches = selector_from_label_selector(selector).matches(pod.metadata.labels)
        except ValueError:
            continue
        if matches:
            out.append(pdb)
    return out


def only_pdb(
    pod: types_pb2.Pod, pdbs: Iterable[types_pb2.PodDisruptionBudget]
) -> types_pb2.PodDisruptionBudget | None:
    """The one PDB guarding the pod, None if none; InternalError (500, upstream's message)
    when several do."""
    found = matching_pdbs(pod, pdbs)
    if len(found) > 1:
        raise InternalError(MULTIPLE_PDBS_MESSAGE)
    return found[0] if found else None


def unhealthy_pod_may_go(
    pod: types_pb2.Pod, pdb: types_pb2.PodDisruptionBudget, *, honour_policy: bool
) -> bool:
    """An unready pod is deleted without taking a disruption from the PDB when the PDB's
    unhealthyPodEvictionPolicy is AlwaysAllow, or (IfHealthyBudget, the default) when the
    application is not disrupted (currentHealthy >= desiredHealthy > 0). `honour_policy`:
    whether the emulated version knows the policy (PDBUnhealthyPodEvictionPolicy, on from
    1.27)."""
    if is_pod_ready(pod):
        return False
    if honour_policy and pdb.spec.unhealthy_pod_eviction_policy == ALWAYS_ALLOW:
        return True
    status = pdb.status
    return status.current_healthy >= status.desired_healthy and status.desired_healthy > 0


def still_processing(pdb_name: str) -> TooManyRequests:
    """The 429 of a PDB whose status is stale (or an eviction that raced with a pod becoming
    ready): clients retry (upstream createTooManyRequestsError)."""
    return TooManyRequests(
        TOO_MANY_REQUESTS_MESSAGE,
        [Cause("", f"The disruption budget {pdb_name} is still being processed by the server.")],
    )


def check_and_decrement(
    pdb: types_pb2.PodDisruptionBudget, pod_name: str, now: float, *, dry_run: bool
) -> None:
    """Takes one disruption from `pdb` (a copy the caller then writes) for evicting
    `pod_name`, recording it in status.disruptedPods (not on a dry run); TooManyRequests or
    Forbidden when the budget does not allow it (upstream checkAndDecrement)."""
    name = pdb.metadata.name
    status = pdb.status
    if status.observed_generation < pdb.metadata.generation:
        raise still_processing(name)
    if status.disruptions_allowed < 0:
        raise Forbidden(_forbidden(name, "pdb disruptions allowed is negative"))
    if len(status.disrupted_pods) > MAX_DISRUPTED_POD_SIZE:
        raise Forbidden(
            _forbidden(
                name,
                "DisruptedPods map too big - too many evictions not confirmed by PDB controller",
            )
        )
    if status.disruptions_allowed == 0:
        raise TooManyRequests(
            TOO_MANY_REQUESTS_MESSAGE,
            [
                Cause(
                    "",
                    f"The disruption budget {name} needs {status.desired_healthy} healthy pods "
                    f"and has {status.current_healthy} currently",
                )
            ],
        )
    status.disruptions_allowed -= 1
    if status.disruptions_allowed == 0:
        _set_disruption_not_allowed(pdb, now)
    if dry_run:
        return
    status.disrupted_pods[pod_name].CopyFrom(timestamp(now))


def _forbidden(pdb_name: str, why: str) -> str:
    return f'poddisruptionbudgets.policy "{pdb_name}" is forbidden: {why}'


def _set_disruption_not_allowed(pdb: types_pb2.PodDisruptionBudget, now: float) -> None:
    """DisruptionAllowed=False/InsufficientPods (upstream UpdateDisruptionAllowedCondition,
    meta.SetStatusCondition: the transition time changes only with the status)."""
    status = pdb.status
    for c in status.conditions:
        if c.type == DISRUPTION_ALLOWED_CONDITION:
            if c.status != "False":
                c.last_transition_time.CopyFrom(timestamp(now))
            c.status, c.reason, c.message = "False", INSUFFICIENT_PODS_REASON, ""
            c.observed_generation = status.observed_generation
            return
    c = status.conditions.add(
        type=DISRUPTION_ALLOWED_CONDITION,
        status="False",
        reason=INSUFFICIENT_PODS_REASON,
        observed_generation=status.observed_generation,
    )
    c.last_transition_time.CopyFrom(timestamp(now))


def add_disruption_target(pod: types_pb2.Pod, now: float) -> None:
    """DisruptionTarget=True/EvictionByEvictionAPI on the pod about to be deleted (upstream
    addConditionAndDeletePod, podutil.UpdatePodCondition: the transition time changes only
    with the status)."""
    for c in pod.status.conditions:
        if c.type == DISRUPTION_TARGET:
            if c.status != "True":
                c.last_transition_time.CopyFrom(timestamp(now))
            c.status, c.reason, c.message = "True", EVICTION_REASON, EVICTION_MESSAGE
            return
    c = pod.status.conditions.add(
        type=DISRUPTION_TARGET, status="True", reason=EVICTION_REASON, message=EVICTION_MESSAGE
    )
    c.last_transition_time.CopyFrom(timestamp(now))
