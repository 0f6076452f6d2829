"""The apiserver's CustomResourceDefinition controllers (upstream apiextensions-apiserver
pkg/controller/status/naming_controller.go, establish/establishing_controller.go,
finalizer/crd_finalizer.go and pkg/apiserver/customresource_handler.go's serving of a CRD's
resource): a CRD whose names are free gets NamesAccepted, its custom resources a watch cache and
a place in discovery, then Established; a CRD being deleted has its custom resources deleted
(the customresourcecleanup.apiextensions.k8s.io finalizer), then stops being served."""

from __future__ import annotations

import json
import logging
import math
from collections.abc import MutableMapping
from typing import Final

import anyio
from anyio.abc import TaskGroup, TaskStatus
from google.protobuf.message import Message

from apiserver.registry.registry import Registry
from apiserver.storage.etcd import EtcdStore
from apiserver.storage.watch_cache import WatchCache
from kemu.api.v1 import types_pb2
from kemu.component.clock import Clock
from kemu.machinery import convert
from kemu.machinery.apiextensions import crd as crds
from kemu.machinery.apiextensions import custom
from kemu.machinery.errors import ApiError, NotFound
from kemu.machinery.kinds import BY_KIND, BY_RESOURCE, Kind

logger = logging.getLogger(__name__)

_CRD: Final = BY_KIND["CustomResourceDefinition"]
_RESYNC: Final = 0.5
"""How often a CRD being deleted is looked at again while its custom resources go."""


