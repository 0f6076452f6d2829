"""A priority level's queues and seats: upstream's fair queuing for server requests
(k8s.io/apiserver/pkg/util/flowcontrol/fairqueuing/queueset/queueset.go).

A limited level has a concurrency limit in seats. A request asks for `seats` (its width) and
executes when that many are free; otherwise (a level that queues) it waits in one queue of its
flow's hand (shuffle sharding: the queue of the hand with the least work), or is rejected when
that queue holds `queue_length_limit` requests ("queue-full"); a level that rejects refuses it
at once ("concurrency-limit"). Waiting requests are dispatched by fair queuing in virtual time:
R advances at min(seats asked, limit) / active queues per second; each queue has the R at which
its next request may start (`next_dispatch_r`), advanced by the request's work (seats times the
estimated service duration G) when it is dispatched and corrected by (G - actual) when it ends;
the queue whose head would finish first (round robin among equals) goes next. The exempt level
has no limit: every request executes at once.

The state here is synchronous; the filter (apf_filter.py) waits for a request's decision and
bounds the wait. Queues are not removed when idle (upstream drops the queues past the desired
number after a configuration change; kemu keeps one set per configuration).
"""

from __future__ import annotations

import enum
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from apiserver.flowcontrol.integrator import Integrator
from apiserver.flowcontrol.shufflesharding import Dealer

ESTIMATED_SERVICE_DURATION: Final = 0.003
"""G, seconds: a request's assumed service time, for its work in virtual time (upstream's
queueSet estimatedServiceDuration, 3 ms)."""

QUEUE_FULL: Final = "queue-full"
CONCURRENCY_LIMIT: Final = "concurrency-limit"
TIME_OUT: Final = "time-out"
CANCELLED: Final = "cancelled"
"""The rejection reasons of apiserver_flowcontrol_rejected_requests_total."""


@dataclass(frozen=True)
class QueuingConfig:
    """A Queue level's queues, handSize and queueLengthLimit."""

    queues: int
    hand_size: int
    queue_length_limit: int


class Decision(enum.Enum):
    WAITING = "waiting"
    EXECUTE = "execute"
    REJECT = "reject"


@dataclass(eq=False)
class Request:
    """One request's passage through the set."""

    seats: int
    flow_schema: str
    flow_distinguisher: str = ""
    details: object = None
    """What the debug dump shows of the request (the filter's RequestInfo)."""
    arrive_time: float = 0.0
    decision: Decision = Decision.WAITING
    reason: str = ""
    queue: _Queue | None = None
    arrival_r: float = 0.0
    start_time: float = 0.0
    on_decision: Callable[[], None] = field(default=lambda: None)

    @property
    def work(self) -> float:
        return self.seats * ESTIMATED_SERVICE_DURATION

    def _decide(self, decision: Decision, reason: str = "") -> None:
        self.decision = decision
        self.reason = reason
        self.on_decision()


@dataclass(eq=False)
class _Queue:
    index: int
    waiting: deque[Request] = field(default_factory=deque)
    executing: int = 0
    seats_in_use: int = 0
    next_dispatch_r: float = 0.0

    def waiting_work(self) -> float:
        return sum(r.work for r in self.waiting)


