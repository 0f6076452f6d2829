"""SchedulerAsyncAPICalls' call queue and dispatcher (scheduler.api_dispatcher), after
upstream's pkg/scheduler/backend/api_dispatcher/call_queue_test.go and api_dispatcher_test.go."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import anyio
import anyio.lowlevel
import pytest
from prometheus_client import CollectorRegistry

from kemu.api.v1 import types_pb2
from kemu.client.interface import ApiClient
from kemu.component.clock import RealClock
from kemu.machinery.errors import ApiError
from scheduler.api_dispatcher import (
    POD_BINDING,
    POD_STATUS_PATCH,
    APICall,
    APIDispatcher,
    CallOverwritten,
    CallQueue,
    CallSkipped,
    PodStatusPatchCall,
)

LOW, HIGH = "low", "high"
RELEVANCES = {LOW: 1, HIGH: 2}


@dataclass
class Mock:
    uid: str
    call_type: str
    noop: bool = False
    merged_from: list[APICall] = field(default_factory=list)
    noop_after_merge: bool = False
    executed: int = 0

    def is_noop(self) -> bool:
        return self.noop

    def merge(self, old: APICall) -> None:
        self.merged_from.append(old)
        if self.noop_after_merge:
            self.noop = True

    async def execute(self, client: ApiClient) -> None:
        self.executed += 1


class Finished:
    def __init__(self) -> None:
        self.errors: list[Exception | None] = []

    def __call__(self, err: Exception | None) -> None:
        self.errors.append(err)


def queue() -> tuple[CallQueue, dict[str, int]]:
    pending: dict[str, int] = {}

    def count(call_type: str, delta: int) -> None:
        pending[call_type] = pending.get(call_type, 0) + delta

    return CallQueue(RELEVANCES, count), pending


def test_first_call_is_added_without_collision() -> None:
    q, pending = queue()
    call = Mock("uid1", LOW)
    q.add(call)
    assert pending == {LOW: 1} and len(q) == 1 and q.call_of("uid1") is call


def test_noop_call_is_skipped() -> None:
    q, pending = queue()
    done = Finished()
    with pytest.raises(CallSkipped):
        q.add(Mock("uid1", LOW, noop=True), done)
    assert len(q) == 0 and q.call_of("uid1") is None and pending.get(LOW, 0) == 0
    assert isinstance(done.errors[0], CallSkipped)


def test_two_calls_for_different_objects_do_not_collide() -> None:
    q, pending = queue()
    q.add(Mock("uid1", LOW))
    q.add(Mock("uid2", HIGH))
    assert pending == {LOW: 1, HIGH: 1} and len(q) == 2


def test_new_call_overwrites_less_relevant_call() -> None:
    """A binding after a status patch of the same pod takes its place."""
    q, pending = queue()
    low_done = Finished()
    high = Mock("uid1", HIGH)
    q.add(Mock("uid1", LOW), low_done)
    q.add(high)
    assert pending == {LOW: 0, HIGH: 1} and len(q) == 1 and q.call_of("uid1") is high
    assert isinstance(low_done.errors[0], CallOverwritten)


def test_new_call_is_skipped_if_less_relevant() -> None:
    """A status patch after a binding of the same pod is dropped."""
    q, pending = queue()
    high = Mock("uid1", HIGH)
    low_done = Finished()
    q.add(high)
    with pytest.raises(CallSkipped):
        q.add(Mock("uid1", LOW), low_done)
    assert pending == {HIGH: 1} and q.call_of("uid1") is high
    assert isinstance(low_done.errors[0], CallSkipped)


def test_new_call_merges_with_old_call_and_skips_if_noop() -> None:
    q, pending = queue()
    done1, done2, done3 = Finished(), Finished(), Finished()
    call1, call2 = Mock("uid1", LOW), Mock("uid1", LOW)
    q.add(call1, done1)
    q.add(call2, done2)
    assert call2.merged_from == [call1] and q.call_of("uid1") is call2
    assert pending == {LOW: 1} and len(q) == 1
    assert isinstance(done1.errors[0], CallOverwritten)
    with pytest.raises(CallSkipped):
        q.add(Mock("uid1", LOW, noop_after_merge=True), done3)
    assert pending == {LOW: 0} and len(q) == 0 and q.call_of("uid1") is None
    assert isinstance(done2.errors[0], CallOverwritten)
    assert isinstance(done3.errors[0], CallSkipped)


def test_calls_are_popped_in_fifo_order() -> None:
    q, pending = queue()
    call1, call2 = Mock("uid1", LOW), Mock("uid2", LOW)
    q.add(call1)
    q.add(call2)
    first = q.pop()
    assert first is not None and first.call is call1 and pending == {LOW: 1}
    assert q.in_flight("uid1") and not q.in_flight("uid2")
    second = q.pop()
    assert second is not None and second.call is call2 and pending == {LOW: 0}
    assert q.pop() is None


def test_call_details_are_cleared_if_there_is_no_waiting_call() -> None:
    q, pending = queue()
    q.add(Mock("uid", LOW))
    popped = q.pop()
    assert popped is not None
    q.finalize(popped)
    assert pending == {LOW: 0} and len(q) == 0 and q.call_of("uid") is None
    assert not q.in_flight("uid")


def test_uid_is_requeued_if_a_new_call_arrived_while_one_was_in_flight() -> None:
    q, pending = queue()
    q.add(Mock("uid", LOW))
    popped = q.pop()
    assert popped is not None
    call2 = Mock("uid", LOW)
    q.add(call2)
    assert len(q) == 0  # (waits for the one in flight)
    q.finalize(popped)
    assert pending == {LOW: 1} and len(q) == 1 and q.call_of("uid") is call2
    assert not q.in_flight("uid")


def test_more_relevant_call_waits_for_the_one_in_flight() -> None:
    """A binding queued while the pod's status patch is in flight runs after it, and the
    patch in flight is not told it was overwritten."""
    q, pending = queue()
    low_done = Finished()
    q.add(Mock("uid", LOW), low_done)
    popped = q.pop()
    assert popped is not None
    high = Mock("uid", HIGH)
    q.add(high)
    assert low_done.errors == [] and len(q) == 0
    q.finalize(popped)
    again = q.pop()
    assert again is not None and again.call is high and pending == {LOW: 0, HIGH: 0}


def test_noop_call_is_kept_while_the_objects_call_is_in_flight() -> None:
    q, _ = queue()
    q.add(Mock("uid", LOW))
    popped = q.pop()
    assert popped is not None
    noop = Mock("uid", LOW, noop=True)
    q.add(noop)
    q.finalize(popped)
    assert q.call_of("uid") is noop and len(q) == 1


def test_upstream_relevances_and_status_patch_merge() -> None:
    """api_calls.go: a binding (2) outranks a status patch (1); a newer status patch keeps
    the older one's nomination when it has none of its own."""
    q = CallQueue()
    pod = types_pb2.Pod(metadata=types_pb2.ObjectMeta(name="p", namespace="d", uid="u"))
    old = PodStatusPatchCall(pod, "Unschedulable", "a", "node-1", now=1.0, tracking=False)
    new = PodStatusPatchCall(pod, "Unschedulable", "b", None, now=2.0, tracking=False)
    assert old.call_type == POD_STATUS_PATCH
    q.add(old)
    q.add(new)
    assert new.nominated == "node-1"
    assert not new.is_noop()


