"""How much memory the scheduler holds per bound pod: its pod informer and its cache fed, in
process, with the watch events of N pods that are created, bound and go Running (with the
status the hollow kubelet writes), batched into WatchResponses as the apiserver sends them.

    .venv/bin/python hack/sched_pod_memory.py [--pods N] [--batch B] [--copy | --no-copy]

Prints the process's RSS growth per pod (what the watch responses' protobuf arenas hold
included: tracemalloc does not see them) and the Python heap growth per pod (tracemalloc).
`--copy` stores each pod copied out of its WatchResponse (the scheduler's pod informer's
`keep`), `--no-copy` the decoded sub-message as it is. Run each in its own process.
"""

from __future__ import annotations

import argparse
import gc
import os
import tracemalloc
import uuid
from typing import Any, cast

from kemu.api.v1 import api_pb2, types_pb2
from kemu.client.informer import Informer
from kemu.machinery import kinds
from kemu.machinery.pod_defaults import default_pod_spec
from kemu.machinery.resources import SCHEDULER_DEFAULTS
from kemu.scheduling.types import PodInfo
from kemu.testing.builders import make_pod
from kubelet.runtime import PodRuntime, PodState
from kubelet.status_manager import build_status
from scheduler.cache.cache import Cache

_PAGE = os.sysconf("SC_PAGE_SIZE")


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * _PAGE


def versions(i: int) -> tuple[types_pb2.Pod, types_pb2.Pod, types_pb2.Pod]:
    """The pod as created (pending), as bound, and Running with the kubelet's status."""
    pod = (
        make_pod(f"pod-{i:06d}")
        .namespace("namespace-1")
        .uid(str(uuid.UUID(int=i)))
        .req(cpu="10m", memory="50Mi")
        .obj()
    )
    pod.metadata.generate_name = "pod-"
    pod.metadata.generation = 1
    pod.metadata.creation_timestamp.seconds = 1_700_000_000 + i
    default_pod_spec(pod.spec)
    pod.spec.scheduler_name = "default-scheduler"
    for key in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"):
        pod.spec.tolerations.add(
            key=key, operator="Exists", effect="NoExecute", toleration_seconds=300
        )
    pod.status.phase = "Pending"
    pod.status.qos_class = "Burstable"
    pod.metadata.resource_version = str(3 * i + 1)
    bound = types_pb2.Pod()
    bound.CopyFrom(pod)
    bound.spec.node_name = f"node-{i % 5000:04d}"
    c = bound.status.conditions.add(type="PodScheduled", status="True")
    c.last_transition_time.seconds = 1_700_000_001 + i
    bound.metadata.resource_version = str(3 * i + 2)
    running = types_pb2.Pod()
    running.CopyFrom(bound)
    rt = PodRuntime(
        uid=pod.metadata.uid,
        namespace="namespace-1",
        name=pod.metadata.name,
        state=PodState.RUNNING,
    )
    rt.admitted_at = 1_700_000_002.0 + i
    rt.started_at = rt.admitted_at
    running.status.CopyFrom(build_status(bound, rt, rt.admitted_at + 1))
    running.status.host_ip = running.status.pod_ip = "10.0.0.1"
    running.metadata.resource_version = str(3 * i + 3)
    return pod, bound, running


def responses(n: int, batch: int, lag: int) -> list[bytes]:
    """The watch stream: pod i is created at step i, bound at i + lag, Running at i + 2 lag."""
    steps: dict[int, list[tuple[str, types_pb2.Pod]]] = {}
    for i in range(n):
        pod, bound, running = versions(i)
        steps.setdefault(i, []).append(("ADDED", pod))
        steps.setdefault(i + lag, []).append(("MODIFIED", bound))
        steps.setdefault(i + 2 * lag, []).append(("MODIFIED", running))
    out: list[bytes] = []
    resp = api_pb2.WatchResponse()
    for step in sorted(steps):
        for type_, obj in steps[step]:
            resp.events.add(type=type_, object=kinds.wrap(obj))
            if len(resp.events) == batch:
                out.append(resp.SerializeToString())
                resp = api_pb2.WatchResponse()
    if resp.events:
        out.append(resp.SerializeToString())
    return out


def assigned(pod: types_pb2.Pod) -> bool:
    return bool(pod.spec.node_name)


class _Handler:
    """The cache half of scheduler.event_handlers (bound pods into the cache)."""

    def __init__(self, cache: Cache) -> None:
        self.cache = cache

    def on_add(self, pod: types_pb2.Pod) -> None:
        if assigned(pod):
            self.cache.add_pod(pod)

    def on_update(self, old: types_pb2.Pod, new: types_pb2.Pod) -> None:
        if assigned(old):
            self.cache.update_pod(old, new)
        elif assigned(new):
            self.cache.add_pod(new)

    def on_delete(self, pod: types_pb2.Pod) -> None:
        if assigned(pod):
            self.cache.remove_pod(pod)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pods", type=int, default=20_000)
    parser.add_argument("--batch", type=int, default=100, help="events per WatchResponse")
    parser.add_argument("--lag", type=int, default=300, help="steps between a pod's events")
    parser.add_argument("--copy", action=argparse.BooleanOptionalAction, default=False)
    parser.add_argument(
        "--relist",
        action="store_true",
        help="then relist (pages of 500 of the same pods, unchanged resourceVersions)",
    )
    args = parser.parse_args()
    stream = responses(args.pods, args.batch, args.lag)
    size = len(versions(0)[2].SerializeToString())
    gc.collect()
    tracemalloc.start()
    base_rss, base_heap = rss(), tracemalloc.get_traced_memory()[0]

    keep = (lambda pod: True) if args.copy else None
    inf: Informer[types_pb2.Pod] = Informer(cast(Any, None), types_pb2.Pod, keep=keep)
    cache = Cache(clock=cast(Any, None), counting=SCHEDULER_DEFAULTS)
    inf.add_event_handler(cast(Any, _Handler(cache)))
    for data in stream:
        for event in api_pb2.WatchResponse.FromString(data).events:
            inf._apply(event.type, cast(types_pb2.Pod, kinds.unwrap(event.object)))
    if args.relist:
        page = api_pb2.ListResponse(items=[kinds.wrap(p) for p in inf.lister.list()])
        pages = [
            api_pb2.ListResponse(items=page.items[i : i + 500]).SerializeToString()
            for i in range(0, len(page.items), 500)
        ]
        del page
        items = [
            cast(types_pb2.Pod, kinds.unwrap(o))
            for data in pages
            for o in api_pb2.ListResponse.FromString(data).items
        ]
        del pages
        inf._replace(items, "relist")
        del items
    # The scheduling cycles read every pod's labels (PodTopologySpread, InterPodAffinity).
    for ni in cache.dump().nodes.values():
        for pi in ni.pods:
            pi.meta_view()
    gc.collect()
    heap = tracemalloc.get_traced_memory()[0] - base_heap
    grown = rss() - base_rss
    n = cache.pod_count()
    print(
        f"pods={n} batch={args.batch} copy={args.copy} relist={args.relist} pod_bytes={size} "
        f"rss_per_pod={grown / n:.0f} heap_per_pod={heap / n:.0f} "
        f"podinfo={PodInfo.__name__}"
    )
    del stream


if __name__ == "__main__":
    main()