class QueueSet:
    """The queues of one priority level (QueueSet); `now` is seconds of a monotonic clock."""

    def __init__(
        self,
        concurrency_limit: int,
        queuing: QueuingConfig | None,
        now: Callable[[], float],
        *,
        exempt: bool = False,
    ) -> None:
        self.concurrency_limit = concurrency_limit
        self.queuing = queuing
        self.exempt = exempt
        self._now = now
        self._queues = [_Queue(i) for i in range(queuing.queues)] if queuing else []
        self._dealer = Dealer(queuing.queues, queuing.hand_size) if queuing else None
        self._robin = -1
        self.current_r = 0.0
        self._last_time = now()
        self.seats_in_use = 0
        self.seats_waiting = 0
        self.executing = 0
        self.waiting = 0
        # What the virtual time ratio reads, kept as the queues change rather than summed over
        # every queue at each sync (upstream's loop, cheap in Go): the seats in use or waiting
        # in the queues, and the queues with a request waiting or executing.
        self._queued_seats = 0
        self._active_queues = 0
        self.demand = Integrator(now)
        """The seats asked (in use and waiting) over time: the borrowing's seat demand
        (queueset.go's seatDemandIntegrator)."""

    # ------------------------------------------------------------ entry

    def start_request(
        self,
        flow_hash: int,
        seats: int,
        flow_schema: str,
        flow_distinguisher: str = "",
        details: object = None,
    ) -> Request:
        """The request admitted (EXECUTE), queued (WAITING: its decision comes later, through
        `on_decision`) or rejected (REJECT with a reason) (StartRequest)."""
        self._sync_time()
        request = Request(seats, flow_schema, flow_distinguisher, details, self._now())
        if self.exempt:
            self._execute(request)
            self._note_demand()
            return request
        if self._dealer is None:  # a Reject level: no queues
            if self._can_accommodate(seats):
                self._execute(request)
                self._note_demand()
            else:
                request._decide(Decision.REJECT, CONCURRENCY_LIMIT)
            return request
        assert self.queuing is not None
        queue = self._choose_queue(flow_hash)
        if len(queue.waiting) >= self.queuing.queue_length_limit:
            request._decide(Decision.REJECT, QUEUE_FULL)
            return request
        if not queue.waiting and not queue.executing:
            queue.next_dispatch_r = self.current_r
            self._active_queues += 1
        request.queue = queue
        request.arrival_r = self.current_r
        queue.waiting.append(request)
        self.waiting += 1
        self._queued_seats += seats
        self.seats_waiting += seats
        self._bound_next_dispatch(queue)
        self._dispatch_as_much_as_possible()
        self._note_demand()
        return request

    def give_up(self, request: Request, reason: str) -> bool:
        """A waiting request leaves its queue (its wait timed out, its caller went away):
        True; False when it was dispatched meanwhile (then it executes and must finish)."""
        if request.decision is not Decision.WAITING:
            return False
        self._sync_time()
        queue = request.queue
        assert queue is not None
        queue.waiting.remove(request)
        self.waiting -= 1
        self._queued_seats -= request.seats
        if not queue.waiting and not queue.executing:
            self._active_queues -= 1
        self.seats_waiting -= request.seats
        request.decision, request.reason = Decision.REJECT, reason
        self._dispatch_as_much_as_possible()
        self._note_demand()
        return True

    def finish(self, request: Request) -> None:
        """An executing request ended: its seats back, its queue's R corrected by the
        difference between G and its actual service time, then dispatch."""
        self._sync_time()
        self.executing -= 1
        self.seats_in_use -= request.seats
        queue = request.queue
        if queue is not None:
            queue.executing -= 1
            queue.seats_in_use -= request.seats
            self._queued_seats -= request.seats
            if not queue.waiting and not queue.executing:
                self._active_queues -= 1
            actual = self._now() - request.start_time
            queue.next_dispatch_r -= request.seats * (ESTIMATED_SERVICE_DURATION - actual)
            self._bound_next_dispatch(queue)
        self._dispatch_as_much_as_possible()
        self._note_demand()

    def set_concurrency_limit(self, limit: int) -> None:
        """The level's current limit changed (its nominal one, or the borrowing's): more
        is dispatched when it grew; executing requests are never stopped when it shrank."""
        self._sync_time()
        self.concurrency_limit = limit
        self._dispatch_as_much_as_possible()

    def waiting_requests(self) -> list[tuple[int, int, Request]]:
        """(queue index, index in queue, request) of each waiting request (upstream's
        QueueSet.Dump's queues' Requests, for dump_requests)."""
        return [(q.index, i, r) for q in self._queues for i, r in enumerate(q.waiting)]

    # ------------------------------------------------------------ internals

    def _sync_time(self) -> None:
        """Advance R by the real time since the last sync at the virtual time ratio."""
        now = self._now()
        self.current_r += (now - self._last_time) * self._virtual_time_ratio()
        self._last_time = now

    def _virtual_time_ratio(self) -> float:
        """min(seats asked, limit) / active queues (getVirtualTimeRatioLocked)."""
        if not self._active_queues:
            return 0.0
        return min(self._queued_seats, self.concurrency_limit) / self._active_queues

    def _choose_queue(self, flow_hash: int) -> _Queue:
        """Of the flow's hand, the queue with the least work waiting and executing
        (chooseQueueIndexLocked)."""
        assert self._dealer is not None
        best: _Queue | None = None
        best_work = float("inf")
        for index in self._dealer.deal(flow_hash):
            q = self._queues[index]
            work = q.waiting_work() + q.seats_in_use * ESTIMATED_SERVICE_DURATION
            if work < best_work:
                best, best_work = q, work
        assert best is not None
        return best

    def _can_accommodate(self, seats: int) -> bool:
        """canAccommodateSeatsLocked: a request wider than the whole limit runs alone."""
        if seats > self.concurrency_limit:
            return self.executing == 0
        return self.seats_in_use + seats <= self.concurrency_limit

    def _execute(self, request: Request) -> None:
        request.start_time = self._now()
        self.executing += 1
        self.seats_in_use += request.seats
        if request.queue is not None:
            request.queue.executing += 1
            request.queue.seats_in_use += request.seats
        request._decide(Decision.EXECUTE)

    def _dispatch_as_much_as_possible(self) -> None:
        while self.waiting and self._dispatch_one():
            pass

    def _dispatch_one(self) -> bool:
        """findDispatchQueueToBoundLocked + dispatchLocked: of the queues round robin from the
        last one served, the first whose head has the least virtual finish time; it starts if
        its seats fit."""
        best: _Queue | None = None
        best_finish = float("inf")
        best_index = self._robin
        n = len(self._queues)
        for _ in range(n):
            self._robin = (self._robin + 1) % n
            q = self._queues[self._robin]
            if not q.waiting:
                continue
            finish = q.next_dispatch_r + q.waiting[0].work
            if finish < best_finish:
                best, best_finish, best_index = q, finish, self._robin
        if best is None:
            return False
        head = best.waiting[0]
        if not self._can_accommodate(head.seats):
            return False
        best.waiting.popleft()
        self.waiting -= 1
        self.seats_waiting -= head.seats
        self._robin = best_index
        best.next_dispatch_r += head.work
        self._execute(head)
        self._bound_next_dispatch(best)
        return True

    def _note_demand(self) -> None:
        self.demand.set(self.seats_in_use + self.seats_waiting)

    @staticmethod
    def _bound_next_dispatch(queue: _Queue) -> None:
        """The anti-windup rule: dispatch in virtual time never precedes the head's arrival
        (boundNextDispatchLocked)."""
        if queue.waiting and queue.next_dispatch_r < queue.waiting[0].arrival_r:
            queue.next_dispatch_r = queue.waiting[0].arrival_r
