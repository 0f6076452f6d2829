"""The Job controller's pod-failure backoff (upstream pkg/controller/job/backoff_utils.go):
per Job, the failures since the last success and the time of the last one: a replacement pod
waits 10 s, 20 s, 40 s, ... (at most 10 min) after a failure (upstream
DefaultJobPodFailureBackOff and MaxJobPodFailureBackOff). In memory, as upstream's."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from kemu.api.v1 import types_pb2

POD_FAILURE_BACKOFF: Final = 10.0
MAX_POD_FAILURE_BACKOFF: Final = 600.0


def finished_time(pod: types_pb2.Pod, now: float) -> float:
    """upstream getFinishedTime: the latest container finish, else the deletion time, else
    now."""
    latest: float | None = None
    for cs in pod.status.container_statuses:
        term = cs.state.terminated
        if cs.state.HasField("terminated") and term.HasField("finished_at"):
            t = term.finished_at.seconds + term.finished_at.nanos / 1e9
            latest = t if latest is None else max(latest, t)
    if latest is not None:
        return latest
    if pod.metadata.HasField("deletion_timestamp"):
        ts = pod.metadata.deletion_timestamp
        return ts.seconds + ts.nanos / 1e9
    return now


@dataclass
class BackoffRecord:
    failures_after_last_success: int = 0
    last_failure: float | None = None

    def remaining(self, now: float) -> float:
        """Seconds before a replacement pod may be created (0: now)."""
        if self.last_failure is None or self.failures_after_last_success == 0:
            return 0.0
        delay: float = min(
            POD_FAILURE_BACKOFF * 2.0 ** (self.failures_after_last_success - 1),
            MAX_POD_FAILURE_BACKOFF,
        )
        return max(0.0, self.last_failure + delay - now)


class BackoffStore:
    """Per Job key, the record of its pod failures (see the module docstring)."""

    def __init__(self) -> None:
        self._records: dict[str, BackoffRecord] = {}

    def new_record(
        self,
        key: str,
        succeeded: Iterable[types_pb2.Pod],
        failed: Iterable[types_pb2.Pod],
        now: float,
    ) -> BackoffRecord:
        """The record after the newly finished pods (upstream newBackoffRecord): a success
        after the last failure resets the count; failures after the last success add up."""
        old = self._records.get(key, BackoffRecord())
        last_success = max((finished_time(p, now) for p in succeeded), default=None)
        failure_times = sorted(finished_time(p, now) for p in failed)
        if last_success is None:
            if not failure_times:
                return BackoffRecord(old.failures_after_last_success, old.last_failure)
            return BackoffRecord(
                old.failures_after_last_success + len(failure_times), failure_times[-1]
            )
        after = [t for t in failure_times if t > last_success]
        return BackoffRecord(len(after), after[-1] if after else None)

    def update(self, key: str, record: BackoffRecord) -> None:
        self._records[key] = record

    def remove(self, key: str) -> None:
        self._records.pop(key, None)
