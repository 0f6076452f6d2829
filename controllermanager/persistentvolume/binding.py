"""The PersistentVolume controller's API writes (upstream pv_controller.go: bind,
bindVolumeToClaim, bindClaimToVolume, unbindVolume, updateClaimStatus(WithEvent),
updateVolumePhase(WithEvent)).

Every write starts from a copy of the object it is given (never an informer's object) and is
made only when something changes. A write that meets a newer object fails with Conflict: the
caller's sync raises it and is retried, rate-limited, from the informer's newer copy.
"""

from __future__ import annotations

import logging
from typing import Final

from kemu.api.v1 import types_pb2
from kemu.client.events import EventRecorder, object_reference
from kemu.client.interface import ApiClient
from kemu.machinery.errors import Invalid
from kemu.machinery.storage import (
    ANN_BIND_COMPLETED,
    ANN_BOUND_BY_CONTROLLER,
    CLAIM_BOUND,
    STORAGE,
    VOLUME_AVAILABLE,
    VOLUME_BOUND,
)
from kemu.scheduling.pv_helpers import (
    is_volume_bound_to_claim,
)

logger = logging.getLogger(__name__)

YES: Final = "yes"


def _copy_claim(claim: types_pb2.PersistentVolumeClaim) -> types_pb2.PersistentVolumeClaim:
    new = types_pb2.PersistentVolumeClaim()
    new.CopyFrom(claim)
    return new


def _copy_volume(volume: types_pb2.PersistentVolume) -> types_pb2.PersistentVolume:
    new = types_pb2.PersistentVolume()
    new.CopyFrom(volume)
    return new


def claim_reference(claim: types_pb2.PersistentVolumeClaim) -> types_pb2.ObjectReference:
    """reference.GetReference of a claim: what a volume's spec.claimRef holds."""
    return object_reference(claim)


def volume_bound_to_claim(
    volume: types_pb2.PersistentVolume, claim: types_pb2.PersistentVolumeClaim
) -> types_pb2.PersistentVolume | None:
    """GetBindVolumeToClaim: a copy of the volume whose claimRef is the claim (with its uid),
    annotated bound-by-controller unless the user pre-bound it; None when nothing changes."""
    ref = volume.spec.claim_ref if volume.spec.HasField("claim_ref") else None
    if (
        ref is not None
        and ref.name == claim.metadata.name
        and ref.namespace == claim.metadata.namespace
        and ref.uid == claim.metadata.uid
    ):
        return None
    new = _copy_volume(volume)
    new.spec.claim_ref.CopyFrom(claim_reference(claim))
    if not is_volume_bound_to_claim(volume, claim):
        new.metadata.annotations.setdefault(ANN_BOUND_BY_CONTROLLER, YES)
    return new


