"""Pods held at Permit (upstream framework/runtime/waiting_pods_map.go).

A Permit plugin that answers Wait puts the pod in the waiting pods map with a timeout per
plugin. The pod's binding cycle then awaits `WaitingPod.wait()`: it ends with Success once
every waiting plugin called `allow`, or with Unschedulable when anyone calls `reject` or a
plugin's timeout expires ("rejected due to timeout after waiting 10s at plugin X"), or with an
Error when a preemption takes it as a victim (`preempt`, from 1.36: kubernetes#135719, so that
it backs off instead of waiting in the unschedulable pool). The first outcome wins; later
allow/reject/preempt calls do nothing.

Timeouts run on the injected clock and count from the moment Permit answered, but no timer task
exists on its own: `wait()` sleeps towards the earliest pending deadline inside its own task
group, so nothing outlives the binding cycle that waits.
"""

from __future__ import annotations

from collections.abc import Iterator

import anyio

from kemu.api.v1 import types_pb2
from kemu.component.clock import Clock
from kemu.machinery.duration import format_duration
from kemu.scheduling.status import Code, Status


class WaitingPod:
    """A pod waiting at Permit; see the module docstring. Implements interface.WaitingPod."""

    def __init__(self, pod: types_pb2.Pod, timeouts: dict[str, float], clock: Clock) -> None:
        self._pod = pod
        self._clock = clock
        start = clock.monotonic()
        # plugin -> (deadline on the clock's monotonic time, the timeout it asked for)
        self._pending: dict[str, tuple[float, float]] = {
            plugin: (start + timeout, timeout) for plugin, timeout in timeouts.items()
        }
        self._outcome: Status | None = None
        self._done: anyio.Event | None = None  # made by wait(): Permit runs in sync code

    @property
    def pod(self) -> types_pb2.Pod:
        return self._pod

    def pending_plugins(self) -> list[str]:
        return list(self._pending)

    def allow(self, plugin: str) -> None:
        """`plugin` allows the pod; the last pending plugin to allow lets it through."""
        self._pending.pop(plugin, None)
        if not self._pending:
            self._finish(Status())

    def reject(self, plugin: str, message: str) -> None:
        """Rejects the pod (Unschedulable, naming `plugin`) unless it already has an outcome."""
        self._finish(Status(Code.UNSCHEDULABLE, (message,), plugin))

    def preempt(self, plugin: str, message: str) -> bool:
        """A preemption takes the pod as its victim (upstream waitingPod.Preempt): an Error
        naming `plugin`, so that the binding cycle's failure sends it to backoff. False when
        the pod already had an outcome (allowed or rejected): the preemption must then go
        through the API."""
        return self._finish(Status(Code.ERROR, (message,), plugin))

    def _finish(self, status: Status) -> bool:
        if self._outcome is not None:
            return False
        self._outcome = status
        self._pending.clear()
        if self._done is not None:
            self._done.set()
        return True

    async def wait(self) -> Status:
        """Waits for the outcome, rejecting on the earliest pending plugin's timeout."""
        if self._outcome is None:
            done = self._done = anyio.Event()
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._expire)
                await done.wait()
                tg.cancel_scope.cancel()
        assert self._outcome is not None
        return self._outcome

    async def _expire(self) -> None:
        while self._outcome is None and self._pending:
            plugin, (deadline, timeout) = min(self._pending.items(), key=lambda kv: kv[1][0])
            await self._clock.sleep(deadline - self._clock.monotonic())
            # Still pending after its deadline: that plugin timed out. If it allowed the pod
            # meanwhile, look at the next deadline.
            if plugin in self._pending:
                self.reject(
                    plugin,
                    f"rejected due to timeout after waiting {format_duration(timeout)} "
                    f"at plugin {plugin}",
                )

    def __repr__(self) -> str:
        meta = self._pod.metadata
        return f"WaitingPod({meta.namespace}/{meta.name}, pending={sorted(self._pending)})"


class WaitingPodsMap:
    """Waiting pods by uid; one map may be shared by the frameworks of every profile."""

    def __init__(self) -> None:
        self._pods: dict[str, WaitingPod] = {}

    def add(self, wp: WaitingPod) -> None:
        self._pods[wp.pod.metadata.uid] = wp

    def remove(self, uid: str) -> None:
        self._pods.pop(uid, None)

    def get(self, uid: str) -> WaitingPod | None:
        return self._pods.get(uid)

    def __iter__(self) -> Iterator[WaitingPod]:
        return iter(list(self._pods.values()))

    def __len__(self) -> int:
        return len(self._pods)
