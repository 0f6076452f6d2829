"""The garbage collector's reads and writes of the objects it collects (upstream
pkg/controller/garbagecollector/operations.go: getObject, patchObject, deleteObject,
removeFinalizer; and patch.go: the ownerReferences patches). Every write is pinned to what was
read (uid, resourceVersion). Custom resources go through the client's resource-addressed calls
(upstream's collector uses the dynamic/metadata clients for every kind alike)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Final

from google.protobuf.message import Message

from controllermanager.garbagecollector.graph import Node, ObjectReference
from kemu.api.v1 import types_pb2
from kemu.client.interface import ApiClient
from kemu.machinery import convert
from kemu.machinery.errors import Conflict, NotFound
from kemu.machinery.jsonvalue import JSONArray, JSONObject
from kemu.machinery.keys import object_meta
from kemu.machinery.kinds import KINDS, Kind, custom_kind

logger = logging.getLogger(__name__)

_UPDATE_RETRIES: Final = 5


class UnknownKind(Exception):
    """An ownerReference names a kind kemu does not serve (upstream restMappingError)."""


def _group(api_version: str) -> str:
    return api_version.rpartition("/")[0]


def resolve_kind(api_version: str, kind: str) -> Kind | None:
    """The served kind an apiVersion/kind names (any version of its group), or None: a
    built-in kind, or a custom resource of a CRD this process registered (the collector does
    for every established CRD, as upstream's RESTMapper learns them from discovery)."""
    for k in KINDS:
        if k.kind == kind and _group(k.api_version) == _group(api_version):
            return k
    return custom_kind(_group(api_version), kind)


class Operations:
    """The collector's API calls on the objects of the graph."""

    def __init__(self, client: ApiClient) -> None:
        self._client = client

    def _kind(self, identity: ObjectReference) -> Kind:
        kind = resolve_kind(identity.api_version, identity.kind)
        if kind is None:
            raise UnknownKind(
                f"unable to get REST mapping for {identity.api_version}/{identity.kind}"
            )
        return kind

    def _namespace(self, kind: Kind, identity: ObjectReference) -> str:
        return identity.namespace if kind.namespaced else ""

    async def get(self, kind: Kind, name: str, namespace: str) -> Message:
        """The object `kind`/`name` (`namespace` ignored for a cluster-scoped kind)."""
        namespace = namespace if kind.namespaced else ""
        if kind.custom:
            return await self._client.get_custom(kind.resource, name, namespace)
        return await self._client.get(kind.message, name, namespace)

    async def get_object(self, identity: ObjectReference) -> Message:
        return await self.get(self._kind(identity), identity.name, identity.namespace)

    async def _patch_meta(self, identity: ObjectReference, obj: Message, meta: JSONObject) -> None:
        """A merge patch of metadata, pinned to the resourceVersion `obj` was read at."""
        kind = self._kind(identity)
        meta = {"resourceVersion": object_meta(obj).resource_version, **meta}
        namespace = self._namespace(kind, identity)
        if kind.custom:
            await self._client.patch_custom(
                kind.resource, identity.name, {"metadata": meta}, namespace
            )
            return
        await self._client.patch(kind.message, identity.name, {"metadata": meta}, namespace)

    async def _update_meta(
        self, identity: ObjectReference, change: Callable[[Message], JSONObject | None]
    ) -> bool:
        """Read, change(obj) -> a metadata patch (None: nothing to do), write pinned to what was
        read; retried on Conflict (upstream retry.RetryOnConflict). A missing object, or
        another one under the name, needs nothing. True if it wrote."""
        for attempt in range(_UPDATE_RETRIES):
            try:
                obj = await self.get_object(identity)
            except NotFound:
                return False
            if object_meta(obj).uid != identity.uid:
                return False
            patch = change(obj)
            if patch is None:
                return False
            try:
                await self._patch_meta(identity, obj, patch)
                return True
            except NotFound:
                return False
            except Conflict:
                if attempt == _UPDATE_RETRIES - 1:
                    raise
        return False

    async def remove_finalizer(self, node: Node, finalizer: str) -> None:
        def change(obj: Message) -> JSONObject | None:
            finalizers = list(object_meta(obj).finalizers)
            if finalizer not in finalizers:
                return None
            return {"finalizers": [f for f in finalizers if f != finalizer]}

        if await self._update_meta(node.identity, change):
            logger.info("removed the %s finalizer of %s", finalizer, node.identity)

    async def remove_owner_references(self, node: Node, owner_uids: set[str]) -> None:
        def change(obj: Message) -> JSONObject | None:
            refs = [convert.message_to_dict(r) for r in object_meta(obj).owner_references]
            kept: JSONArray = [r for r in refs if r.get("uid") not in owner_uids]
            return None if len(kept) == len(refs) else {"ownerReferences": kept}

        await self._update_meta(node.identity, change)

    async def unblock_owner_references(self, node: Node) -> None:
        def change(obj: Message) -> JSONObject | None:
            refs = [convert.message_to_dict(r) for r in object_meta(obj).owner_references]
            if not any(r.get("blockOwnerDeletion") for r in refs):
                return None
            return {
                "ownerReferences": [
                    {**r, "blockOwnerDeletion": False} if r.get("blockOwnerDeletion") else r
                    for r in refs
                ]
            }

        await self._update_meta(node.identity, change)

    async def delete_object(
        self,
        identity: ObjectReference,
        resource_version: str | None,
        owners: Sequence[types_pb2.OwnerReference],
        policy: str,
    ) -> None:
        """Deletes with uid and resourceVersion preconditions; when only the resourceVersion
        is stale and the owner references are as they were, again with the uid alone
        (upstream deleteObject)."""
        kind = self._kind(identity)
        try:
            if kind.custom:
                await self._client.delete_custom(
                    kind.resource,
                    identity.name,
                    self._namespace(kind, identity),
                    uid=identity.uid,
                    resource_version=resource_version,
                    propagation_policy=policy,
                )
            else:
                await self._client.delete(
                    kind.message,
                    identity.name,
                    self._namespace(kind, identity),
                    uid=identity.uid,
                    resource_version=resource_version,
                    propagation_policy=policy,
                )
        except NotFound:
            return
        except Conflict:
            if resource_version is None:
                raise
            try:
                live = await self.get_object(identity)
            except NotFound:
                return
            lm = object_meta(live)
            if (
                lm.uid == identity.uid
                and lm.resource_version != resource_version
                and list(lm.owner_references) == list(owners)
            ):
                await self.delete_object(identity, None, owners, policy)
                return
            raise
        logger.info("deleted %s (propagation %s)", identity, policy)
