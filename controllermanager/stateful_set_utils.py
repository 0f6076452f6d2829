"""What the StatefulSet controller computes without I/O (upstream
pkg/controller/statefulset/stateful_set_utils.go).

- Identity: pod `<set>-<ordinal>` (the ordinal parsed back from the name: `(.*)-([0-9]+)$`),
  labels `statefulset.kubernetes.io/pod-name` and, with PodIndexLabel,
  `apps.kubernetes.io/pod-index`, hostname and subdomain (spec.serviceName) set at creation.
- Storage: a claim per volumeClaimTemplate, `<template>-<set>-<ordinal>`, labelled with the
  selector's matchLabels, mounted as the template's volume name.
- The retention policy (KEP-1847, StatefulSetAutoDeletePVC): which ownerReferences a claim
  should carry (`is_claim_owner_up_to_date`, `updated_claim_owner_refs`): whenDeleted Delete
  makes the set a controller owner of the claims of the ordinals in range; whenScaled Delete
  makes the pod the owner of its claims once its ordinal is condemned (scaled away).
- Revisions: kemu has no ControllerRevision objects (as for DaemonSets): a revision is named
  `<set>-<hash>`, the hash kemu.machinery.apps.compute_hash of the pod template with the
  collision count, and the pod's `controller-revision-hash` label carries that name.
- Pod states (isRunningAndReady, isRunningAndAvailable, isCreated, ...) and the status
  comparisons (inconsistentStatus, completeRollingUpdate).

`StatefulSetOptions` holds the gates the controller reads, resolved once.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from controllermanager.controller_utils import is_pod_available, new_controller_ref
from kemu.api.v1 import types_pb2
from kemu.component.featuregate import (
    MAX_UNAVAILABLE_STATEFUL_SET,
    POD_INDEX_LABEL,
    STATEFUL_SET_AUTO_DELETE_PVC,
    STATEFUL_SET_START_ORDINAL,
    FeatureGates,
)
from kemu.machinery import apps
from kemu.machinery.pod_conditions import is_pod_ready

POD_NAME_LABEL: Final = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL_KEY: Final = "apps.kubernetes.io/pod-index"
REVISION_LABEL: Final = apps.DEFAULT_DAEMON_SET_UNIQUE_LABEL_KEY  # controller-revision-hash
ORDERED_READY: Final = "OrderedReady"
PARALLEL: Final = "Parallel"
RETAIN: Final = "Retain"
DELETE: Final = "Delete"
_POD_NAME: Final = re.compile(r"^(.*)-([0-9]+)$")
_MAX_INT32: Final = 2**31 - 1


@dataclass(frozen=True)
class StatefulSetOptions:
    """The gates of the StatefulSet controller, as values."""

    retention_policy: bool = True
    """StatefulSetAutoDeletePVC: claims get ownerReferences after the retention policy."""
    start_ordinal: bool = True
    """StatefulSetStartOrdinal: spec.ordinals.start is honoured."""
    pod_index_label: bool = True
    """PodIndexLabel: pods get apps.kubernetes.io/pod-index."""
    max_unavailable: bool = True
    """MaxUnavailableStatefulSet: rollingUpdate.maxUnavailable pods are replaced at once."""

    @classmethod
    def from_gates(cls, gates: FeatureGates) -> StatefulSetOptions:
        return cls(
            retention_policy=gates.enabled(STATEFUL_SET_AUTO_DELETE_PVC),
            start_ordinal=gates.enabled(STATEFUL_SET_START_ORDINAL),
            pod_index_label=gates.enabled(POD_INDEX_LABEL),
            max_unavailable=gates.enabled(MAX_UNAVAILABLE_STATEFUL_SET),
        )


# ---------------------------------------------------------------- the set's spec, defaulted


def replicas(s: types_pb2.StatefulSet) -> int:
    return s.spec.replicas if s.spec.HasField("replicas") else 1


def start_ordinal(s: types_pb2.StatefulSet, options: StatefulSetOptions) -> int:
    """getStartOrdinal: spec.ordinals.start (0 without the gate)."""
    return s.spec.ordinals.start if options.start_ordinal and s.spec.HasField("ordinals") else 0


def end_ordinal(s: types_pb2.StatefulSet, options: StatefulSetOptions) -> int:
    """getEndOrdinal: the last ordinal in range (inclusive)."""
    return start_ordinal(s, options) + replicas(s) - 1


def allows_burst(s: types_pb2.StatefulSet) -> bool:
    """Parallel pod management (OrderedReady, the default, is monotonic)."""
    return s.spec.pod_management_policy == PARALLEL


def is_rolling_update(s: types_pb2.StatefulSet) -> bool:
    return s.spec.update_strategy.type in ("", apps.ROLLING_UPDATE)


def partition(s: types_pb2.StatefulSet) -> int:
    """spec.updateStrategy.rollingUpdate.partition (0 when unset or not rolling)."""
    if not is_rolling_update(s):
        return 0
    return s.spec.update_strategy.rolling_update.partition


def max_unavailable(s: types_pb2.StatefulSet) -> int:
    """getStatefulSetMaxUnavailable: rollingUpdate.maxUnavailable of spec.replicas, rounded
    down, at least 1 (1 when unset)."""
    ru = s.spec.update_strategy.rolling_update
    if not ru.HasField("max_unavailable"):
        return 1
    try:
        return max(1, apps.scaled_value(ru.max_unavailable, replicas(s), round_up=False))
    except ValueError:
        return 1  # validation refuses it


def retention_policy(s: types_pb2.StatefulSet) -> tuple[str, str]:
    """(whenDeleted, whenScaled), Retain when unset."""
    policy = s.spec.persistent_volume_claim_retention_policy
    return policy.when_deleted or RETAIN, policy.when_scaled or RETAIN


# ---------------------------------------------------------------- identity


def parent_and_ordinal(pod: types_pb2.Pod) -> tuple[str, int]:
    """getParentNameAndOrdinal: ("", -1) for a name that is not `<parent>-<ordinal>`."""
    m = _POD_NAME.match(pod.metadata.name)
    if m is None:
        return "", -1
    ordinal = int(m.group(2))
    return m.group(1), ordinal if ordinal <= _MAX_INT32 else -1


def ordinal_of(pod: types_pb2.Pod) -> int:
    return parent_and_ordinal(pod)[1]


def in_ordinal_range(
    pod: types_pb2.Pod, s: types_pb2.StatefulSet, opts: StatefulSetOptions
) -> bool:
    """podInOrdinalRange."""
    ordinal = ordinal_of(pod)
    return start_ordinal(s, opts) <= ordinal <= end_ordinal(s, opts)


def pod_name(s: types_pb2.StatefulSet, ordinal: int) -> str:
    return f"{s.metadata.name}-{ordinal}"


def claim_name(
    s: types_pb2.StatefulSet, template: types_pb2.PersistentVolumeClaim, ordinal: int
) -> str:
    """getPersistentVolumeClaimName."""
    return f"{template.metadata.name}-{s.metadata.name}-{ordinal}"


def is_member_of(s: types_pb2.StatefulSet, pod: types_pb2.Pod) -> bool:
    return parent_and_ordinal(pod)[0] == s.metadata.name


def identity_matches(s: types_pb2.StatefulSet, pod: types_pb2.Pod) -> bool:
    parent, ordinal = parent_and_ordinal(pod)
    return (
        ordinal >= 0
        and parent == s.metadata.name
        and pod.metadata.name == pod_name(s, ordinal)
        and pod.metadata.namespace == s.metadata.namespace
        and pod.metadata.labels.get(POD_NAME_LABEL) == pod.metadata.name
    )


def update_identity(s: types_pb2.StatefulSet, pod: types_pb2.Pod, opts: StatefulSetOptions) -> None:
    """updateIdentity: name, namespace and the identity labels."""
    ordinal = ordinal_of(pod)
    pod.metadata.name = pod_name(s, ordinal)
    pod.metadata.namespace = s.metadata.namespace
    pod.metadata.labels[POD_NAME_LABEL] = pod.metadata.name
    if opts.pod_index_label:
        pod.metadata.labels[POD_INDEX_LABEL_KEY] = str(ordinal)


# ---------------------------------------------------------------- storage


def claims_for(
    s: types_pb2.StatefulSet, ordinal: int
) -> dict[str, types_pb2.PersistentVolumeClaim]:
    """getPersistentVolumeClaims: per template name, the claim of that ordinal (the
    template's labels with the selector's matchLabels over them)."""
    out: dict[str, types_pb2.PersistentVolumeClaim] = {}
    for template in s.spec.volume_claim_templates:
        claim = types_pb2.PersistentVolumeClaim()
        claim.CopyFrom(template)
        claim.metadata.name = claim_name(s, template, ordinal)
        claim.metadata.namespace = s.metadata.namespace
        claim.metadata.labels.update(s.spec.selector.match_labels)
        out[template.metadata.name] = claim
    return out


def storage_matches(s: types_pb2.StatefulSet, pod: types_pb2.Pod) -> bool:
    ordinal = ordinal_of(pod)
    if ordinal < 0:
        return False
    volumes = {v.name: v for v in pod.spec.volumes}
    for template in s.spec.volume_claim_templates:
        v = volumes.get(template.metadata.name)
        if (
            v is None
            or not v.HasField("persistent_volume_claim")
            or v.persistent_volume_claim.claim_name != claim_name(s, template, ordinal)
        ):
            return False
    return True


def update_storage(s: types_pb2.StatefulSet, pod: types_pb2.Pod) -> None:
    """updateStorage: a volume per template naming the ordinal's claim, replacing a volume of
    the same name; the pod's other volumes kept after them."""
    claims = claims_for(s, ordinal_of(pod))
    kept = [v for v in pod.spec.volumes if v.name not in claims]
    new: list[types_pb2.Volume] = []
    for name, claim in claims.items():
        v = types_pb2.Volume(name=name)
        v.persistent_volume_claim.claim_name = claim.metadata.name
        new.append(v)
    del pod.spec.volumes[:]
    pod.spec.volumes.extend([*new, *kept])


