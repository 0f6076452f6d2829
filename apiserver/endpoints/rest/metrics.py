"""metrics.k8s.io/v1beta1 NodeMetrics and PodMetrics, which `kubectl top nodes|pods` reads:
upstream serves them from metrics-server (an aggregated API scraping each kubelet); kemu's
kubelets simulate their containers' usage by one rule, `kemu.machinery.usage.pod_usage`, so
the apiserver computes the same numbers from the pods it stores, with no scrape.

A pod has metrics while it is bound and Running (metrics-server reports the pods a kubelet
runs); a node's usage is the sum over those pods (kemu's nodes have no system overhead), and
every node has metrics, zero without pods. The shape is metrics-server's (pkg/api/pod.go,
node.go): the object's name, namespace and labels, creationTimestamp and timestamp the time of
the read, and `window` its default --metric-resolution (15s), the span a real scrape's CPU rate
covers.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final

from apiserver.endpoints.rest.discovery import METRICS, NODE_METRICS, POD_METRICS
from kemu.api.v1 import types_pb2
from kemu.machinery import convert
from kemu.machinery.jsonvalue import JSON, JSONObject
from kemu.machinery.quantity import format_resource
from kemu.machinery.usage import pod_usage

API_VERSION: Final = f"{METRICS}/v1beta1"
WINDOW: Final = "15s"


def has_metrics(pod: types_pb2.Pod) -> bool:
    return bool(pod.spec.node_name) and pod.status.phase == "Running"


def _usage(cpu_millis: int, memory_bytes: int) -> JSONObject:
    return {
        "cpu": format_resource("cpu", cpu_millis),
        "memory": format_resource("memory", memory_bytes),
    }


def _meta(meta: types_pb2.ObjectMeta, now: str) -> JSONObject:
    out: JSONObject = {"name": meta.name}
    if meta.namespace:
        out["namespace"] = meta.namespace
    out["creationTimestamp"] = now
    if meta.labels:
        out["labels"] = {k: v for k, v in meta.labels.items()}
    return out


def _now(now: float) -> str:
    return convert.format_time(convert.timestamp(now), "second")


def pod_metrics(pod: types_pb2.Pod, now: float) -> JSONObject:
    """The PodMetrics of a pod that `has_metrics`."""
    at = _now(now)
    return {
        "kind": POD_METRICS.kind,
        "apiVersion": API_VERSION,
        "metadata": _meta(pod.metadata, at),
        "timestamp": at,
        "window": WINDOW,
        "containers": [
            {"name": c.name, "usage": _usage(c.cpu_millis, c.memory_bytes)} for c in pod_usage(pod)
        ],
    }


def node_metrics(node: types_pb2.Node, pods: Iterable[types_pb2.Pod], now: float) -> JSONObject:
    """The NodeMetrics of `node`: the sum over those of `pods` bound to it that
    `has_metrics`."""
    cpu = memory = 0
    for pod in pods:
        if pod.spec.node_name == node.metadata.name and has_metrics(pod):
            for c in pod_usage(pod):
                cpu += c.cpu_millis
                memory += c.memory_bytes
    at = _now(now)
    return {
        "kind": NODE_METRICS.kind,
        "apiVersion": API_VERSION,
        "metadata": _meta(node.metadata, at),
        "timestamp": at,
        "window": WINDOW,
        "usage": _usage(cpu, memory),
    }


def metrics_list(kind: str, items: Sequence[JSON]) -> JSONObject:
    return {"kind": f"{kind}List", "apiVersion": API_VERSION, "metadata": {}, "items": [*items]}
