"""The REST edge of the apiserver: the Kubernetes HTTP API (JSON) on `--rest-port`.

A thin translation layer: paths and query parameters become the same calls the gRPC edge makes
(the Registry for writes, Lister.list_bytes and Watches.open_watch for lists and watches), and
objects are rendered with kemu.machinery.convert (upstream's JSON shape). No semantics live
here: validation, defaults, admission, preconditions and the watch cache are the registry's.
"""

from __future__ import annotations

import json
import logging
import ssl
from collections.abc import Callable
from contextlib import nullcontext
from typing import Any, Final
from urllib.parse import unquote

import anyio
from aiohttp import web
from google.protobuf.message import Message

from apiserver.admission import request_user
from apiserver.authentication.service_accounts import ServiceAccountTokens
from apiserver.authorization import modes
from apiserver.endpoints import identity
from apiserver.endpoints.filters.authorization import authorize
from apiserver.endpoints.inflight import Limiter, RequestInfo
from apiserver.endpoints.rest import (
    authentication,
    authorization,
    deprecation,
    discovery,
    documents,
    events,
    logs,
    options,
    protobuf,
    scale,
    status,
    streams,
    token,
)
from apiserver.endpoints.rest.discovery import OtherResource
from apiserver.endpoints.rest.metrics_api import MetricsApi
from apiserver.endpoints.rest.reads import Reads
from apiserver.endpoints.rest.request import (
    JSON_TYPE,
    Target,
    json_response,
    parse_json,
    read_body,
    truthy,
)
from apiserver.endpoints.rest.request_info import request_info
from apiserver.endpoints.rest.table import table, wants_table
from apiserver.endpoints.servicer import ApiService
from apiserver.registry import fencing, field_managers
from apiserver.registry.registry import Registry
from kemu.api.v1 import api_pb2, types_pb2
from kemu.component import listen
from kemu.component.clock import Clock, RealClock
from kemu.component.version import Version
from kemu.machinery import convert, jsonutil, podgroups, subresources
from kemu.machinery import patch as patches
from kemu.machinery.convert import UnknownFields
from kemu.machinery.errors import ApiError, BadRequest, InternalError, NotFound
from kemu.machinery.fencing import ENFORCE_KEY, TOKEN_KEY, FencingToken
from kemu.machinery.kinds import ALL_SERVED, BY_KIND, Served, unwrap
from kemu.machinery.managedfields import apply as apply_rules
from kemu.machinery.user import UserInfo

logger = logging.getLogger(__name__)

_POD: Final = BY_KIND["Pod"]

# An HTTP method on an object's subresource: the verb the subresource table serves.
_VERBS: Final = {
    "GET": subresources.GET,
    "POST": subresources.CREATE,
    "PUT": subresources.UPDATE,
    "PATCH": subresources.PATCH,
}


def _error(err: ApiError) -> web.Response:
    response = json_response(status.failure(err), err.code)
    if status.retry_after(err):
        response.headers["Retry-After"] = str(status.retry_after(err))
    return response


def clean_path(raw_path: str) -> str:
    """The path of a request, its segments percent-decoded one by one, without empty ones.
    A segment "." or ".." or one holding "/" or "%" once decoded is BadRequest, as upstream's
    IsValidPathSegmentName refuses such names (apimachinery pkg/api/validation/path), rather
    than a 404 or, for an encoded "/", a segment read as two (`.../namespaces/a%2Fpods%2Fp`
    naming pod p)."""
    segments = []
    for raw in raw_path.split("?", 1)[0].split("/"):
        if not raw:
            continue
        try:
            segment = unquote(raw, errors="strict")
        except UnicodeDecodeError:
            raise BadRequest(f'the path segment "{raw[:64]}" is not valid UTF-8') from None
        if segment in (".", ".."):
            raise BadRequest(f'invalid path segment "{raw[:64]}": may not be "{segment}"')
        for c in ("/", "%"):
            if c in segment:
                raise BadRequest(f'invalid path segment "{raw[:64]}": may not contain "{c}"')
        segments.append(segment)
    return "/" + "/".join(segments)


