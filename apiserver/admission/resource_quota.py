"""The ResourceQuota admission plugin (upstream
staging/src/k8s.io/apiserver/pkg/admission/plugin/resourcequota/controller.go), on by
default and last of the validating chain: a create that a ResourceQuota of its namespace
limits is charged to the quota's status.used in the same step as it is admitted (a
compare-and-swap write of the quota, as upstream's quotaEvaluator writes the new usage
before admitting), or refused with upstream's "exceeded quota" Forbidden. An update its
evaluator handles (quota.handles_update: a pod's resize, a Service, a PVC's expansion) is
charged what it adds over the stored object. The
resourcequota controller (controllermanager/resourcequota.py) recomputes status.used from
what exists, which gives back what deletions freed. The counting is kemu.machinery.quota's."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Final, Protocol

from google.protobuf.message import Message

from apiserver.storage.watch_cache import WatchCache
from kemu.api.v1 import types_pb2
from kemu.machinery import quota
from kemu.machinery.errors import NotFound
from kemu.machinery.keys import object_meta
from kemu.machinery.kinds import BY_KIND, Kind, kind_of

_QUOTAS: Final = BY_KIND["ResourceQuota"]


class QuotaStore(Protocol):
    """What the plugin needs of the registry's store (apiserver.registry.store.GenericStore):
    the quotas' watch cache, the time, and a compare-and-swap write."""

    def now(self) -> float: ...

    async def guaranteed_update(
        self,
        kind: Kind,
        namespace: str,
        name: str,
        mutate: Callable[[Message], Awaitable[Message] | Message],
        *,
        precondition_rv: str = "",
    ) -> Message: ...


class ResourceQuotaAdmission:
    def __init__(self, store: QuotaStore, quotas: WatchCache | None) -> None:
        """`quotas`: the ResourceQuotas' watch cache (None: a registry of a unit test's few
        kinds, which has no quota to charge)."""
        self._store = store
        self._quotas = quotas

    async def admit_create(self, obj: Message) -> None:
        await self._admit(obj, None)

    async def admit_update(self, obj: Message, old: Message, subresource: str) -> None:
        """An update (of `subresource`, "" the object) over the stored `old`."""
        if quota.handles_update(kind_of(obj), subresource):
            await self._admit(obj, old)

    async def _admit(self, obj: Message, old: Message | None) -> None:
        kind = kind_of(obj)
        if not kind.namespaced or kind is _QUOTAS or self._quotas is None:
            return
        meta = object_meta(obj)
        cache = self._quotas
        now = self._store.now()
        candidates = [
            co.obj
            for co in cache.objects()
            if isinstance(co.obj, types_pb2.ResourceQuota)
            and co.obj.metadata.namespace == meta.namespace
        ]
        for rq in candidates:
            # a first look from the cache, then the charge against the stored quota
            if quota.charge(obj, kind.resource, meta.name, rq, now, old) is None:
                continue

            def mutate(current: Message) -> Message:
                assert isinstance(current, types_pb2.ResourceQuota)
                used = quota.charge(obj, kind.resource, meta.name, current, now, old)
                if used is not None:
                    current.status.used.clear()
                    current.status.used.update(used)
                return current

            try:
                await self._store.guaranteed_update(
                    _QUOTAS, rq.metadata.namespace, rq.metadata.name, mutate
                )
            except NotFound:
                continue  # deleted since: it limits nothing
