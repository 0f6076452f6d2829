"""`python -m bench fuzz`: 10,000+ malformed requests across every listening edge of a live
cluster (etcd, the apiserver with its REST edge, the cloud), then the figures: requests per
edge, answers by status, bad outcomes (5xx, INTERNAL, UNKNOWN, a dropped connection, a hang,
an answer that names nothing), objects changed, duration. Exits 1 on any bad outcome.

`Target` and `snapshot` are what tests/integration/apiserver/test_apiserver_fuzz.py shares.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import random
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from itertools import count, islice
from pathlib import Path
from typing import Final

import aiohttp
import grpc

from bench.fuzz import cases, secured, send
from bench.fuzz.cases import Case, Grpc, Http, Raw
from kemu.api.cloud.v1 import cloud_pb2
from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.machinery.keys import object_meta
from kemu.testing import Cluster
from kemu.testing.namespaces import ensure_namespace
from kemu.testing.processes import url_ok

CLOUD_CONFIG: Final = f"""
nodeGroups:
- name: {cases.GROUP}
  minSize: 0
  maxSize: 3
  template:
    capacity: {{cpu: "2", memory: 4Gi, pods: "20"}}
"""
_MAX_MESSAGE: Final = 16 * 1024 * 1024


@contextmanager
def fuzz_cluster(root: Path, *, cloud: bool = True) -> Iterator[Cluster]:
    """etcd, the apiserver (gRPC and REST) and, with `cloud`, the cloud."""
    with Cluster(root) as c:
        c.start_etcd()
        c.start_apiserver(rest=True)
        if cloud:
            c.start_cloud(CLOUD_CONFIG)
        yield c


@dataclass
class Target:
    """Open connections to every edge of a fuzz cluster."""

    cluster: Cluster
    session: aiohttp.ClientSession
    api: grpc.aio.Channel
    cloud: grpc.aio.Channel | None
    client: Client

    async def send(self, case: Case) -> send.Outcome:
        r = case.request
        if isinstance(r, Http):
            return await send.http(self.session, self.cluster.rest_url, case)
        if isinstance(r, Raw):
            apiserver = self.cluster.component("apiserver")
            port = (
                int(self.cluster.rest_url.rsplit(":", 1)[1]) if r.rest else apiserver.metrics_port
            )
            return await send.raw("127.0.0.1", port, case)
        assert isinstance(r, Grpc)
        if r.method.startswith(cases.CLOUD):
            assert self.cloud is not None, "the cloud edge needs a cluster with the cloud"
            return await send.call(self.cloud, case)
        return await send.call(self.api, case)

    def healthy(self) -> bool:
        names = ["apiserver", *(["cloud"] if self.cloud is not None else [])]
        return all(url_ok(self.cluster.component(n).healthz_url) for n in names)

    async def snapshot(self) -> dict[str, str]:
        """What the fuzz must not change: every pod in the fuzz namespace, the node and the
        namespace (name -> resourceVersion), the cloud group's target size."""
        out: dict[str, str] = {}
        for pod in (await self.client.list(types_pb2.Pod, cases.NS)).items:
            out[f"pods/{pod.metadata.name}"] = pod.metadata.resource_version
        node = await self.client.get(types_pb2.Node, cases.NODE)
        out[f"nodes/{cases.NODE}"] = node.metadata.resource_version
        ns = await self.client.get(types_pb2.Namespace, cases.NS)
        out[f"namespaces/{cases.NS}"] = ns.metadata.resource_version
        if self.cloud is not None:
            req = cloud_pb2.NodeGroupTargetSizeRequest(id=cases.GROUP)
            raw = await self.cloud.unary_unary(cases.CLOUD + "NodeGroupTargetSize", None, None)(
                req.SerializeToString(), timeout=10
            )
            size = cloud_pb2.NodeGroupTargetSizeResponse.FromString(raw).target_size
            out[f"cloud/{cases.GROUP}"] = str(size)
        return out


def changed(before: dict[str, str], after: dict[str, str]) -> list[str]:
    keys = sorted(before.keys() | after.keys())
    return [
        f"{k}: {before.get(k)} -> {after.get(k)}" for k in keys if before.get(k) != after.get(k)
    ]


@asynccontextmanager
async def connect(cluster: Cluster, *, cloud: bool = True) -> AsyncIterator[Target]:
    """Connections to the cluster's edges, with the seed objects created."""
    options = [("grpc.max_receive_message_length", _MAX_MESSAGE)]
    options.append(("grpc.max_send_message_length", _MAX_MESSAGE))
    connector = aiohttp.TCPConnector(limit=64, force_close=True)
    async with (
        Client(cluster.server, timeout=10.0) as client,
        aiohttp.ClientSession(connector=connector) as session,
        grpc.aio.insecure_channel(cluster.server, options=options) as api,
    ):
        await ensure_namespace(client, cases.NS)
        for obj in cases.seed_objects():
            kind, meta = type(obj), object_meta(obj)
            try:
                await client.get(kind, meta.name, meta.namespace)
            except Exception:
                await client.create(obj)
        cloud_channel = None
        if cloud:
            address = f"127.0.0.1:{cluster.component('cloud').port}"
            cloud_channel = grpc.aio.insecure_channel(address, options=options)
        try:
            yield Target(cluster, session, api, cloud_channel, client)
        finally:
            if cloud_channel is not None:
                await cloud_channel.close(None)


