"""One client process of the HA benchmark (bench.ha starts several, side by side).

    python -m bench.ha_clients --server HOST:PORT[,HOST:PORT] --namespace NS --prefix P
                               --op create|bind --count N --concurrency C --out FILE

Closed loop: C workers on one kemu Client (one gRPC channel: one connection to the first
apiserver of --server that answers, as a client-go process behind an L4 balancer sticks to
one) make N calls, the creates of pods P-0 ... P-(N-1) or their bindings to one node. Every
process of a phase starts together: once its imports are done and its connection answers, it
prints "ready" and waits for a line on its stdin, the wall time of the bench's go. The result,
written as JSON to --out: the calls that succeeded and failed (and
the first error), the wall span from the go to the last answer, how late the process saw the
go, the latencies' p50 and p99, and the CPU seconds this process spent on the calls.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from typing import Final

import anyio
import anyio.to_thread

from bench.common import run_concurrent, summarize
from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.testing.builders import make_pod

OPS: Final = ("create", "bind")
READY: Final = "ready"  # the line a process prints once it can start
NODE: Final = "ha-bench-node"
"""The node every pod is bound to (a binding does not need the Node to exist)."""


def pod(name: str, namespace: str) -> types_pb2.Pod:
    return make_pod(name).namespace(namespace).req(cpu="100m", memory="64Mi").obj()


async def run(args: argparse.Namespace) -> dict[str, object]:
    async with Client(args.server, timeout=60.0) as client:
        await client.wait_ready(timeout=30)
        names = [f"{args.prefix}-{i}" for i in range(args.count)]

        async def create(i: int) -> None:
            await client.create(pod(names[i], args.namespace))

        async def bind(i: int) -> None:
            await client.bind(args.namespace, names[i], NODE)

        print(READY, flush=True)
        start_at = float(await anyio.to_thread.run_sync(sys.stdin.readline))
        late = time.time() - start_at
        cpu = time.process_time()
        result = await run_concurrent(
            args.count, args.concurrency, create if args.op == "create" else bind
        )
        cpu = time.process_time() - cpu
        end = time.time()
    stats = summarize(result.latencies)
    return {
        "ok": len(result.latencies),
        "errors": result.errors,
        "first_error": result.first_error,
        "seconds": end - start_at,
        "late": late,
        "p50": stats.p50,
        "p99": stats.p99,
        "cpu_seconds": cpu,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ha_clients", description=__doc__)
    parser.add_argument("--server", required=True)
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--prefix", required=True)
    parser.add_argument("--op", choices=OPS, required=True)
    parser.add_argument("--count", type=int, required=True)
    parser.add_argument("--concurrency", type=int, required=True)
    parser.add_argument("--out", required=True, help="write the JSON result here")
    args = parser.parse_args(argv)
    result = anyio.run(run, args)
    with open(args.out, "w") as f:
        json.dump(result, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
