"""The clients of the flood benchmark, run in their own process (bench.flood starts several).

    python -m bench.flood_clients --server HOST:PORT [--rest-url URL] --namespace NS
                                  --prefix P --rate R --duration S --max-pending N --out FILE

Open loop: requests arrive at R per second on an absolute schedule for S seconds, whatever
the apiserver answers; each arrival is its own call on one shared kemu Client over gRPC, or
with --rest-url on the REST edge (aiohttp, a connection per call in flight); either way a
call refused by the in-flight limit is retried after at least the server's Retry-After.
Arrivals alternate between a create of a ConfigMap named P-<i> and a get of one already
created (a create when none is yet). An arrival finding N calls outstanding is not sent
(`shed`), so that a server that stops answering cannot grow this process without bound.

The result, written as JSON to FILE once every call has returned: per outcome the count
(ok, or the error's class) and the first message of each error, the latencies of the calls that succeeded, and the names of the
ConfigMaps whose create was acknowledged (bench.flood checks that each is present after).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections import Counter
from collections.abc import Sequence
from typing import Any, Final, Protocol

import aiohttp
import anyio

from bench.common import pace
from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.machinery import convert
from kemu.machinery.errors import ApiError

CALL_TIMEOUT: Final = 60.0


class HttpError(Exception):
    """A REST call answered with an error status (after its 429 retries)."""

    def __init__(self, status: int) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status


class _Calls(Protocol):
    async def create(self, name: str) -> None: ...

    async def get(self, name: str) -> None: ...


class _GrpcCalls:
    """kemu's Client: a 429 is retried inside the call, after at least its Retry-After."""

    def __init__(self, client: Client, namespace: str) -> None:
        self._client = client
        self._namespace = namespace

    async def create(self, name: str) -> None:
        await self._client.create(config_map(name, self._namespace))

    async def get(self, name: str) -> None:
        await self._client.get(types_pb2.ConfigMap, name, self._namespace)


class _RestCalls:
    """JSON over HTTP, one connection per call in flight; a 429 with Retry-After is retried
    after it, within the call's timeout, as client-go does."""

    def __init__(self, http: aiohttp.ClientSession, namespace: str) -> None:
        self._http = http
        self._path = f"/api/v1/namespaces/{namespace}/configmaps"
        self._namespace = namespace

    async def create(self, name: str) -> None:
        body = convert.to_dict(config_map(name, self._namespace))
        await self._call("POST", self._path, body)

    async def get(self, name: str) -> None:
        await self._call("GET", f"{self._path}/{name}", None)

    async def _call(self, method: str, path: str, body: Any) -> None:
        deadline = time.monotonic() + CALL_TIMEOUT
        while True:
            async with self._http.request(method, path, json=body) as resp:
                await resp.read()
                if resp.status < 300:
                    return
                retry_after = resp.headers.get("Retry-After", "")
                if resp.status != 429 or not retry_after.isdigit():
                    raise HttpError(resp.status)
            delay = int(retry_after) * (1 + random.random() / 4)
            if time.monotonic() + delay >= deadline:
                raise HttpError(429)
            await anyio.sleep(delay)


def config_map(name: str, namespace: str) -> types_pb2.ConfigMap:
    cm = types_pb2.ConfigMap(metadata=types_pb2.ObjectMeta(name=name, namespace=namespace))
    cm.data["payload"] = name * 8
    return cm


async def run(
    server: str,
    rest_url: str,
    namespace: str,
    prefix: str,
    rate: float,
    duration: float,
    max_pending: int,
) -> dict[str, Any]:
    """Floods the gRPC edge at `server`, or the REST edge at `rest_url` when given."""
    async with Client(server, timeout=CALL_TIMEOUT, user_agent="bench-flood") as client:
        await client.wait_ready(timeout=30)
        if not rest_url:
            return await flood(_GrpcCalls(client, namespace), prefix, rate, duration, max_pending)
        connector = aiohttp.TCPConnector(limit=max_pending)
        timeout = aiohttp.ClientTimeout(total=CALL_TIMEOUT)
        async with aiohttp.ClientSession(rest_url, connector=connector, timeout=timeout) as http:
            calls = _RestCalls(http, namespace)
            return await flood(calls, prefix, rate, duration, max_pending)


async def flood(
    calls: _Calls, prefix: str, rate: float, duration: float, max_pending: int
) -> dict[str, Any]:
    outcomes: Counter[str] = Counter()
    first_errors: dict[str, str] = {}
    latencies: dict[str, list[float]] = {"create": [], "get": []}
    acked: list[str] = []
    pending = 0
    shed = 0
    sent = 0

    async def one(verb: str, name: str) -> None:
        nonlocal pending
        start = time.perf_counter()
        try:
            if verb == "create":
                await calls.create(name)
                acked.append(name)
            else:
                await calls.get(name)
        except (ApiError, HttpError, aiohttp.ClientError, TimeoutError) as e:
            key = f"{verb} {e}" if isinstance(e, HttpError) else f"{verb} {type(e).__name__}"
            outcomes[key] += 1
            first_errors.setdefault(key, str(e)[:300])
        else:
            outcomes[f"{verb} ok"] += 1
            latencies[verb].append(time.perf_counter() - start)
        finally:
            pending -= 1

    wall0, cpu0 = time.monotonic(), time.process_time()
    async with anyio.create_task_group() as tg:
        async for i, _ in pace(int(rate * duration), rate):
            if pending >= max_pending:
                shed += 1
                continue
            pending += 1
            sent += 1
            if i % 2 == 1 and acked:
                tg.start_soon(one, "get", acked[(i // 2) % len(acked)])
            else:
                tg.start_soon(one, "create", f"{prefix}-{i}")
        offered_seconds = time.monotonic() - wall0
    return {
        "sent": sent,
        "shed": shed,
        "offered_seconds": offered_seconds,
        "wall_seconds": time.monotonic() - wall0,
        "cpu_seconds": time.process_time() - cpu0,
        "outcomes": dict(outcomes),
        "first_errors": first_errors,
        "latencies": latencies,
        "acked": acked,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.flood_clients", description=__doc__)
    parser.add_argument("--server", required=True)
    parser.add_argument("--rest-url", default="", help="flood the REST edge here instead")
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--prefix", required=True)
    parser.add_argument("--rate", type=float, required=True, help="arrivals per second")
    parser.add_argument("--duration", type=float, required=True, help="seconds of arrivals")
    parser.add_argument("--max-pending", type=int, default=5000)
    parser.add_argument("--out", required=True, help="write the JSON result here")
    args = parser.parse_args(argv)
    result = anyio.run(
        run,
        args.server,
        args.rest_url,
        args.namespace,
        args.prefix,
        args.rate,
        args.duration,
        args.max_pending,
    )
    with open(args.out, "w") as f:
        json.dump(result, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
