"""A synthetic day of a cluster as a trace (issue #33's figures): services as Deployments whose
replicas follow a daily curve, batch pods that come and go through the day, and a few
priorities, sized to a number of nodes. The same seed gives the same trace.

    trace, cluster = synthetic_day(DayShape(nodes=1000))

- PriorityClasses at t=0: `batch-low` (100), `service` (1000), `critical` (10000).
- One service per 10 nodes: a Deployment `svc-N` (priority `service`, pods of 1 CPU and
  2Gi) whose replicas follow 1 + 0.5 sin over the day around `replicas_per_service` (lowest at
  06:00 of the trace's time, highest at 18:00), applied again every `rescale_every` seconds.
- Batch pods (`batch-N`, 500m and 1Gi; one in ten `critical`, the rest `batch-low`) created
  evenly through the day, `batch_per_node_hour` per node and hour, each deleted after 5 to 60
  minutes.

At the default shape the services ask for half the nodes' CPU (4 CPU each) on average and
three quarters at their peak, the batch pods a few percent more: room at night, full nodes in
the evening where a critical batch pod may preempt. Times are whole seconds, as SimKube's.
`cluster` is CLUSTER.yaml's value (kemu.trace.cluster_config): one static pool of `nodes`
nodes; `with_autoscaler(cluster, expander)` turns part of it into node groups for what-ifs,
`with_lease_duration(cluster, seconds)` gives every node a longer Lease.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Final

from kemu.machinery.jsonvalue import JSONObject
from kemu.trace.cluster_config import ClusterDocument, NodeGroupDocument
from kemu.trace.model import (
    POD_GVK,
    POD_SPEC_TEMPLATE_PATHS,
    Trace,
    TraceEvent,
    TrackedObject,
    ns_name,
    stable_hash,
)

EPOCH: Final = 1_767_225_600  # 2026-01-01T00:00:00Z: the trace's first instant
NAMESPACE: Final = "day"
DEPLOYMENT_GVK: Final = "apps/v1.Deployment"
PRIORITY_GVK: Final = "scheduling.k8s.io/v1.PriorityClass"
PRIORITIES: Final = {"batch-low": 100, "service": 1000, "critical": 10000}
NODE_CAPACITY: Final = {"cpu": "4", "memory": "16Gi", "pods": "110"}


@dataclass(frozen=True)
class DayShape:
    nodes: int = 1000
    span: float = 86400.0
    """Seconds of the trace."""
    services_per_10_nodes: int = 1
    replicas_per_service: int = 20
    """The mean; the curve goes from half of it to one and a half."""
    rescale_every: float = 3600.0
    batch_per_node_hour: float = 0.5
    seed: int = 1

    def __post_init__(self) -> None:
        if self.nodes < 10:
            raise ValueError(f"nodes: must be at least 10, not {self.nodes}")
        if self.span <= 0 or self.rescale_every <= 0:
            raise ValueError("span and rescale_every: must be positive")


def _priority_class(name: str, value: int) -> JSONObject:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
    }


def _container(cpu: str, memory: str) -> JSONObject:
    return {
        "name": "main",
        "image": "registry.k8s.io/pause:3.10",
        "resources": {"requests": {"cpu": cpu, "memory": memory}},
    }


def _deployment(name: str, replicas: int) -> JSONObject:
    labels: JSONObject = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": labels},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "priorityClassName": "service",
                    "containers": [_container("1", "2Gi")],
                },
            },
        },
    }


def _batch_pod(name: str, critical: bool) -> JSONObject:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"app": "batch"}},
        "spec": {
            "priorityClassName": "critical" if critical else "batch-low",
            "restartPolicy": "Never",
            "containers": [_container("500m", "1Gi")],
        },
    }


def replicas_at(shape: DayShape, t: float) -> int:
    """A service's replicas `t` seconds into the day: 1 + 0.5 sin, lowest at 06:00 of the
    trace's time and highest at 18:00 (a day's period whatever the span)."""
    mean = shape.replicas_per_service
    return max(1, round(mean * (1 + 0.5 * math.sin(2 * math.pi * (t / 86400.0 - 0.5)))))


def synthetic_day(shape: DayShape) -> tuple[Trace, ClusterDocument]:
    """The day's trace and its CLUSTER.yaml value (one static pool of `shape.nodes` nodes)."""
    rng = random.Random(shape.seed)
    events: dict[int, TraceEvent] = {}

    def at(t: float) -> TraceEvent:
        """The event at `t` seconds, whole ones as SimKube's (its ts is an integer)."""
        second = int(t)
        return events.setdefault(second, TraceEvent(ts=EPOCH + second))

    index: dict[str, dict[str, int]] = {}

    def applied(t: float, gvk: str, obj: JSONObject) -> None:
        at(t).applied.append(obj)
        index.setdefault(gvk, {})[ns_name(obj)] = stable_hash(obj)

    for name, value in PRIORITIES.items():
        applied(0.0, PRIORITY_GVK, _priority_class(name, value))
    services = shape.nodes // 10 * shape.services_per_10_nodes
    t = 0.0
    while t < shape.span:
        replicas = replicas_at(shape, t)
        for i in range(services):
            applied(t, DEPLOYMENT_GVK, _deployment(f"svc-{i}", replicas))
        t += shape.rescale_every
    batch = int(shape.nodes * shape.batch_per_node_hour * shape.span / 3600.0)
    gap = shape.span / batch if batch else shape.span
    for i in range(batch):
        created = i * gap
        pod = _batch_pod(f"batch-{i}", critical=rng.random() < 0.1)
        applied(created, POD_GVK, pod)
        deleted = created + rng.uniform(300.0, 3600.0)
        if deleted < shape.span:
            at(deleted).deleted.append(pod)
    trace = Trace(
        tracked={
            POD_GVK: TrackedObject(POD_SPEC_TEMPLATE_PATHS[POD_GVK], skip_owned=True),
            DEPLOYMENT_GVK: TrackedObject(POD_SPEC_TEMPLATE_PATHS[DEPLOYMENT_GVK]),
            PRIORITY_GVK: TrackedObject(),
        },
        events=[events[k] for k in sorted(events)],
        index=index,
    )
    cluster: ClusterDocument = {
        "nodes": [{"name": "pool", "count": shape.nodes, "capacity": dict(NODE_CAPACITY)}]
    }
    return trace, cluster


