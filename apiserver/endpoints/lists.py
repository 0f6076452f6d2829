"""Lists, the one list path of both edges: from the watch cache when it is fresh enough for the
request's resourceVersion, else from etcd (pages, continue tokens, exact revisions), as
upstream's cacher (k8s.io/apiserver/pkg/storage/cacher/cacher.go GetList, delegator.go
ShouldDelegateList) and etcd3 store.

A list at the latest resourceVersion ("") is a consistent read. Upstream served it from etcd
until ConsistentListFromCache (beta, on, 1.31; GA 1.34): the cacher asks etcd for its current
revision (one cheap range), waits until the watch cache has reached it, and lists from the
cache; a cache that does not get there within the freshness timeout falls back to etcd
(`apiserver_watch_cache_consistent_read_total{fallback="true"}`). A page of a consistent list
(`limit`) and a continued list still read etcd here, as before the cache could page
(ListFromCacheSnapshot, which kemu does not model)."""

from __future__ import annotations

import base64
import enum
import json
from collections.abc import Mapping
from typing import Final

from apiserver.endpoints.metrics import Metrics
from apiserver.storage import encoding
from apiserver.storage.etcd import EtcdStore
from apiserver.storage.watch_cache import WatchCache
from kemu.api.v1 import api_pb2
from kemu.machinery import jsonutil
from kemu.machinery.errors import BadRequest
from kemu.machinery.kinds import Kind, kind_for_resource
from kemu.machinery.selection import RequestFilter

_UINT64_MAX: Final = 2**64 - 1
_INT64_MAX: Final = 2**63 - 1


class ConsistentReads(enum.Enum):
    """Where a list at the latest resourceVersion is served from (ConsistentListFromCache)."""

    STORAGE = "storage"
    CACHE = "cache"


