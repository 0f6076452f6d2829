"""The pods of one node, as this kubelet knows them (upstream's pod manager, plus the pod
workers' per-pod records): the latest version of each pod the API has (`api_pods`), the
kubelet's own record of each pod it admitted or rejected (`runtimes`, checkpointed), and the
node's retry list of Deferred resizes (`deferred`, kept by kubelet.allocation).

A hollow kubelet runs many nodes in one process: there is one NodePods per node, and nothing in
it is shared between nodes.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from kemu.api.v1 import types_pb2
from kemu.machinery.keys import revision_of
from kubelet.checkpoint import Checkpoint
from kubelet.network import PodAddresses
from kubelet.runtime import PodRuntime, PodState

logger = logging.getLogger(__name__)


class NodePods:
    """The pods of one node: what the API says (latest seen) and what the kubelet knows."""

    def __init__(
        self,
        name: str,
        allocatable: Mapping[str, int],
        checkpoint: Checkpoint | None = None,
        *,
        node_ip: str = "",
    ) -> None:
        self.name = name
        self.allocatable = dict(allocatable)
        self.checkpoint = checkpoint or Checkpoint(None, name)
        self.node_ip = node_ip
        """The node's InternalIP: its pods' hostIP, and a hostNetwork pod's IP."""
        self.addresses = PodAddresses(name)
        """The node's pod IPs (kubelet.network)."""
        self.api_pods: dict[str, types_pb2.Pod] = {}
        self.runtimes: dict[str, PodRuntime] = {}
        self.deferred: set[str] = set()
        """Pods whose resize is Deferred: the retry list (kubelet.allocation)."""

    def restore(self) -> list[PodRuntime]:
        """Loads the checkpoint into `runtimes`; the pods it held."""
        restored = self.checkpoint.load()
        for rt in restored:
            self.runtimes[rt.uid] = rt
            if rt.active and rt.pod_ip:
                self.addresses.occupy(rt.uid, rt.pod_ip)
        if restored:
            logger.info(
                "node %s: restored %d pods from %s", self.name, len(restored), self.checkpoint.path
            )
        return restored

    def save(self) -> None:
        self.checkpoint.save(rt for rt in self.runtimes.values() if rt.state != PodState.REJECTED)

    def remember(self, pod: types_pb2.Pod) -> None:
        """Keeps `pod` as the latest API state unless a newer one is known, or it was deleted."""
        uid = pod.metadata.uid
        known = self.api_pods.get(uid)
        if known is not None and revision_of(known) < revision_of(pod):
            self.api_pods[uid] = pod