class CustomResourceDefinitions:
    def __init__(
        self,
        registry: Registry,
        store: EtcdStore,
        caches: MutableMapping[str, WatchCache],
        clock: Clock,
    ) -> None:
        self._registry = registry
        self._store = store
        self._caches = caches
        self._clock = clock
        self._tg: TaskGroup | None = None

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        cache = self._caches[_CRD.resource]
        await cache.wait_ready()
        _, receive, watcher = cache.watch(namespace="", filter=None, resource_version=None)
        async with anyio.create_task_group() as tg:
            self._tg = tg
            pending = await self._sync()
            task_status.started()
            async with receive:
                while True:
                    with anyio.move_on_after(_RESYNC if pending else math.inf):
                        try:
                            await receive.receive()
                        except anyio.EndOfStream:
                            break
                    pending = await self._sync()
            cache.stop(watcher)

    async def _sync(self) -> bool:
        """Every CRD looked at once; True while one is being deleted."""
        cache = self._caches[_CRD.resource]
        pending = False
        seen: set[str] = set()
        taken: dict[tuple[str, str], str] = {}
        for co in sorted(cache.objects(), key=lambda c: c.revision):
            crd = co.obj
            assert isinstance(crd, types_pb2.CustomResourceDefinition)
            definition = crds.definition_of(crd)
            try:
                if crd.metadata.HasField("deletion_timestamp"):
                    pending = True
                    await self._finalize(crd, definition)
                    continue
                conflict = self._conflict(definition, taken)
                for name in (definition.plural, definition.kind):
                    taken.setdefault((definition.group, name), definition.resource)
                if conflict:
                    await self._write_status(crd, definition, conflict)
                    continue
                seen.add(definition.resource)
                kind = custom.register(definition)
                await self._serve(kind)
                await self._write_status(crd, definition, "")
            except ApiError as e:
                logger.warning("customresourcedefinition %s: %s", crd.metadata.name, e)
        for d in custom.definitions():
            if d.resource not in seen and not any(
                crds.definition_of(c.obj).resource == d.resource  # type: ignore[arg-type]
                for c in cache.objects()
            ):
                logger.info("customresourcedefinition %s gone: %s not served", d.name, d.resource)
                custom.forget(d.resource)
        return pending

    @staticmethod
    def _conflict(definition: crds.Definition, taken: dict[tuple[str, str], str]) -> str:
        """Upstream's naming controller: a plural or kind another CRD of the group has."""
        builtin = BY_RESOURCE.get(definition.plural)
        if builtin is not None and builtin.group == definition.group:
            return f'"{definition.plural}" is already in use'
        for name, what in ((definition.plural, "plural"), (definition.kind, "kind")):
            owner = taken.get((definition.group, name))
            if owner is not None and owner != definition.resource:
                return f'"{name}" is already in use'
            del what
        return ""

    async def _serve(self, kind: Kind) -> None:
        if kind.resource in self._caches:
            return
        cache = WatchCache(self._store, kind, clock=self._clock)
        self._caches[kind.resource] = cache
        assert self._tg is not None
        await self._tg.start(cache.run)
        logger.info("serving custom resource %s (%s)", kind.resource, kind.api_version)

    async def _write_status(
        self, crd: types_pb2.CustomResourceDefinition, definition: crds.Definition, conflict: str
    ) -> None:
        status = crds.status_of(crd)
        now = convert.format_time(convert.timestamp(self._clock.now()), "second")
        if conflict:
            status = crds.with_condition(
                status, crds.NAMES_ACCEPTED, "False", "MultipleNamesNotAllowed", conflict, now
            )
            status = crds.with_condition(
                status, crds.ESTABLISHED, "False", "NotAccepted", "not all names are accepted", now
            )
        else:
            status = crds.with_condition(
                status, crds.NAMES_ACCEPTED, "True", "NoConflicts", "no conflicts found", now
            )
            status = crds.with_condition(
                status,
                crds.ESTABLISHED,
                "True",
                "InitialNamesAccepted",
                "the initial names have been accepted",
                now,
            )
            status["acceptedNames"] = crds.accepted_names(crds.spec_of(crd))
            stored = status.get("storedVersions")
            versions = [v for v in stored if isinstance(v, str)] if isinstance(stored, list) else []
            if definition.storage.name not in versions:
                versions.append(definition.storage.name)
            status["storedVersions"] = list(versions)
        if _same(status, crds.status_of(crd)):
            return
        updated = types_pb2.CustomResourceDefinition()
        updated.CopyFrom(crd)
        crds.set_status(updated, status)
        await self._registry.update(updated, subresource="status")

    async def _finalize(
        self, crd: types_pb2.CustomResourceDefinition, definition: crds.Definition
    ) -> None:
        """The cleanup finalizer: Terminating, every custom resource deleted, then the
        finalizer removed (the CRD goes)."""
        if crds.CLEANUP_FINALIZER not in crd.metadata.finalizers:
            return
        now = convert.format_time(convert.timestamp(self._clock.now()), "second")
        status = crds.with_condition(
            crds.status_of(crd),
            crds.TERMINATING,
            "True",
            "InstanceDeletionInProgress",
            "CustomResource deletion is in progress",
            now,
        )
        if not _same(status, crds.status_of(crd)):
            updated = types_pb2.CustomResourceDefinition()
            updated.CopyFrom(crd)
            crds.set_status(updated, status)
            await self._registry.update(updated, subresource="status")
        cache = self._caches.get(definition.resource)
        left = list(cache.objects()) if cache is not None else []
        for co in left:
            meta = co.obj.metadata  # type: ignore[attr-defined]
            if meta.HasField("deletion_timestamp"):
                continue
            try:
                await self._registry.delete(
                    definition.resource,
                    meta.namespace,
                    meta.name,
                    grace_period=None,
                    uid=None,
                    resource_version=None,
                )
            except NotFound:
                pass
        if left:
            return
        custom.forget(definition.resource)

        def drop_finalizer(obj: Message) -> Message:
            assert isinstance(obj, types_pb2.CustomResourceDefinition)
            kept = [f for f in obj.metadata.finalizers if f != crds.CLEANUP_FINALIZER]
            del obj.metadata.finalizers[:]
            obj.metadata.finalizers.extend(kept)
            return obj

        try:
            await self._registry.guaranteed_update(_CRD, "", crd.metadata.name, drop_finalizer)
        except NotFound:
            pass
        logger.info("customresourcedefinition %s: its custom resources deleted", crd.metadata.name)


def _same(a: object, b: object) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
