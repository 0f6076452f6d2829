"""Consistent lists (resourceVersion "") from etcd against the watch cache (ConsistentListFromCache,
docs/apiserver.md): two apiservers on one etcd, one emulating 1.30 (before the gate: etcd
answers) and one 1.37 (the cache answers once it has reached etcd's revision), the same pods;
rounds of lists alternated between them; the CPU per list of the apiserver that served it and
of etcd (from /proc: user + system time), and the wall time per list.

    python -m bench lists [--pods 1000] [--lists 100] [--rounds 2] [--in-flight 1]
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
from kemu.client.client import Client
from kemu.testing import Cluster, make_pod
from kemu.testing.launch import Launch
from kemu.testing.ports import LOOPBACK

_VERSIONS = ("1.30", "1.37")
_NAMESPACE = "default"


@dataclass(frozen=True)
class Round:
    version: str
    lists: int
    wall: float
    apiserver_cpu: float
    etcd_cpu: float

    def line(self) -> str:
        return (
            f"{self.version}: {self.lists} lists in {self.wall:.2f}s, "
            f"{self.wall / self.lists * 1e3:.1f} ms/list; CPU a list: apiserver "
            f"{self.apiserver_cpu / self.lists * 1e3:.2f} ms, etcd "
            f"{self.etcd_cpu / self.lists * 1e3:.2f} ms"
        )


async def _round(
    client: Client, version: str, pids: tuple[int, int], opts: argparse.Namespace
) -> Round:
    limit = anyio.Semaphore(opts.in_flight)

    async def one() -> None:
        async with limit:
            listed = await client.list(types_pb2.Pod, _NAMESPACE)
            assert len(listed.items) == opts.pods, len(listed.items)

    api0, etcd0, wall0 = live_cpu_seconds(pids[0]), live_cpu_seconds(pids[1]), time.monotonic()
    async with anyio.create_task_group() as tg:
        for _ in range(opts.lists):
            tg.start_soon(one)
    return Round(
        version,
        opts.lists,
        time.monotonic() - wall0,
        live_cpu_seconds(pids[0]) - api0,
        live_cpu_seconds(pids[1]) - etcd0,
    )


async def _run(
    servers: dict[str, tuple[str, int]], etcd_pid: int, opts: argparse.Namespace
) -> list[Round]:
    clients = {v: Client(server) for v, (server, _) in servers.items()}
    try:
        first = clients[_VERSIONS[0]]
        limit = anyio.Semaphore(16)

        async def create(i: int) -> None:
            async with limit:
                await first.create(make_pod(f"p{i}").namespace(_NAMESPACE).obj())

        async with anyio.create_task_group() as tg:
            for i in range(opts.pods):
                tg.start_soon(create, i)
        out: list[Round] = []
        for r in range(opts.rounds):
            for v in _VERSIONS if r % 2 == 0 else tuple(reversed(_VERSIONS)):
                result = await _round(clients[v], v, (servers[v][1], etcd_pid), opts)
                print(result.line(), flush=True)
                out.append(result)
        return out
    finally:
        for client in clients.values():
            await client.close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench lists", description=__doc__)
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--lists", type=int, default=100, help="lists a round")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--in-flight", type=int, default=1)
    opts = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp, Cluster(Path(tmp), launch=Launch.EXEC) as c:
        c.start_etcd()
        servers: dict[str, tuple[str, int]] = {}
        for v in _VERSIONS:
            api = c.start_apiserver(name=f"apiserver-{v}", emulated_version=v)
            assert api.pid is not None and api.port is not None
            servers[v] = (f"{LOOPBACK}:{api.port}", api.pid)
        etcd_pid = c.etcd.pid
        assert etcd_pid is not None
        rounds = anyio.run(_run, servers, etcd_pid, opts)
    print()
    for v in _VERSIONS:
        mine = [r for r in rounds if r.version == v]
        n = sum(r.lists for r in mine)
        print(
            f"{v}: apiserver {sum(r.apiserver_cpu for r in mine) / n * 1e3:.2f} ms CPU a list, "
            f"etcd {sum(r.etcd_cpu for r in mine) / n * 1e3:.2f} ms, "
            f"{sum(r.wall for r in mine) / n * 1e3:.1f} ms wall a list ({opts.pods} pods)"
        )
    return 0
