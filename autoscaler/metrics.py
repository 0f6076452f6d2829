"""The autoscaler's metrics, with upstream's names (cluster-autoscaler metrics/metrics.go,
namespace `cluster_autoscaler`)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

_NS = "cluster_autoscaler"


class Metrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        r = registry if registry is not None else CollectorRegistry(auto_describe=True)
        self.nodes_count = Gauge(
            "nodes_count",
            "Number of nodes in cluster.",
            ["state"],
            namespace=_NS,
            registry=r,
        )
        self.unschedulable_pods_count = Gauge(
            "unschedulable_pods_count",
            "Number of unschedulable pods in the cluster.",
            ["type"],
            namespace=_NS,
            registry=r,
        )
        self.scaled_up_nodes = Counter(
            "scaled_up_nodes",
            "Number of nodes added by CA.",
            namespace=_NS,
            registry=r,
        )
        self.scaled_down_nodes = Counter(
            "scaled_down_nodes",
            "Number of nodes removed by CA.",
            ["reason"],
            namespace=_NS,
            registry=r,
        )
        self.unneeded_nodes_count = Gauge(
            "unneeded_nodes_count",
            "Number of nodes currently considered unneeded by CA.",
            namespace=_NS,
            registry=r,
        )
        self.failed_scale_ups = Counter(
            "failed_scale_ups",
            "Number of times scale-up operation has failed.",
            ["reason"],
            namespace=_NS,
            registry=r,
        )
        self.function_duration = Histogram(
            "function_duration_seconds",
            "Time taken by various parts of CA main loop.",
            ["function"],
            namespace=_NS,
            registry=r,
            buckets=(0.01, 0.05, 0.1, 0.5, 1.0, 2.5, 5.0, 7.5, 10.0, 12.5, 15.0, 20.0, 30.0, 60.0),
        )
        self.last_activity = Gauge(
            "last_activity",
            "Last time certain part of CA logic executed.",
            ["activity"],
            namespace=_NS,
            registry=r,
        )
        self.node_groups_count = Gauge(
            "node_groups_count",
            "Number of node groups managed by CA.",
            ["node_group_type"],
            namespace=_NS,
            registry=r,
        )
