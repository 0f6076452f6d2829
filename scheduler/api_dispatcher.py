"""SchedulerAsyncAPICalls (KEP-5229): the scheduler's API calls queued and sent by a fixed
number of workers instead of inline in its cycles.

Upstream: pkg/scheduler/backend/api_dispatcher/ (APIDispatcher, call_queue.go,
goroutines_limiter.go) and pkg/scheduler/framework/api_calls/ (PodStatusPatchCall,
PodBindingCall, their relevances). With the gate on, handleSchedulingFailure queues the
PodScheduled=False status patch and goes on (schedule_one.go), and DefaultBinder's Bind queues a
binding and waits for it (defaultbinder/default_binder.go over the APICacher). The workers send
the calls through the scheduler's one client, so a queued status patch and a binding share its
token bucket (kemu.client.flowcontrol): kubernetes/kubernetes#135900.

The call queue's rules (call_queue.go): at most one call per object (its uid) is queued or in
flight. A new call for an object that has one is
- skipped when it is less relevant than the old one (a status patch after a binding);
- put in place of the old one when its type differs and is more relevant (a binding after a
  status patch: the status patch is told it was overwritten), or, when the old one is in
  flight, kept to run after it;
- merged with the old one when the types are equal (the newer status patch keeps the older
  one's nomination when it has none of its own), the old one told it was overwritten.
A call that would change nothing (IsNoOp) is skipped unless the object has a call in flight.
The queue is FIFO by object: an overwritten or merged call keeps its object's place.

Metrics (pkg/scheduler/metrics/metrics.go, registered only with the gate on):
scheduler_async_api_call_execution_total{call_type,result},
scheduler_async_api_call_execution_duration_seconds{call_type,result} and
scheduler_pending_async_api_calls{call_type}.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Final, Protocol, TypeVar

import anyio
from anyio.abc import TaskStatus
from google.protobuf.message import Message
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from kemu.api.v1 import types_pb2
from kemu.client.flowcontrol import ThrottleWaits, counting_into, current_waits
from kemu.client.interface import ApiClient
from kemu.client.pod_status import StatusChange, condition_change, patch_pod_status
from kemu.component.clock import Clock
from kemu.machinery.errors import ApiError, Conflict, NotFound
from kemu.machinery.jsonvalue import JSONObject

__all__ = [
    "POD_BINDING",
    "POD_STATUS_PATCH",
    "PARALLELISM",
    "RELEVANCES",
    "APICall",
    "APIDispatcher",
    "AsyncAPIMetrics",
    "CallOverwritten",
    "CallQueue",
    "CallSkipped",
    "DispatchedBinds",
    "PodBindingCall",
    "PodStatusPatchCall",
]

logger = logging.getLogger(__name__)

POD_STATUS_PATCH: Final = "pod_status_patch"
POD_BINDING: Final = "pod_binding"
RELEVANCES: Final[Mapping[str, int]] = {POD_STATUS_PATCH: 1, POD_BINDING: 2}
"""api_calls.go Relevances: a binding supersedes a status patch."""
PARALLELISM: Final = 16
"""pkg/scheduler/scheduler.go: the dispatcher's goroutines (APIDispatcherParallelism)."""
_BUCKETS: Final = tuple(0.001 * 2**i for i in range(15))  # ExponentialBuckets(0.001, 2, 15)

_Obj = TypeVar("_Obj", bound=Message)
OnFinish = Callable[[Exception | None], None]


class CallSkipped(Exception):
    """fwk.ErrCallSkipped: the call was not queued (less relevant than the one there, or it
    would change nothing)."""


class CallOverwritten(Exception):
    """fwk.ErrCallOverwritten: a newer call for the object took this one's place."""


class APICall(Protocol):
    """fwk.APICall: one call about one object."""

    @property
    def call_type(self) -> str: ...

    @property
    def uid(self) -> str: ...

    def is_noop(self) -> bool: ...

    def merge(self, old: APICall) -> None:
        """Takes from `old` (of the same type) what this call lacks."""
        ...

    async def execute(self, client: ApiClient) -> None: ...


@dataclass
class PodStatusPatchCall:
    """api_calls/pod_status_patch.go: PodScheduled=False with the failure's reason and message
    (none when `reason` is None: preemption's clearing of a lower-priority nomination) and,
    when `nominated` is not None, status.nominatedNodeName ("" clears it); on the pod as the
    informer had it when the call was queued (kemu.client.pod_status's condition_change)."""

    pod: types_pb2.Pod
    reason: str | None
    message: str
    nominated: str | None
    now: float
    tracking: bool
    call_type: str = field(default=POD_STATUS_PATCH, init=False)

    @property
    def uid(self) -> str:
        return self.pod.metadata.uid

    def _change(self) -> StatusChange:
        if self.reason is None:
            return _nomination_change(self.nominated)
        return condition_change(
            "PodScheduled",
            "False",
            self.reason,
            self.message,
            now=self.now,
            tracking=self.tracking,
            nominated_node_name=self.nominated,
        )

    def is_noop(self) -> bool:
        return self._change()(self.pod) is None

    def merge(self, old: APICall) -> None:
        """The older call's nomination when this one has none, and its condition when this
        one has none (both write PodScheduled only: the newer's wins)."""
        if not isinstance(old, PodStatusPatchCall):
            return
        if self.nominated is None:
            self.nominated = old.nominated
        if self.reason is None and old.reason is not None:
            self.reason, self.message = old.reason, old.message

    async def execute(self, client: ApiClient) -> None:
        await patch_pod_status(client, self.pod, self._change())


