"""A process's steps at one virtual instant (docs/virtual-time.md, the order rule): work that
starts only once the whole cluster is quiescent, one step of the cluster at a time, as the
event-driven clock's driver releases them. A scheduling cycle is one (which pods are queued,
and what the cycle finds of the others' work, then does not depend on how fast that work ran
in wall time); so is a binding cycle's look at the others' work (VolumeBinding's and
DynamicResources' PreBind polls: a claim provisioned at the instant of a poll is seen by it,
whichever process's timer ran first); so is the cluster autoscaler's loop. Only while the cluster clock holds (rate 0, and rate
max between its jumps) and the process is in session: at a scaled rate, or before its
session, a step is taken at once.

`VirtualClock.steps` is the process's; `kemu.component.virtual_clock.take_step(clock, order)`
takes one on any clock (at once on the host's)."""

from __future__ import annotations

import enum
import itertools
from collections.abc import Callable

import anyio


class StepOrder(enum.IntEnum):
    """Which of a process's steps waiting at one instant is released first (then the one
    that began waiting first)."""

    BINDING_CYCLE = 0
    """A binding cycle's look at the others' work (PreBind's polls): what is due at the
    instant, a binding cycle's included, goes before the next scheduling cycle, as a
    binding cycle's own work woken at the instant does (the cycle waits for quiescence)."""
    ASYNC_PREEMPTION = 1
    """An asynchronous preemption's last victim (scheduler/preemption_executor.py): its
    calls wait until the reactions to the other victims' are in, so that DefaultPreemption's
    PreEnqueue reads those victims' events while the preemption is under way, whichever
    came first in wall time (the watch events or the answers to its calls)."""
    SCHEDULING_CYCLE = 2
    """The scheduling queue's pop."""
    LOOP = 3
    """A component's periodic pass over what it reads of the cluster (the cluster
    autoscaler's RunOnce): at the instant of a loop, a pod ending or a node registering is
    seen whichever timer ran first."""


class ClockSteps:
    def __init__(self) -> None:
        self._numbers = itertools.count(1)
        self._waiting: dict[int, tuple[StepOrder, anyio.Event]] = {}
        """By step number: its order and what releases it."""
        self._holding: Callable[[], bool] = lambda: False
        self._changed: Callable[[], None] = lambda: None

    @property
    def waiting(self) -> int:
        """The step to be released next (0: none), reported in the session: the first by
        StepOrder, then by number."""
        if not self._waiting:
            return 0
        return min(self._waiting, key=lambda n: (self._waiting[n][0], n))

    def attach(self, holding: Callable[[], bool], changed: Callable[[], None]) -> None:
        """In session: `holding()` says whether the cluster clock holds; `changed()` sends a
        report."""
        self._holding = holding
        self._changed = changed

    def detach(self) -> None:
        """Out of session (the apiserver away): the steps waited for are taken."""
        self._holding = lambda: False
        self._changed = lambda: None
        self._release_all()

    def rate_changed(self) -> None:
        if not self._holding():
            self._release_all()

    async def take(self, order: StepOrder) -> None:
        """Returns once this process may take this step."""
        if not self._holding():
            return
        number = next(self._numbers)
        released = anyio.Event()
        self._waiting[number] = (order, released)
        if self.waiting == number:
            self._changed()
        try:
            await released.wait()
        finally:
            first = self.waiting == number
            if self._waiting.pop(number, None) is not None and first and self._waiting:
                self._changed()  # (cancelled while first: the next is)

    def release(self, step: int) -> None:
        """Releases `step` if it is the one to be released next (one the process no longer
        reports first, from an older report: nothing); the next one waiting, if any, is
        reported."""
        if not step or step != self.waiting:
            return
        _, released = self._waiting.pop(step)
        released.set()
        if self._waiting:
            self._changed()

    def _release_all(self) -> None:
        waiting, self._waiting = self._waiting, {}
        for _, released in waiting.values():
            released.set()
