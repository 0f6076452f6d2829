"""Draining a node for scale-down (upstream core/scaledown/actuation/drain.go, its Evictor):
each pod bound to the node (DaemonSet and mirror pods aside) evicted through pods/eviction with
its grace period capped at --max-graceful-termination-sec, a refusal (a PDB's 429) retried
every EvictionRetryTime for --max-pod-eviction-time, then the pods waited for until gone
(grace + PodEvictionHeadroom); DaemonSet pods evicted best effort (one try, not waited for),
as the flag or a pod's cluster-autoscaler.kubernetes.io/enable-ds-eviction annotation says."""

from __future__ import annotations

import logging
from typing import Final

import anyio

from autoscaler.scale_up import Recorder
from autoscaler.scaledown.options import ScaleDownOptions
from autoscaler.scaledown.rules import is_daemonset_pod
from kemu.api.v1 import types_pb2
from kemu.client.interface import ApiClient
from kemu.component.clock import Clock
from kemu.machinery.errors import ApiError, NotFound
from kemu.machinery.keys import object_key
from kemu.machinery.pod_strategy import TERMINAL_PHASES, spec_grace_seconds
from kemu.machinery.pod_types import is_mirror_pod

logger = logging.getLogger(__name__)

SCALE_DOWN: Final = "ScaleDown"
ENABLE_DS_EVICTION: Final = "cluster-autoscaler.kubernetes.io/enable-ds-eviction"
POLL: Final = 1.0
"""How often the evicted pods are looked for (upstream: 5 s)."""


class DrainFailed(Exception):
    pass


async def pods_to_evict(client: ApiClient, node: str) -> list[types_pb2.Pod]:
    """The pods bound to the node that an eviction must move (from the API, not the
    informer: a pod bound since the plan counts)."""
    listed = await client.list_all(types_pb2.Pod, field_selector=f"spec.nodeName={node}")
    return [
        p
        for p in listed.items
        if not is_mirror_pod(p)
        and not is_daemonset_pod(p)
        and p.status.phase not in TERMINAL_PHASES
    ]


class Evictor:
    """Evicts the pods of nodes being scaled down (upstream Evictor)."""

    def __init__(
        self, options: ScaleDownOptions, client: ApiClient, recorder: Recorder, clock: Clock
    ) -> None:
        self._opts = options
        self._client = client
        self._recorder = recorder
        self._clock = clock

    async def evict_daemonset_pods(self, node: str, enabled: bool) -> None:
        """Best effort: one eviction per DaemonSet pod of the node (`enabled`: the flag, which
        a pod's enable-ds-eviction annotation overrides), errors logged, nothing waited for."""
        try:
            listed = await self._client.list_all(
                types_pb2.Pod, field_selector=f"spec.nodeName={node}"
            )
        except ApiError as e:
            logger.warning("scale-down: node %s: listing its DaemonSet pods: %s", node, e)
            return
        for pod in listed.items:
            if (
                not is_daemonset_pod(pod)
                or is_mirror_pod(pod)
                or pod.status.phase in TERMINAL_PHASES
            ):
                continue
            wanted = pod.metadata.annotations.get(ENABLE_DS_EVICTION, str(enabled).lower())
            if wanted != "true":
                continue
            self._recorder.event(
                pod, "Normal", SCALE_DOWN, "ScaleDown", "deleting pod for node scale down"
            )
            try:
                await self._client.evict(
                    pod.metadata.namespace,
                    pod.metadata.name,
                    grace_period_seconds=self.grace(pod),
                )
                logger.info("scale-down: node %s: evicted DaemonSet pod %s", node, object_key(pod))
            except NotFound:
                pass
            except ApiError as e:
                logger.warning(
                    "scale-down: node %s: evicting DaemonSet pod %s: %s", node, object_key(pod), e
                )

    async def drain_node(self, node: types_pb2.Node) -> None:
        """upstream DrainNode: evicts the node's pods (DaemonSet and mirror pods aside) and
        waits until they are gone; DrainFailed says which could not be evicted or stayed."""
        name = node.metadata.name
        pods = await pods_to_evict(self._client, name)
        logger.info(
            "scale-down: draining node %s: evicting %d pod(s) [%s]",
            name,
            len(pods),
            ", ".join(object_key(p) for p in pods),
        )
        errors: list[str] = []
        grace_max = 0
        async with anyio.create_task_group() as tg:
            for pod in pods:
                grace = self.grace(pod)
                grace_max = max(grace_max, grace)
                tg.start_soon(self._evict, pod, grace, errors)
        if errors:
            raise DrainFailed("; ".join(errors))
        deadline = self._clock.monotonic() + grace_max + self._opts.pod_eviction_headroom
        left = list(pods)
        while True:
            left = [p for p in left if not await self._gone(p, name)]
            if not left:
                logger.info("scale-down: all pods removed from node %s", name)
                return
            if self._clock.monotonic() >= deadline:
                raise DrainFailed(
                    f"pods remaining after timeout: {', '.join(object_key(p) for p in left)}"
                )
            await self._clock.sleep(POLL)

    async def _gone(self, pod: types_pb2.Pod, node: str) -> bool:
        """Deleted, or replaced by a pod of the same name elsewhere (upstream's check)."""
        try:
            now = await self._client.get(types_pb2.Pod, pod.metadata.name, pod.metadata.namespace)
        except NotFound:
            return True
        return now.metadata.uid != pod.metadata.uid or now.spec.node_name != node

    def grace(self, pod: types_pb2.Pod) -> int:
        return min(spec_grace_seconds(pod), self._opts.max_graceful_termination_sec)

    async def _evict(self, pod: types_pb2.Pod, grace: int, errors: list[str]) -> None:
        self._recorder.event(
            pod, "Normal", SCALE_DOWN, "ScaleDown", "deleting pod for node scale down"
        )
        until = self._clock.monotonic() + self._opts.max_pod_eviction_time
        while True:
            try:
                await self._client.evict(
                    pod.metadata.namespace, pod.metadata.name, grace_period_seconds=grace
                )
                return
            except NotFound:
                return
            except ApiError as e:
                if self._clock.monotonic() + self._opts.eviction_retry_time > until:
                    logger.warning("scale-down: failed to evict %s: %s", object_key(pod), e)
                    errors.append(
                        f"failed to evict pod {object_key(pod)} within allowed timeout (last error: {e})"
                    )
                    return
                logger.info("scale-down: eviction of %s refused, retrying: %s", object_key(pod), e)
            await self._clock.sleep(self._opts.eviction_retry_time)
