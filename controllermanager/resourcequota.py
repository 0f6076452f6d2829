"""The resourcequota controller (upstream pkg/controller/resourcequota/
resource_quota_controller.go): keeps each ResourceQuota's status (hard from spec.hard, used
from what its namespace holds, counted by kemu.machinery.quota as the apiserver's
ResourceQuota admission counts) true. A quota whose spec changed is synced at once; an
object of a counted kind added, changed or deleted in a namespace that has quotas queues the
namespace (upstream's replenishment controller), which gives back what deletions freed.

Counted kinds: pods (with their compute requests and limits), services, persistent volume
claims (with their storage), every other namespaced built-in kind but Events by its
count/<resource>[.<group>] (config maps, secrets and resource quotas also by their bare
names), and the custom resources of every established CRD (count/<plural>.<group>, through
controllermanager.custom_resources), as upstream discovers every quotable resource. The
informers are the shared ones the garbage collector also watches every kind with."""

from __future__ import annotations

import logging
from typing import Final

import anyio
from google.protobuf.message import Message

from controllermanager import names
from controllermanager.controller import (
    ControllerContext,
    process_work_items,
    run_controller,
    workers,
)
from controllermanager.custom_resources import CustomResourceInformers
from kemu.api.v1 import types_pb2
from kemu.client.informer import FuncHandler, Informer, InformerFactory
from kemu.client.interface import ApiClient
from kemu.client.workqueue import WorkQueue
from kemu.component.clock import Clock
from kemu.machinery import quota
from kemu.machinery.errors import NotFound
from kemu.machinery.kinds import KINDS, Kind

logger = logging.getLogger(__name__)

NAME: Final = names.RESOURCE_QUOTA
"""upstream's names.ResourceQuotaController."""
IGNORED_RESOURCES: Final = frozenset({"events"})
"""Not charged to quota (upstream pkg/quota/v1/install DefaultIgnoredResources)."""
COUNTED: Final[tuple[Kind, ...]] = tuple(
    k
    for k in KINDS
    if k.namespaced
    and not k.custom
    and k.resource not in IGNORED_RESOURCES
    and k.kind != "ResourceQuota"  # (the quotas' own informer counts them)
)
"""The built-in kinds a quota counts: every namespaced one but Events (upstream's quotable
resources, found by discovery: those that can be created, listed, watched and deleted)."""


class ResourceQuotaController:
    def __init__(self, client: ApiClient, informers: InformerFactory, clock: Clock) -> None:
        self._client = client
        self._clock = clock
        self.queue = WorkQueue(clock, name="resourcequota_primary")
        self._quotas: Informer[types_pb2.ResourceQuota] = informers.informer(
            types_pb2.ResourceQuota
        )
        self._quotas.add_event_handler(
            FuncHandler(self._on_quota, lambda old, new: self._on_quota_update(old, new), None)
        )
        self._counted: list[Informer[Message]] = []
        for kind in COUNTED:
            inf: Informer[Message] = informers.informer(kind.message)
            inf.add_event_handler(
                FuncHandler(self._on_object, lambda old, new: self._on_object(new), self._on_object)
            )
            self._counted.append(inf)
        self.custom = CustomResourceInformers(
            client, informers, clock, self._count_custom, owner=NAME
        )

    def _count_custom(self, kind: Kind, informer: Informer[Message]) -> None:
        informer.add_event_handler(
            FuncHandler(self._on_object, lambda old, new: self._on_object(new), self._on_object)
        )

    @property
    def name(self) -> str:
        return NAME

    def _on_quota(self, rq: types_pb2.ResourceQuota) -> None:
        self.queue.add(rq.metadata.namespace)

    def _on_quota_update(self, old: types_pb2.ResourceQuota, new: types_pb2.ResourceQuota) -> None:
        """updateQuota: a spec change (or a status hard out of step) needs a sync; the
        controller's own status writes do not."""
        if old.spec != new.spec or dict(new.spec.hard) != dict(new.status.hard):
            self.queue.add(new.metadata.namespace)

    def _on_object(self, obj: Message) -> None:
        namespace: str = obj.metadata.namespace  # type: ignore[attr-defined]
        if self._quotas.lister.list(namespace):
            self.queue.add(namespace)

    async def sync(self, namespace: str) -> None:
        """syncResourceQuota for each quota of the namespace: status.hard = spec.hard,
        status.used recomputed; written only when it changed."""
        counted = [*self._counted, *self.custom.informers()]
        objects: list[Message] = [o for inf in counted for o in inf.lister.list(namespace)]
        objects += self._quotas.lister.list(namespace)
        now = self._clock.now()
        for rq in self._quotas.lister.list(namespace):
            used = quota.compute_used(rq, objects, now)
            if dict(rq.status.hard) == dict(rq.spec.hard) and dict(rq.status.used) == used:
                continue
            new = types_pb2.ResourceQuota()
            new.CopyFrom(rq)
            new.status.hard.clear()
            new.status.hard.update(rq.spec.hard)
            new.status.used.clear()
            new.status.used.update(used)
            try:
                await self._client.update_status(new)
            except NotFound:
                continue

    async def _worker(self) -> None:
        await process_work_items(self.queue, self.sync, "syncing resource quotas of", logger)

    async def run(self) -> None:
        await run_controller(
            "resource quota controller",
            logger,
            synced=(self._quotas, *self._counted),
            queues=(self.queue,),
            tasks=[*workers(NAME, 1, self._worker), (f"{NAME} custom", self._watch_custom)],
        )

    async def _watch_custom(self) -> None:
        async with anyio.create_task_group() as tg:
            await self.custom.run(tg)


def new_controller(ctx: ControllerContext) -> ResourceQuotaController:
    """The init function registered as "resourcequota-controller"."""
    return ResourceQuotaController(ctx.client, ctx.informers, ctx.clock)
