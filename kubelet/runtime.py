"""The simulated container runtime: what happens to a pod's containers, and when.

No process runs. A pod admitted at time A starts its containers at A + start-up delay; it may
end by itself after a run duration (annotation `kubelet.kemu.io/run-duration`), exiting 0 or the
code of the annotation `kubelet.kemu.io/exit-code` (non-zero: the pod's phase is Failed;
a container restarts only for a resize whose resizePolicy asks for it, and then its status's
lastState is how its previous instance ended, by the rule below for a deletion; restarts by
restartPolicy are not simulated). When
the pod is deleted, its containers get SIGTERM: each exits 0 after the simulated shutdown
duration (annotation `kubelet.kemu.io/shutdown-duration`; default: at once, as a pause or nginx
container exits on SIGTERM within a second), or is killed with 137 at the end of the grace
period, whichever comes first. A pod whose annotation says `never` ignores SIGTERM, as a
process without a signal handler running as PID 1 does, and lingers through its whole grace
period.

All instants are wall-clock seconds (clock.now()), so that the checkpoint survives a restart of
the kubelet and is read back against the same clock.
"""

from __future__ import annotations

import enum
import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from kemu.api.v1 import types_pb2
from kemu.machinery.duration import DurationError, parse_duration
from kemu.machinery.jsonvalue import JSONObject
from kemu.machinery.resources import max_resources

logger = logging.getLogger(__name__)

STARTUP_DELAY_ANNOTATION: Final = "kubelet.kemu.io/startup-delay"
RUN_DURATION_ANNOTATION: Final = "kubelet.kemu.io/run-duration"
SHUTDOWN_DURATION_ANNOTATION: Final = "kubelet.kemu.io/shutdown-duration"
SHUTDOWN_NEVER: Final = "never"
"""The shutdown duration of a container that ignores SIGTERM: killed at the end of the grace
period."""
DEFAULT_SHUTDOWN_DURATION: Final = 0.0
"""Seconds a container takes to exit on SIGTERM unless its pod or the kubelet's flag says."""
EXIT_CODE_ANNOTATION: Final = "kubelet.kemu.io/exit-code"

# Timers on the monotonic clock and deadlines on the wall clock may disagree by a hair: an
# instant within EPSILON seconds of a deadline has reached it.
EPSILON: Final = 1e-3

EXIT_OK: Final = 0
EXIT_KILLED: Final = 137  # 128 + SIGKILL
DEFAULT_GRACE_PERIOD: Final = 30
"""A pod's terminationGracePeriodSeconds when it has none."""


class PodState(enum.StrEnum):
    PREPARING = "Preparing"
    """Admitted with ResourceClaims (DRA): waits until they are allocated and reserved for it,
    then the drivers' NodePrepareResources takes until prepared_at; its containers start
    after the start-up delay from then (kubelet.dra_manager)."""
    STARTING = "Starting"
    """Admitted; containers are being created until start_at."""
    RUNNING = "Running"
    TERMINATING = "Terminating"
    """Deleted (or preempted by the kubelet for a critical pod: `reason` Preempting);
    containers got SIGTERM and stop at min(shutdown_at, kill_at)."""
    TERMINATED = "Terminated"
    """Every container stopped: a deleted pod is removed from the API next; a preempted one
    stays there, Failed."""
    SUCCEEDED = "Succeeded"
    """Ran its run duration and exited (0, or the exit-code annotation's code: then its phase
    is Failed); stays in the API until someone deletes it."""
    REJECTED = "Rejected"
    """Failed admission; never ran."""


ACTIVE_STATES: Final = frozenset(
    {PodState.PREPARING, PodState.STARTING, PodState.RUNNING, PodState.TERMINATING}
)
"""States whose pods hold resources on the node (upstream's active pods)."""


@dataclass(frozen=True)
class ContainerAllocation:
    """What one container was admitted (or resized) with: quantity strings, as in its spec."""

    requests: Mapping[str, str]
    limits: Mapping[str, str]

    def to_json(self) -> JSONObject:
        return {
            "requests": {k: v for k, v in self.requests.items()},
            "limits": {k: v for k, v in self.limits.items()},
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Mapping[str, str]]) -> ContainerAllocation:
        return cls(dict(data.get("requests", {})), dict(data.get("limits", {})))


