"""What the volume controllers share (upstream pkg/controller/volume/common): the index of pods
by the claims they use."""

from __future__ import annotations

from typing import Final

from kemu.api.v1 import types_pb2
from kemu.client.informer import Informer

POD_PVC_INDEX: Final = "pod-pvc-index"


def pod_claim_keys(pod: types_pb2.Pod) -> list[str]:
    """The "namespace/name" keys of the claims a pod uses (upstream's PodPVCIndexFunc)."""
    ns = pod.metadata.namespace
    return [
        f"{ns}/{v.persistent_volume_claim.claim_name}"
        for v in pod.spec.volumes
        if v.HasField("persistent_volume_claim") and v.persistent_volume_claim.claim_name
    ]


def index_pods_by_claim(pods: Informer[types_pb2.Pod]) -> None:
    """AddIndexerIfNotPresent(PodPVCIndex): once however many controllers share the informer."""
    try:
        pods.add_indexer(POD_PVC_INDEX, pod_claim_keys)
    except ValueError:
        pass  # another controller added it
