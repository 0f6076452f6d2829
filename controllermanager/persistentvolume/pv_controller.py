"""The PersistentVolume controller, `persistentvolume-binder` (upstream
pkg/controller/volume/persistentvolume: pv_controller.go, pv_controller_base.go, index.go).

Two queues, one worker each, as upstream: claims ("namespace/name") and volumes (name), fed by
the informers and re-fed with every claim and volume each `--pvclaimbinder-sync-period` (15 s).

A claim without `pv.kubernetes.io/bind-completed` is unbound (syncUnboundClaim):
- without spec.volumeName, the best match (kemu.scheduling.pv_helpers
  find_best_match_for_claim: a volume pre-bound to it, else the smallest Available volume of
  its class, selector and volume mode that covers the request, among the volumes with the
  fewest access modes that include the claim's) is bound. With none: a claim of no class gets
  the default StorageClass (`storageclass.kubernetes.io/is-default-class`; the newest when
  several; RetroactiveDefaultStorageClass, on from 1.26) and is synced again; a WaitForFirstConsumer claim without
  `volume.kubernetes.io/selected-node` waits (the event WaitForFirstConsumer, or
  WaitForPodScheduled naming the unscheduled pods that use it: the scheduler binds or sets
  the node); a claim of a class is provisioned (provisioning.py, provisionClaim: the annotations
  `volume.kubernetes.io/storage-provisioner` (from 1.23) and its beta name, then the event
  ExternalProvisioning: every provisioner is external, the simulated one included; a class
  that does not exist, or an in-tree `kubernetes.io/` provisioner, gives ProvisioningFailed);
  a claim of no class gets FailedBinding. The claim stays Pending;
- with spec.volumeName, that volume is bound when it is free and satisfies the claim
  (VolumeMismatch otherwise), the binding is finished when the volume points at the claim,
  and FailedBinding is recorded when it points at another claim.
Binding (binding.py) writes the volume's claimRef (and `pv.kubernetes.io/bound-by-controller`
unless the user pre-bound it), the volume Bound, the claim's volumeName and annotations, the
claim Bound with the volume's access modes and capacity.

A bound claim (syncBoundClaim) is Lost (ClaimLost) when its volume is gone or its volumeName
was cleared, and Lost (ClaimMisbound) when its volume is bound to another claim; otherwise
the binding is completed again if half-written.

A volume (syncVolume) without claimRef, or pre-bound by the user (claimRef without uid), is
Available; one whose claim is bound to it is Bound; one whose claim is gone (checked against
the API before anything is reclaimed) is Released and reclaimed by its policy (reclaim.py:
Retain keeps it, Delete is left to the external provisioner that made it, Recycle and a Delete
kemu cannot do fail the volume). A volume whose claim is bound to another volume is unbound, or,
dynamically provisioned with policy Delete, released and reclaimed.

Not modelled: the in-tree volume plugins and their provisioners, CSI migration, volume
attributes classes, and the metrics. The finalizers `kubernetes.io/pvc-protection` and
`kubernetes.io/pv-protection` are protection.py's.
"""

from __future__ import annotations

import logging
import socket
from typing import Final

from controllermanager.config import PVBinderOptions
from controllermanager.controller import (
    ControllerContext,
    process_work_items,
    run_controller,
    workers,
)
from controllermanager.persistentvolume.binding import VolumeWriter
from controllermanager.persistentvolume.common import index_pods_by_claim
from controllermanager.persistentvolume.provisioning import BinderBehaviour, ClaimProvisioning
from controllermanager.persistentvolume.reclaim import Reclaimer
from kemu.api.v1 import types_pb2
from kemu.client.events import EventRecorder
from kemu.client.informer import FuncHandler, Informer, InformerFactory
from kemu.client.interface import ApiClient
from kemu.client.workqueue import WorkQueue
from kemu.component.clock import Clock
from kemu.machinery.errors import NotFound
from kemu.machinery.keys import object_key
from kemu.machinery.kinds import EVENT_NORMAL, EVENT_WARNING
from kemu.machinery.storage import (
    ANN_BIND_COMPLETED,
    ANN_BOUND_BY_CONTROLLER,
    ANN_DYNAMICALLY_PROVISIONED,
    CLAIM_LOST,
    CLAIM_PENDING,
    DELETE,
    VOLUME_AVAILABLE,
    VOLUME_BOUND,
    VOLUME_FAILED,
    VOLUME_RELEASED,
    claim_class,
    volume_class,
)
from kemu.scheduling.pv_helpers import (
    check_access_modes,
    check_volume_mode_mismatches,
    find_best_match_for_claim,
    is_delay_binding_provisioning,
    is_volume_bound_to_claim,
    storage_quantity,
    volume_reclaim_policy,
)

