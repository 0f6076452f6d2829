"""Node conditions as upstream's pkg/api/v1/node helpers read them, for every component that
asks whether a Node is Ready (the cloud's instance states, the autoscaler's node counts and
scale-down)."""

from __future__ import annotations

from kemu.api.v1 import types_pb2


def get_node_condition(
    status: types_pb2.NodeStatus, condition_type: str
) -> types_pb2.NodeCondition | None:
    return next((c for c in status.conditions if c.type == condition_type), None)


def is_node_ready(node: types_pb2.Node) -> bool:
    """The Node's Ready condition is True (upstream nodeutil.IsNodeReady)."""
    cond = get_node_condition(node.status, "Ready")
    return cond is not None and cond.status == "True"