def parse_path(parts: list[str], served: Served = ALL_SERVED) -> Target | None:
    """["api","v1",...] or ["apis",group,version,...] to a Target (None: not a resource, or
    not one served at the apiserver's version and gates)."""
    if parts[:1] == ["api"] and len(parts) >= 3 and parts[1] == "v1":
        group, version, rest = "", "v1", parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 4:
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    kinds = {k.path_resource: k for k in discovery.kinds_of(group, version, served)}
    namespace = ""
    if len(rest) >= 3 and rest[0] == "namespaces" and rest[2] in kinds:
        namespace, rest = rest[1], rest[2:]
    kind = kinds.get(rest[0])
    if kind is None or len(rest) > 3:
        return None
    if namespace and not kind.namespaced:
        return None
    name = rest[1] if len(rest) > 1 else ""
    sub = rest[2] if len(rest) > 2 else ""
    if sub:
        known = subresources.SUBRESOURCES.get(sub)
        if known is None or not known.exists_for(kind):
            return None
    gv = f"{group}/{version}" if group else version
    return Target(kind, namespace, name, sub, served_as="" if gv == kind.api_version else gv)


def parse_other_path(
    parts: list[str], served: Served = ALL_SERVED
) -> tuple[OtherResource, str, str] | None:
    """["apis", group, version, ("namespaces", NS,) resource (, name)] naming one of
    discovery's OTHER_RESOURCES, as (resource, namespace, name); None otherwise."""
    if parts[:1] != ["apis"] or len(parts) < 4:
        return None
    group, version, rest = parts[1], parts[2], parts[3:]
    namespace = ""
    if len(rest) >= 3 and rest[0] == "namespaces":
        namespace, rest = rest[1], rest[2:]
    r = discovery.other_resource(group, version, rest[0], served)
    if r is None or len(rest) > 2 or (namespace and not r.namespaced):
        return None
    return r, namespace, rest[1] if len(rest) > 1 else ""


def _fencing_token(request: web.BaseRequest) -> FencingToken | None:
    """The fencing token of a leader's write, in the headers named as kemu's gRPC metadata
    (kemu.machinery.fencing); BadRequest if malformed."""
    return FencingToken.from_request(
        request.headers.get(TOKEN_KEY, ""), request.headers.get(ENFORCE_KEY, "")
    )