logger = logging.getLogger(__name__)

NAME: Final = "persistentvolume-binder"
EVENT_SOURCE: Final = "persistentvolume-controller"

# Event reasons (upstream pkg/controller/volume/events).
FAILED_BINDING: Final = "FailedBinding"
VOLUME_MISMATCH: Final = "VolumeMismatch"
CLAIM_LOST_REASON: Final = "ClaimLost"
CLAIM_MISBOUND: Final = "ClaimMisbound"


def check_volume_satisfies_claim(
    volume: types_pb2.PersistentVolume, claim: types_pb2.PersistentVolumeClaim
) -> str:
    """checkVolumeSatisfyClaim: why the requested volume does not fit the claim ("" if it
    does)."""
    requested = storage_quantity(claim.spec.resources.requests, "spec.resources.requests")
    if storage_quantity(volume.spec.capacity) < requested:
        return "requested PV is too small"
    if volume_class(volume) != claim_class(claim):
        return "storageClassName does not match"
    if check_volume_mode_mismatches(claim.spec, volume.spec):
        return "incompatible volumeMode"
    if not check_access_modes(claim, volume):
        return "incompatible accessMode"
    return ""


class PersistentVolumeController:
    """Binds claims to volumes and reclaims released volumes; see the module docstring."""

    def __init__(
        self,
        client: ApiClient,
        informers: InformerFactory,
        clock: Clock,
        *,
        options: PVBinderOptions | None = None,
        behaviour: BinderBehaviour | None = None,
        recorder: EventRecorder | None = None,
    ) -> None:
        self._client = client
        self._clock = clock
        self.options = options or PVBinderOptions()
        self._recorder = recorder or EventRecorder(
            client, EVENT_SOURCE, host=socket.gethostname(), clock=clock
        )
        self._writer = VolumeWriter(client, self._recorder)
        self.claim_queue = WorkQueue(clock, name=f"{NAME}-claims")
        self.volume_queue = WorkQueue(clock, name=f"{NAME}-volumes")
        self._volumes: Informer[types_pb2.PersistentVolume] = informers.informer(
            types_pb2.PersistentVolume
        )
        self._claims: Informer[types_pb2.PersistentVolumeClaim] = informers.informer(
            types_pb2.PersistentVolumeClaim
        )
        self._classes: Informer[types_pb2.StorageClass] = informers.informer(types_pb2.StorageClass)
        self._pods: Informer[types_pb2.Pod] = informers.informer(types_pb2.Pod)
        self._reclaimer = Reclaimer(client, self._writer, self._claims.lister)
        self._provisioning = ClaimProvisioning(
            client,
            self._recorder,
            self._classes.lister,
            self._pods.lister,
            behaviour or BinderBehaviour(),
        )
        index_pods_by_claim(self._pods)
        self._volumes.add_event_handler(
            FuncHandler(
                self._enqueue_volume,
                lambda _old, new: self._enqueue_volume(new),
                self._on_volume_delete,
            )
        )
        self._claims.add_event_handler(
            FuncHandler(
                self._enqueue_claim,
                lambda _old, new: self._enqueue_claim(new),
                self._on_claim_delete,
            )
        )

    @property
    def name(self) -> str:
        return NAME

    # ------------------------------------------------------------ event handlers

    def _enqueue_volume(self, volume: types_pb2.PersistentVolume) -> None:
        self.volume_queue.add(volume.metadata.name)

    def _on_volume_delete(self, volume: types_pb2.PersistentVolume) -> None:
        """deleteVolume: the claim it was bound to is synced (it may be Lost now)."""
        if volume.spec.HasField("claim_ref") and volume.spec.claim_ref.name:
            ref = volume.spec.claim_ref
            self.claim_queue.add(f"{ref.namespace}/{ref.name}")

    def _enqueue_claim(self, claim: types_pb2.PersistentVolumeClaim) -> None:
        self.claim_queue.add(object_key(claim))

    def _on_claim_delete(self, claim: types_pb2.PersistentVolumeClaim) -> None:
        """deleteClaim: its volume is synced at once (it is Released now)."""
        if claim.spec.volume_name:
            self.volume_queue.add(claim.spec.volume_name)

    def resync(self) -> None:
        """upstream resync: every claim and volume is synced again."""
        for claim in self._claims.lister.list():
            self._enqueue_claim(claim)
        for volume in self._volumes.lister.list():
            self._enqueue_volume(volume)

    # ------------------------------------------------------------ claims

    async def sync_claim_key(self, key: str) -> None:
        namespace, _, name = key.partition("/")
        claim = self._claims.lister.get(name, namespace)
        if claim is None:
            return
        await self.sync_claim(claim)

    async def sync_claim(self, claim: types_pb2.PersistentVolumeClaim) -> None:
        """syncClaim; an ApiError is retried."""
        if ANN_BIND_COMPLETED not in claim.metadata.annotations:
            await self._sync_unbound_claim(claim)
        else:
            await self._sync_bound_claim(claim)

    async def _sync_unbound_claim(self, claim: types_pb2.PersistentVolumeClaim) -> None:
        if claim.spec.volume_name:
            await self._sync_prebound_claim(claim)
            return
        delay_binding = self._provisioning.is_delay_binding_mode(claim)
        volume = find_best_match_for_claim(
            claim, self._volumes.lister.list(), delay_binding=delay_binding
        )
        if volume is not None:
            await self._writer.bind(volume, claim)
            return
        if await self._provisioning.assign_default_class(claim):
            return
        if delay_binding and not is_delay_binding_provisioning(claim):
            self._provisioning.emit_delay_binding_event(claim)
        elif claim_class(claim):
            claim = await self._provisioning.provision_claim(claim)
        else:
            self._recorder.event(
                claim,
                EVENT_NORMAL,
                FAILED_BINDING,
                "",
                "no persistent volumes available for this claim and no storage class is set",
            )
        await self._writer.update_claim_status(claim, CLAIM_PENDING, None)

    async def _sync_prebound_claim(self, claim: types_pb2.PersistentVolumeClaim) -> None:
        """The user asked for spec.volumeName."""
        volume = self._volumes.lister.get(claim.spec.volume_name)
        if volume is None:
            await self._writer.update_claim_status(claim, CLAIM_PENDING, None)
            return
        if not volume.spec.HasField("claim_ref"):
            why = check_volume_satisfies_claim(volume, claim)
            if why:
                self._recorder.event(
                    claim,
                    EVENT_WARNING,
                    VOLUME_MISMATCH,
                    "",
                    f'Cannot bind to requested volume "{volume.metadata.name}": {why}',
                )
                await self._writer.update_claim_status(claim, CLAIM_PENDING, None)
                return
            await self._writer.bind(volume, claim)
            return
        if is_volume_bound_to_claim(volume, claim):
            await self._writer.bind(volume, claim)
            return
        self._recorder.event(
            claim,
            EVENT_WARNING,
            FAILED_BINDING,
            "",
            f'volume "{volume.metadata.name}" already bound to a different claim.',
        )
        if ANN_BOUND_BY_CONTROLLER not in claim.metadata.annotations:
            await self._writer.update_claim_status(claim, CLAIM_PENDING, None)

    async def _sync_bound_claim(self, claim: types_pb2.PersistentVolumeClaim) -> None:
        if not claim.spec.volume_name:
            await self._writer.update_claim_status_with_event(
                claim,
                CLAIM_LOST,
                EVENT_WARNING,
                CLAIM_LOST_REASON,
                "Bound claim has lost reference to PersistentVolume. Data on the volume is lost!",
            )
            return
        volume = self._volumes.lister.get(claim.spec.volume_name)
        if volume is None:
            await self._writer.update_claim_status_with_event(
                claim,
                CLAIM_LOST,
                EVENT_WARNING,
                CLAIM_LOST_REASON,
                "Bound claim has lost its PersistentVolume. Data on the volume is lost!",
            )
            return
        if not volume.spec.HasField("claim_ref") or volume.spec.claim_ref.uid == claim.metadata.uid:
            await self._writer.bind(volume, claim)
            return
        await self._writer.update_claim_status_with_event(
            claim,
            CLAIM_LOST,
            EVENT_WARNING,
            CLAIM_MISBOUND,
            "Two claims are bound to the same volume, this one is bound incorrectly",
        )

    # ------------------------------------------------------------ volumes

    async def sync_volume_key(self, key: str) -> None:
        volume = self._volumes.lister.get(key)
        if volume is None:
            return
        await self.sync_volume(volume)

    async def _find_claim(
        self, volume: types_pb2.PersistentVolume
    ) -> types_pb2.PersistentVolumeClaim | None:
        """The claim the volume's claimRef names, None when it is gone or was replaced (a
        claim missing from the informer or with another uid is looked up in the API before a
        volume is released: it may be newer than the cache)."""
        ref = volume.spec.claim_ref
        claim = self._claims.lister.get(ref.name, ref.namespace)
        unsure = claim is None and volume.status.phase not in (VOLUME_RELEASED, VOLUME_FAILED)
        if unsure or (claim is not None and claim.metadata.uid != ref.uid):
            try:
                claim = await self._client.get(
                    types_pb2.PersistentVolumeClaim, ref.name, ref.namespace
                )
            except NotFound:
                claim = None
        if claim is not None and claim.metadata.uid != ref.uid:
            return None
        return claim

    async def sync_volume(self, volume: types_pb2.PersistentVolume) -> None:
        """syncVolume; an ApiError is retried."""
        if not volume.spec.HasField("claim_ref") or not volume.spec.claim_ref.uid:
            await self._writer.update_volume_phase(volume, VOLUME_AVAILABLE)
            return
        claim = await self._find_claim(volume)
        if claim is None:
            if volume.status.phase not in (VOLUME_RELEASED, VOLUME_FAILED):
                logger.info(
                    "volume %s is released, reclaim policy %s",
                    volume.metadata.name,
                    volume_reclaim_policy(volume),
                )
                volume = await self._writer.update_volume_phase(volume, VOLUME_RELEASED)
            await self._reclaimer.reclaim_volume(volume)
            return
        if not claim.spec.volume_name:
            if check_volume_mode_mismatches(claim.spec, volume.spec):
                self._recorder.event(
                    volume,
                    EVENT_WARNING,
                    VOLUME_MISMATCH,
                    "",
                    "Cannot bind PersistentVolume to requested PersistentVolumeClaim "
                    f'"{claim.metadata.name}" due to incompatible volumeMode.',
                )
                self._recorder.event(
                    claim,
                    EVENT_WARNING,
                    VOLUME_MISMATCH,
                    "",
                    f'Cannot bind PersistentVolume "{volume.metadata.name}" to requested '
                    "PersistentVolumeClaim due to incompatible volumeMode.",
                )
                return
            # Bound on the volume's side only: the claim's sync finishes it.
            self.claim_queue.add(object_key(claim))
            return
        if claim.spec.volume_name == volume.metadata.name:
            await self._writer.update_volume_phase(volume, VOLUME_BOUND)
            return
        # The claim is bound to another volume.
        if (
            ANN_DYNAMICALLY_PROVISIONED in volume.metadata.annotations
            and volume_reclaim_policy(volume) == DELETE
        ):
            if volume.status.phase not in (VOLUME_RELEASED, VOLUME_FAILED):
                volume = await self._writer.update_volume_phase(volume, VOLUME_RELEASED)
            await self._reclaimer.reclaim_volume(volume)
            return
        await self._writer.unbind_volume(volume)

    # ------------------------------------------------------------ running

    async def _claim_worker(self) -> None:
        await process_work_items(self.claim_queue, self.sync_claim_key, "syncing claim", logger)

    async def _volume_worker(self) -> None:
        await process_work_items(self.volume_queue, self.sync_volume_key, "syncing volume", logger)

    async def _periodic_resync(self) -> None:
        while True:
            await self._clock.sleep(self.options.sync_period)
            self.resync()

    async def run(self) -> None:
        await run_controller(
            f"the persistent volume controller (sync period {self.options.sync_period:g}s)",
            logger,
            synced=(self._volumes, self._claims, self._classes, self._pods),
            queues=(self.claim_queue, self.volume_queue),
            tasks=[
                (f"{NAME} events", self._recorder.run),
                (f"{NAME} resync", self._periodic_resync),
                *workers(f"{NAME} claims", 1, self._claim_worker),
                *workers(f"{NAME} volumes", 1, self._volume_worker),
            ],
        )


def new_controller(
    ctx: ControllerContext, options: PVBinderOptions | None = None
) -> PersistentVolumeController:
    """The init function registered as "persistentvolume-binder"."""
    return PersistentVolumeController(
        ctx.client,
        ctx.informers,
        ctx.clock,
        options=options,
        behaviour=BinderBehaviour.of(ctx.gates),
    )
