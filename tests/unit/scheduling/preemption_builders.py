"""Objects for the preemption tests of the library (tests/unit/scheduling/test_preemption.py)
and of the scheduler's executor (tests/unit/scheduler/test_preemption_executor.py)."""

from __future__ import annotations

from typing import Any

from kemu.api.v1 import types_pb2
from kemu.component.featuregate import SCHEDULER_ASYNC_PREEMPTION, FeatureGates
from kemu.component.version import DEFAULT_VERSION
from kemu.machinery.eviction import DISRUPTION_TARGET
from kemu.scheduling.preemption import PREEMPTION_BY_SCHEDULER
from kemu.testing.builders import make_pdb, make_pod

SCHEDULER: str = "default-scheduler"
PREEMPTING_MESSAGE = f"{SCHEDULER}: preempting to accommodate a higher priority pod"
NOW = 1_700_000_000  # FakeClock's default wall time, in seconds
NOW_NS = NOW * 1_000_000_000


def gates(*, async_preemption: bool) -> FeatureGates:
    return FeatureGates.for_version(DEFAULT_VERSION, {SCHEDULER_ASYNC_PREEMPTION: async_preemption})


def pod(
    name: str,
    priority: int,
    cpu: str = "1",
    *,
    node: str = "",
    started: float | None = None,
    labels: dict[str, str] | None = None,
) -> types_pb2.Pod:
    b = make_pod(name).priority(priority).req(cpu=cpu).scheduler_name(SCHEDULER)
    if node:
        b = b.node(node)
    if labels:
        b = b.labels(labels)
    p = b.obj()
    p.metadata.uid = f"uid-{name}"  # for the pure tests; the fake API assigns its own
    if started is not None:
        p.status.start_time.FromSeconds(int(started))
    return p


def names(pods: Any) -> list[str]:
    return [p.metadata.name for p in pods]


def mark_terminating(p: types_pb2.Pod, *, by_preemption: bool) -> None:
    p.metadata.deletion_timestamp.FromSeconds(NOW)
    if by_preemption:
        p.status.conditions.add(
            type=DISRUPTION_TARGET, status="True", reason=PREEMPTION_BY_SCHEDULER
        )


def pdb(
    name: str,
    allowed: int,
    *,
    namespace: str = "default",
    disrupted: tuple[str, ...] = (),
    **selector: str,
) -> types_pb2.PodDisruptionBudget:
    b = make_pdb(name).namespace(namespace)
    if selector:
        b = b.selector(**selector)
    out = b.obj()
    out.status.disruptions_allowed = allowed
    for n in disrupted:
        out.status.disrupted_pods[n].FromSeconds(NOW)
    return out
