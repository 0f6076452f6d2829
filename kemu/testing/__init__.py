"""Test support: object builders, eventually(), seeded randomness, the process harness, and
the invariant checks (record_pods, assert_invariants).

The pytest fixtures live in kemu.testing.pytest_plugin (it imports pytest, so it is not
imported here).
"""

from kemu.testing.builders import (
    make_daemon_set,
    make_deployment,
    make_job,
    make_node,
    make_pdb,
    make_pod,
    make_priority_class,
    make_replica_set,
)
from kemu.testing.cluster import Cluster, Component
from kemu.testing.etcd import Etcd
from kemu.testing.eventually import eventually, eventually_sync
from kemu.testing.invariants import PodHistory, assert_invariants, check_invariants, record_pods
from kemu.testing.names import unique_name
from kemu.testing.ports import free_port, free_ports
from kemu.testing.processes import ManagedProcess, ProcessStartError
from kemu.testing.rand import SeededRandom

__all__ = [
    "Cluster",
    "Component",
    "Etcd",
    "ManagedProcess",
    "PodHistory",
    "ProcessStartError",
    "SeededRandom",
    "assert_invariants",
    "check_invariants",
    "eventually",
    "eventually_sync",
    "free_port",
    "free_ports",
    "make_daemon_set",
    "make_deployment",
    "make_job",
    "make_node",
    "make_pdb",
    "make_pod",
    "make_priority_class",
    "make_replica_set",
    "record_pods",
    "unique_name",
]
