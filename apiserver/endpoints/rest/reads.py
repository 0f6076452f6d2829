"""Lists and watches of the REST edge: Lister.list_bytes and Watches.open_watch (the
gRPC edge's own calls, so the watch cache and resourceVersion semantics exist once), rendered
as upstream's JSON lists, Tables and watch events (chunked JSON lines)."""

from __future__ import annotations

import json
from collections.abc import Mapping

import anyio
from aiohttp import web
from google.protobuf.message import Message

from apiserver.endpoints.inflight import watch_initialized
from apiserver.endpoints.rest import status
from apiserver.endpoints.rest.request import JSON_TYPE, Target, int_param, json_response, truthy
from apiserver.endpoints.rest.table import include_object, table, wants_table
from apiserver.endpoints.servicer import ApiService
from kemu.api.v1 import api_pb2
from kemu.component.clock import Clock, RealClock
from kemu.component.virtual_clock import move_on_after
from kemu.machinery.errors import Gone
from kemu.machinery.jsonvalue import JSONObject
from kemu.machinery.kinds import unwrap


def select(
    req: api_pb2.ListRequest | api_pb2.WatchRequest, t: Target, q: Mapping[str, str]
) -> None:
    """Sets the fields a list and a watch take alike from upstream's ListOptions query
    parameters."""
    req.resource = t.kind.resource
    req.namespace = t.namespace
    req.label_selector = q.get("labelSelector", "")
    req.field_selector = t.field_selector(q.get("fieldSelector", ""))
    req.resource_version = q.get("resourceVersion", "")
    req.resource_version_match = q.get("resourceVersionMatch", "")


class Reads:
    def __init__(self, service: ApiService, clock: Clock | None = None) -> None:
        self._service = service
        self._clock: Clock = clock or RealClock()
        self._now = self._clock.now

    async def get_list(self, request: web.BaseRequest, t: Target) -> web.Response:
        q = request.query
        req = api_pb2.ListRequest(limit=int_param(q, "limit") or 0)
        int_param(q, "timeoutSeconds")  # a list has no use for it, but it must parse (upstream)
        select(req, t, q)
        setattr(req, "continue", q.get("continue", ""))
        resp = api_pb2.ListResponse.FromString(await self._service.lister.list_bytes(req))
        objs = [unwrap(item) for item in resp.items]
        return self.list_body(request, t, objs, resp.resource_version, getattr(resp, "continue"))

    def list_body(
        self,
        request: web.BaseRequest,
        t: Target,
        objs: list[Message],
        resource_version: str,
        cont: str,
    ) -> web.Response:
        if wants_table(request.headers.get("Accept", "")):
            return json_response(
                table(
                    t.kind,
                    objs,
                    self._now(),
                    resource_version=resource_version,
                    continue_=cont,
                    include_object=include_object(request.query.get("includeObject", "")),
                    render=t.render,
                )
            )
        metadata: JSONObject = {"resourceVersion": resource_version}
        if cont:
            metadata["continue"] = cont
        return json_response(
            {
                "kind": f"{t.kind.kind}List",
                "apiVersion": t.api_version,
                "metadata": metadata,
                "items": [t.render(o) for o in objs],
            }
        )

    async def watch(self, request: web.BaseRequest, t: Target) -> web.StreamResponse:
        q = request.query
        req = api_pb2.WatchRequest(allow_watch_bookmarks=truthy(q.get("allowWatchBookmarks")))
        select(req, t, q)
        if "sendInitialEvents" in q:
            req.send_initial_events = truthy(q.get("sendInitialEvents"))
        as_table = wants_table(request.headers.get("Accept", ""))
        timeout = int_param(q, "timeoutSeconds")
        response = web.StreamResponse(headers={"Content-Type": JSON_TYPE})
        try:
            cache, initial, receive, watcher = await self._service.watches.open_watch(req)
        except Gone as e:
            # Upstream's cacher answers a too-old resourceVersion with an ERROR event.
            await response.prepare(request)
            await response.write(self._line("ERROR", status.failure(e)))
            await response.write_eof()
            return response
        response.enable_chunked_encoding()
        await response.prepare(request)
        bookmarks = req.allow_watch_bookmarks
        frequency = self._service.watches.bookmark_frequency
        try:
            with anyio.move_on_after(timeout if timeout and timeout > 0 else float("inf")):
                await self._send_frames(response, t, initial, as_table)
                watch_initialized()  # (priority and fairness releases the watch's seats)
                async with receive:
                    while True:
                        frame = None
                        async with move_on_after(
                            self._clock, frequency if bookmarks else float("inf")
                        ):
                            try:
                                frame = await receive.receive()
                            except anyio.EndOfStream:
                                break
                        if frame is None:
                            frame = cache.bookmark(watcher)
                        frames = [frame]
                        while True:
                            try:
                                frames.append(receive.receive_nowait())
                            except (anyio.WouldBlock, anyio.EndOfStream):
                                break
                        await self._send_frames(response, t, frames, as_table)
        finally:
            cache.stop(watcher)
        await response.write_eof()
        return response

    async def _send_frames(
        self, response: web.StreamResponse, t: Target, frames: list[bytes], as_table: bool
    ) -> None:
        if not frames:
            return
        events = api_pb2.WatchResponse.FromString(b"".join(frames)).events
        out = []
        now = self._now()
        for ev in events:
            obj = unwrap(ev.object)
            if as_table and ev.type != "BOOKMARK":
                rendered = table(t.kind, [obj], now, render=t.render)
            else:
                rendered = t.render(obj)
            out.append(self._line(ev.type, rendered))
        await response.write(b"".join(out))

    @staticmethod
    def _line(event_type: str, obj: JSONObject) -> bytes:
        return json.dumps({"type": event_type, "object": obj}, separators=(",", ":")).encode() + (
            b"\n"
        )