def generate(count: int, seed: int, families: Sequence[str] | None = None) -> list[Case]:
    rng = random.Random(seed)
    names = list(families or cases.FAMILIES)
    return [cases.make(names[i % len(names)], rng) for i in range(count)]


async def run(target: Target, batch: list[Case], concurrency: int) -> list[send.Outcome]:
    out: list[send.Outcome] = []
    queue = iter(batch)

    async def worker() -> None:
        for case in queue:
            out.append(await target.send(case))

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return out


def report(outcomes: list[send.Outcome], changes: list[str], healthy: bool, seconds: float) -> str:
    lines = [f"{'edge':<15} {'requests':>8} {'bad':>5}  answers by status"]
    for edge in cases.EDGES:
        mine = [o for o in outcomes if o.case.edge == edge]
        by_status = Counter(o.status for o in mine)
        shown = ", ".join(f"{s} {n}" for s, n in sorted(by_status.items()))
        lines.append(f"{edge:<15} {len(mine):>8} {sum(o.bad for o in mine):>5}  {shown}")
    total = Counter(o.status for o in outcomes)
    server_errors = sum(
        n
        for s, n in total.items()
        if (s.isdigit() and int(s) >= 500) or s in ("INTERNAL", "UNKNOWN")
    )
    lines += [
        f"requests: {len(outcomes)}  duration: {seconds:.1f} s ({len(outcomes) / seconds:.0f}/s)",
        f"5xx/INTERNAL/UNKNOWN: {server_errors}  dropped: {total[send.DROPPED]}  "
        f"hung: {total[send.HUNG]}  bad outcomes: {sum(o.bad for o in outcomes)}  "
        f"objects changed: {len(changes)}  healthy after: {'yes' if healthy else 'NO'}",
    ]
    return "\n".join(lines)


async def fuzz_secured(args: argparse.Namespace) -> int:
    """`--security`: the catalog and well-formed writes as every kind of caller
    (bench/fuzz/secured.py), each answer judged as upstream's."""
    # (the other CA's certificate ends its TLS connections: asyncio warns of each write after)
    logging.getLogger("asyncio").setLevel(logging.ERROR)
    rng = random.Random(args.seed)
    families = args.family or secured.FAMILIES
    with (
        tempfile.TemporaryDirectory(prefix="kemu-fuzz-") as tmp,
        secured.secured_cluster(Path(tmp)) as cluster,
    ):
        async with secured.callers(cluster) as callers:
            drawn = (secured.pair(callers.all, families[i % len(families)], rng) for i in count())
            batch = list(islice((d for d in drawn if d is not None), args.requests))
            before = await secured.snapshot(callers.admin)
            judged: list[secured.Judged] = []
            queue = iter(batch)

            async def worker() -> None:
                for caller, case in queue:
                    outcome = await caller.throw(case)
                    judged.append(secured.Judged(caller, outcome, caller.judge(case, outcome)))

            start = time.perf_counter()
            await asyncio.gather(*(worker() for _ in range(args.concurrency)))
            seconds = time.perf_counter() - start
            changes = changed(before, await secured.snapshot(callers.admin))
    print(secured.report(judged, changes, seconds))
    wrong = [j for j in judged if j.problem]
    for j in wrong[: args.show]:
        print("WRONG", j.line())
    for c in changes:
        print("CHANGED", c)
    print(
        f"seed {args.seed} (replay: python -m bench fuzz --security --seed {args.seed} "
        f"--requests {args.requests})"
    )
    return 1 if wrong or changes else 0


async def fuzz(args: argparse.Namespace) -> int:
    if args.security:
        return await fuzz_secured(args)
    with (
        tempfile.TemporaryDirectory(prefix="kemu-fuzz-") as tmp,
        fuzz_cluster(Path(tmp)) as cluster,
    ):
        async with connect(cluster) as target:
            batch = generate(args.requests, args.seed, args.family or None)
            before = await target.snapshot()
            start = time.perf_counter()
            outcomes = await run(target, batch, args.concurrency)
            seconds = time.perf_counter() - start
            healthy = target.healthy()
            changes = changed(before, await target.snapshot())
    print(report(outcomes, changes, healthy, seconds))
    bad = [o for o in outcomes if o.bad]
    for o in bad[: args.show]:
        print("BAD", o.line())
    for c in changes:
        print("CHANGED", c)
    print(
        f"seed {args.seed} (replay: python -m bench fuzz --seed {args.seed} --requests {args.requests})"
    )
    return 1 if bad or changes or not healthy else 0


def main(argv: Sequence[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m bench fuzz", description=__doc__)
    p.add_argument("--requests", type=int, default=10_000)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--concurrency", type=int, default=16)
    p.add_argument(
        "--family", action="append", choices=sorted({*cases.FAMILIES, secured.WELL_FORMED})
    )
    p.add_argument("--show", type=int, default=40, help="bad outcomes printed at most")
    p.add_argument(
        "--security",
        action="store_true",
        help="apiservers with TLS, ServiceAccount tokens and Node,RBAC; the requests as "
        "anonymous, bad-credential, unprivileged and privileged callers (bench/fuzz/secured.py)",
    )
    args = p.parse_args(argv)
    if args.seed is None:
        args.seed = random.randrange(2**32)
    return asyncio.run(fuzz(args))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