def _nomination_change(nominated: str | None) -> StatusChange:
    def change(current: types_pb2.Pod) -> JSONObject | None:
        if nominated is None or current.status.nominated_node_name == nominated:
            return None
        return {"nominatedNodeName": nominated or None}

    return change


@dataclass
class PodBindingCall:
    """api_calls/pod_binding.go: the pods/binding subresource, the pod's uid a precondition."""

    namespace: str
    name: str
    pod_uid: str
    node_name: str
    call_type: str = field(default=POD_BINDING, init=False)

    @property
    def uid(self) -> str:
        return self.pod_uid

    def is_noop(self) -> bool:
        return False

    def merge(self, old: APICall) -> None:
        pass

    async def execute(self, client: ApiClient) -> None:
        await client.bind(self.namespace, self.name, self.node_name, uid=self.pod_uid)


@dataclass
class _Queued:
    call: APICall
    on_finish: OnFinish | None
    call_id: int
    waits: ThrottleWaits | None = None
    """Where the call's wait for the client's tokens is counted: the queuing binding cycle's
    (kemuctl why's throttled seconds of its Bind), though a worker makes the call."""

    def finish(self, err: Exception | None) -> None:
        if self.on_finish is not None:
            self.on_finish(err)


class AsyncAPIMetrics:
    """The three series upstream registers with the gate on."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.calls = Counter(
            "scheduler_async_api_call_execution",
            "Total number of API calls executed by the async dispatcher.",
            ["call_type", "result"],
            registry=registry,
        )
        self.duration = Histogram(
            "scheduler_async_api_call_execution_duration_seconds",
            "Duration in seconds for executing API call in the async dispatcher.",
            ["call_type", "result"],
            buckets=_BUCKETS,
            registry=registry,
        )
        self.pending = Gauge(
            "scheduler_pending_async_api_calls",
            "Number of API calls currently pending in the async queue.",
            ["call_type"],
            registry=registry,
        )


class CallQueue:
    """call_queue.go's callQueue (see the module docstring for its rules); single-threaded
    (the event loop), so no lock. `pending` is told each change of the pending count."""

    def __init__(
        self,
        relevances: Mapping[str, int] = RELEVANCES,
        pending: Callable[[str, int], None] | None = None,
    ) -> None:
        self._relevances = relevances
        self._pending = pending or (lambda _type, _delta: None)
        self._ids = 0
        self._calls: dict[str, _Queued] = {}
        self._queue: deque[str] = deque()
        self._in_flight: set[str] = set()
        self._ready = anyio.Event()

    def __len__(self) -> int:
        return len(self._queue)

    def call_of(self, uid: str) -> APICall | None:
        queued = self._calls.get(uid)
        return None if queued is None else queued.call

    def in_flight(self, uid: str) -> bool:
        return uid in self._in_flight

    def add(self, call: APICall, on_finish: OnFinish | None = None) -> None:
        """Queues `call`, merged with or in place of the object's call; raises CallSkipped
        (and tells `on_finish`) when it is not queued."""
        new = _Queued(call, on_finish, self._ids, current_waits())
        self._ids += 1
        old = self._calls.get(call.uid)
        if old is not None:
            self._merge(old, new)
        uid = call.uid
        if call.is_noop() and uid not in self._in_flight:
            if old is not None:
                self._remove_pending(uid)
            err = CallSkipped("call does not need to be executed because it has no effect")
            new.finish(err)
            raise err
        self._calls[uid] = new
        if old is None:
            self._queue.append(uid)
            self._pending(call.call_type, 1)
            self._ready.set()

    def _merge(self, old: _Queued, new: _Queued) -> None:
        old_type, new_type = old.call.call_type, new.call.call_type
        if self._relevances[new_type] < self._relevances[old_type]:
            err = CallSkipped("a more relevant call is already enqueued for this object")
            new.finish(err)
            raise err
        if old_type != new_type:
            if old.call.uid in self._in_flight:
                return  # it runs after the one in flight
            self._pending(old_type, -1)
            self._pending(new_type, 1)
            old.finish(CallOverwritten("a more relevant call was enqueued for this object"))
            return
        new.call.merge(old.call)
        old.finish(CallOverwritten("a call of the same type was enqueued for this object"))

    def _remove_pending(self, uid: str) -> None:
        queued = self._calls.pop(uid, None)
        if queued is None or uid in self._in_flight:
            return
        self._queue.remove(uid)
        self._pending(queued.call.call_type, -1)

    def pop(self) -> _Queued | None:
        """The first object's call, now in flight (finalize it when done); None when empty."""
        if not self._queue:
            return None
        uid = self._queue.popleft()
        queued = self._calls[uid]
        self._in_flight.add(uid)
        self._pending(queued.call.call_type, -1)
        return queued

    async def wait(self) -> None:
        """Until a call is queued (every waiting worker waits on the one event; a new one is
        made only once it has been set)."""
        while not self._queue:
            if self._ready.is_set():
                self._ready = anyio.Event()
            await self._ready.wait()

    def finalize(self, done: _Queued) -> None:
        """After `done` ran: the object's newer call, if one came meanwhile, queued again."""
        uid = done.call.uid
        self._in_flight.discard(uid)
        current = self._calls.get(uid)
        if current is None:
            return
        if current.call_id == done.call_id:
            del self._calls[uid]
            return
        self._queue.append(uid)
        self._pending(current.call.call_type, 1)
        self._ready.set()