class RestApi:
    def __init__(
        self,
        registry: Registry,
        service: ApiService,
        *,
        ready: Callable[[], bool],
        limiter: Limiter,
        tokens: ServiceAccountTokens,
        clock: Clock | None = None,
        authorization: modes.Authorization | None = None,
    ) -> None:
        """`authorization`: what --authorization-mode built (None: AlwaysAllow)."""
        self._authorization = authorization or modes.build(modes.DEFAULT_MODES, {})
        self._limiter = limiter
        self._tokens = tokens
        self._registry = registry
        self._service = service
        self._ready = ready
        self._now = (clock or RealClock()).now
        self._reads = Reads(service, clock)
        self._metrics = MetricsApi(service.lister, registry, self._now)

    # ------------------------------------------------------------ entry

    async def handle(self, request: web.BaseRequest) -> web.StreamResponse:
        try:
            requester = identity.Requester(
                identity.current().authenticated(
                    _certificate_user(request),
                    identity.bearer_token(request.headers.get("Authorization", "")),
                    "",
                ),
                request.headers.get("Impersonate-User", ""),
                tuple(request.headers.getall("Impersonate-Group", [])),
            )
            info = request_info(request.method, request.path, request.query, requester.user)
            # a watch from outside the cluster does not hold the event-driven clock
            counted = self._service.activity.request() if info.verb != "watch" else nullcontext()
            manager = request.query.get("fieldManager") or field_managers.from_user_agent(
                request.headers.get("User-Agent", "")
            )
            async with self._limiter.admit(info):
                user = self._authorize(requester, info)
                with (
                    fencing.serving(_fencing_token(request)),
                    field_managers.serving(manager),
                    request_user.serving(user),
                    counted,
                ):
                    return await self._route(request, user)
        except ApiError as e:
            return _error(e)
        except (ConnectionResetError, anyio.get_cancelled_exc_class()):
            raise
        except Exception as e:
            logger.exception("%s %s failed", request.method, request.path)
            return _error(InternalError(f"internal error: {e}"))

    def _authorize(self, requester: identity.Requester, info: RequestInfo) -> UserInfo:
        """The user the request acts as, once authorized (filters/authorization.py)."""
        if self._authorization.always_allow:
            return requester.user
        return authorize(self._authorization, requester, info)

    async def _route(self, request: web.BaseRequest, user: UserInfo) -> web.StreamResponse:
        path = clean_path(request.raw_path)
        if path in ("/healthz", "/livez"):
            return web.Response(text="ok")
        if path == "/readyz":
            ok = self._ready()
            return web.Response(text="ok" if ok else "not ready", status=200 if ok else 500)
        if request.method == "GET" or path == "/version":
            emulated = self._service.server_version().emulated_version
            response = documents.response(
                path, request.headers.get("Accept", ""), emulated, self._registry.served
            )
            if response is not None:
                return response
        parts = [p for p in path.split("/") if p]
        other = parse_other_path(parts, self._registry.served)
        if other is not None:
            return await self._other(request, user, *other)
        target = parse_path(parts, self._registry.served)
        if target is None:
            raise NotFound("the server could not find the requested resource")
        at = Version.parse(self._service.server_version().emulated_version)
        warning = deprecation.warning(target.api_version, target.kind.kind, at)
        if warning is None:
            return await self._resource(request, target)
        answer: web.StreamResponse
        try:
            answer = await self._resource(request, target)
        except ApiError as e:
            answer = _error(e)
        if not answer.prepared:  # (a watch's headers are sent: its list has warned)
            answer.headers.add("Warning", "299 - " + json.dumps(warning))
        return answer

    # ------------------------------------------------------------ other resources

    async def _other(
        self, request: web.BaseRequest, user: UserInfo, r: OtherResource, namespace: str, name: str
    ) -> web.StreamResponse:
        """One of discovery's OTHER_RESOURCES: the verbs it lists, else 405."""
        verb = _OTHER_VERBS.get((request.method, bool(name)), "")
        if verb == "list" and truthy(request.query.get("watch")):
            verb = "watch"
        if verb not in r.verbs:
            raise MethodNotAllowed(
                "the server does not allow this method on the requested resource "
                f"({request.method} {r.resource}.{r.group})"
            )
        authz = self._authorization
        if r is discovery.SELF_SUBJECT_ACCESS_REVIEWS:
            body = await self._body(request)
            return json_response(authorization.access_review(body, r, user, authz), 201)
        if r is discovery.SELF_SUBJECT_RULES_REVIEWS:
            body = await self._body(request)
            return json_response(authorization.rules_review(body, r, user, authz), 201)
        if r is discovery.SUBJECT_ACCESS_REVIEWS:
            body = await self._body(request)
            return json_response(authorization.subject_access_review(body, r, authz), 201)
        if r is discovery.LOCAL_SUBJECT_ACCESS_REVIEWS:
            body = await self._body(request)
            answer = authorization.local_access_review(body, r, namespace, authz)
            return json_response(answer, 201)
        if r in discovery.SELF_SUBJECT_REVIEWS:
            body = await self._body(request)
            return json_response(authentication.self_subject_review(body, r, user), 201)
        if r is discovery.EVENTS_V1:
            t = Target(BY_KIND["Event"], namespace, name, "", events.EVENTS_V1_VIEW)
            if verb == "watch":
                return await self._reads.watch(request, t)
            if verb == "list":
                return await self._reads.get_list(request, t)
            return self._object(request, t, await self._get(t))
        if r is discovery.POD_METRICS:
            return await self._metrics.pod_metrics(request, namespace, name)
        if r is discovery.NODE_METRICS:
            return await self._metrics.node_metrics(request, name)
        raise NotFound("the server could not find the requested resource")

    # ------------------------------------------------------------ resources

    async def _resource(self, request: web.BaseRequest, t: Target) -> web.StreamResponse:
        m = request.method
        if t.name == "":
            if m == "GET":
                if truthy(request.query.get("watch")):
                    return await self._reads.watch(request, t)
                return await self._reads.get_list(request, t)
            if m == "POST":
                return await self._create(request, t)
            if m == "DELETE":
                return await self._delete_collection(request, t)
            raise _method_not_allowed(m, t)
        if t.subresource:
            sub = subresources.SUBRESOURCES[t.subresource]  # (parse_path found it)
            if _VERBS.get(m) not in sub.verbs:
                raise _method_not_allowed(m, t)
            if sub is subresources.SCALE:
                return await self._scale(request, t)
            if sub is subresources.TOKEN:
                sa = await self._get(t)
                assert isinstance(sa, types_pb2.ServiceAccount)
                body = await self._body(request)
                answer = token.token_request(self._tokens, self._registry, body, sa)
                return json_response(answer, 201)
            if sub is subresources.LOG:
                pod = await self._get(t)
                assert isinstance(pod, types_pb2.Pod)
                return await logs.serve(request, self._service, pod, self._now())
            if sub in subresources.STREAMS:
                pod = await self._get(t)
                assert isinstance(pod, types_pb2.Pod)
                return await streams.serve(request, pod, sub.name)
            if m == "POST":
                return await self._pod_action(request, t)
        if m == "GET":
            return self._object(request, t, await self._get(t))
        if m == "PUT":
            return await self._update(request, t)
        if m == "PATCH":
            return await self._patch(request, t)
        if m == "DELETE" and not t.subresource:
            return await self._delete(request, t)
        raise _method_not_allowed(m, t)

    def _namespace(self, t: Target) -> str:
        return (t.namespace or "default") if t.kind.namespaced else ""

    async def _get(self, t: Target) -> Message:
        data = await self._registry.get_bytes(t.kind, self._namespace(t), t.name)
        return unwrap(api_pb2.Object.FromString(data))

    def _object(
        self, request: web.BaseRequest, t: Target, obj: Message, code: int = 200
    ) -> web.Response:
        if wants_table(request.headers.get("Accept", "")):
            return json_response(table(t.kind, [obj], self._now(), render=t.render), code)
        return json_response(t.render(obj), code)

    async def _body(self, request: web.BaseRequest, unknown: UnknownFields | None = None) -> Any:
        """The request body as JSON; duplicate fields go to `unknown` (fieldValidation)."""
        content_type = request.headers.get("Content-Type", JSON_TYPE).split(";")[0].strip()
        raw = await read_body(request)
        if content_type == protobuf.CONTENT_TYPE and raw:
            decoded = protobuf.decode(raw)
            if decoded is None:
                raise UnsupportedMediaType(
                    "kemu reads protobuf bodies of these types only: "
                    f"{', '.join(protobuf.supported())}; send {JSON_TYPE} for others"
                )
            return decoded
        if content_type not in (JSON_TYPE, "", "*/*"):
            raise UnsupportedMediaType(
                f"the body of the request was in an unknown format - accepted media types "
                f"include: {JSON_TYPE}, {protobuf.CONTENT_TYPE} (got {content_type!r})"
            )

        return parse_json(raw or b"{}", unknown)

    async def _decode(
        self, request: web.BaseRequest, t: Target, unknown: UnknownFields, body: Any = None
    ) -> Message:
        """The request's object (`body`: its JSON, when the caller has read it)."""
        if body is None:
            body = await self._body(request, unknown)
        if t.kind is _POD:
            body = podgroups.pod_fields_served(body, self._registry.served.minor, unknown)
        obj = t.decode(body, unknown)
        meta = obj.metadata  # type: ignore[attr-defined]
        if t.kind.namespaced and t.namespace:
            if meta.namespace and meta.namespace != t.namespace:
                raise BadRequest(
                    "the namespace of the provided object does not match the namespace sent "
                    "on the request"
                )
            meta.namespace = t.namespace
        if t.name and meta.name != t.name:
            raise BadRequest(
                "the name of the object "
                f"({meta.name}) does not match the name on the URL ({t.name})"
            )
        return obj

    def _registry_for(self, request: web.BaseRequest, dry_run: list[str] | None = None) -> Registry:
        """The registry, or its dry-run view when the request says dryRun=All (`dry_run`: a
        DELETE's, query and body, validated; else the query's)."""
        values = list(request.query.getall("dryRun", [])) if dry_run is None else dry_run
        options.check_dry_run(values)
        return self._registry.dry_run() if values else self._registry

    async def _create(self, request: web.BaseRequest, t: Target) -> web.Response:
        registry = self._registry_for(request)
        unknown = _field_validation(request)
        obj = await self._decode(request, t, unknown)
        with field_managers.writing_in(t.api_version):
            created, _ = await registry.create_owned(obj)
        return _warn(self._object(request, t, created, 201), unknown)

    async def _update(self, request: web.BaseRequest, t: Target) -> web.Response:
        registry = self._registry_for(request)
        unknown = _field_validation(request)
        body = await self._body(request, unknown)
        obj = await self._decode(request, t, unknown, body)
        with (
            field_managers.sent_empty(field_managers.body_sends_empty(body)),
            field_managers.writing_in(t.api_version),
        ):
            updated = await registry.update(obj, subresource=t.subresource)
        return _warn(self._object(request, t, updated), unknown)

    async def _patch(self, request: web.BaseRequest, t: Target) -> web.Response:
        registry = self._registry_for(request)
        content_type = request.headers.get("Content-Type", "").split(";")[0].strip()
        q = request.query
        apply_rules.check_options(
            q.get("fieldManager"), q.get("force"), content_type == apply_rules.CONTENT_TYPE
        )
        if content_type == apply_rules.CONTENT_TYPE:
            return await self._apply(request, t, registry)
        if content_type not in patches.PATCH_TYPES:
            raise _unsupported_media(content_type)
        if t.kind.custom and content_type == patches.STRATEGIC:
            # custom resources have no patch strategies (upstream's crdHandler lists the
            # others: apiextensions-apiserver pkg/apiserver/customresource_handler.go)
            raise UnsupportedMediaType(
                "the body of the request was in an unknown format - accepted media types "
                f"include: {patches.JSON}, {patches.MERGE}, application/apply-patch+yaml"
            )
        text = jsonutil.decode(await read_body(request), "the patch")
        unknown = _field_validation(request)
        empty = False
        if "managedFields" in text:  # (the patch is read again by the registry)
            parsed = jsonutil.loads(text, "the patch")
            if content_type == patches.JSON:
                empty = field_managers.json_patch_sends_empty(parsed)
            else:
                empty = field_managers.body_sends_empty(parsed)
        with field_managers.sent_empty(empty), field_managers.writing_in(t.api_version):
            patched = await registry.patch(
                t.kind.resource,
                self._namespace(t),
                t.name,
                text,
                t.subresource,
                content_type,
                unknown,
                api_version=t.api_version,
            )
        return _warn(self._object(request, t, patched), unknown)

    async def _apply(self, request: web.BaseRequest, t: Target, registry: Registry) -> web.Response:
        """Server-side apply (issue #57): 201 when it created the object."""
        config = apply_rules.parse_config(await read_body(request))
        unknown = _field_validation(request)
        obj, created = await registry.apply(
            t.kind.resource,
            self._namespace(t),
            t.name,
            config,
            t.subresource,
            manager=request.query.get("fieldManager", ""),
            force=truthy(request.query.get("force")),
            unknown=unknown,
            api_version=t.api_version,
        )
        return _warn(self._object(request, t, obj, 201 if created else 200), unknown)

    async def _delete(self, request: web.BaseRequest, t: Target) -> web.Response:
        deleted = await self._delete_one(request, t, await self._delete_options(request))
        return self._object(request, t, deleted)

    async def _delete_options(self, request: web.BaseRequest) -> options.DeleteOptions:
        """The DELETE's options, every one checked before anything is deleted."""
        body = await self._body(request) if request.can_read_body else None
        return options.delete_options(request.query, body)

    async def _delete_collection(self, request: web.BaseRequest, t: Target) -> web.Response:
        """DELETE on a collection: each object the selectors match, deleted as by its own
        DELETE with the same options (upstream's DeleteCollection); the answer lists them."""
        body = await self._delete_options(request)
        q = request.query
        req = api_pb2.ListRequest(
            resource=t.kind.resource,
            namespace=t.namespace,
            label_selector=q.get("labelSelector", ""),
            field_selector=q.get("fieldSelector", ""),
        )
        listed = api_pb2.ListResponse.FromString(await self._service.lister.list_bytes(req))
        deleted = []
        for item in listed.items:
            meta = unwrap(item).metadata  # type: ignore[attr-defined]
            one = Target(t.kind, meta.namespace, meta.name, "")
            try:
                deleted.append(await self._delete_one(request, one, body))
            except NotFound:
                continue  # gone since the list: someone else deleted it
        return self._reads.list_body(request, t, deleted, listed.resource_version, "")

    async def _delete_one(
        self, request: web.BaseRequest, t: Target, o: options.DeleteOptions
    ) -> Message:
        return await self._registry_for(request, o.dry_run).delete(
            t.kind.resource,
            self._namespace(t),
            t.name,
            grace_period=o.grace_period,
            uid=o.uid,
            resource_version=o.resource_version,
            propagation_policy=o.propagation_policy,
            orphan_dependents=o.orphan_dependents,
        )

    async def _scale(self, request: web.BaseRequest, t: Target) -> web.Response:
        """GET, PUT and PATCH of deployments|replicasets|statefulsets/scale and of a custom
        resource's whose CRD enables it."""
        obj = await self._get(t)
        current = scale.scale_of(obj)
        if request.method == "GET":
            return json_response(current)
        if request.method == "PUT":
            desired = await self._body(request)
            if not isinstance(desired, dict):
                raise BadRequest("a Scale must be a JSON object")
        elif request.method == "PATCH":
            content_type = request.headers.get("Content-Type", "").split(";")[0].strip()
            if content_type not in patches.PATCH_TYPES:
                raise _unsupported_media(content_type)
            text = jsonutil.decode(await read_body(request), "the patch")
            desired = scale.patched(current, content_type, text)
        else:
            raise _method_not_allowed(request.method, t)
        path = (
            scale.spec_replicas_path(obj)
            if isinstance(obj, types_pb2.CustomObject)
            else ".spec.replicas"
        )
        with field_managers.writing_through(subresources.SCALE.name):
            written = await self._registry_for(request).patch(
                t.kind.resource, self._namespace(t), t.name, scale.object_patch(desired, path), ""
            )
        return json_response(scale.scale_of(written))

    async def _pod_action(self, request: web.BaseRequest, t: Target) -> web.Response:
        body = await self._body(request)
        if not isinstance(body, dict):
            raise BadRequest("the request body must be a JSON object")
        body = {k: v for k, v in body.items() if k not in ("apiVersion", "kind")}
        if t.subresource == subresources.BINDING.name:
            binding = api_pb2.Binding()
            convert.fill_message(binding, body)
            binding.metadata.namespace = self._namespace(t)
            binding.metadata.name = binding.metadata.name or t.name
            await self._registry_for(request).bind(binding)
        else:
            o = options.from_body(body.pop("deleteOptions", None), "deleteOptions.")
            options.validate(o, "deleteOptions.")
            eviction = api_pb2.Eviction()
            convert.fill_message(eviction, body)
            eviction.metadata.namespace = self._namespace(t)
            eviction.metadata.name = eviction.metadata.name or t.name
            if o.grace_period is not None:
                eviction.grace_period_seconds = o.grace_period
            if o.uid:
                eviction.preconditions.uid = o.uid
            if o.resource_version:
                eviction.preconditions.resource_version = o.resource_version
            if o.propagation_policy:
                eviction.propagation_policy = o.propagation_policy
            # the eviction's own deleteOptions.dryRun, else the request's (as upstream)
            eviction.dry_run.extend(o.dry_run or request.query.getall("dryRun", []))
            await self._registry.evict(eviction)
        return json_response(status.success(201), 201)


