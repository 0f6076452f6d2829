"""The apiserver's etcd client over three transports (issue #59 item 2): the same Txn, a
create-if-absent put of a 900-byte value as the apiserver's create sends (compare the key's
create revision with 0, put on success, read on failure), through

- `aio`: grpc.aio's stub, what apiserver/storage/etcd.py uses;
- `sync`: grpc's synchronous stub, each call a `future()` whose callback resolves an asyncio
  future from gRPC's thread (the sync API's C core without grpc.aio's Cython coroutines);
- `http`: etcd's JSON gateway (`POST /v3/kv/txn`, keys and values in base64) over one aiohttp
  session (aiohttp's echo costs a third of grpc.aio's server CPU: bench/README.md),

on one uvloop event loop in this process, against one etcd, alternated in rounds at a given
number in flight. Reported per call: this process's CPU (user + system, every thread: gRPC's
poller included), etcd's, and calls/s.

    python -m bench etcd_clients [--calls 4000] [--rounds 2] [--in-flight 16]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import aiohttp
import grpc
import uvloop
from aetcd import rpc

from bench.common import live_cpu_seconds
from kemu.testing import Cluster

TRANSPORTS: Final = ("aio", "sync", "http")
VALUE: Final = os.urandom(900)
WARMUP: Final = 200

Call = Callable[[bytes], Awaitable[None]]


@dataclass(frozen=True)
class Round:
    transport: str
    calls: int
    wall: float
    client_cpu: float
    etcd_cpu: float

    def line(self) -> str:
        return (
            f"{self.transport:5} {self.calls} calls in {self.wall:.2f}s "
            f"({self.calls / self.wall:.0f}/s): client {self.client_cpu / self.calls * 1e6:.0f} "
            f"us/call, etcd {self.etcd_cpu / self.calls * 1e6:.0f} us/call"
        )


def summary(rounds: Sequence[Round]) -> list[str]:
    """One line per transport over its rounds, in TRANSPORTS' order."""
    out = []
    for t in TRANSPORTS:
        mine = [r for r in rounds if r.transport == t]
        if not mine:
            continue
        n = sum(r.calls for r in mine)
        out.append(
            f"{t:5} client {sum(r.client_cpu for r in mine) / n * 1e6:.0f} us/call, etcd "
            f"{sum(r.etcd_cpu for r in mine) / n * 1e6:.0f} us/call, "
            f"{n / sum(r.wall for r in mine):.0f} calls/s"
        )
    return out


def txn(key: bytes) -> Any:
    """The apiserver's create: put `key` unless it exists (else read it)."""
    return rpc.TxnRequest(
        compare=[
            rpc.Compare(
                key=key, result=rpc.Compare.EQUAL, target=rpc.Compare.CREATE, create_revision=0
            )
        ],
        success=[rpc.RequestOp(request_put=rpc.PutRequest(key=key, value=VALUE))],
        failure=[rpc.RequestOp(request_range=rpc.RangeRequest(key=key))],
    )


def gateway_body(key: bytes) -> str:
    """`txn(key)` as etcd's JSON gateway reads it."""
    k = base64.b64encode(key).decode()
    return json.dumps(
        {
            "compare": [{"key": k, "result": "EQUAL", "target": "CREATE", "create_revision": "0"}],
            "success": [{"request_put": {"key": k, "value": base64.b64encode(VALUE).decode()}}],
            "failure": [{"request_range": {"key": k}}],
        }
    )


def aio_call(address: str) -> tuple[Call, Callable[[], Awaitable[None]]]:
    channel = grpc.aio.insecure_channel(address)
    kv: Any = rpc.KVStub(channel)

    async def call(key: bytes) -> None:
        await kv.Txn(txn(key), timeout=10)

    async def close() -> None:
        await channel.close(None)

    return call, close


def sync_call(address: str) -> tuple[Call, Callable[[], Awaitable[None]]]:
    channel = grpc.insecure_channel(address)
    kv: Any = rpc.KVStub(channel)
    loop = asyncio.get_running_loop()

    async def call(key: bytes) -> None:
        done: asyncio.Future[None] = loop.create_future()

        def resolve(f: Any) -> None:  # (gRPC's thread)
            error = f.exception()

            def settle() -> None:
                if done.done():
                    return
                if error is not None:
                    done.set_exception(error)
                else:
                    done.set_result(None)

            loop.call_soon_threadsafe(settle)

        kv.Txn.future(txn(key), timeout=10).add_done_callback(resolve)
        await done

    async def close() -> None:
        channel.close()

    return call, close


def http_call(address: str) -> tuple[Call, Callable[[], Awaitable[None]]]:
    session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=64))
    url = f"http://{address}/v3/kv/txn"

    async def call(key: bytes) -> None:
        async with session.post(url, data=gateway_body(key)) as r:
            answer = json.loads(await r.read())
            if r.status != 200 or "header" not in answer:
                raise RuntimeError(f"etcd's gateway answered {r.status}: {answer}")

    return call, session.close


MAKERS: Final = {"aio": aio_call, "sync": sync_call, "http": http_call}


async def _many(call: Call, prefix: str, calls: int, in_flight: int) -> None:
    limit = asyncio.Semaphore(in_flight)

    async def one(i: int) -> None:
        async with limit:
            await call(f"/bench/{prefix}/{i}".encode())

    await asyncio.gather(*(one(i) for i in range(calls)))


async def run(address: str, etcd_pid: int, rounds: int, calls: int, in_flight: int) -> list[Round]:
    made = {t: MAKERS[t](address) for t in TRANSPORTS}
    out: list[Round] = []
    try:
        for t, (call, _) in made.items():
            await _many(call, f"warm-{t}", WARMUP, in_flight)
        for r in range(rounds):
            # (the transports take turns going first)
            order = TRANSPORTS if r % 2 == 0 else TRANSPORTS[::-1]
            for t in order:
                c0, e0, w0 = (
                    live_cpu_seconds(os.getpid()),
                    live_cpu_seconds(etcd_pid),
                    time.perf_counter(),
                )
                await _many(made[t][0], f"{t}-{r}", calls, in_flight)
                wall = time.perf_counter() - w0
                out.append(
                    Round(
                        t,
                        calls,
                        wall,
                        live_cpu_seconds(os.getpid()) - c0,
                        live_cpu_seconds(etcd_pid) - e0,
                    )
                )
                print(out[-1].line(), flush=True)
    finally:
        for _, close in made.values():
            await close()
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench etcd_clients", description=__doc__)
    parser.add_argument("--calls", type=int, default=4000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--in-flight", type=int, default=16)
    opts = parser.parse_args(argv)
    for name in ("calls", "rounds", "in_flight"):
        if getattr(opts, name) < 1:
            parser.error(f"--{name.replace('_', '-')}: must be at least 1")
    with tempfile.TemporaryDirectory() as tmp, Cluster(Path(tmp)) as c:
        c.start_etcd()
        pid = c.processes["etcd"].pid
        assert pid is not None
        address = c.etcd.url.removeprefix("http://")
        rounds = uvloop.run(run(address, pid, opts.rounds, opts.calls, opts.in_flight))
    print()
    for line in summary(rounds):
        print(line)
    return 0
