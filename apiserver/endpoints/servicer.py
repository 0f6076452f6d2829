"""The gRPC edge of the apiserver: the Api service (proto/kemu/api/v1/api.proto), the verbs of
the Kubernetes REST API over gRPC. Lists and watches are lists.py and watches.py (shared with
the REST edge); what every call goes through is calls.py; the cluster clock's service is
clock.py.

List and Watch answer with bytes built by the watch cache (serialized once, shared by every
watcher), and a create with the envelope bytes the store wrote, instead of re-encoding messages
per client.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any, Final

import anyio
import grpc
from google.protobuf.message import Message

from apiserver.authentication.service_accounts import ServiceAccountTokens
from apiserver.authorization.modes import Authorization
from apiserver.clock.activity import Activity
from apiserver.endpoints.calls import (
    Calls,
    Context,
    as_is,
    authenticated_stream,
    authorized_stream,
    handler_of,
    serialize,
)
from apiserver.endpoints.calls import requester as calls_requester
from apiserver.endpoints.filters.authorization import authorize
from apiserver.endpoints.inflight import Limiter, grpc_request_info, limit_stream
from apiserver.endpoints.lists import Lister
from apiserver.endpoints.rest import token
from apiserver.endpoints.stream_calls import CallStreams
from apiserver.endpoints.watches import Watches
from apiserver.registry.registry import Registry
from apiserver.storage import encoding
from apiserver.storage.watch_cache import WatchCache
from kemu import wire
from kemu.api.v1 import api_pb2, types_pb2
from kemu.machinery.errors import ApiError, BadRequest, InternalError
from kemu.machinery.kinds import BY_KIND, Kind, kind_for_resource, kind_of, unwrap
from kemu.machinery.subresources import STATUS

logger = logging.getLogger(__name__)

SERVICE: Final = "kemu.api.v1.Api"
MAX_BATCH: Final = 1000
"""The most items an UpdateBatch may carry."""
COMPONENT_LABEL: Final = "kemu.io/component"
_SERVICE_ACCOUNT: Final = BY_KIND["ServiceAccount"]


class ApiService:
    def __init__(
        self,
        registry: Registry,
        lister: Lister,
        watches: Watches,
        calls: Calls,
        version: Callable[[], api_pb2.ComponentVersion],
        leases: WatchCache,
        tokens: ServiceAccountTokens,
    ) -> None:
        """`version`: this apiserver's; `leases`: the cache of Leases, where the other
        components' identity leases are (see kemu.client.identity); `tokens`: what answers
        serviceaccounts/token."""
        self._registry = registry
        self.lister = lister
        self.watches = watches
        self._calls = calls
        self._call_streams: CallStreams | None = None
        self._version = version
        self._leases = leases
        self._tokens = tokens
        self._now = registry.now

    @property
    def activity(self) -> Activity:
        return self._calls.activity

    @property
    def authorization(self) -> Authorization | None:
        return self._calls.authorization

    def server_version(self) -> api_pb2.ComponentVersion:
        return self._version()

    # ------------------------------------------------------------ helpers

    @staticmethod
    def _resource_of(envelope: api_pb2.Object) -> str:
        which = envelope.WhichOneof("kind")
        return kind_of(getattr(envelope, which)).resource if which else ""

    @staticmethod
    def _wrap(obj: Message) -> bytes:
        """The Object envelope of `obj` as bytes: the bytes of an Object holding it, without
        copying it into one (see encoding)."""
        return encoding.envelope(_field_number(kind_of(obj)), obj.SerializeToString())

    # ------------------------------------------------------------ verbs

    async def create(self, req: api_pb2.CreateRequest, context: Context[bytes]) -> bytes:
        async def call() -> bytes:
            # The request was decoded for this call alone: the registry may take it over.
            return (await self._registry.create_owned(unwrap(req.object)))[1]

        return await self._calls.serve("create", self._resource_of(req.object), context, call)

    async def get(self, req: api_pb2.GetRequest, context: Context[bytes]) -> bytes:
        async def call() -> bytes:
            kind = kind_for_resource(req.resource)
            if not req.name:
                raise BadRequest("name is required")
            namespace = (req.namespace or "default") if kind.namespaced else ""
            return await self._registry.get_bytes(kind, namespace, req.name)

        return await self._calls.serve("get", req.resource, context, call)

    async def list(self, req: api_pb2.ListRequest, context: Context[bytes]) -> bytes:
        async def call() -> bytes:
            return await self.lister.list_bytes(req)

        return await self._calls.serve("list", req.resource, context, call)

    async def update(self, req: api_pb2.UpdateRequest, context: Context[bytes]) -> bytes:
        async def call() -> bytes:
            return self._wrap(await self._registry.update(unwrap(req.object)))

        return await self._calls.serve("update", self._resource_of(req.object), context, call)

    async def update_batch(
        self, req: api_pb2.UpdateBatchRequest, context: Context[api_pb2.UpdateBatchResponse]
    ) -> api_pb2.UpdateBatchResponse:
        """Each item served as its own Update, concurrently: its own compare-and-swap (one
        etcd transaction, so its own resourceVersion and watch event) and its own outcome;
        one item's error fails no other. What the batch saves is the call: one request, one
        decoding, one in-flight seat and one answer for all (docs/virtual-time.md)."""

        async def call() -> api_pb2.UpdateBatchResponse:
            if len(req.items) > MAX_BATCH:
                raise BadRequest(
                    f"items: at most {MAX_BATCH} updates in one UpdateBatch, not {len(req.items)}"
                )
            results = [api_pb2.UpdateResult() for _ in req.items]
            authorization = self._calls.authorization
            requester = calls_requester(context)

            async def one(item: api_pb2.UpdateRequest, result: api_pb2.UpdateResult) -> None:
                try:
                    if authorization is not None and not authorization.always_allow:
                        # (each item by its own name, as its own Update would be)
                        info = grpc_request_info("Update", item, requester.user)
                        authorize(authorization, requester, info)
                    written = await self._registry.update(unwrap(item.object))
                except ApiError as e:
                    result.error.CopyFrom(_status_of(e))
                except Exception as e:
                    logger.exception("update %s in a batch failed", self._resource_of(item.object))
                    result.error.CopyFrom(_status_of(InternalError(f"internal error: {e}")))
                else:
                    result.object.MergeFromString(self._wrap(written))

            async with anyio.create_task_group() as tg:
                for item, result in zip(req.items, results, strict=True):
                    tg.start_soon(one, item, result)
            return api_pb2.UpdateBatchResponse(results=results)

        resource = self._resource_of(req.items[0].object) if req.items else ""
        return await self._calls.serve("update", resource, context, call)

    async def update_status(self, req: api_pb2.UpdateRequest, context: Context[bytes]) -> bytes:
        async def call() -> bytes:
            obj = await self._registry.update(unwrap(req.object), subresource=STATUS.name)
            return self._wrap(obj)

        return await self._calls.serve(
            "update_status", self._resource_of(req.object), context, call
        )

    async def patch(self, req: api_pb2.PatchRequest, context: Context[bytes]) -> bytes:
        async def call() -> bytes:
            obj = await self._registry.patch(
                req.resource, req.namespace, req.name, req.patch, req.subresource
            )
            return self._wrap(obj)

        return await self._calls.serve("patch", req.resource, context, call)

    async def delete(self, req: api_pb2.DeleteRequest, context: Context[bytes]) -> bytes:
        async def call() -> bytes:
            obj = await self._registry.delete(
                req.resource,
                req.namespace,
                req.name,
                grace_period=req.grace_period_seconds
                if req.HasField("grace_period_seconds")
                else None,
                uid=req.preconditions.uid if req.preconditions.HasField("uid") else None,
                resource_version=(
                    req.preconditions.resource_version
                    if req.preconditions.HasField("resource_version")
                    else None
                ),
                propagation_policy=(
                    req.propagation_policy if req.HasField("propagation_policy") else None
                ),
                orphan_dependents=(
                    req.orphan_dependents if req.HasField("orphan_dependents") else None
                ),
            )
            return self._wrap(obj)

        return await self._calls.serve("delete", req.resource, context, call)

    async def bind(self, req: api_pb2.Binding, context: Context[api_pb2.Status]) -> api_pb2.Status:
        async def call() -> api_pb2.Status:
            await self._registry.bind(req)
            return api_pb2.Status(status="Success", code=201)

        return await self._calls.serve("create", "pods/binding", context, call)

    async def resize(self, req: api_pb2.UpdateRequest, context: Context[bytes]) -> bytes:
        async def call() -> bytes:
            pod = unwrap(req.object)
            if not isinstance(pod, types_pb2.Pod):
                raise BadRequest("pods/resize takes a Pod")
            return self._wrap(await self._registry.resize(pod))

        return await self._calls.serve("update", "pods/resize", context, call)

    async def evict(
        self, req: api_pb2.Eviction, context: Context[api_pb2.Status]
    ) -> api_pb2.Status:
        async def call() -> api_pb2.Status:
            await self._registry.evict(req)
            return api_pb2.Status(status="Success", code=201)

        return await self._calls.serve("create", "pods/eviction", context, call)

    async def create_token(
        self, req: api_pb2.TokenRequest, context: Context[api_pb2.TokenRequest]
    ) -> api_pb2.TokenRequest:
        """serviceaccounts/token, as the REST edge's POST (apiserver/endpoints/rest/token.py):
        the ServiceAccount read, the request checked and answered by the apiserver's tokens."""

        async def call() -> api_pb2.TokenRequest:
            meta = req.metadata
            if not meta.name:
                raise BadRequest("metadata.name (the ServiceAccount) is required")
            data = await self._registry.get_bytes(
                _SERVICE_ACCOUNT, meta.namespace or "default", meta.name
            )
            sa = unwrap(api_pb2.Object.FromString(data))
            assert isinstance(sa, types_pb2.ServiceAccount)
            answer = token.token_request(self._tokens, self._registry, token.body_of(req), sa)
            return token.message_of(answer)

        return await self._calls.serve("create", "serviceaccounts/token", context, call)

    async def version(
        self, req: api_pb2.VersionRequest, context: Context[api_pb2.VersionInfo]
    ) -> api_pb2.VersionInfo:
        async def call() -> api_pb2.VersionInfo:
            info = api_pb2.VersionInfo(server=self._version())
            info.components.extend(live_components(self._leases, self._now()))
            return info

        return await self._calls.serve("get", "version", context, call)

    async def watch(
        self, req: api_pb2.WatchRequest, context: Context[bytes]
    ) -> AsyncGenerator[bytes, None]:
        async for frames in self.watches.stream(req, context):
            yield frames

    # ------------------------------------------------------------ registration

    def drain_call_streams(self) -> None:
        """The apiserver is stopping: the Calls streams end once their calls under way are
        answered (stream_calls.py, CallStreams.drain)."""
        if self._call_streams is not None:
            self._call_streams.drain()

    def _watch_handler(
        self, limiter: Limiter | None
    ) -> Callable[[bytes, Context[bytes]], Awaitable[None]]:
        behaviour = authorized_stream(
            self._calls, "Watch", wire.unary_stream(self.watch, api_pb2.WatchRequest), _decode_watch
        )
        if limiter is not None:
            behaviour = limit_stream("Watch", behaviour, _decode_watch, limiter)
        return authenticated_stream(behaviour)

    def handler(self, limiter: Limiter | None = None) -> grpc.GenericRpcHandler[bytes, object]:
        """The Api service's handlers; every unary method behind `limiter` (the in-flight
        limit, which reads the decoded request: a Lease write is exempt)."""
        unary = self._calls.method
        methods = {
            "Create": unary("Create", self.create, api_pb2.CreateRequest, as_is, limiter),
            "Get": unary("Get", self.get, api_pb2.GetRequest, as_is, limiter),
            "List": unary("List", self.list, api_pb2.ListRequest, as_is, limiter),
            "Update": unary("Update", self.update, api_pb2.UpdateRequest, as_is, limiter),
            "UpdateStatus": unary(
                "UpdateStatus", self.update_status, api_pb2.UpdateRequest, as_is, limiter
            ),
            "UpdateBatch": unary(
                "UpdateBatch", self.update_batch, api_pb2.UpdateBatchRequest, serialize, limiter
            ),
            "Patch": unary("Patch", self.patch, api_pb2.PatchRequest, as_is, limiter),
            "Delete": unary("Delete", self.delete, api_pb2.DeleteRequest, as_is, limiter),
            "Bind": unary("Bind", self.bind, api_pb2.Binding, serialize, limiter),
            "Resize": unary("Resize", self.resize, api_pb2.UpdateRequest, as_is, limiter),
            "Evict": unary("Evict", self.evict, api_pb2.Eviction, serialize, limiter),
            "CreateToken": unary(
                "CreateToken", self.create_token, api_pb2.TokenRequest, serialize, limiter
            ),
            "Version": unary("Version", self.version, api_pb2.VersionRequest, serialize, limiter),
        }
        handlers: dict[str, grpc.RpcMethodHandler[bytes, Any]] = {
            name: handler_of(method) for name, method in methods.items()
        }
        # A watch is long-running: the max-in-flight limit does not count it; priority and
        # fairness holds its seats until its initial events are sent.
        handlers["Watch"] = grpc.unary_stream_rpc_method_handler(
            self._watch_handler(limiter), response_serializer=as_is
        )
        # The unary methods multiplexed on one stream (stream_calls.py): each call counted
        # and limited as its unary method, the stream itself by nothing (long-running).
        self._call_streams = CallStreams(methods)
        handlers["Calls"] = grpc.stream_stream_rpc_method_handler(
            self._call_streams.serve, response_serializer=as_is
        )
        return grpc.method_handlers_generic_handler(SERVICE, handlers)


