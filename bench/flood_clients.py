"""The clients of the flood benchmark, run in their own process (bench.flood starts several).

    python -m bench.flood_clients --server HOST:PORT --namespace NS --prefix P --rate R
                                  --duration S --max-pending N --out FILE

Open loop: requests arrive at R per second on an absolute schedule for S seconds, whatever
the apiserver answers; each arrival is its own call on one shared kemu Client (so each is
retried, after at least the server's Retry-After, while the in-flight limit refuses it).
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
import sys
import time
from collections import Counter
from collections.abc import Sequence
from typing import Any, Final

import anyio

from bench.common import pace
from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.machinery.errors import ApiError

CALL_TIMEOUT: Final = 60.0


async def run(
    server: str,
    namespace: str,
    prefix: str,
    rate: float,
    duration: float,
    max_pending: int,
) -> dict[str, Any]:
    outcomes: Counter[str] = Counter()
    first_errors: dict[str, str] = {}
    latencies: dict[str, list[float]] = {"create": [], "get": []}
    acked: list[str] = []
    pending = 0
    shed = 0
    sent = 0

    async with Client(server, timeout=CALL_TIMEOUT, user_agent="bench-flood") as client:
        await client.wait_ready(timeout=30)

        async def create(name: str) -> None:
            cm = types_pb2.ConfigMap(metadata=types_pb2.ObjectMeta(name=name, namespace=namespace))
            cm.data["payload"] = name * 8
            await client.create(cm)
            acked.append(name)

        async def get(name: str) -> None:
            await client.get(types_pb2.ConfigMap, name, namespace)

        async def one(verb: str, name: str) -> None:
            nonlocal pending
            start = time.perf_counter()
            try:
                await (create(name) if verb == "create" else get(name))
            except ApiError as e:
                key = f"{verb} {type(e).__name__}"
                outcomes[key] += 1
                first_errors.setdefault(key, str(e)[:300])
            else:
                outcomes[f"{verb} ok"] += 1
                latencies[verb].append(time.perf_counter() - start)
            finally:
                pending -= 1

        wall0 = time.monotonic()
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
        wall = time.monotonic() - wall0
    return {
        "sent": sent,
        "shed": shed,
        "offered_seconds": offered_seconds,
        "wall_seconds": wall,
        "outcomes": dict(outcomes),
        "first_errors": first_errors,
        "latencies": latencies,
        "acked": acked,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.flood_clients", description=__doc__)
    parser.add_argument("--server", required=True)
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--prefix", required=True)
    parser.add_argument("--rate", type=float, required=True, help="arrivals per second")
    parser.add_argument("--duration", type=float, required=True, help="seconds of arrivals")
    parser.add_argument("--max-pending", type=int, default=5000)
    parser.add_argument("--out", required=True, help="write the JSON result here")
    args = parser.parse_args(argv)
    result = anyio.run(
        run, args.server, args.namespace, args.prefix, args.rate, args.duration, args.max_pending
    )
    with open(args.out, "w") as f:
        json.dump(result, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
