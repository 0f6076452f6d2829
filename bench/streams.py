"""The Api's unary calls one gRPC call each against frames on the Calls stream (issue #59 item 1,
docs/research/streams.md): the same creates (then gets) through both transports of
kemu.client, alternated in rounds on one cluster, at a given number in flight; the
apiserver's CPU per call (from /proc, its process's user + system time), this process's (the
client's), and calls/s.

    python -m bench streams [--calls 3000] [--rounds 2] [--in-flight 16] [--verb create]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio

from bench.common import live_cpu_seconds
from kemu.api.v1 import types_pb2
from kemu.client.client import Client, Transport
from kemu.testing import Cluster, make_pod
from kemu.testing.launch import Launch

_VERBS = ("create", "get")


@dataclass(frozen=True)
class Round:
    transport: Transport
    verb: str
    calls: int
    wall: float
    server_cpu: float
    client_cpu: float

    def line(self) -> str:
        return (
            f"{self.transport.value:6} {self.verb:6} {self.calls} calls in {self.wall:.2f}s "
            f"({self.calls / self.wall:.0f}/s): apiserver {self.server_cpu / self.calls * 1e6:.0f} "
            f"us/call, client {self.client_cpu / self.calls * 1e6:.0f} us/call"
        )


async def _round(
    client: Client, pid: int, verb: str, prefix: str, calls: int, in_flight: int
) -> Round:
    limit = anyio.Semaphore(in_flight)

    async def one(i: int) -> None:
        async with limit:
            if verb == "create":
                await client.create(make_pod(f"{prefix}-{i}").namespace("default").obj())
            else:
                await client.get(types_pb2.Pod, f"{prefix}-{i}", "default")

    server0, client0, wall0 = live_cpu_seconds(pid), time.process_time(), time.monotonic()
    async with anyio.create_task_group() as tg:
        for i in range(calls):
            tg.start_soon(one, i)
    return Round(
        client.transport,
        verb,
        calls,
        time.monotonic() - wall0,
        live_cpu_seconds(pid) - server0,
        time.process_time() - client0,
    )


async def _run(server: str, pid: int, opts: argparse.Namespace) -> list[Round]:
    out: list[Round] = []
    clients = {t: Client(server, transport=t) for t in (Transport.UNARY, Transport.STREAM)}
    try:
        for t, client in clients.items():  # warm both paths up
            for i in range(50):
                await client.create(make_pod(f"warm-{t.value}-{i}").namespace("default").obj())
        for r in range(opts.rounds):
            order = list(clients) if r % 2 == 0 else list(reversed(clients))
            for t in order:
                prefix = f"{t.value}-{r}"
                for verb in _VERBS if opts.verb == "both" else (opts.verb,):
                    if verb == "get" and opts.verb == "get":
                        await _round(clients[t], pid, "create", prefix, opts.calls, opts.in_flight)
                    result = await _round(clients[t], pid, verb, prefix, opts.calls, opts.in_flight)
                    print(result.line(), flush=True)
                    out.append(result)
    finally:
        for client in clients.values():
            await client.close()
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench streams", description=__doc__)
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--in-flight", type=int, default=16)
    parser.add_argument("--verb", choices=(*_VERBS, "both"), default="both")
    parser.add_argument("apiserver_args", nargs="*", help="extra flags of the apiserver (after --)")
    opts = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp, Cluster(Path(tmp), launch=Launch.EXEC) as c:
        c.start_etcd()
        c.start_apiserver(extra_args=opts.apiserver_args)
        pid = c.processes["apiserver"].pid
        assert pid is not None
        rounds = anyio.run(_run, c.server, pid, opts)
    print()
    for t in (Transport.UNARY, Transport.STREAM):
        for verb in _VERBS:
            mine = [r for r in rounds if r.transport is t and r.verb == verb]
            if not mine:
                continue
            n = sum(r.calls for r in mine)
            print(
                f"{t.value:6} {verb:6} apiserver "
                f"{sum(r.server_cpu for r in mine) / n * 1e6:.0f} us/call, client "
                f"{sum(r.client_cpu for r in mine) / n * 1e6:.0f} us/call, "
                f"{n / sum(r.wall for r in mine):.0f} calls/s"
            )
    return 0
