"""The storage object in-use protection controllers (upstream pkg/controller/volume/pvcprotection
and pvprotection, with pkg/controller/volume/protectionutil): `pvc-protection` and
`pv-protection`.

Each keeps its finalizer on the objects of its kind that are not being deleted (upstream's
apiserver adds it at creation with the StorageObjectInUseProtection admission plugin; the
controllers add it to the objects that lack it), and removes it from an object being deleted
once nothing uses it, so that the deletion completes:
- `kubernetes.io/pvc-protection`: a claim is in use while a pod bound to a node (the kubelet
  refuses to start a pod whose claim is being deleted, so unscheduled pods do not count)
  names it in a volume; the informer's pods are asked first, then, when none uses it, a live
  list of the namespace's pods (the informer may not have seen a new pod yet). Pods that stop
  using a claim (deleted, finished, or unscheduled) have their claims looked at again;
- `kubernetes.io/pv-protection`: a volume is in use while it is Bound.

Not modelled: ephemeral volumes (kemu's pods have none), the per-namespace batching of upstream's
pvc-protection workers and its metrics.
"""

from __future__ import annotations

import logging
from typing import Final, TypeVar

from controllermanager.controller import (
    ControllerContext,
    process_work_items,
    run_controller,
    workers,
)
from controllermanager.persistentvolume.common import (
    POD_PVC_INDEX,
    index_pods_by_claim,
    pod_claim_keys,
)
from controllermanager.protection_util import is_deletion_candidate, need_to_add_finalizer
from kemu.api.v1 import types_pb2
from kemu.client.informer import FuncHandler, Informer, InformerFactory
from kemu.client.interface import ApiClient
from kemu.client.workqueue import WorkQueue
from kemu.component.clock import Clock
from kemu.machinery.errors import NotFound
from kemu.machinery.keys import object_key
from kemu.machinery.pod_strategy import TERMINAL_PHASES
from kemu.machinery.storage import (
    PV_PROTECTION_FINALIZER,
    PVC_PROTECTION_FINALIZER,
    VOLUME_BOUND,
)

logger = logging.getLogger(__name__)

PVC_PROTECTION: Final = "pvc-protection"
PV_PROTECTION: Final = "pv-protection"

P = TypeVar("P", types_pb2.PersistentVolumeClaim, types_pb2.PersistentVolume)


def pod_uses_claim(pod: types_pb2.Pod, claim: types_pb2.PersistentVolumeClaim) -> bool:
    """podUsesPVC: a pod bound to a node with a volume of the claim (same namespace)."""
    if not pod.spec.node_name or pod.metadata.namespace != claim.metadata.namespace:
        return False
    return any(
        v.HasField("persistent_volume_claim")
        and v.persistent_volume_claim.claim_name == claim.metadata.name
        for v in pod.spec.volumes
    )


async def _set_finalizer(client: ApiClient, obj: P, finalizer: str, present: bool) -> None:
    """Adds or removes `finalizer` by an update of a copy (upstream's addFinalizer and
    removeFinalizer); a Conflict is raised and retried from the informer's newer copy."""
    new = type(obj)()
    new.CopyFrom(obj)
    kept = [f for f in new.metadata.finalizers if f != finalizer]
    if present:
        kept.append(finalizer)
    del new.metadata.finalizers[:]
    new.metadata.finalizers.extend(kept)
    try:
        await client.update(new)
    except NotFound:
        return
    logger.info(
        "%s protection finalizer %s %s",
        "added" if present else "removed",
        "to" if present else "from",
        object_key(obj),
    )