# (method, named) -> the verb of a request on one of discovery's OTHER_RESOURCES
_OTHER_VERBS: Final = {
    ("GET", False): "list",
    ("GET", True): "get",
    ("POST", False): "create",
}

_FIELD_VALIDATION: Final = ("Ignore", "Warn", "Strict")


def _field_validation(request: web.BaseRequest) -> UnknownFields:
    """fieldValidation (upstream's default: Warn): what to do with unknown and duplicate
    fields of a create, update or patch body."""
    value = request.query.get("fieldValidation") or "Warn"
    if value not in _FIELD_VALIDATION:
        raise BadRequest(
            f'invalid fieldValidation directive: "{value}": must be one of '
            + ", ".join(_FIELD_VALIDATION)
        )
    return UnknownFields(strict=value == "Strict", warn=value == "Warn")


# upstream's warning recorder (k8s.io/apiserver pkg/endpoints/filters/warning.go): a warning
# is cut to 256 runes, and the warnings of one response stop at 4 KiB in all, so that a body
# full of unknown or very long field names cannot make headers no client reads.
_WARNING_RUNES: Final = 256
_WARNINGS_TOTAL_RUNES: Final = 4 * 1024


def _warn(response: web.Response, unknown: UnknownFields) -> web.Response:
    """Warn: each dropped field as a `Warning: 299` header, as upstream."""
    if unknown.warn:
        total = 0
        for text in unknown.found:
            text = text[:_WARNING_RUNES]
            total += len(text)
            if total > _WARNINGS_TOTAL_RUNES:
                break
            response.headers.add("Warning", "299 - " + json.dumps(text))
    return response


