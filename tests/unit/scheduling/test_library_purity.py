"""kemu.scheduling is a library: importing it and running a framework loads no gRPC, no
prometheus and no client (upstream's k8s.io/kube-scheduler/framework, importable without
pkg/scheduler). Checked in a fresh interpreter, since this test process has them all loaded."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

_PROGRAM = textwrap.dedent(
    """
    import json, sys

    from kemu.api.v1 import types_pb2
    from kemu.scheduling.interface import CycleState
    from kemu.scheduling.plugins.registry import in_tree_registry
    from kemu.scheduling.profile import default_profile
    from kemu.scheduling.runtime import Framework
    from kemu.scheduling.simulator import ClusterSnapshot, PredicateChecker
    from kemu.scheduling.snapshot import Snapshot

    def node(name, cpu):
        n = types_pb2.Node()
        n.metadata.name = name
        for key, value in (("cpu", cpu), ("memory", "8Gi"), ("pods", "110")):
            n.status.allocatable[key] = value
            n.status.capacity[key] = value
        return n

    pod = types_pb2.Pod()
    pod.metadata.name, pod.metadata.namespace, pod.metadata.uid = "p", "default", "u1"
    c = pod.spec.containers.add()
    c.name = "c"
    c.resources.requests["cpu"] = "2"

    snapshot = Snapshot.from_objects([], [node("small", "1"), node("big", "4")])
    registry = in_tree_registry()
    fwk = Framework(default_profile(registry), registry, snapshot=snapshot)
    state = CycleState()
    _, pre, _ = fwk.run_pre_filter_plugins(state, pod, snapshot.list())
    results = {
        name: fwk.run_filter_plugins(state, pod, snapshot.get(name)).code.name
        for name in ("small", "big")
    }
    # The autoscaler's simulator on the same framework.
    sim = ClusterSnapshot.from_objects([], [node("small", "1")])
    sim.add_node(node("template", "4"))
    fits, _ = PredicateChecker(fwk).fits_any_node(sim, pod)
    loaded = sorted(
        m for m in sys.modules
        if m.split(".")[0] in ("grpc", "prometheus_client", "scheduler", "apiserver", "kubelet")
        or m == "kemu.client" or m.startswith("kemu.client.")
    )
    print(json.dumps(
        {"prefilter": pre.code.name, "filter": results, "fits": fits, "loaded": loaded}
    ))
    """
)


def test_scheduling_library_runs_a_filter_without_grpc_prometheus_or_client() -> None:
    out = subprocess.run(
        [sys.executable, "-c", _PROGRAM], capture_output=True, text=True, timeout=60, check=False
    )
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["prefilter"] == "SUCCESS"
    # The framework really ran the default profile's Filter: NodeResourcesFit rejects the node
    # smaller than the request (unresolvable: larger than its allocatable, as upstream).
    assert report["filter"] == {"small": "UNSCHEDULABLE_AND_UNRESOLVABLE", "big": "SUCCESS"}
    assert report["fits"] == "template"
    assert report["loaded"] == []