PodAllocation = dict[str, ContainerAllocation]
"""Container name -> what it was allocated (init and app containers share one name space)."""


def annotation_exit_code(pod: types_pb2.Pod) -> int:
    """The exit code of the kubelet.kemu.io/exit-code annotation (0 when absent or malformed,
    logged)."""
    text = pod.metadata.annotations.get(EXIT_CODE_ANNOTATION)
    if text is None:
        return EXIT_OK
    try:
        code = int(text)
    except ValueError:
        code = -1
    if not 0 <= code <= 255:
        logger.warning(
            "pod %s/%s: ignoring annotation %s=%r: not an exit code (0-255)",
            pod.metadata.namespace,
            pod.metadata.name,
            EXIT_CODE_ANNOTATION,
            text,
        )
        return EXIT_OK
    return code


def annotation_seconds(pod: types_pb2.Pod, key: str) -> float | None:
    """A duration annotation in seconds; None when absent or malformed (logged)."""
    text = pod.metadata.annotations.get(key)
    if text is None:
        return None
    try:
        return parse_duration(text)
    except DurationError:
        logger.warning(
            "pod %s/%s: ignoring annotation %s=%r: not a duration",
            pod.metadata.namespace,
            pod.metadata.name,
            key,
            text,
        )
        return None


def parse_shutdown(text: str) -> float | None:
    """A shutdown duration: seconds, or None for `never` (the container ignores SIGTERM).
    Raises DurationError."""
    if text.strip() == SHUTDOWN_NEVER:
        return None
    return parse_duration(text)


def annotation_shutdown(pod: types_pb2.Pod, default: float | None) -> float | None:
    """The pod's shutdown duration (kubelet.kemu.io/shutdown-duration): `default` when absent
    or malformed (logged); None when the container ignores SIGTERM."""
    text = pod.metadata.annotations.get(SHUTDOWN_DURATION_ANNOTATION)
    if text is None:
        return default
    try:
        return parse_shutdown(text)
    except DurationError:
        logger.warning(
            "pod %s/%s: ignoring annotation %s=%r: not a duration or %r",
            pod.metadata.namespace,
            pod.metadata.name,
            SHUTDOWN_DURATION_ANNOTATION,
            text,
            SHUTDOWN_NEVER,
        )
        return default


def stop_exit_code(pod: types_pb2.Pod) -> int:
    """How a running container of `pod` ends when the kubelet stops it with the pod's grace
    period (a restart for a resize): 0 if it exits on SIGTERM within it (kemu's containers do
    at once unless the shutdown annotation says otherwise), else killed (137)."""
    grace = (
        pod.spec.termination_grace_period_seconds
        if pod.spec.HasField("termination_grace_period_seconds")
        else DEFAULT_GRACE_PERIOD
    )
    shutdown = annotation_shutdown(pod, 0.0)
    return EXIT_OK if shutdown is not None and shutdown <= grace else EXIT_KILLED