# ---------------------------------------------------------------- the retention policy


def _refs_to(refs: Iterable[types_pb2.OwnerReference], uid: str) -> bool:
    return any(r.uid == uid for r in refs)


def _matches_ref(ref: types_pb2.OwnerReference, kind: str, api_version: str, name: str) -> bool:
    return ref.api_version == api_version and ref.kind == kind and ref.name == name


def _set_ref(ref: types_pb2.OwnerReference, s: types_pb2.StatefulSet) -> bool:
    return _matches_ref(ref, "StatefulSet", "apps/v1", s.metadata.name)


def _pod_ref(ref: types_pb2.OwnerReference, pod: types_pb2.Pod) -> bool:
    return _matches_ref(ref, "Pod", "v1", pod.metadata.name)


def stale_set_ref(claim: types_pb2.PersistentVolumeClaim, s: types_pb2.StatefulSet) -> bool:
    """hasStaleOwnerRef for the set: a reference to a StatefulSet of its name but another
    uid (a deleted and recreated set's)."""
    for ref in claim.metadata.owner_references:
        if _set_ref(ref, s):
            return ref.uid != s.metadata.uid
    return False


def stale_pod_ref(claim: types_pb2.PersistentVolumeClaim, pod: types_pb2.Pod) -> bool:
    """hasStaleOwnerRef for the pod: a reference to a pod of its name but another uid (a pod
    not created yet has none: any such reference is stale)."""
    for ref in claim.metadata.owner_references:
        if _pod_ref(ref, pod):
            return ref.uid != pod.metadata.uid
    return False