class MethodNotAllowed(ApiError):
    reason = "MethodNotAllowed"
    code = 405


class UnsupportedMediaType(ApiError):
    reason = "UnsupportedMediaType"
    code = 415


def _certificate_user(request: web.BaseRequest) -> identity.UserInfo | None:
    """The user of the request's verified client certificate (TLS with --client-ca-file)."""
    transport = request.transport
    tls = transport.get_extra_info("ssl_object") if transport is not None else None
    if tls is None:
        return None
    return identity.of_peer_certificate(tls.getpeercert(binary_form=True))


def _method_not_allowed(method: str, t: Target) -> ApiError:
    sub = f"/{t.subresource}" if t.subresource else ""
    return MethodNotAllowed(
        "the server does not allow this method on the requested resource "
        f"({method} {t.kind.resource}{sub})"
    )


def _unsupported_media(content_type: str) -> ApiError:
    return UnsupportedMediaType(
        f"the body of the request was in an unknown format - accepted media types include: "
        f"{', '.join(patches.PATCH_TYPES)} (got {content_type!r})"
    )


MAX_HEADER_BYTES: Final = 1 << 20
"""What a request line or a header may hold: upstream's secure server's MaxHeaderBytes
(k8s.io/apiserver/pkg/server/secure_serving.go, `MaxHeaderBytes: 1 << 20`; aiohttp's default,
8190 bytes, refused a long label selector or continue token with 400 before authentication)."""


async def serve(
    api: RestApi,
    host: str,
    port: int,
    *,
    ssl_context: ssl.SSLContext | None = None,
    task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Serves until cancelled; HTTPS with `ssl_context` (kemu.component.secure_serving)."""
    server = web.Server(
        api.handle,
        handler_cancellation=True,
        access_log=None,
        max_line_size=MAX_HEADER_BYTES,
        max_field_size=MAX_HEADER_BYTES,
    )
    runner = web.ServerRunner(server, handle_signals=False, shutdown_timeout=1.0)
    await runner.setup()
    site = web.TCPSite(runner, host, port, ssl_context=ssl_context)
    try:
        await site.start()
    except OSError as e:
        await runner.cleanup()
        raise listen.failed(host, port, e) from None
    scheme = "https" if ssl_context is not None else "http"
    logger.info("serving the Kubernetes REST API on %s://%s:%d", scheme, host, port)
    task_status.started()
    try:
        await anyio.sleep_forever()
    finally:
        with anyio.CancelScope(shield=True):
            await runner.cleanup()
