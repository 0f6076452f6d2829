"""The structured allocator in-process: how fast a pod's claim is tried on every node.

    python -m bench dra_allocator [--nodes 500] [--devices 8] [--pods 400] [--no-cel]

No cluster: N nodes, each publishing one ResourceSlice of D GPUs (attributes model, index,
driverVersion; capacity memory), a DeviceClass selecting the driver by CEL and pods with one
claim for one GPU of at least 40Gi (a request selector), as upstream's scheduler_perf
`dra/` workloads shape them. Per pod, as the DynamicResources plugin does: one Allocator for
the pod's claim, `allocate` on every node (the Filter pass), then the first node that fits gets
the allocation (the allocated state grows, so the cluster fills as it would).

Reported: allocate calls per second, the Filter pass's CPU time per pod over all nodes (the
allocator's share of a scheduling cycle), the pods per second that share allows, and how many
selector evaluations ran (kemu caches each (expression, device) result across pods; upstream
evaluates per device per Allocate call). `--no-cel` replaces the CEL evaluator by a Python
predicate, to tell the allocator's own cost from CEL's.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence

from kemu.api.v1 import types_pb2
from kemu.scheduling.dra.allocator import AllocatedState, Allocator, Features, new_cel_cache
from kemu.scheduling.dra.cel_cache import CelCache

DRIVER = "gpu.example.com"
CLASS = "gpu"
CLASS_SELECTOR = f'device.driver == "{DRIVER}"'
REQUEST_SELECTOR = f'device.capacity["{DRIVER}"].memory.compareTo(quantity("40Gi")) >= 0'


class _PythonEvaluator:
    def evaluate(
        self, expression: str, driver: str, device: types_pb2.Device, device_key: bytes
    ) -> bool:
        return driver == DRIVER


def _node(name: str) -> types_pb2.Node:
    n = types_pb2.Node()
    n.metadata.name = name
    return n


def _slice(node: str, devices: int) -> types_pb2.ResourceSlice:
    s = types_pb2.ResourceSlice()
    s.metadata.name = f"{node}-{DRIVER}"
    s.metadata.resource_version = "1"
    s.spec.driver = DRIVER
    s.spec.node_name = node
    s.spec.pool.name = node
    s.spec.pool.generation = 1
    s.spec.pool.resource_slice_count = 1
    for i in range(devices):
        d = s.spec.devices.add(name=f"gpu-{i}")
        d.attributes["model"].string_value = "A100"
        d.attributes["index"].int_value = i
        d.attributes["driverVersion"].version_value = "1.2.3"
        d.capacity["memory"].value = "80Gi"
    return s


def _claim(i: int) -> types_pb2.ResourceClaim:
    c = types_pb2.ResourceClaim()
    c.metadata.name = f"pod-{i}-gpu"
    c.metadata.namespace = "default"
    r = c.spec.devices.requests.add(name="gpu")
    r.exactly.device_class_name = CLASS
    r.exactly.allocation_mode = "ExactCount"
    r.exactly.count = 1
    r.exactly.selectors.add().cel.expression = REQUEST_SELECTOR
    return c


def run(nodes: int, devices: int, pods: int, cel: bool) -> dict[str, float]:
    features = Features.all()
    node_objs = [_node(f"node-{i}") for i in range(nodes)]
    slices = [_slice(n.metadata.name, devices) for n in node_objs]
    dc = types_pb2.DeviceClass()
    dc.metadata.name = CLASS
    dc.spec.selectors.add().cel.expression = CLASS_SELECTOR
    classes = {CLASS: dc}
    cache = new_cel_cache(features) if cel else CelCache(_PythonEvaluator())
    state = AllocatedState()
    calls = 0
    placed = 0
    first_pod = 0.0
    start = time.process_time()
    for i in range(pods):
        t0 = time.process_time()
        alloc = Allocator(features, [_claim(i)], state, classes, slices, cache)
        chosen: list[types_pb2.AllocationResult] | None = None
        for n in node_objs:
            calls += 1
            result = alloc.allocate(n)
            if result is not None and chosen is None:
                chosen = result
        if chosen is not None:
            placed += 1
            for r in chosen[0].devices.results:
                state.add_result(r)
        if i == 0:
            first_pod = time.process_time() - t0
    elapsed = time.process_time() - start
    return {
        "calls_per_s": calls / elapsed,
        "ms_per_pod": 1000 * elapsed / pods,
        "pods_per_s": pods / elapsed,
        "first_pod_ms": 1000 * first_pod,
        "placed": placed,
        "evaluations": cache.evaluations,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench dra_allocator", description=__doc__)
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--devices", type=int, default=8)
    parser.add_argument("--pods", type=int, default=400)
    parser.add_argument("--no-cel", action="store_true", help="a Python predicate, not CEL")
    args = parser.parse_args(argv)
    out = run(args.nodes, args.devices, args.pods, cel=not args.no_cel)
    print(
        f"{args.nodes} nodes x {args.devices} devices, {args.pods} pods "
        f"({'CEL' if not args.no_cel else 'no CEL'}): "
        f"{out['calls_per_s']:.0f} allocate calls/s, {out['ms_per_pod']:.1f} ms CPU per pod over "
        f"all nodes ({out['pods_per_s']:.1f} pods/s), first pod {out['first_pod_ms']:.1f} ms, "
        f"{out['placed']:.0f} placed, {out['evaluations']:.0f} selector evaluations"
    )
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main())