class Lister:
    def __init__(
        self,
        store: EtcdStore,
        caches: Mapping[str, WatchCache],
        metrics: Metrics,
        consistent_reads: ConsistentReads = ConsistentReads.CACHE,
    ) -> None:
        self._store = store
        self._caches = caches
        self._metrics = metrics
        self._consistent_reads = consistent_reads

    async def list_bytes(self, req: api_pb2.ListRequest) -> bytes:
        """A List's response bytes (ListResponse): the one list path of both edges."""
        kind = kind_for_resource(req.resource)
        flt = RequestFilter(req.resource, req.label_selector, req.field_selector)
        namespace = req.namespace if kind.namespaced else ""
        cache = self._caches[kind.resource]
        rv = req.resource_version
        if req.limit < 0:
            raise BadRequest("limit must be greater than or equal to 0")
        if req.resource_version_match not in ("", "NotOlderThan", "Exact"):
            raise BadRequest(f'unknown resourceVersionMatch "{req.resource_version_match}"')
        if getattr(req, "continue"):
            return await self._list_etcd(kind, namespace, flt, req, 0)
        if rv:
            revision = parse_rv(rv)
            if req.resource_version_match == "Exact":
                return await self._list_etcd(kind, namespace, flt, req, revision)
            # NotOlderThan: from the cache once it has the revision; a revision etcd has
            # but this resource's cache has not seen (a quiet resource) reads etcd; one etcd
            # has not reached either is waited for, then Timeout "Too large resource version"
            # (upstream's cacher)
            if cache.ready and await cache.wait_fresh(revision):
                return self._list_cache(cache, namespace, flt)
        elif req.resource_version_match:
            raise BadRequest("resourceVersionMatch is forbidden unless resourceVersion is provided")
        elif self._consistent_reads is ConsistentReads.CACHE and not req.limit and cache.ready:
            return await self._consistent_list(kind, cache, namespace, flt, req)
        return await self._list_etcd(kind, namespace, flt, req, 0)

    async def _consistent_list(
        self,
        kind: Kind,
        cache: WatchCache,
        namespace: str,
        flt: RequestFilter,
        req: api_pb2.ListRequest,
    ) -> bytes:
        """cacher.go's consistent read: the cache at etcd's current revision, or etcd."""
        revision = await self._store.current_revision()
        fresh = await cache.wait_fresh(revision)
        self._metrics.consistent_reads.labels(
            kind.qualified_resource, str(fresh).lower(), str(not fresh).lower()
        ).inc()
        if fresh:
            return self._list_cache(cache, namespace, flt)
        return await self._list_etcd(kind, namespace, flt, req, 0)

    @staticmethod
    def _list_cache(cache: WatchCache, namespace: str, flt: RequestFilter) -> bytes:
        prefix = f"{cache.prefix}{namespace}/" if namespace else cache.prefix
        items = sorted(
            (
                co
                for co in cache.objects()
                if co.key.startswith(prefix) and (flt.empty or flt.matches(co.obj))
            ),
            key=lambda co: co.key,
        )
        return encoding.list_response([co.envelope for co in items], cache.revision)

    async def _list_etcd(
        self,
        kind: Kind,
        namespace: str,
        flt: RequestFilter,
        req: api_pb2.ListRequest,
        revision: int,
    ) -> bytes:
        prefix = kind.storage_prefix + (f"{namespace}/" if namespace else "")
        token = getattr(req, "continue")
        start_after = ""
        if token:
            revision, start_after = _decode_continue(token, prefix)
        field = api_pb2.Object.DESCRIPTOR.fields_by_name[kind.field].number
        limit = int(req.limit)
        out: list[bytes] = []
        read_at = revision
        while True:
            chunk = max(limit - len(out), 0) if limit else 1000
            page = await self._store.range(
                prefix,
                revision=read_at,
                limit=max(chunk, 1) if limit else 1000,
                start_after=start_after,
            )
            read_at = page.revision if read_at == 0 else read_at
            for kv in page.kvs:
                data = encoding.with_resource_version(kv.value, kv.mod_revision)
                if not flt.empty and not flt.matches(kind.message.FromString(data)):
                    continue
                out.append(encoding.envelope(field, data))
            if page.kvs:
                start_after = page.kvs[-1].key
            if not page.more:
                return encoding.list_response(out, read_at)
            if limit and len(out) >= limit:
                return encoding.list_response(out, read_at, _encode_continue(read_at, start_after))


def parse_rv(rv: str) -> int:
    """A resourceVersion as upstream's APIObjectVersioner.ParseResourceVersion reads it: an
    unsigned 64-bit integer (strconv.ParseUint), anything else BadRequest at once (a number
    beyond uint64 is not "too large a resourceVersion" to wait for)."""
    shown = rv if len(rv) <= 64 else rv[:64] + "..."
    if not rv.isascii() or not rv.isdigit():
        raise BadRequest(f'invalid resourceVersion "{shown}": must be an unsigned integer')
    if len(rv) > 20 or int(rv) > _UINT64_MAX:
        raise BadRequest(f'invalid resourceVersion "{shown}": value out of range')
    return int(rv)


def _encode_continue(revision: int, key: str) -> str:
    raw = json.dumps({"rv": revision, "start": key}).encode()
    return base64.urlsafe_b64encode(raw).decode()


def _decode_continue(token: str, prefix: str) -> tuple[int, str]:
    try:
        data = jsonutil.loads(base64.urlsafe_b64decode(token.encode()), "the continue key")
        if not isinstance(data, dict):
            raise TypeError("not an object")
        rv, start = data["rv"], data["start"]
        if not isinstance(rv, (int, float, str)):
            raise TypeError("rv")
        revision, key = int(rv), str(start)
    except (ValueError, KeyError, TypeError, BadRequest):
        raise BadRequest("continue key is not valid") from None
    if not 0 < revision <= _INT64_MAX:  # (etcd revisions are positive int64s)
        raise BadRequest("continue key is not valid: incorrect encoded start resourceVersion")
    if not key.startswith(prefix):
        raise BadRequest("continue key is not valid for this request")
    return revision, key
