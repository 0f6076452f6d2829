"""The connection kemuctl makes: the server address, and a client that fails fast.

kemu.client.Client waits for an unreachable server (its calls use gRPC's wait_for_ready), which
is right for components and wrong for a user at a terminal. `ProbedClient` checks once, before
the first call, that something listens at the address, so that `kemuctl` answers at once with
"cannot reach the kemu apiserver at HOST:PORT". The check is made lazily so that local errors
(a bad flag, a bad manifest) are reported first, without any connection.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, Final

import anyio

from kemu.api.v1 import api_pb2, types_pb2
from kemu.client.interface import ApiClient, ListResult, M, WatchEvent
from kemu.ctl.common import CtlError

DEFAULT_SERVER: Final = "127.0.0.1:6443"
SERVER_ENV: Final = "KEMU_SERVER"


def server_address(flag: str | None, environ: Mapping[str, str]) -> str:
    """--server, else $KEMU_SERVER, else 127.0.0.1:6443; a URL scheme is dropped."""
    server = flag or environ.get(SERVER_ENV) or DEFAULT_SERVER
    for scheme in ("http://", "https://", "grpc://"):
        server = server.removeprefix(scheme)
    return server.rstrip("/")


def split_host_port(server: str) -> tuple[str, int]:
    host, sep, port_text = server.rpartition(":")
    if not sep or not host or not port_text.isdigit():
        raise CtlError(f'invalid server address "{server}": expected HOST:PORT')
    port = int(port_text)
    if not 0 < port < 65536:
        raise CtlError(f'invalid server address "{server}": port out of range')
    return host.strip("[]"), port


def _reason(e: OSError) -> str:
    cause = e.__cause__ if isinstance(e.__cause__, OSError) else e
    if cause.errno and cause.errno > 0:
        return os.strerror(cause.errno).lower()
    return (cause.strerror or str(cause) or type(cause).__name__).lower()


async def probe(server: str, timeout: float) -> None:  # noqa: ASYNC109
    """CtlError unless a TCP connection to `server` opens within `timeout` seconds."""
    host, port = split_host_port(server)
    try:
        with anyio.fail_after(timeout):
            stream = await anyio.connect_tcp(host, port)
    except TimeoutError:
        raise CtlError(
            f"cannot reach the kemu apiserver at {server}: no connection within {timeout:g}s"
        ) from None
    except OSError as e:
        raise CtlError(f"cannot reach the kemu apiserver at {server}: {_reason(e)}") from None
    await stream.aclose()


class ProbedClient:
    """An ApiClient that probes the server before its first call, then delegates."""

    def __init__(self, client: ApiClient, server: str, timeout: float) -> None:
        self._client = client
        self._server = server
        self._timeout = timeout
        self._probed = False

    async def _ready(self) -> ApiClient:
        if not self._probed:
            await probe(self._server, self._timeout)
            self._probed = True
        return self._client

    async def close(self) -> None:
        await self._client.close()

    async def wait_ready(self, timeout: float | None = None) -> api_pb2.VersionInfo:  # noqa: ASYNC109
        return await (await self._ready()).wait_ready(timeout)

    async def version(self) -> api_pb2.VersionInfo:
        return await (await self._ready()).version()

    async def create(self, obj: M) -> M:
        return await (await self._ready()).create(obj)

    async def get(self, kind: type[M], name: str, namespace: str = "") -> M:
        return await (await self._ready()).get(kind, name, namespace)

    async def list(
        self,
        kind: type[M],
        namespace: str = "",
        *,
        label_selector: str = "",
        field_selector: str = "",
        resource_version: str = "",
        resource_version_match: str = "",
        limit: int = 0,
        continue_: str = "",
    ) -> ListResult[M]:
        return await (await self._ready()).list(
            kind,
            namespace,
            label_selector=label_selector,
            field_selector=field_selector,
            resource_version=resource_version,
            resource_version_match=resource_version_match,
            limit=limit,
            continue_=continue_,
        )

    async def list_all(
        self,
        kind: type[M],
        namespace: str = "",
        *,
        label_selector: str = "",
        field_selector: str = "",
        resource_version: str = "",
        resource_version_match: str = "",
    ) -> ListResult[M]:
        return await (await self._ready()).list_all(
            kind,
            namespace,
            label_selector=label_selector,
            field_selector=field_selector,
            resource_version=resource_version,
            resource_version_match=resource_version_match,
        )

    def watch(
        self,
        kind: type[M],
        namespace: str = "",
        *,
        resource_version: str = "",
        label_selector: str = "",
        field_selector: str = "",
        allow_watch_bookmarks: bool = False,
    ) -> AbstractAsyncContextManager[AsyncIterator[WatchEvent[M]]]:
        return self._watch(
            kind,
            namespace,
            dict(
                resource_version=resource_version,
                label_selector=label_selector,
                field_selector=field_selector,
                allow_watch_bookmarks=allow_watch_bookmarks,
            ),
        )

    @asynccontextmanager
    async def _watch(
        self, kind: type[M], namespace: str, options: dict[str, Any]
    ) -> AsyncIterator[AsyncIterator[WatchEvent[M]]]:
        client = await self._ready()
        async with client.watch(kind, namespace, **options) as events:
            yield events

    async def update(self, obj: M) -> M:
        return await (await self._ready()).update(obj)

    async def update_status(self, obj: M) -> M:
        return await (await self._ready()).update_status(obj)

    async def patch(
        self,
        kind: type[M],
        name: str,
        patch: Mapping[str, Any] | str,
        namespace: str = "",
        *,
        subresource: str = "",
    ) -> M:
        return await (await self._ready()).patch(
            kind, name, patch, namespace, subresource=subresource
        )

    async def delete(
        self,
        kind: type[M],
        name: str,
        namespace: str = "",
        *,
        grace_period_seconds: int | None = None,
        uid: str | None = None,
        resource_version: str | None = None,
    ) -> M:
        return await (await self._ready()).delete(
            kind,
            name,
            namespace,
            grace_period_seconds=grace_period_seconds,
            uid=uid,
            resource_version=resource_version,
        )

    async def bind(
        self,
        namespace: str,
        name: str,
        node_name: str,
        *,
        annotations: Mapping[str, str] | None = None,
    ) -> None:
        await (await self._ready()).bind(namespace, name, node_name, annotations=annotations)

    async def resize(self, pod: types_pb2.Pod) -> types_pb2.Pod:
        return await (await self._ready()).resize(pod)

    async def evict(
        self, namespace: str, name: str, *, grace_period_seconds: int | None = None
    ) -> None:
        await (await self._ready()).evict(
            namespace, name, grace_period_seconds=grace_period_seconds
        )
