"""upstream pkg/controller/deployment/progress.go: the rollout's status with its Progressing
estimate, and a sync again when a progressing Deployment's deadline would pass."""

from __future__ import annotations

from controllermanager import deployment_util as util
from controllermanager.deployment.sync import RS, DeploymentSync
from kemu.api.v1 import types_pb2


async def sync_rollout_status(s: DeploymentSync, all_rss: list[RS | None], new: RS | None) -> None:
    now = s.tools.clock.now()
    status = util.rollout_status(all_rss, new, s.d, now)
    if status != s.d.status:
        s.d.status.CopyFrom(status)
        await s.write_status()
        return
    requeue_stuck_deployment(s, status, now)


def requeue_stuck_deployment(
    s: DeploymentSync, status: types_pb2.DeploymentStatus, now: float
) -> None:
    """Sync again when the progress deadline would pass."""
    cond = util.get_condition(status, util.PROGRESSING)
    if (
        cond is None
        or not util.has_progress_deadline(s.d)
        or cond.reason in (util.NEW_RS_AVAILABLE_REASON, util.TIMED_OUT_REASON)
        or util.deployment_complete(s.d, status)
    ):
        return
    updated = cond.last_update_time.seconds + cond.last_update_time.nanos / 1e9
    after = updated + s.d.spec.progress_deadline_seconds - now
    s.tools.queue.add_after(s.key, max(0.0, after) + 1.0)
