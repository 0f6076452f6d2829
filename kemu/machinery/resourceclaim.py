"""Which ResourceClaim a pod's claim entry uses, and whether the claim is the pod's (upstream
staging/src/k8s.io/dynamic-resource-allocation/resourceclaim/resourceclaim.go: Name, IsForPod,
IsReservedForPod, CanBeReserved), shared by the resourceclaim controller and the kubelet."""

from __future__ import annotations

from typing import Final

from kemu.api.v1 import types_pb2

RESERVED_FOR_MAX_SIZE: Final = 256
"""ResourceClaimReservedForMaxSize."""
POD_CLAIM_NAME_ANNOTATION: Final = "resource.kubernetes.io/pod-claim-name"
DELETE_PROTECTION_FINALIZER: Final = "resource.kubernetes.io/delete-protection"
"""resourceapi.Finalizer: the scheduler's, added before it writes an allocation."""
CLAIM_NOT_CREATED: Final = "ResourceClaim not created yet"
"""ErrClaimNotFound's text."""


class ClaimNotNeeded(Exception):
    """Name's nil: the pod's status says no claim is needed for the entry."""


def claim_name(pod: types_pb2.Pod, pod_claim: types_pb2.PodResourceClaim) -> tuple[str, bool]:
    """Name: the claim an entry uses and whether the pod must own it; "" when a template's
    claim is not recorded in status.resourceClaimStatuses yet (ErrClaimNotFound);
    ClaimNotNeeded when the status says none is needed."""
    if pod_claim.HasField("resource_claim_name"):
        return pod_claim.resource_claim_name, False
    for status in pod.status.resource_claim_statuses:
        if status.name == pod_claim.name:
            if not status.HasField("resource_claim_name"):
                raise ClaimNotNeeded(pod_claim.name)
            return status.resource_claim_name, True
    return "", True


def is_for_pod(pod: types_pb2.Pod, claim: types_pb2.ResourceClaim) -> bool:
    """IsForPod: the pod is the claim's controlling owner."""
    return any(r.uid == pod.metadata.uid and r.controller for r in claim.metadata.owner_references)


def is_reserved_for_pod(pod: types_pb2.Pod, claim: types_pb2.ResourceClaim) -> bool:
    return any(r.uid == pod.metadata.uid for r in claim.status.reserved_for)


def can_be_reserved(claim: types_pb2.ResourceClaim) -> bool:
    return len(claim.status.reserved_for) < RESERVED_FOR_MAX_SIZE


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
