"""The per-component Prometheus registry.

Contract: each component gets its own `CollectorRegistry` from `new_registry` (never the global
default registry), so several components can run in one test process. It already holds the
process/platform/GC collectors and upstream's `kubernetes_build_info` and
`kubernetes_feature_enabled{name,stage}` gauges; components register their own metrics on it
with `registry=ctx.registry`.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Gauge, PlatformCollector, ProcessCollector
from prometheus_client.gc_collector import GCCollector

from kemu.component.featuregate import FeatureGates, Stage
from kemu.component.version import BINARY_VERSION

__all__ = ["new_registry"]


def new_registry(component: str, gates: FeatureGates) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=True)
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    GCCollector(registry=registry)
    build_info = Gauge(
        "kubernetes_build_info",
        "A metric with a constant '1' value labeled by major, minor, git version and the "
        "emulated version of the component.",
        ["component", "git_version", "major", "minor", "emulated_version"],
        registry=registry,
    )
    build_info.labels(
        component, BINARY_VERSION, "1", BINARY_VERSION.split(".")[1], str(gates.version)
    ).set(1)
    feature_enabled = Gauge(
        "kubernetes_feature_enabled",
        "This metric records the data about the stage and enablement of a k8s feature.",
        ["name", "stage"],
        registry=registry,
    )
    for state in gates.states():
        # Upstream labels GA features with an empty stage.
        stage = "" if state.stage is Stage.GA else str(state.stage)
        feature_enabled.labels(state.name, stage).set(1 if state.enabled else 0)
    return registry
