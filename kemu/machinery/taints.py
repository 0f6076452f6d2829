"""The taint keys Kubernetes itself puts on nodes (upstream k8s.io/api/core/v1
well_known_taints.go): the node lifecycle controller's for conditions, the scheduler's
cordon taint, and the ones every DaemonSet pod tolerates."""

from __future__ import annotations

from typing import Final

TAINT_NODE_NOT_READY: Final = "node.kubernetes.io/not-ready"
TAINT_NODE_UNREACHABLE: Final = "node.kubernetes.io/unreachable"
TAINT_NODE_UNSCHEDULABLE: Final = "node.kubernetes.io/unschedulable"
TAINT_NODE_MEMORY_PRESSURE: Final = "node.kubernetes.io/memory-pressure"
TAINT_NODE_DISK_PRESSURE: Final = "node.kubernetes.io/disk-pressure"
TAINT_NODE_NETWORK_UNAVAILABLE: Final = "node.kubernetes.io/network-unavailable"
TAINT_NODE_PID_PRESSURE: Final = "node.kubernetes.io/pid-pressure"
