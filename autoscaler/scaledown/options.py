"""The scale-down flags with upstream's defaults (cluster-autoscaler FAQ, config/const)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ScaleDownOptions:
    utilization_threshold: float = 0.5
    """--scale-down-utilization-threshold: max(cpu, memory) request ratio below which a node
    may be removed."""
    unneeded_time: float = 10 * 60.0
    """--scale-down-unneeded-time."""
    unready_time: float = 20 * 60.0
    """--scale-down-unready-time: how long an unready node stays unneeded before removal."""
    unready_enabled: bool = True
    """--scale-down-unready-enabled: unready nodes may be removed (else they are
    ScaleDownUnreadyDisabled)."""
    delay_after_add: float = 10 * 60.0
    """--scale-down-delay-after-add."""
    delay_after_delete: float = 0.0
    """--scale-down-delay-after-delete."""
    delay_after_failure: float = 3 * 60.0
    """--scale-down-delay-after-failure."""
    node_delete_delay_after_taint: float = 5.0
    """--node-delete-delay-after-taint: how long a tainted node is left before its deletion
    goes on (its emptiness re-checked, its drain begun), so that a scheduler whose cache had
    not seen the taint yet has bound what it was going to bind there."""
    max_empty_bulk_delete: int = 10
    """--max-empty-bulk-delete: empty nodes deleted at once."""
    unremovable_node_recheck_timeout: float = 5 * 60.0
    """--unremovable-node-recheck-timeout: a node whose pods could not be moved in simulation
    (blocked by a pod, or no place for them) is not checked again for this long."""
    non_empty_candidates_count: int = 30
    """--scale-down-non-empty-candidates-count: non-empty nodes simulated per loop."""
    max_drain_parallelism: int = 1
    """--max-drain-parallelism: non-empty nodes drained at once."""
    max_graceful_termination_sec: int = 600
    """--max-graceful-termination-sec: the longest grace period an evicted pod gets."""
    max_pod_eviction_time: float = 2 * 60.0
    """--max-pod-eviction-time: how long an eviction refused (a PDB's 429) is retried."""
    eviction_retry_time: float = 10.0
    """Between two attempts at evicting a pod (upstream EvictionRetryTime)."""
    pod_eviction_headroom: float = 30.0
    """Added to the grace period when waiting for the evicted pods (PodEvictionHeadroom)."""
    daemonset_eviction_for_empty_nodes: bool = False
    """--daemonset-eviction-for-empty-nodes: DaemonSet pods of an empty node are evicted
    (best effort, not waited for) before it is deleted."""
    daemonset_eviction_for_occupied_nodes: bool = True
    """--daemonset-eviction-for-occupied-nodes: the same for a drained node, after its other
    pods are gone."""
    skip_nodes_with_system_pods: bool = True
    """--skip-nodes-with-system-pods."""
    skip_nodes_with_local_storage: bool = True
    """--skip-nodes-with-local-storage."""
    skip_nodes_with_custom_controller_pods: bool = True
    """--skip-nodes-with-custom-controller-pods: only pods controlled by a ReplicaSet,
    ReplicationController, Job or StatefulSet count as replicated."""