def with_autoscaler(
    cluster: ClusterDocument, expander: str, static: int | None = None
) -> ClusterDocument:
    """The cluster with its static nodes but `static` (default half) moved into two node
    groups the autoscaler grows (a small and a large shape, each able to take all the nodes
    moved), at `expander`. The cloud runs a kubelet process for each instance, so a large
    day keeps most of its nodes static."""
    (pool,) = cluster["nodes"]
    if static is None:
        static = max(1, pool["count"] // 2)
    if not 1 <= static < pool["count"]:
        raise ValueError(f"static nodes: must be from 1 to {pool['count'] - 1}, not {static}")
    rest = pool["count"] - static
    groups: list[NodeGroupDocument] = [
        {"name": "small", "minSize": 0, "maxSize": rest * 2, "template": {"capacity": {
            "cpu": "2", "memory": "8Gi", "pods": "110"}}},
        {"name": "large", "minSize": 0, "maxSize": max(1, rest // 2), "template": {"capacity": {
            "cpu": "8", "memory": "32Gi", "pods": "110"}}},
    ]  # fmt: skip
    return {
        "nodes": [{**pool, "count": static}],
        "nodeGroups": groups,
        "autoscaler": {"expander": expander},
    }


NODE_MONITOR_GRACE_FACTOR: Final = 1.25
"""The node monitor's grace period over the Lease duration: upstream's defaults, 50s for 40
(kube-controller-manager --node-monitor-grace-period, kubelet nodeLeaseDurationSeconds)."""


def with_lease_duration(cluster: ClusterDocument, seconds: int) -> ClusterDocument:
    """The cluster with every node's Lease lasting `seconds` (renewed every quarter of it, as
    the kubelet does) and the controller-manager's node monitor grace period in proportion:
    a large day's bulk of work is its Lease renewals (1,000 nodes at the default 40 s: 100
    writes a second of the trace's time)."""
    flag = ["--node-lease-duration-seconds", str(seconds)]
    grace = f"{math.ceil(seconds * NODE_MONITOR_GRACE_FACTOR)}s"
    out: ClusterDocument = {
        **cluster,
        "nodes": [{**pool, "kubeletArgs": [*pool.get("kubeletArgs", []), *flag]}
                  for pool in cluster["nodes"]],
        "args": {"controllermanager": ["--node-monitor-grace-period", grace]},
    }  # fmt: skip
    if "nodeGroups" in cluster:
        out["nodeGroups"] = [
            {**group, "template": {**group["template"], "kubeletArgs": [
                *group["template"].get("kubeletArgs", []), *flag]}}
            for group in cluster["nodeGroups"]
        ]  # fmt: skip
    return out
