"""The PersistentVolume controller's reclaim of released volumes (upstream pv_controller.go
reclaimVolume, deleteVolumeOperation, isVolumeReleased, doDeleteVolume, findDeletablePlugin,
recycleVolumeOperation).

By the volume's reclaim policy: Retain keeps it Released; Delete re-reads the volume and,
when it is still released, leaves a volume an external provisioner made
(`pv.kubernetes.io/provisioned-by` not `kubernetes.io/...`) to that provisioner, deletes a
hostPath under /tmp/ (upstream's hostPath deleter; kemu has no data to erase) and fails any
other (VolumeFailedDelete, phase Failed: kemu has no in-tree deleter; tried again on every
sync); Recycle fails as upstream's does without a recycler (VolumeFailedRecycle); an unknown
policy is VolumeUnknownReclaimPolicy, phase Failed.
"""

from __future__ import annotations

import logging
from typing import Final, Protocol

from controllermanager.persistentvolume.binding import VolumeWriter
from kemu.api.v1 import types_pb2
from kemu.client.interface import ApiClient
from kemu.machinery.errors import NotFound
from kemu.machinery.kinds import EVENT_WARNING
from kemu.machinery.storage import (
    ANN_DYNAMICALLY_PROVISIONED,
    DELETE,
    RECYCLE,
    RETAIN,
    VOLUME_FAILED,
)
from kemu.scheduling.pv_helpers import (
    volume_reclaim_policy,
)

logger = logging.getLogger(__name__)

VOLUME_FAILED_DELETE: Final = "VolumeFailedDelete"
VOLUME_FAILED_RECYCLE: Final = "VolumeFailedRecycle"
VOLUME_UNKNOWN_RECLAIM_POLICY: Final = "VolumeUnknownReclaimPolicy"
HOST_PATH_DELETABLE_PREFIX: Final = "/tmp/"


class ClaimGetter(Protocol):
    """The claims informer's lister, as far as reclaiming needs it."""

    def get(self, name: str, namespace: str = "") -> types_pb2.PersistentVolumeClaim | None: ...


class Reclaimer:
    """Carries out a released volume's reclaim policy; see the module docstring."""

    def __init__(self, client: ApiClient, writer: VolumeWriter, claims: ClaimGetter) -> None:
        self._client = client
        self._writer = writer
        self._claims = claims

    async def reclaim_volume(self, volume: types_pb2.PersistentVolume) -> None:
        """reclaimVolume by the volume's policy."""
        policy = volume_reclaim_policy(volume)
        if policy == RETAIN:
            return
        if policy == RECYCLE:
            await self._writer.update_volume_phase_with_event(
                volume,
                VOLUME_FAILED,
                EVENT_WARNING,
                VOLUME_FAILED_RECYCLE,
                "No recycler plugin found for the volume!",
            )
            return
        if policy == DELETE:
            await self._delete_volume_operation(volume)
            return
        await self._writer.update_volume_phase_with_event(
            volume,
            VOLUME_FAILED,
            EVENT_WARNING,
            VOLUME_UNKNOWN_RECLAIM_POLICY,
            "Volume has unrecognized PersistentVolumeReclaimPolicy",
        )

    def _is_volume_released(self, volume: types_pb2.PersistentVolume) -> bool:
        """isVolumeReleased: bound to a claim (uid set) that is gone, was replaced, or is
        bound to another volume."""
        if not volume.spec.HasField("claim_ref") or not volume.spec.claim_ref.uid:
            return False
        ref = volume.spec.claim_ref
        claim = self._claims.get(ref.name, ref.namespace)
        if claim is not None and claim.metadata.uid == ref.uid:
            return bool(claim.spec.volume_name) and claim.spec.volume_name != volume.metadata.name
        return True

    async def _delete_volume_operation(self, volume: types_pb2.PersistentVolume) -> None:
        """deleteVolumeOperation: re-reads the volume; an external provisioner's volume is
        left to it; a volume kemu can delete (a hostPath under /tmp/) is deleted; any other
        fails (VolumeFailedDelete, Failed; tried again on every sync)."""
        try:
            fresh = await self._client.get(types_pb2.PersistentVolume, volume.metadata.name)
        except NotFound:
            return
        if fresh.metadata.HasField("deletion_timestamp") or not self._is_volume_released(fresh):
            return
        provisioned_by = fresh.metadata.annotations.get(ANN_DYNAMICALLY_PROVISIONED, "")
        if provisioned_by and not provisioned_by.startswith("kubernetes.io/"):
            logger.debug(
                "volume %s: external deleter %s requested", volume.metadata.name, provisioned_by
            )
            return
        error = _deleter_error(fresh)
        if error:
            await self._writer.update_volume_phase_with_event(
                fresh, VOLUME_FAILED, EVENT_WARNING, VOLUME_FAILED_DELETE, error
            )
            return
        try:
            await self._client.delete(
                types_pb2.PersistentVolume, fresh.metadata.name, uid=fresh.metadata.uid
            )
        except NotFound:
            return
        logger.info("volume %s deleted", fresh.metadata.name)


def _deleter_error(volume: types_pb2.PersistentVolume) -> str:
    """Why no deleter can delete the volume ("" when one can): findDeletablePlugin and the
    hostPath deleter's rule."""
    if volume.spec.HasField("host_path"):
        path = volume.spec.host_path.path
        if path.startswith(HOST_PATH_DELETABLE_PREFIX) and len(path) > len(
            HOST_PATH_DELETABLE_PREFIX
        ):
            return ""
        return f"host_path deleter only supports /tmp/.+ but received provided {path}"
    return (
        f'error getting deleter volume plugin for volume "{volume.metadata.name}": '
        "no deletable volume plugin matched"
    )