class PVCProtectionController:
    """`pvc-protection`; see the module docstring."""

    def __init__(self, client: ApiClient, informers: InformerFactory, clock: Clock) -> None:
        self._client = client
        self.queue = WorkQueue(clock, name=PVC_PROTECTION)
        self._claims: Informer[types_pb2.PersistentVolumeClaim] = informers.informer(
            types_pb2.PersistentVolumeClaim
        )
        self._pods: Informer[types_pb2.Pod] = informers.informer(types_pb2.Pod)
        index_pods_by_claim(self._pods)
        self._claims.add_event_handler(
            FuncHandler(self._on_claim, lambda _old, new: self._on_claim(new))
        )
        self._pods.add_event_handler(
            FuncHandler(
                lambda pod: self._on_pod(pod, deleted=False),
                self._on_pod_update,
                lambda pod: self._on_pod(pod, deleted=True),
            )
        )

    @property
    def name(self) -> str:
        return PVC_PROTECTION

    def _on_claim(self, claim: types_pb2.PersistentVolumeClaim) -> None:
        if need_to_add_finalizer(claim, PVC_PROTECTION_FINALIZER) or is_deletion_candidate(
            claim, PVC_PROTECTION_FINALIZER
        ):
            self.queue.add(object_key(claim))

    def _on_pod(self, pod: types_pb2.Pod, *, deleted: bool) -> None:
        """enqueuePVCs: only a pod that can no longer hold a claim matters."""
        if not deleted and pod.status.phase not in TERMINAL_PHASES and pod.spec.node_name:
            return
        for key in pod_claim_keys(pod):
            self.queue.add(key)

    def _on_pod_update(self, old: types_pb2.Pod, new: types_pb2.Pod) -> None:
        self._on_pod(new, deleted=False)
        if old.metadata.uid != new.metadata.uid:  # a pod replaced under the same name
            self._on_pod(old, deleted=True)

    async def sync(self, key: str) -> None:
        """processPVC; an ApiError is retried."""
        namespace, _, name = key.partition("/")
        claim = self._claims.lister.get(name, namespace)
        if claim is None:
            return
        if is_deletion_candidate(claim, PVC_PROTECTION_FINALIZER):
            if not await self._is_being_used(claim):
                await _set_finalizer(self._client, claim, PVC_PROTECTION_FINALIZER, False)
            else:
                logger.info("keeping claim %s: it is being used", key)
            return
        if need_to_add_finalizer(claim, PVC_PROTECTION_FINALIZER):
            await _set_finalizer(self._client, claim, PVC_PROTECTION_FINALIZER, True)

    async def _is_being_used(self, claim: types_pb2.PersistentVolumeClaim) -> bool:
        """isBeingUsed: the informer's pods, then a live list of the namespace's."""
        cached = self._pods.lister.by_index(POD_PVC_INDEX, object_key(claim))
        if any(pod_uses_claim(p, claim) for p in cached):
            return True
        live = await self._client.list(types_pb2.Pod, namespace=claim.metadata.namespace)
        return any(pod_uses_claim(p, claim) for p in live.items)

    async def _worker(self) -> None:
        await process_work_items(self.queue, self.sync, "protecting claim", logger)

    async def run(self) -> None:
        await run_controller(
            "the PVC protection controller",
            logger,
            synced=(self._claims, self._pods),
            queues=(self.queue,),
            tasks=workers(PVC_PROTECTION, 1, self._worker),
        )


class PVProtectionController:
    """`pv-protection`; see the module docstring."""

    def __init__(self, client: ApiClient, informers: InformerFactory, clock: Clock) -> None:
        self._client = client
        self.queue = WorkQueue(clock, name=PV_PROTECTION)
        self._volumes: Informer[types_pb2.PersistentVolume] = informers.informer(
            types_pb2.PersistentVolume
        )
        self._volumes.add_event_handler(
            FuncHandler(self._on_volume, lambda _old, new: self._on_volume(new))
        )

    @property
    def name(self) -> str:
        return PV_PROTECTION

    def _on_volume(self, volume: types_pb2.PersistentVolume) -> None:
        if need_to_add_finalizer(volume, PV_PROTECTION_FINALIZER) or is_deletion_candidate(
            volume, PV_PROTECTION_FINALIZER
        ):
            self.queue.add(volume.metadata.name)

    async def sync(self, name: str) -> None:
        """processPV; an ApiError is retried."""
        volume = self._volumes.lister.get(name)
        if volume is None:
            return
        if is_deletion_candidate(volume, PV_PROTECTION_FINALIZER):
            if volume.status.phase != VOLUME_BOUND:
                await _set_finalizer(self._client, volume, PV_PROTECTION_FINALIZER, False)
            return
        if need_to_add_finalizer(volume, PV_PROTECTION_FINALIZER):
            await _set_finalizer(self._client, volume, PV_PROTECTION_FINALIZER, True)

    async def _worker(self) -> None:
        await process_work_items(self.queue, self.sync, "protecting volume", logger)

    async def run(self) -> None:
        await run_controller(
            "the PV protection controller",
            logger,
            synced=(self._volumes,),
            queues=(self.queue,),
            tasks=workers(PV_PROTECTION, 1, self._worker),
        )


def new_pvc_protection_controller(ctx: ControllerContext) -> PVCProtectionController:
    """The init function registered as "pvc-protection"."""
    return PVCProtectionController(ctx.client, ctx.informers, ctx.clock)


def new_pv_protection_controller(ctx: ControllerContext) -> PVProtectionController:
    """The init function registered as "pv-protection"."""
    return PVProtectionController(ctx.client, ctx.informers, ctx.clock)
