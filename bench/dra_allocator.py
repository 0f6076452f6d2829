"""The structured allocator in-process: how fast a pod's claim is tried on every node.

    python -m bench dra_allocator [--nodes 500] [--devices 8] [--pods 400] [--no-cel]
        [--check search|per-node|columns ...]

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
predicate, to tell the allocator's own cost from CEL's. `--check` says how the Filter pass
decides each node (default: the per-node fit check and the check over every node at once,
side by side in one run, which must choose the same nodes).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence

from kemu.api.v1 import types_pb2
from kemu.scheduling.dra.allocator import (
    AllocatedState,
    Allocator,
    Features,
    FitVerdict,
    new_cel_cache,
)
from kemu.scheduling.dra.cel_cache import CelCache
from kemu.scheduling.dra.fit_columns import CODE_FITS, CODE_NO_FIT

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


def run(nodes: int, devices: int, pods: int, cel: bool, check: str = "search") -> dict[str, float]:
    """One pass of `pods` pods; `check` is how each pod's Filter pass decides the nodes:
    "search" (`allocate` on every node), "per-node" (Allocator.fit_verdict on every node, the
    search where it cannot tell) or "columns" (Allocator.fit_verdicts over every node at
    once, the search where it cannot tell); the first node that fits is allocated."""
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
    chosen_nodes: list[str] = []
    start = time.process_time()
    for i in range(pods):
        t0 = time.process_time()
        alloc = Allocator(features, [_claim(i)], state, classes, slices, cache)
        chosen: list[types_pb2.AllocationResult] | None = None
        where = ""
        if check == "columns":
            codes = alloc.fit_verdicts(node_objs)
            verdicts = [
                FitVerdict.UNDECIDED if codes is None else _CODES[int(c)]
                for c in (codes if codes is not None else [0] * len(node_objs))
            ]
        else:
            verdicts = []
        for k, n in enumerate(node_objs):
            if check == "per-node":
                verdict = alloc.fit_verdict(n)
            elif check == "columns":
                verdict = verdicts[k]
            else:
                verdict = FitVerdict.UNDECIDED
            if verdict is FitVerdict.NO_FIT:
                continue
            if verdict is FitVerdict.FITS:
                if chosen is None:
                    calls += 1
                    chosen, where = alloc.allocate(n), n.metadata.name
                if check == "columns":
                    break  # (the rest are decided already)
                continue
            calls += 1
            result = alloc.allocate(n)
            if result is not None and chosen is None:
                chosen, where = result, n.metadata.name
        if chosen is not None:
            placed += 1
            chosen_nodes.append(where)
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
        "digest": hash(tuple(chosen_nodes)),
    }


_CODES = {CODE_NO_FIT: FitVerdict.NO_FIT, CODE_FITS: FitVerdict.FITS}
CHECKS = ("search", "per-node", "columns")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench dra_allocator", description=__doc__)
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--devices", type=int, default=8)
    parser.add_argument("--pods", type=int, default=400)
    parser.add_argument("--no-cel", action="store_true", help="a Python predicate, not CEL")
    parser.add_argument(
        "--check",
        action="append",
        choices=CHECKS,
        help="how the Filter pass decides (repeatable; default: per-node and columns, side "
        "by side): the search on every node, Allocator.fit_verdict per node, or "
        "Allocator.fit_verdicts over every node at once",
    )
    args = parser.parse_args(argv)
    digests = set()
    for check in args.check or ["per-node", "columns"]:
        out = run(args.nodes, args.devices, args.pods, cel=not args.no_cel, check=check)
        digests.add(out["digest"])
        print(
            f"{check:>8}: {args.nodes} nodes x {args.devices} devices, {args.pods} pods "
            f"({'CEL' if not args.no_cel else 'no CEL'}): "
            f"{out['calls_per_s']:.0f} allocate calls/s, {out['ms_per_pod']:.2f} ms CPU per pod "
            f"over all nodes ({out['pods_per_s']:.1f} pods/s), first pod "
            f"{out['first_pod_ms']:.1f} ms, {out['placed']:.0f} placed, "
            f"{out['evaluations']:.0f} selector evaluations"
        )
    print("the same nodes chosen" if len(digests) == 1 else "DIFFERENT nodes chosen")
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main())
