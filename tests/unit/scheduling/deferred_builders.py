"""Objects for the KEP-5836 tests (upstream's test/integration/scheduler/preemption/deferred_resize_preemption_test.go): a running pod whose resize the kubelet
deferred, the feature gates with resize preemption on or off, and a node that disables it."""

from __future__ import annotations

from kemu.api.v1 import types_pb2
from kemu.component.featuregate import (
    IN_PLACE_POD_VERTICAL_SCALING_SCHEDULER_PREEMPTION,
    FeatureGates,
)
from kemu.component.version import DEFAULT_VERSION, Version
from kemu.machinery.resources import POD_RESIZE_PENDING, REASON_DEFERRED
from kemu.testing.builders import make_pod

SCHEDULER = "default-scheduler"


def resize_gates(on: bool = True, version: Version = DEFAULT_VERSION) -> FeatureGates:
    """The gates at `version` with InPlacePodVerticalScalingSchedulerPreemption `on` (only
    settable from 1.37: below that the gate does not exist and is off)."""
    if version < Version(1, 37):
        return FeatureGates.for_version(version)
    return FeatureGates.for_version(
        version, {IN_PLACE_POD_VERTICAL_SCALING_SCHEDULER_PREEMPTION: on}
    )


def running(
    name: str,
    node: str,
    *,
    cpu: str,
    memory: str = "100",
    priority: int = 0,
    actual_cpu: str | None = None,
    actual_memory: str | None = None,
    deferred: bool = False,
    uid: str = "",
) -> types_pb2.Pod:
    """A pod running on `node` that wants `cpu`/`memory` (spec) and runs with `actual_*`
    (allocated and actual; the spec's when not given). `deferred`: its resize is
    PodResizePending/Deferred, as the kubelet writes it (with PodScheduled=True and Running)."""
    b = (
        make_pod(name)
        .req(cpu=cpu, memory=memory)
        .priority(priority)
        .scheduler_name(SCHEDULER)
        .node(node)
        .phase("Running")
        .condition("PodScheduled", "True")
    )
    if deferred:
        b = b.condition(POD_RESIZE_PENDING, "True", REASON_DEFERRED)
    pod = b.obj()
    pod.metadata.uid = uid or f"uid-{name}"
    pod.metadata.resource_version = "1"
    held = {"cpu": actual_cpu or cpu, "memory": actual_memory or memory}
    pod.status.container_statuses.add(
        name=pod.spec.containers[0].name,
        resources=types_pb2.ResourceRequirements(requests=held),
        allocated_resources=held,
    )
    return pod


def preemptor(name: str = "preemptor", node: str = "node1", **kw: object) -> types_pb2.Pod:
    """S-RPE-1..5's resizing pod: spec 300m/100, allocated and actual 100m/100, Deferred."""
    args: dict[str, object] = {
        "cpu": "300m",
        "memory": "100",
        "actual_cpu": "100m",
        "priority": 1000,
        "deferred": True,
    }
    args.update(kw)
    return running(name, node, **args)  # type: ignore[arg-type]


def without_deferral(pod: types_pb2.Pod) -> types_pb2.Pod:
    """A copy whose PodResizePending condition is gone (the kubelet actuated the resize)."""
    out = types_pb2.Pod()
    out.CopyFrom(pod)
    keep = [c for c in out.status.conditions if c.type != POD_RESIZE_PENDING]
    del out.status.conditions[:]
    out.status.conditions.extend(keep)
    out.metadata.resource_version = str(int(out.metadata.resource_version or "0") + 1)
    return out


def with_deferral(pod: types_pb2.Pod) -> types_pb2.Pod:
    """A copy with PodResizePending/Deferred added."""
    out = types_pb2.Pod()
    out.CopyFrom(pod)
    out.status.conditions.add(type=POD_RESIZE_PENDING, status="True", reason=REASON_DEFERRED)
    out.metadata.resource_version = str(int(out.metadata.resource_version or "0") + 1)
    return out
