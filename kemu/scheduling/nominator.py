"""The scheduler's in-memory nominations (upstream backend/queue/nominator.go).

A nominated pod reserves room on its node for pods of lower or equal priority (see reference
RunFilterPluginsWithNominatedPods, nominator.go). The nominator is fed two ways:
- from the API: every add/update of an unscheduled pod nominates it to its
  status.nominatedNodeName (`nominated_node_name=None`, upstream ModeNoop);
- from the scheduler: after preemption it nominates the pod to the chosen node (a string,
  upstream ModeOverride; "" clears) before the API PATCH, so the next cycles already see it.

Rules (nominator.go): when an update carries no NNN in both its old and new object but the pod is
nominated in memory, the in-memory nomination is kept (the PATCH has not arrived yet); when the
API NNN changes or is removed, the nominator follows the API. A pod that no longer exists in the
lister, or is already bound, is not nominated. A nomination to a node that does not exist is
kept as is. Nominations are removed on delete, assume and binding.
"""

from __future__ import annotations

import logging
from typing import Protocol

from kemu.api.v1 import types_pb2
from kemu.machinery.keys import object_key
from kemu.scheduling.types import PodInfo

logger = logging.getLogger(__name__)


class PodLister(Protocol):
    """The pod informer's lister (kemu.client.informer.Lister): the current copy, or None."""

    def get(self, name: str, namespace: str = "") -> types_pb2.Pod | None: ...


class Nominator:
    """Pods nominated to nodes, by node and by pod UID. Implements framework PodNominator."""

    def __init__(self, pod_lister: PodLister | None = None) -> None:
        self._pod_lister = pod_lister
        self._by_node: dict[str, list[PodInfo]] = {}
        self._node_of: dict[str, str] = {}  # pod uid -> node name

    def add_nominated_pod(self, pod_info: PodInfo, nominated_node_name: str | None) -> None:
        """Nominates the pod: to `nominated_node_name` ("" clears), or with None to the pod's
        status.nominatedNodeName. Any earlier nomination of the pod is replaced."""
        pod = pod_info.pod
        self._delete(pod.metadata.uid)
        node = (
            pod.status.nominated_node_name if nominated_node_name is None else nominated_node_name
        )
        if not node:
            return
        if self._pod_lister is not None:
            current = self._pod_lister.get(pod.metadata.name, pod.metadata.namespace)
            if current is None:
                logger.debug("Pod %s does not exist, not nominating it", object_key(pod))
                return
            if current.spec.node_name:
                logger.debug(
                    "Pod %s is already bound to %s, not nominating it",
                    object_key(pod),
                    current.spec.node_name,
                )
                return
        self._node_of[pod.metadata.uid] = node
        self._by_node.setdefault(node, []).append(pod_info)

    def update_nominated_pod(self, old_pod: types_pb2.Pod, new_pod_info: PodInfo) -> None:
        """Follows an API update of the pod, keeping an in-memory nomination the API has not
        caught up with (both old and new objects without NNN)."""
        override: str | None = None
        if not old_pod.status.nominated_node_name and not (
            new_pod_info.pod.status.nominated_node_name
        ):
            override = self._node_of.get(old_pod.metadata.uid)
        self._delete(old_pod.metadata.uid)
        self.add_nominated_pod(new_pod_info, override)

    def delete_nominated_pod_if_exists(self, pod: types_pb2.Pod) -> None:
        self._delete(pod.metadata.uid)

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]:
        """A copy of the list of pods nominated to `node_name`, in nomination order."""
        return list(self._by_node.get(node_name, ()))

    def nominated_node_names(self) -> set[str]:
        """The nodes with at least one nominated pod."""
        return set(self._by_node)

    def nominated_node_name(self, uid: str) -> str | None:
        """The node the pod with `uid` is nominated to in memory, if any."""
        return self._node_of.get(uid)

    def _delete(self, uid: str) -> None:
        node = self._node_of.pop(uid, None)
        if node is None:
            return
        pods = self._by_node.get(node, [])
        for i, pi in enumerate(pods):
            if pi.uid == uid:
                del pods[i]
                break
        if not pods:
            self._by_node.pop(node, None)
