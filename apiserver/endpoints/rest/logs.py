"""pods/log (`kubectl logs POD [-c C] [-f] [--tail N] [--timestamps] [--since D]`): upstream's
apiserver proxies it to the pod's kubelet (pkg/registry/core/pod/rest/log.go, LogLocation in
pkg/registry/core/pod/strategy.go); kemu's kubelets simulate their containers' logs by one rule,
`kemu.machinery.container_log`, so the apiserver renders them from the pod it stores, as
text/plain. With `follow` the stream stays open on a watch of the pod until the container has
exited, the pod is gone or the client leaves.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

import anyio
from aiohttp import web
from google.protobuf.timestamp_pb2 import Timestamp

from apiserver.endpoints.rest.request import bool_param, int_param
from apiserver.endpoints.servicer import ApiService
from kemu.api.v1 import api_pb2, types_pb2
from kemu.machinery import convert
from kemu.machinery.container_log import LogLine, container_log, previous_not_found
from kemu.machinery.errors import BadRequest, Cause, Invalid
from kemu.machinery.kinds import unwrap

CONTENT_TYPE: Final = "text/plain"


@dataclass(frozen=True)
class LogOptions:
    """Upstream's PodLogOptions, as far as kemu's logs use them."""

    container: str = ""
    follow: bool = False
    previous: bool = False
    timestamps: bool = False
    since: float | None = None  # epoch seconds: lines at or after it
    tail_lines: int | None = None
    limit_bytes: int | None = None


def log_options(query: Mapping[str, str], now: float) -> LogOptions:
    """The query's PodLogOptions, validated as upstream's ValidatePodLogOptions (422 naming
    the field); a malformed number, boolean or time is 400."""
    tail = int_param(query, "tailLines")
    limit = int_param(query, "limitBytes")
    since_seconds = int_param(query, "sinceSeconds")
    since_time = query.get("sinceTime") or None
    causes = []
    if tail is not None and tail < 0:
        causes.append(
            Cause("tailLines", f"Invalid value: {tail}: must be greater than or equal to 0")
        )
    if limit is not None and limit < 1:
        causes.append(Cause("limitBytes", f"Invalid value: {limit}: must be greater than 0"))
    if since_seconds is not None and since_time is not None:
        causes.append(
            Cause("", "Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified")
        )
    elif since_seconds is not None and since_seconds < 1:
        causes.append(
            Cause("sinceSeconds", f"Invalid value: {since_seconds}: must be greater than 0")
        )
    if causes:
        raise Invalid.from_causes("PodLogOptions", causes)
    since: float | None = None
    if since_seconds is not None:
        since = now - since_seconds
    elif since_time is not None:
        ts = convert.parse_time(since_time, "sinceTime")
        since = ts.seconds + ts.nanos / 1e9
    return LogOptions(
        container=query.get("container", ""),
        follow=bool(bool_param(query, "follow")),
        previous=bool(bool_param(query, "previous")),
        timestamps=bool(bool_param(query, "timestamps")),
        since=since,
        tail_lines=tail,
        limit_bytes=limit,
    )


def container_name(pod: types_pb2.Pod, requested: str) -> str:
    """The container a request names, or the pod's only one (upstream's LogLocation)."""
    name = pod.metadata.name
    if requested:
        names = {c.name for c in (*pod.spec.containers, *pod.spec.init_containers)}
        if requested not in names:
            raise BadRequest(f"container {requested} is not valid for pod {name}")
        return requested
    if len(pod.spec.containers) == 1:
        return pod.spec.containers[0].name
    if not pod.spec.containers:
        raise BadRequest(f"a container name must be specified for pod {name}")
    message = (
        f"a container name must be specified for pod {name}, choose one of: "
        f"[{' '.join(c.name for c in pod.spec.containers)}]"
    )
    if pod.spec.init_containers:
        init = " ".join(c.name for c in pod.spec.init_containers)
        message += f" or one of the init containers: [{init}]"
    raise BadRequest(message)


def _seconds(ts: Timestamp) -> float:
    return ts.seconds + ts.nanos / 1e9


def render(lines: list[LogLine], o: LogOptions) -> bytes:
    """The lines as the kubelet writes them: tailLines, then sinceSeconds/sinceTime, then
    timestamps (RFC 3339 with nanoseconds, the kubelet's fixed format), then limitBytes."""
    if o.tail_lines is not None:
        lines = lines[len(lines) - o.tail_lines :] if o.tail_lines else []
    if o.since is not None:
        since = o.since
        lines = [ln for ln in lines if _seconds(ln.at) >= since]
    out = b"".join(_line(ln, o.timestamps) for ln in lines)
    return out[: o.limit_bytes] if o.limit_bytes is not None else out


def _line(ln: LogLine, timestamps: bool) -> bytes:
    if not timestamps:
        return ln.text.encode() + b"\n"
    at = convert.format_time(ln.at, "second").removesuffix("Z")
    return f"{at}.{ln.at.nanos:09d}Z {ln.text}\n".encode()


def _exited(pod: types_pb2.Pod, container: str) -> bool:
    return any(
        cs.name == container and cs.state.HasField("terminated")
        for cs in (*pod.status.container_statuses, *pod.status.init_container_statuses)
    )


async def serve(
    request: web.BaseRequest, service: ApiService, pod: types_pb2.Pod, now: float
) -> web.StreamResponse:
    """The log of the container the request names, of `pod` (as read); an unbound pod's is
    empty (upstream's LogLocation has no kubelet to ask)."""
    o = log_options(request.query, now)
    container = container_name(pod, o.container)
    if not pod.spec.node_name:
        return web.Response(body=b"", content_type=CONTENT_TYPE)
    if o.previous:
        raise previous_not_found(pod, container)
    lines = container_log(pod, container)
    if not o.follow or _exited(pod, container):
        return web.Response(body=render(lines, o), content_type=CONTENT_TYPE)
    first = render(lines, o)
    response = web.StreamResponse(headers={"Content-Type": CONTENT_TYPE})
    response.enable_chunked_encoding()
    await response.prepare(request)
    await response.write(first)
    if o.limit_bytes is None or len(first) < o.limit_bytes:
        await _follow(response, service, pod, container, len(lines), len(first), o)
    await response.write_eof()
    return response


async def _follow(
    response: web.StreamResponse,
    service: ApiService,
    pod: types_pb2.Pod,
    container: str,
    sent: int,
    written: int,
    o: LogOptions,
) -> None:
    """Writes the lines the container's later states add, until it exits or the pod is
    gone (its deletion, or a new pod of the name)."""
    meta = pod.metadata
    req = api_pb2.WatchRequest(
        resource="pods",
        namespace=meta.namespace,
        field_selector=f"metadata.name={meta.name}",
        resource_version=meta.resource_version,
    )
    cache, initial, receive, watcher = await service.watches.open_watch(req)
    limit = o.limit_bytes
    try:
        frames = list(initial)
        async with receive:
            while True:
                for frame in frames:
                    for ev in api_pb2.WatchResponse.FromString(frame).events:
                        now = unwrap(ev.object)
                        if ev.type == "DELETED" or (
                            isinstance(now, types_pb2.Pod) and now.metadata.uid != meta.uid
                        ):
                            return
                        if ev.type not in ("ADDED", "MODIFIED") or not isinstance(
                            now, types_pb2.Pod
                        ):
                            continue
                        try:
                            lines = container_log(now, container)
                        except BadRequest:
                            return  # waiting again: a new instance, which kemu does not follow
                        more = render(lines[sent:], LogOptions(timestamps=o.timestamps))
                        sent = len(lines)
                        if limit is not None:
                            more = more[: max(0, limit - written)]
                        written += len(more)
                        if more:
                            await response.write(more)
                        if _exited(now, container) or (limit is not None and written >= limit):
                            return
                try:
                    frames = [await receive.receive()]
                except anyio.EndOfStream:
                    return
    finally:
        cache.stop(watcher)
