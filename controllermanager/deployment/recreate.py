"""upstream pkg/controller/deployment/recreate.go: the Recreate strategy.

Scale every old ReplicaSet to 0, wait until none of their pods exists, create and scale up the
new one.
"""

from __future__ import annotations

from controllermanager import deployment_util as util
from controllermanager.controller_utils import CONTROLLER_UID_INDEX
from controllermanager.deployment.progress import sync_rollout_status
from controllermanager.deployment.sync import (
    RS,
    DeploymentSync,
    cleanup_deployment,
    get_all_replica_sets_and_sync_revision,
    scale_replica_set,
)
from kemu.machinery.labels import Selector


async def rollout_recreate(s: DeploymentSync, rss: list[RS], selector: Selector) -> None:
    new, old = await get_all_replica_sets_and_sync_revision(s, rss, create=False)
    scaled = False
    for rs in util.active(old):
        scaled = (await scale_replica_set(s, rs, 0))[0] or scaled
    if scaled:
        await sync_rollout_status(s, [*old, new], new)
        return
    if old_pods_running(s, new, old, rss, selector):
        await sync_rollout_status(s, [*old, new], new)
        return
    if new is None:
        new, old = await get_all_replica_sets_and_sync_revision(s, rss, create=True)
        assert new is not None
    await scale_replica_set(s, new, s.d.spec.replicas)
    if util.deployment_complete(s.d, s.d.status):
        await cleanup_deployment(s, old)
    await sync_rollout_status(s, [*old, new], new)


def old_pods_running(
    s: DeploymentSync, new: RS | None, old: list[RS], rss: list[RS], selector: Selector
) -> bool:
    """Whether an old ReplicaSet still counts pods, or any pod of one exists (even terminating)."""
    if util.actual_replica_count(old) > 0:
        return True
    owned = {rs.metadata.uid for rs in rss}
    if new is not None:
        owned.discard(new.metadata.uid)
    for uid in owned:
        for pod in s.tools.pods.by_index(CONTROLLER_UID_INDEX, uid):
            if not selector.matches(pod.metadata.labels):
                continue
            if pod.status.phase not in ("Succeeded", "Failed"):
                return True
    return False