class APIDispatcher:
    """api_dispatcher.go's APIDispatcher: `parallelism` workers pop calls and execute them with
    `client` (the scheduler's own, rate limited)."""

    def __init__(
        self,
        client: ApiClient,
        clock: Clock,
        registry: CollectorRegistry,
        parallelism: int = PARALLELISM,
    ) -> None:
        self.client = client
        self._clock = clock
        self.metrics = AsyncAPIMetrics(registry)
        self.queue = CallQueue(pending=lambda t, d: self.metrics.pending.labels(t).inc(d))
        self._parallelism = parallelism

    def add(self, call: APICall, on_finish: OnFinish | None = None) -> None:
        self.queue.add(call, on_finish)

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        async with anyio.create_task_group() as tg:
            for _ in range(self._parallelism):
                tg.start_soon(self._worker)
            task_status.started()

    async def _worker(self) -> None:
        while True:
            await self.queue.wait()
            queued = self.queue.pop()
            if queued is None:
                continue
            call = queued.call
            start = self._clock.monotonic()
            err: Exception | None = None
            try:
                with counting_into(queued.waits):
                    await call.execute(self.client)
            except ApiError as e:
                err = e
                log = logger.debug if isinstance(e, NotFound | Conflict) else logger.warning
                log("async %s call for %s failed: %s", call.call_type, call.uid, e)
            result = "success" if err is None else "error"
            self.metrics.calls.labels(call.call_type, result).inc()
            self.metrics.duration.labels(call.call_type, result).observe(
                self._clock.monotonic() - start
            )
            self.queue.finalize(queued)
            queued.finish(err)

    async def bind(self, namespace: str, name: str, node_name: str, *, uid: str) -> None:
        """DefaultBinder's Bind with the gate on: queues the binding and waits for its end
        (APICacher.BindPod then WaitOnFinish); raises its error (ApiError) or CallSkipped /
        CallOverwritten."""
        done = anyio.Event()
        outcome: list[Exception | None] = []

        def on_finish(err: Exception | None) -> None:
            outcome.append(err)
            done.set()

        try:
            self.add(PodBindingCall(namespace, name, uid, node_name), on_finish)
        except CallSkipped as e:
            raise ApiError(f"binding of {namespace}/{name} not sent: {e}") from None
        await done.wait()
        err = outcome[0]
        if isinstance(err, CallSkipped | CallOverwritten):
            raise ApiError(f"binding of {namespace}/{name} not sent: {err}")
        if err is not None:
            raise err


class DispatchedBinds:
    """The plugins' client (kemu.scheduling.interface.SchedulingApi) with the gate on: Bind
    through the dispatcher, every other call straight through `client` (upstream's plugins
    keep their direct calls too)."""

    def __init__(self, client: ApiClient, dispatcher: APIDispatcher) -> None:
        self._client = client
        self._dispatcher = dispatcher

    async def bind(
        self,
        namespace: str,
        name: str,
        node_name: str,
        *,
        annotations: Mapping[str, str] | None = None,
        uid: str = "",
        resource_version: str = "",
    ) -> None:
        if annotations or resource_version:  # (not DefaultBinder's: straight through)
            await self._client.bind(
                namespace,
                name,
                node_name,
                annotations=annotations,
                uid=uid,
                resource_version=resource_version,
            )
            return
        await self._dispatcher.bind(namespace, name, node_name, uid=uid)

    async def update(self, obj: _Obj) -> _Obj:
        return await self._client.update(obj)

    async def update_status(self, obj: _Obj) -> _Obj:
        return await self._client.update_status(obj)

    async def patch(
        self,
        kind: type[_Obj],
        name: str,
        patch: Mapping[str, object] | str,
        namespace: str = "",
        *,
        subresource: str = "",
    ) -> _Obj:
        return await self._client.patch(kind, name, patch, namespace, subresource=subresource)

    async def get(self, kind: type[_Obj], name: str, namespace: str = "") -> _Obj:
        return await self._client.get(kind, name, namespace)

    async def create(self, obj: _Obj) -> _Obj:
        return await self._client.create(obj)

    async def delete(
        self, kind: type[_Obj], name: str, namespace: str = "", *, uid: str | None = None
    ) -> _Obj:
        return await self._client.delete(kind, name, namespace, uid=uid)