class VolumeWriter:
    """The controller's writes of volumes and claims, and the events that go with them."""

    def __init__(self, client: ApiClient, recorder: EventRecorder) -> None:
        self._client = client
        self._recorder = recorder

    async def update_volume_phase(
        self, volume: types_pb2.PersistentVolume, phase: str, message: str = ""
    ) -> types_pb2.PersistentVolume:
        """updateVolumePhase: status.phase and status.message, when the phase changes."""
        if volume.status.phase == phase:
            return volume
        new = _copy_volume(volume)
        new.status.phase = phase
        new.status.message = message
        updated = await self._client.update_status(new)
        logger.info("volume %s entered phase %s", volume.metadata.name, phase)
        return updated

    async def update_volume_phase_with_event(
        self,
        volume: types_pb2.PersistentVolume,
        phase: str,
        event_type: str,
        reason: str,
        message: str,
    ) -> types_pb2.PersistentVolume:
        """updateVolumePhaseWithEvent: the event only when the phase changes."""
        if volume.status.phase == phase:
            return volume
        updated = await self.update_volume_phase(volume, phase, message)
        self._recorder.event(updated, event_type, reason, "", message)
        return updated

    async def update_claim_status(
        self,
        claim: types_pb2.PersistentVolumeClaim,
        phase: str,
        volume: types_pb2.PersistentVolume | None,
    ) -> types_pb2.PersistentVolumeClaim:
        """updateClaimStatus: the phase; with a volume its access modes and (when the claim
        becomes bound) its capacity, without one neither."""
        new = _copy_claim(claim)
        dirty = claim.status.phase != phase
        new.status.phase = phase
        if volume is None:
            if new.status.access_modes or new.status.capacity:
                del new.status.access_modes[:]
                new.status.capacity.clear()
                dirty = True
        else:
            if list(claim.status.access_modes) != list(volume.spec.access_modes):
                del new.status.access_modes[:]
                new.status.access_modes.extend(volume.spec.access_modes)
                dirty = True
            if claim.status.phase != phase:
                if STORAGE not in volume.spec.capacity:
                    raise Invalid(
                        f'PersistentVolume "{volume.metadata.name}" is without a storage capacity'
                    )
                if dict(claim.status.capacity) != dict(volume.spec.capacity):
                    new.status.capacity.clear()
                    new.status.capacity.update(volume.spec.capacity)
                    dirty = True
        if not dirty:
            return claim
        updated = await self._client.update_status(new)
        logger.info(
            "claim %s/%s entered phase %s", claim.metadata.namespace, claim.metadata.name, phase
        )
        return updated

    async def update_claim_status_with_event(
        self,
        claim: types_pb2.PersistentVolumeClaim,
        phase: str,
        event_type: str,
        reason: str,
        message: str,
    ) -> types_pb2.PersistentVolumeClaim:
        """updateClaimStatusWithEvent (no volume): the event only when the phase changes."""
        if claim.status.phase == phase:
            return claim
        updated = await self.update_claim_status(claim, phase, None)
        self._recorder.event(updated, event_type, reason, "", message)
        return updated

    async def bind(
        self, volume: types_pb2.PersistentVolume, claim: types_pb2.PersistentVolumeClaim
    ) -> None:
        """bind: the volume's claimRef, the volume Bound, the claim's volumeName and
        annotations, the claim Bound, in this order (the volume first, so that a claim never
        points at a volume that does not point back for long)."""
        bound = volume_bound_to_claim(volume, claim)
        if bound is not None:
            volume = await self._client.update(bound)
            logger.info(
                "claim %s/%s bound to volume %s",
                claim.metadata.namespace,
                claim.metadata.name,
                volume.metadata.name,
            )
        volume = await self.update_volume_phase(volume, VOLUME_BOUND)
        claim = await self._bind_claim_to_volume(claim, volume)
        await self.update_claim_status(claim, CLAIM_BOUND, volume)

    async def _bind_claim_to_volume(
        self, claim: types_pb2.PersistentVolumeClaim, volume: types_pb2.PersistentVolume
    ) -> types_pb2.PersistentVolumeClaim:
        """bindClaimToVolume: spec.volumeName (bound-by-controller when the controller chose
        it) and bind-completed."""
        new = _copy_claim(claim)
        dirty = False
        if claim.spec.volume_name != volume.metadata.name:
            new.spec.volume_name = volume.metadata.name
            new.metadata.annotations.setdefault(ANN_BOUND_BY_CONTROLLER, YES)
            dirty = True
        if ANN_BIND_COMPLETED not in new.metadata.annotations:
            new.metadata.annotations[ANN_BIND_COMPLETED] = YES
            dirty = True
        if not dirty:
            return claim
        return await self._client.update(new)

    async def unbind_volume(self, volume: types_pb2.PersistentVolume) -> None:
        """unbindVolume: a volume the controller bound loses its claimRef and annotation; one
        the user pre-bound keeps its claimRef without the uid. Then it is Available."""
        new = _copy_volume(volume)
        if ANN_BOUND_BY_CONTROLLER in volume.metadata.annotations:
            new.spec.ClearField("claim_ref")
            del new.metadata.annotations[ANN_BOUND_BY_CONTROLLER]
        else:
            new.spec.claim_ref.uid = ""
        updated = await self._client.update(new)
        logger.info("volume %s: binding rolled back", volume.metadata.name)
        await self.update_volume_phase(updated, VOLUME_AVAILABLE)
