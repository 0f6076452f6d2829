"""The watchers of the apiserver watch-delivery benchmark, run in their own process.

    python -m bench.watchers --server HOST:PORT --namespace NS --watchers 10 --out FILE

Each watcher is its own Watch call on Pods in NS. The benchmark process (bench.apiserver)
creates start marker pods (watch-start-1, -2, ...: a watch may not be established yet when the
first is written) once this process has printed "watching"; when every watcher has seen one,
this process prints "ready" and the writer starts. Each event of a pod carrying the
SEND_TIME annotation records (pod index, time.time() on receipt - that send time). The stop
marker, created after the last write, ends every watcher: events of one watch are in revision
order, so all writes before it have been delivered by then (or lost).

The result is written as JSON to FILE: per watcher, the indices and delivery latencies of
the events in arrival order, and the count of events of other types; and the CPU seconds this
process used from "ready" to the end, with the wall time of that span.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Final

import anyio

from kemu.api.v1 import types_pb2
from kemu.client.client import Client

SEND_TIME: Final = "bench.kemu.io/send-time"
START_MARKER: Final = "watch-start"
STOP_MARKER: Final = "watch-stop"
WRITE_PREFIX: Final = "w-"


@dataclass
class WatcherResult:
    indices: list[int] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    other_events: int = 0  # not ADDED, or an ADDED pod that is neither a write nor a marker
    saw_start: bool = False
    saw_stop: bool = False
    error: str = ""


def write_name(i: int) -> str:
    return f"{WRITE_PREFIX}{i}"


def write_index(name: str) -> int | None:
    if name.startswith(WRITE_PREFIX):
        try:
            return int(name[len(WRITE_PREFIX) :])
        except ValueError:
            return None
    return None


async def watch_one(
    client: Client, namespace: str, result: WatcherResult, started: anyio.Event
) -> None:
    try:
        async with client.watch(types_pb2.Pod, namespace=namespace) as events:
            async for event in events:
                received = time.time()
                meta = event.object.metadata
                if event.type != "ADDED":
                    result.other_events += 1
                    continue
                if meta.name.startswith(START_MARKER):
                    result.saw_start = True
                    started.set()
                    continue
                if meta.name == STOP_MARKER:
                    result.saw_stop = True
                    return
                index = write_index(meta.name)
                sent = meta.annotations.get(SEND_TIME)
                if index is None or sent is None:
                    result.other_events += 1
                    continue
                result.indices.append(index)
                result.latencies.append(received - float(sent))
    except Exception as e:  # reported in the result, so that the other watchers still count
        result.error = f"{type(e).__name__}: {e}"
        started.set()


async def run(server: str, namespace: str, watchers: int, give_up_after: float) -> dict[str, Any]:
    results = [WatcherResult() for _ in range(watchers)]
    cpu0, wall0 = time.process_time(), time.monotonic()
    started = [anyio.Event() for _ in range(watchers)]
    async with Client(server, user_agent="bench-watchers") as client:
        await client.wait_ready(timeout=30)
        with anyio.move_on_after(give_up_after):
            async with anyio.create_task_group() as tg:
                for result, event in zip(results, started, strict=True):
                    tg.start_soon(watch_one, client, namespace, result, event)
                print("watching", flush=True)
                for event in started:
                    await event.wait()
                print("ready", flush=True)
                cpu0, wall0 = time.process_time(), time.monotonic()
        cpu, wall = time.process_time() - cpu0, time.monotonic() - wall0
    return {
        "watchers": [asdict(r) for r in results],
        "cpu_seconds": cpu,
        "wall_seconds": wall,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.watchers", description=__doc__)
    parser.add_argument("--server", required=True)
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--watchers", type=int, default=10)
    parser.add_argument("--timeout", type=float, default=120.0, help="give up after SECONDS")
    parser.add_argument("--out", required=True, help="write the JSON result here")
    args = parser.parse_args(argv)
    result = anyio.run(run, args.server, args.namespace, args.watchers, args.timeout)
    with open(args.out, "w") as f:
        json.dump(result, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
