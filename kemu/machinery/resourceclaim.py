"""A pod's ResourceClaims as every component reads them (upstream
staging/src/k8s.io/dynamic-resource-allocation/resourceclaim/resourceclaim.go): the claim
an entry of `spec.resourceClaims` names, whether the pod owns it, whether it is reserved for
the pod.
"""

from __future__ import annotations

from typing import Final

from kemu.api.v1 import types_pb2
from kemu.machinery.keys import object_key

RESERVED_FOR_MAX_SIZE: Final = 256  # resourceapi.ResourceClaimReservedForMaxSize


class ClaimNameError(Exception):
    """A `spec.resourceClaims` entry whose claim cannot be named yet (upstream's messages)."""


def pod_claim_name(pod: types_pb2.Pod, ref: types_pb2.PodResourceClaim) -> tuple[str | None, bool]:
    """The name of the claim an entry uses, and whether the pod must own it (a template's
    claim); None when the template needs no claim (upstream resourceclaim.Name).
    ClaimNameError when a template's claim is not created yet, or the entry names nothing."""
    found = pod_claim_name_or_none(pod, ref)
    if found is not None:
        return found
    if ref.HasField("resource_claim_template_name"):
        raise ClaimNameError(f'pod "{object_key(pod)}": ResourceClaim not created yet')
    raise ClaimNameError(
        f'pod "{object_key(pod)}", spec.resourceClaim "{ref.name}": '
        "none of the supported fields are set"
    )


def pod_claim_name_or_none(
    pod: types_pb2.Pod, ref: types_pb2.PodResourceClaim
) -> tuple[str | None, bool] | None:
    """pod_claim_name without its error (None instead: no message built, for callers that
    drop it, such as the scheduler's queueing hints)."""
    if ref.HasField("resource_claim_name"):
        return ref.resource_claim_name, False
    if ref.HasField("resource_claim_template_name"):
        for status in pod.status.resource_claim_statuses:
            if status.name == ref.name:
                if status.HasField("resource_claim_name"):
                    return status.resource_claim_name, True
                return None, False
    return None


def is_for_pod(pod: types_pb2.Pod, claim: types_pb2.ResourceClaim) -> bool:
    """The claim's controller is the pod (upstream IsForPod)."""
    return any(o.controller and o.uid == pod.metadata.uid for o in claim.metadata.owner_references)


def not_for_pod_message(pod: types_pb2.Pod, claim: types_pb2.ResourceClaim) -> str:
    return (
        f"ResourceClaim {object_key(claim)} was not created for pod {object_key(pod)} "
        "(pod is not owner)"
    )


def is_reserved_for_pod(pod: types_pb2.Pod, claim: types_pb2.ResourceClaim) -> bool:
    """The pod's uid is in the claim's reservedFor (upstream IsReservedForPod)."""
    uid = pod.metadata.uid
    return any(r.uid == uid and r.resource == "pods" for r in claim.status.reserved_for)


def can_be_reserved(claim: types_pb2.ResourceClaim) -> bool:
    """Structured claims are always shareable: room in reservedFor is enough (CanBeReserved)."""
    return len(claim.status.reserved_for) < RESERVED_FOR_MAX_SIZE


# The resourceclaim controller's and the kubelet's (wave/dra-node).

POD_CLAIM_NAME_ANNOTATION: Final = "resource.kubernetes.io/pod-claim-name"
"""On a claim generated from a template: the name of the pod's entry it is for."""
DELETE_PROTECTION_FINALIZER: Final = "resource.kubernetes.io/delete-protection"
"""resourceapi.Finalizer: the scheduler's, added before it writes an allocation."""
EXTENDED_RESOURCE_CLAIM_ANNOTATION: Final = "resource.kubernetes.io/extended-resource-claim"
"""On the claim the scheduler creates for a pod's extended resources backed by DRA
(resourceapi.ExtendedResourceClaimAnnotation), "true"."""


def is_extended_resource_claim(claim: types_pb2.ResourceClaim) -> bool:
    return claim.metadata.annotations.get(EXTENDED_RESOURCE_CLAIM_ANNOTATION) == "true"


def extended_resource_claim_name(pod: types_pb2.Pod) -> str:
    """The claim the scheduler created for the pod's extended resources backed by DRA
    (DRAExtendedResource: status.extendedResourceClaimStatus), or ""."""
    if not pod.status.HasField("extended_resource_claim_status"):
        return ""
    return pod.status.extended_resource_claim_status.resource_claim_name


def uses_claims(pod: types_pb2.Pod) -> bool:
    """Whether the pod's sandbox needs prepared claims: spec.resourceClaims, or the claim of
    its DRA-backed extended resources."""
    return bool(pod.spec.resource_claims) or bool(extended_resource_claim_name(pod))
