"""Small builders and waits for the kemu.client unit tests."""

from __future__ import annotations

from kemu.api.v1 import types_pb2


def pod(
    name: str, namespace: str = "default", *, labels: dict[str, str] | None = None, node: str = ""
) -> types_pb2.Pod:
    p = types_pb2.Pod(metadata=types_pb2.ObjectMeta(name=name, namespace=namespace))
    p.metadata.labels.update(labels or {})
    p.spec.node_name = node
    p.spec.containers.add(name="c", image="img").resources.requests["cpu"] = "100m"
    return p


def node(name: str) -> types_pb2.Node:
    return types_pb2.Node(metadata=types_pb2.ObjectMeta(name=name))