def test_dispatcher_executes_calls_and_counts_them() -> None:
    registry = CollectorRegistry()

    class Binder:
        async def bind(self, namespace: str, name: str, node_name: str, *, uid: str) -> None:
            if name == "gone":
                raise ApiError("not found")

    async def main() -> None:
        dispatcher = APIDispatcher(Binder(), RealClock(), registry, parallelism=2)  # type: ignore[arg-type]
        async with anyio.create_task_group() as tg:
            await tg.start(dispatcher.run)
            await dispatcher.bind("d", "p", "node-1", uid="u1")
            with pytest.raises(ApiError):
                await dispatcher.bind("d", "gone", "node-1", uid="u2")
            tg.cancel_scope.cancel()

    anyio.run(main)
    total = "scheduler_async_api_call_execution_total"
    assert registry.get_sample_value(total, {"call_type": POD_BINDING, "result": "success"}) == 1
    assert registry.get_sample_value(total, {"call_type": POD_BINDING, "result": "error"}) == 1
    pending = registry.get_sample_value(
        "scheduler_pending_async_api_calls", {"call_type": POD_BINDING}
    )
    assert pending == 0


def test_dispatcher_runs_its_calls_in_parallel() -> None:
    """All `parallelism` workers take calls: four calls that each wait until all four are in
    flight finish (one worker alone would wait forever)."""
    registry = CollectorRegistry()
    started = 0
    all_in = anyio.Event()

    class Binder:
        async def bind(self, namespace: str, name: str, node_name: str, *, uid: str) -> None:
            nonlocal started
            started += 1
            if started == 4:
                all_in.set()
            await all_in.wait()

    async def main() -> None:
        dispatcher = APIDispatcher(Binder(), RealClock(), registry, parallelism=4)  # type: ignore[arg-type]
        async with anyio.create_task_group() as tg:
            await tg.start(dispatcher.run)
            await anyio.lowlevel.checkpoint()  # (the workers wait for a call)
            with anyio.fail_after(5):
                async with anyio.create_task_group() as binds:
                    for i in range(4):
                        binds.start_soon(
                            functools.partial(dispatcher.bind, "d", f"p{i}", "n", uid=f"u{i}")
                        )
            tg.cancel_scope.cancel()

    anyio.run(main)
    total = "scheduler_async_api_call_execution_total"
    assert registry.get_sample_value(total, {"call_type": POD_BINDING, "result": "success"}) == 4


def test_a_nomination_only_patch_merges_with_a_failure_patch() -> None:
    """Preemption's clearing of a lower-priority nomination (no condition) queued after the
    pod's failure patch: one call that writes the failure's condition and clears the NNN."""
    q = CallQueue()
    pod = types_pb2.Pod(metadata=types_pb2.ObjectMeta(name="p", namespace="d", uid="u"))
    pod.status.nominated_node_name = "node-1"
    failure = PodStatusPatchCall(pod, "Unschedulable", "0/1 nodes", None, now=1.0, tracking=False)
    clear = PodStatusPatchCall(pod, None, "", "", now=2.0, tracking=False)
    q.add(failure)
    q.add(clear)
    assert q.call_of("u") is clear and len(q) == 1
    assert (clear.reason, clear.message, clear.nominated) == ("Unschedulable", "0/1 nodes", "")
    # nothing to clear on a pod without a nomination: a no-op, skipped
    bare = types_pb2.Pod(metadata=types_pb2.ObjectMeta(name="q", namespace="d", uid="v"))
    with pytest.raises(CallSkipped):
        q.add(PodStatusPatchCall(bare, None, "", "", now=2.0, tracking=False))