def _status_of(err: ApiError) -> api_pb2.Status:
    """An error as a batch item's outcome (kemu.wire.error_from_reason reads it back)."""
    return api_pb2.Status(status="Failure", message=str(err), reason=err.reason, code=err.code)


def _decode_watch(data: bytes) -> Message:
    return api_pb2.WatchRequest.FromString(data)


@functools.cache
def _field_number(kind: Kind) -> int:
    return int(api_pb2.Object.DESCRIPTOR.fields_by_name[kind.field].number)


def live_components(leases: WatchCache, now: float) -> list[api_pb2.ComponentVersion]:
    """Components that hold a live identity lease (see kemu.client.identity)."""
    out = []
    for co in leases.objects():
        lease = co.obj
        assert isinstance(lease, types_pb2.Lease)
        component = lease.metadata.labels.get(COMPONENT_LABEL)
        if not component:
            continue
        duration = lease.spec.lease_duration_seconds or 0
        if lease.spec.renew_time.ToNanoseconds() / 1e9 + duration < now:
            continue
        ann = lease.metadata.annotations
        cv = api_pb2.ComponentVersion(
            component=component,
            identity=lease.spec.holder_identity,
            emulated_version=ann.get("kemu.io/emulated-version", ""),
            binary_version=ann.get("kemu.io/binary-version", ""),
        )
        try:
            for g in json.loads(ann.get("kemu.io/feature-gates", "[]")):
                cv.feature_gates.add(
                    name=str(g["name"]),
                    enabled=bool(g["enabled"]),
                    stage=str(g.get("stage", "")),
                    locked=bool(g.get("locked", False)),
                )
        except (ValueError, KeyError, TypeError):
            logger.warning("identity lease %s has malformed feature gates", lease.metadata.name)
        out.append(cv)
    out.sort(key=lambda c: (c.component, c.identity))
    return out
