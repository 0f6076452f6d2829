"""What a relist leaves in memory: a pod informer as the scheduler's (every object copied) over
FakeClient with N bound pods, a handler that keeps every object it is given (as the scheduler's
cache and queue do), one relist (its watch Gone), and the process's RSS growth after the first
sync, after the relist, and after malloc_trim (what is live rather than kept by the heap).

    .venv/bin/python hack/relist_memory.py [--pods N] [--pod-file FILE]

`--pod-file`: a serialized Pod to clone (e.g. one listed from a bench cluster); default: a pod
of the bench's scale template, bound. Run the base the same way with PYTHONPATH at its export.
"""

from __future__ import annotations

import argparse
import ctypes
import gc

import anyio

from kemu.api.v1 import types_pb2
from kemu.client.fake import FakeClient
from kemu.client.informer import FuncHandler, Informer
from kemu.component.clock import FakeClock
from kemu.machinery.errors import Gone
from kemu.testing.builders import make_pod


def _rss_mib() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS"):
                return int(line.split()[1]) // 1024
    return 0


def _template(pod_file: str | None) -> types_pb2.Pod:
    if pod_file:
        with open(pod_file, "rb") as f:
            return types_pb2.Pod.FromString(f.read())
    return make_pod("template").req(cpu="10m", memory="50Mi").node("node-1").obj()


async def _run(pods: int, pod_file: str | None) -> None:
    libc = ctypes.CDLL("libc.so.6")
    template = _template(pod_file)
    fake = FakeClient()
    for i in range(pods):
        p = types_pb2.Pod()
        p.CopyFrom(template)
        p.metadata.name = f"pod-{i}"
        p.metadata.uid = f"uid-{i}"
        p.metadata.ClearField("resource_version")
        fake.add(p)
    gc.collect()
    libc.malloc_trim(0)
    base = _rss_mib()
    inf = Informer(fake, types_pb2.Pod, copy_objects=True, clock=FakeClock())
    held: dict[str, types_pb2.Pod] = {}

    def keep(p: types_pb2.Pod) -> None:
        held[p.metadata.uid] = p

    inf.add_event_handler(FuncHandler(on_add=keep, on_update=lambda _, p: keep(p)))
    async with anyio.create_task_group() as tg:
        await tg.start(inf.run)
        gc.collect()
        libc.malloc_trim(0)
        synced = _rss_mib() - base
        with anyio.fail_after(60):
            while fake.open_watches < 1:  # noqa: ASYNC110 (a plain poll: a measuring script)
                await anyio.sleep(0.01)
        fake.drop_watches(Gone("too old resource version"))
        with anyio.fail_after(600):
            while inf.lists < 2:  # noqa: ASYNC110
                await anyio.sleep(0.05)
        gc.collect()
        relisted = _rss_mib() - base
        libc.malloc_trim(0)
        trimmed = _rss_mib() - base
        shared = sum(1 for p in inf.lister.list() if held[p.metadata.uid] is p)
        tg.cancel_scope.cancel()
    print(
        f"{pods} pods: synced +{synced} MiB; after the relist +{relisted} MiB, after "
        f"malloc_trim +{trimmed} MiB; the handler holds the informer's object for "
        f"{shared}/{pods}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pods", type=int, default=20_000)
    parser.add_argument("--pod-file", default=None)
    args = parser.parse_args()
    if args.pods < 1:
        parser.error("--pods: must be positive")
    anyio.run(_run, args.pods, args.pod_file)


if __name__ == "__main__":
    main()
