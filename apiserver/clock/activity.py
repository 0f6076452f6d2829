"""What an apiserver is doing, for the event-driven virtual clock (rate max; kemu only, see
apiserver/clock/cluster_clock.py): the cluster is quiescent only when no request is being served, no
watch event waits to be sent, and every event sent to a component has been received by it.

The gRPC edge counts its requests (but the clock's own), per component in virtual time, and the
watch events it hands to the transport on the watches of each (both tagged with the
component's identity, the `kemu-clock-identity` metadata kemu.client sets once it has a clock
session); requests from outside the sessions (the REST edge's, untagged clients') are counted
together. `next_change()` is an event set at the next change.

The apiserver's own work woken by its clock (a pass of the APF ensurer, of the compactor:
`own_work()` around it) is counted as a request being served, so that an advance holds only
once the work due then is done (a pass that writes a FlowSchema's status after the advance
ended would be seen by nobody at the instant it was due).

A request held on a timer of the apiserver's clock (--etcd-latency's wait before an etcd round
trip: `parked()` around it) is work the clock must move for, as a component's sleep is: it is
counted apart (`parked_calls`), the apiserver is idle when every request it serves is so held, and a
component that answers a probe idle with calls in flight squares only when they are the ones
held here (apiserver/clock/event_driven.py).
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar

import anyio

from kemu.machinery.virtual_time import ReceivedCalls

_SERVING: ContextVar[str | None] = ContextVar("kemu_clock_serving", default=None)
"""The identity of the component whose request this task serves ("": an outsider's)."""

OWN_WORK = "kube-apiserver (own work)"
"""What `parked_calls` counts the apiserver's own work under (no component's identity)."""


class Activity:
    def __init__(self) -> None:
        self.requests = 0
        """Requests being served (neither watches nor the clock's own calls)."""
        self.sending = 0
        """Watch streams holding events they have not handed to the transport yet."""
        self.sent: defaultdict[str, int] = defaultdict(int)
        """Watch events sent per component identity."""
        self.calls = ReceivedCalls()
        """Requests received per component identity, and their lowest and highest call
        number (kemu-clock-call)."""
        self.incarnation = uuid.uuid4().hex
        """This apiserver's, for the events a component counts (APISERVER_KEY)."""
        self.parked_calls: defaultdict[str, int] = defaultdict(int)
        """Requests held on a timer of the apiserver's clock now, per component identity."""
        self.parked_total = 0
        """Of `requests`, those held on a timer."""
        self.outside = 0
        """Requests received from clients outside the clock's sessions (kemuctl, kubectl,
        a test's or a driver's client)."""
        self._changed: anyio.Event | None = None

    def _bump(self) -> None:
        if self._changed is not None:
            self._changed.set()
            self._changed = None

    def next_change(self) -> anyio.Event:
        """Set at the next change (for the clock's driver, waiting for the apiserver to go idle)."""
        if self._changed is None:
            self._changed = anyio.Event()
        return self._changed

    @contextmanager
    def request(
        self, identity: str = "", call: int = 0, *, in_flight: bool = True
    ) -> Iterator[None]:
        """Around the serving of a request of the component `identity` ("": from outside),
        its call number `call`. `in_flight` False: the clock's own calls (an AdvanceClock
        waits for time to pass), counted only as a component's call received."""
        if not in_flight:
            if identity:  # (an outsider's kemuctl clock is not the cluster's work)
                self.calls.add(identity, call)
                self._bump()
            yield
            return
        if identity:
            self.calls.add(identity, call)
        else:
            self.outside += 1
        with self._serving(identity):
            yield

    def own_work(self) -> AbstractContextManager[None]:
        """Around a pass of the apiserver's own periodic work, woken by its clock: served as
        a request is (the cluster is not quiescent while it runs), and idle while it waits on
        a timer of the clock (`parked`, counted under OWN_WORK)."""
        return self._serving(OWN_WORK)

    @contextmanager
    def _serving(self, identity: str) -> Iterator[None]:
        """Counted among the requests being served, as `identity`'s (`parked` reads it)."""
        self.requests += 1
        self._bump()
        serving = _SERVING.set(identity)
        try:
            yield
        finally:
            _SERVING.reset(serving)
            self.requests -= 1
            self._bump()

    @contextmanager
    def parked(self) -> Iterator[bool]:
        """Around a wait on a timer of the apiserver's clock within the request being served
        or the apiserver's own work (neither: nothing counted); yields whether to wait at all:
        not for a request from outside the clock's sessions (a driver's, a test's, kemuctl's),
        which a driver makes at a held instant and which would otherwise wait for a clock
        that only moves once it has its answer."""
        identity = _SERVING.get()
        if identity is None or not identity:
            yield identity is None
            return
        self.parked_calls[identity] += 1
        self.parked_total += 1
        self._bump()
        try:
            yield True
        finally:
            self.parked_calls[identity] -= 1
            self.parked_total -= 1
            self._bump()

    @property
    def serving(self) -> int:
        """Requests being served and not held on a timer."""
        return self.requests - self.parked_total

    def refused(self, identity: str = "", call: int = 0) -> None:
        """A request of `identity` refused before it was served (the in-flight limit's 429):
        received all the same, for the caller counts every attempt it makes."""
        if identity:
            self.calls.add(identity, call)
        else:
            self.outside += 1
        self._bump()

    def sent_events(self, identity: str, count: int) -> None:
        """`count` watch events handed to the transport for `identity` ("": an untagged
        watch, not counted: outside the cluster's sessions)."""
        if identity:
            self.sent[identity] += count
        self._bump()

    @contextmanager
    def sending_events(self, identity: str) -> Iterator[Batch]:
        """Around the making of a batch of watch events taken from a watcher's buffer, until
        it is handed to the transport (the batch's count, set meanwhile, is then sent)."""
        self.sending += 1
        self._bump()
        batch = Batch(0)
        try:
            yield batch
        finally:
            self.sending -= 1
            self.sent_events(identity, batch.count)


class Batch:
    __slots__ = ("count",)

    def __init__(self, count: int) -> None:
        self.count = count