def _has_unexpected_controller(
    claim: types_pb2.PersistentVolumeClaim, s: types_pb2.StatefulSet, pod: types_pb2.Pod
) -> bool:
    if retention_policy(s) == (RETAIN, RETAIN):
        return False
    for ref in claim.metadata.owner_references:
        if _set_ref(ref, s):
            if ref.uid != s.metadata.uid:
                return True
            continue
        if _pod_ref(ref, pod):
            if ref.uid != pod.metadata.uid:
                return True
            continue
        if ref.controller:
            return True
    return False


def _has_non_controller_owner(
    claim: types_pb2.PersistentVolumeClaim, s: types_pb2.StatefulSet, pod: types_pb2.Pod
) -> bool:
    return any(
        r.uid in (s.metadata.uid, pod.metadata.uid) and not r.controller
        for r in claim.metadata.owner_references
    )


def is_claim_owner_up_to_date(
    claim: types_pb2.PersistentVolumeClaim,
    s: types_pb2.StatefulSet,
    pod: types_pb2.Pod,
    opts: StatefulSetOptions,
) -> bool:
    """isClaimOwnerUpToDate: whether the claim's references follow the policy (a claim with
    stale references or another controller is left alone)."""
    if stale_set_ref(claim, s) or stale_pod_ref(claim, pod):
        return True
    refs = claim.metadata.owner_references
    has_set, has_pod = _refs_to(refs, s.metadata.uid), _refs_to(refs, pod.metadata.uid)
    if _has_unexpected_controller(claim, s, pod):
        return not (has_set or has_pod)
    if _has_non_controller_owner(claim, s, pod):
        return False
    when_deleted, when_scaled = retention_policy(s)
    scaled_down = not in_ordinal_range(pod, s, opts)
    if when_scaled == DELETE and when_deleted == DELETE:
        return scaled_down != has_set and scaled_down == has_pod
    if when_scaled == DELETE:
        return not has_set and scaled_down == has_pod
    if when_deleted == DELETE:
        return has_set and not has_pod
    return not has_set and not has_pod