@dataclass(frozen=True)
class LastTermination:
    """How a container's previous instance ended (upstream's lastState.terminated)."""

    started_at: float
    finished_at: float
    exit_code: int

    def to_json(self) -> JSONObject:
        return {
            "startedAt": self.started_at,
            "finishedAt": self.finished_at,
            "exitCode": self.exit_code,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LastTermination:
        return cls(float(data["startedAt"]), float(data["finishedAt"]), int(data["exitCode"]))


@dataclass
class PodRuntime:
    """What the kubelet knows about one admitted (or rejected) pod; checkpointed."""

    uid: str
    namespace: str
    name: str
    state: PodState
    allocation: PodAllocation = field(default_factory=dict)
    requests: dict[str, int] = field(default_factory=dict)
    """The pod's effective requests at its allocation (what admission counts)."""
    admitted_at: float = 0.0
    """status.startTime."""
    start_at: float = 0.0
    started_at: float | None = None
    run_until: float | None = None
    finished_at: float | None = None
    exit_code: int | None = None
    shutdown_at: float | None = None
    kill_at: float | None = None
    reason: str = ""
    message: str = ""
    # In-place resize (kubelet.allocation).
    actual: PodAllocation | None = None
    """What the containers run with while it differs from `allocation` (a resize is being
    actuated); None: the allocation."""
    held_requests: dict[str, int] | None = None
    """What the pod holds while `actual` differs from `allocation`: kemu.machinery.resources
    kubelet_pod_requests of the two, by the emulated version's rule; None: `requests`."""
    actuate_at: float | None = None
    """When the containers are resized to the allocation."""
    resize_generation: int = 0
    """The pod generation of the last accepted resize (PodResizeInProgress's
    observedGeneration)."""
    pending_reason: str = ""
    """PodResizePending's reason (Deferred or Infeasible); empty: no resize pending."""
    pending_message: str = ""
    pending_since: float | None = None
    pending_generation: int = 0
    restarts: dict[str, int] = field(default_factory=dict)
    """Container name -> restartCount (a resize whose policy is RestartContainer)."""
    restarted_at: dict[str, float] = field(default_factory=dict)
    """Container name -> when it last started, if it restarted after the pod started."""
    last_terminated: dict[str, LastTermination] = field(default_factory=dict)
    """Container name -> how its previous instance ended, once it restarted (its status's
    lastState)."""
    pod_ip: str = ""
    """The IP the pod got from the node's pod CIDR (kubelet.network; "" for none yet, and
    for a hostNetwork pod, whose IP is the node's); kept after the pod ends, as its status
    keeps it."""
    prepared_at: float | None = None
    """DRA: when its claims' NodePrepareResources completes (None: not begun); its claims
    stay prepared until the pod stops (kubelet.dra_manager)."""
    prepared_claims: dict[str, list[str]] = field(default_factory=dict)
    """DRA: the claims prepared for it, by uid, each with its devices' drivers."""

    def restart_container(self, name: str, now: float, exit_code: int) -> None:
        """The container was killed and started again (kubelet.resize_action); its previous
        instance, which started at the pod's start or its last restart, ended now with
        `exit_code`."""
        started = self.restarted_at.get(
            name, self.started_at if self.started_at is not None else self.start_at
        )
        self.last_terminated[name] = LastTermination(started, now, exit_code)
        self.restarts[name] = self.restarts.get(name, 0) + 1
        self.restarted_at[name] = now

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def active(self) -> bool:
        return self.state in ACTIVE_STATES

    def held(self) -> dict[str, int]:
        """The requests this pod holds on its node (admission and resizes count it so)."""
        return self.requests if self.held_requests is None else self.held_requests

    def next_deadline(self) -> float | None:
        """The next instant at which this pod changes by itself, if any."""
        if self.state == PodState.PREPARING:
            return self.prepared_at
        if self.state == PodState.STARTING:
            return self.start_at
        if self.state == PodState.RUNNING:
            deadlines = [t for t in (self.run_until, self.actuate_at) if t is not None]
            return min(deadlines) if deadlines else None
        if self.state == PodState.TERMINATING:
            return self.stop_at()
        return None

    def stop_at(self) -> float:
        """When a terminating pod's containers are all stopped."""
        return min(
            self.shutdown_at if self.shutdown_at is not None else math.inf,
            self.kill_at if self.kill_at is not None else math.inf,
        )

    def to_json(self) -> JSONObject:
        data: JSONObject = {
            "uid": self.uid,
            "namespace": self.namespace,
            "name": self.name,
            "state": str(self.state),
            "allocation": {name: a.to_json() for name, a in self.allocation.items()},
            "requests": {k: v for k, v in self.requests.items()},
            "admittedAt": self.admitted_at,
            "startAt": self.start_at,
        }
        for key, value in (
            ("startedAt", self.started_at),
            ("runUntil", self.run_until),
            ("finishedAt", self.finished_at),
            ("exitCode", self.exit_code),
            ("shutdownAt", self.shutdown_at),
            ("killAt", self.kill_at),
        ):
            if value is not None:
                data[key] = value
        if self.reason:
            data["reason"] = self.reason
            data["message"] = self.message
        if self.actual is not None:
            data["actual"] = {name: a.to_json() for name, a in self.actual.items()}
            data["heldRequests"] = {k: v for k, v in (self.held_requests or {}).items()}
        if self.actuate_at is not None:
            data["actuateAt"] = self.actuate_at
        if self.resize_generation:
            data["resizeGeneration"] = self.resize_generation
        if self.pending_reason:
            data["pending"] = {
                "reason": self.pending_reason,
                "message": self.pending_message,
                "since": self.pending_since,
                "generation": self.pending_generation,
            }
        if self.restarts:
            data["restarts"] = {k: v for k, v in self.restarts.items()}
            data["restartedAt"] = {k: v for k, v in self.restarted_at.items()}
            data["lastTerminated"] = {k: v.to_json() for k, v in self.last_terminated.items()}
        if self.pod_ip:
            data["podIP"] = self.pod_ip
        if self.prepared_at is not None:
            data["preparedAt"] = self.prepared_at
        if self.prepared_claims:
            data["preparedClaims"] = {k: list(v) for k, v in self.prepared_claims.items()}
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PodRuntime:
        def opt_float(key: str) -> float | None:
            value = data.get(key)
            return None if value is None else float(value)

        exit_code = data.get("exitCode")
        actual = data.get("actual")
        pending = dict(data.get("pending", {}))
        since = pending.get("since")
        return cls(
            uid=str(data["uid"]),
            namespace=str(data["namespace"]),
            name=str(data["name"]),
            state=PodState(data["state"]),
            allocation={
                name: ContainerAllocation.from_json(a)
                for name, a in dict(data.get("allocation", {})).items()
            },
            requests={k: int(v) for k, v in dict(data.get("requests", {})).items()},
            admitted_at=float(data.get("admittedAt", 0.0)),
            start_at=float(data.get("startAt", 0.0)),
            started_at=opt_float("startedAt"),
            run_until=opt_float("runUntil"),
            finished_at=opt_float("finishedAt"),
            exit_code=None if exit_code is None else int(exit_code),
            shutdown_at=opt_float("shutdownAt"),
            kill_at=opt_float("killAt"),
            reason=str(data.get("reason", "")),
            message=str(data.get("message", "")),
            actual=None
            if actual is None
            else {name: ContainerAllocation.from_json(a) for name, a in dict(actual).items()},
            held_requests=None if actual is None else _held_requests(data),
            actuate_at=opt_float("actuateAt"),
            resize_generation=int(data.get("resizeGeneration", 0)),
            pending_reason=str(pending.get("reason", "")),
            pending_message=str(pending.get("message", "")),
            pending_since=None if since is None else float(since),
            pending_generation=int(pending.get("generation", 0)),
            restarts={k: int(v) for k, v in dict(data.get("restarts", {})).items()},
            restarted_at={k: float(v) for k, v in dict(data.get("restartedAt", {})).items()},
            last_terminated={
                k: LastTermination.from_json(v)
                for k, v in dict(data.get("lastTerminated", {})).items()
            },
            pod_ip=str(data.get("podIP", "")),
            prepared_at=opt_float("preparedAt"),
            prepared_claims={
                str(k): [str(d) for d in v] for k, v in dict(data.get("preparedClaims", {})).items()
            },
        )


def _held_requests(data: Mapping[str, Any]) -> dict[str, int]:
    def ints(key: str) -> dict[str, int]:
        return {k: int(v) for k, v in dict(data.get(key, {})).items()}

    if "heldRequests" in data:
        return ints("heldRequests")
    # A checkpoint from before heldRequests kept the actual sum: the pod held the larger of
    # it and the allocation's sum (the max-of-sums rule it was written with).
    return max_resources(ints("requests"), ints("actualRequests"))
