"""upstream pkg/controller/deployment/rolling.go: the RollingUpdate strategy.

Scale the new ReplicaSet up within replicas + maxSurge (Σ spec.replicas), scale old ones down
keeping replicas - maxUnavailable available (unhealthy old replicas first), clean up old
ReplicaSets beyond revisionHistoryLimit once complete.
"""

from __future__ import annotations

from controllermanager import deployment_util as util
from controllermanager.deployment.progress import sync_rollout_status
from controllermanager.deployment.sync import (
    RS,
    DeploymentSync,
    cleanup_deployment,
    get_all_replica_sets_and_sync_revision,
    scale_replica_set,
)
from kemu.machinery import apps


async def rollout_rolling(s: DeploymentSync, rss: list[RS]) -> None:
    new, old = await get_all_replica_sets_and_sync_revision(s, rss, create=True)
    assert new is not None
    all_rss: list[RS | None] = [*old, new]
    if await reconcile_new_replica_set(s, all_rss, new):
        await sync_rollout_status(s, all_rss, new)
        return
    if await reconcile_old_replica_sets(s, all_rss, util.active(old), new):
        await sync_rollout_status(s, all_rss, new)
        return
    if util.deployment_complete(s.d, s.d.status):
        await cleanup_deployment(s, old)
    await sync_rollout_status(s, all_rss, new)


async def reconcile_new_replica_set(s: DeploymentSync, all_rss: list[RS | None], new: RS) -> bool:
    d = s.d
    if new.spec.replicas == d.spec.replicas:
        return False
    if new.spec.replicas > d.spec.replicas:
        return (await scale_replica_set(s, new, d.spec.replicas))[0]
    count = util.new_rs_new_replicas(d, all_rss, new)
    return (await scale_replica_set(s, new, count))[0]


async def reconcile_old_replica_sets(
    s: DeploymentSync, all_rss: list[RS | None], old: list[RS], new: RS
) -> bool:
    d = s.d
    if util.replica_count(old) == 0:
        return False
    max_down = util.max_scaled_down(d, all_rss, new)
    if max_down <= 0:
        return False
    old, cleaned = await cleanup_unhealthy_replicas(s, old, max_down)
    scaled = await scale_down_old_replica_sets_for_rolling_update(s, [*old, new], old)
    return cleaned + scaled > 0


async def cleanup_unhealthy_replicas(
    s: DeploymentSync, old: list[RS], max_cleanup: int
) -> tuple[list[RS], int]:
    """Old replicas that are not available go first: they would block the rollout."""
    out = util.by_creation(old)
    total = 0
    for i, rs in enumerate(out):
        if total >= max_cleanup:
            break
        if rs.spec.replicas == 0 or rs.spec.replicas == rs.status.available_replicas:
            continue
        down = min(max_cleanup - total, rs.spec.replicas - rs.status.available_replicas)
        if down <= 0:
            # A stale status counts more available replicas than the spec asks for: that
            # would scale up (upstream refuses with an error and retries; kemu skips it).
            continue
        _, out[i] = await scale_replica_set(s, rs, rs.spec.replicas - down)
        total += down
    return out, total


async def scale_down_old_replica_sets_for_rolling_update(
    s: DeploymentSync, all_rss: list[RS], old: list[RS]
) -> int:
    d = s.d
    min_available = d.spec.replicas - apps.max_unavailable(d)
    available = util.available_replica_count(all_rss)
    if available <= min_available:
        return 0
    budget = available - min_available
    total = 0
    for rs in util.by_creation(old):
        if total >= budget:
            break
        if rs.spec.replicas == 0:
            continue
        down = min(rs.spec.replicas, budget - total)
        await scale_replica_set(s, rs, rs.spec.replicas - down)
        total += down
    return total