def updated_claim_owner_refs(
    claim: types_pb2.PersistentVolumeClaim,
    s: types_pb2.StatefulSet,
    pod: types_pb2.Pod,
    opts: StatefulSetOptions,
) -> list[types_pb2.OwnerReference]:
    """updateClaimOwnerRefForSetAndPod: the claim's references with the set's and the pod's
    replaced by those the policy asks for (none when another controller owns it)."""
    unexpected = _has_unexpected_controller(claim, s, pod)
    refs = [r for r in claim.metadata.owner_references if not (_set_ref(r, s) or _pod_ref(r, pod))]
    if unexpected:
        return refs
    when_deleted, when_scaled = retention_policy(s)
    scaled_down = not in_ordinal_range(pod, s, opts)
    if when_scaled == DELETE and scaled_down:
        refs.append(new_controller_ref(pod))
    if when_deleted == DELETE and not (when_scaled == DELETE and scaled_down):
        refs.append(new_controller_ref(s))
    return refs


# ---------------------------------------------------------------- revisions


def revision_name(s: types_pb2.StatefulSet, collision_count: int | None) -> str:
    """The update revision's name: `<set>-<hash of the template>`."""
    return f"{s.metadata.name}-{apps.compute_hash(s.spec.template, collision_count)}"


def pod_revision(pod: types_pb2.Pod) -> str:
    return pod.metadata.labels.get(REVISION_LABEL, "")


# ---------------------------------------------------------------- pod states


def is_created(pod: types_pb2.Pod) -> bool:
    """isCreated: the apiserver has the pod. Upstream tells by its phase, which the
    apiserver sets to Pending at creation; kemu's apiserver leaves it unset until the
    kubelet reports, so a pod of the informer (it has a uid) counts too."""
    return pod.status.phase != "" or pod.metadata.uid != ""


def is_pending(pod: types_pb2.Pod) -> bool:
    return pod.status.phase in ("Pending", "")  # kemu: unset until the kubelet reports


def is_failed(pod: types_pb2.Pod) -> bool:
    return pod.status.phase == "Failed"


def is_succeeded(pod: types_pb2.Pod) -> bool:
    return pod.status.phase == "Succeeded"


def is_terminating(pod: types_pb2.Pod) -> bool:
    return pod.metadata.HasField("deletion_timestamp")


def is_running_and_ready(pod: types_pb2.Pod) -> bool:
    return pod.status.phase == "Running" and is_pod_ready(pod)


def is_running_and_available(pod: types_pb2.Pod, min_ready_seconds: int, now: float) -> bool:
    """Upstream's isRunningAndAvailable is podutil.IsPodAvailable (Ready long enough)."""
    return is_pod_available(pod, min_ready_seconds, now)


def is_unavailable(pod: types_pb2.Pod, min_ready_seconds: int, now: float) -> bool:
    return not is_running_and_available(pod, min_ready_seconds, now) or is_terminating(pod)


def by_ordinal(pods: Sequence[types_pb2.Pod], *, descending: bool = False) -> list[types_pb2.Pod]:
    return sorted(pods, key=ordinal_of, reverse=descending)


# ---------------------------------------------------------------- status


def inconsistent_status(s: types_pb2.StatefulSet, status: types_pb2.StatefulSetStatus) -> bool:
    """inconsistentStatus: whether `status` must be written."""
    old = s.status
    return (
        status.observed_generation > old.observed_generation
        or status.replicas != old.replicas
        or status.current_replicas != old.current_replicas
        or status.ready_replicas != old.ready_replicas
        or status.updated_replicas != old.updated_replicas
        or status.current_revision != old.current_revision
        or status.available_replicas != old.available_replicas
        or status.update_revision != old.update_revision
    )


def complete_rolling_update(s: types_pb2.StatefulSet, status: types_pb2.StatefulSetStatus) -> None:
    """completeRollingUpdate: once every replica is updated and ready, the update revision
    becomes the current one."""
    n = replicas(s)
    if (
        is_rolling_update(s)
        and status.updated_replicas == n
        and status.ready_replicas == n
        and status.replicas == n
    ):
        status.current_replicas = status.updated_replicas
        status.current_revision = status.update_revision
