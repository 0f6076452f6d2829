"""A priority level's queue set: seats, queues, fair queuing (queueset.go; issue #58 item 3)."""

from __future__ import annotations

import random

from apiserver.flowcontrol.queueset import (
    CONCURRENCY_LIMIT,
    ESTIMATED_SERVICE_DURATION,
    QUEUE_FULL,
    TIME_OUT,
    Decision,
    QueueSet,
    QueuingConfig,
    Request,
)


class _Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def _decision(r: Request) -> Decision:
    """(read through a call: mypy narrows the attribute after an assert)"""
    return r.decision


def _qs(limit: int, queues: int = 8, hand: int = 1, length: int = 50) -> QueueSet:
    """With hand 1 a flow's hash is its queue (hash % queues)."""
    return QueueSet(limit, QueuingConfig(queues, hand, length), _Clock())


def test_requests_past_the_limit_wait_and_start_as_seats_free() -> None:
    qs = _qs(2)
    a, b, c = (qs.start_request(0, 1, "fs") for _ in range(3))
    assert [r.decision for r in (a, b, c)] == [Decision.EXECUTE] * 2 + [Decision.WAITING]
    assert (qs.executing, qs.waiting, qs.seats_in_use) == (2, 1, 2)
    qs.finish(a)
    assert c.decision is Decision.EXECUTE
    assert (qs.executing, qs.waiting) == (2, 0)


def _serve_all(qs: QueueSet, clock: _Clock, requests: list[Request]) -> list[str]:
    """Finish the executing requests one at a time (each after G of service), recording the
    flows in the order they started."""
    order: list[str] = []
    seen: set[int] = set()
    while True:
        started = [r for r in requests if r.decision is Decision.EXECUTE and id(r) not in seen]
        if not started:
            return order
        r = started[0]
        seen.add(id(r))
        order.append(r.flow_schema)
        clock.t += ESTIMATED_SERVICE_DURATION
        qs.finish(r)


def test_fair_queuing_serves_a_light_flow_before_a_heavy_flows_backlog() -> None:
    """Flow 0 queues ten requests; flow 1's single request, queued after them, starts at the
    first free seat (its queue's head finishes first in virtual time), not after the ten."""
    clock = _Clock()
    qs = QueueSet(1, QueuingConfig(8, 1, 50), clock)
    running = qs.start_request(0, 1, "heavy")
    queued = [qs.start_request(0, 1, "heavy") for _ in range(10)]
    queued.append(qs.start_request(1, 1, "light"))
    order = _serve_all(qs, clock, [running, *queued])
    assert order[:2] == ["heavy", "light"], order
    assert len(order) == 12


def test_two_backlogged_flows_alternate() -> None:
    clock = _Clock()
    qs = QueueSet(1, QueuingConfig(8, 1, 50), clock)
    running = qs.start_request(5, 1, "x")
    queued = [qs.start_request(0, 1, "a") for _ in range(4)]
    queued += [qs.start_request(1, 1, "b") for _ in range(4)]
    order = _serve_all(qs, clock, [running, *queued])
    assert order[1:] in (["a", "b"] * 4, ["b", "a"] * 4), order


def test_a_full_queue_rejects_and_a_reject_level_refuses_at_its_limit() -> None:
    qs = _qs(1, length=2)
    qs.start_request(3, 1, "fs")
    waiting = [qs.start_request(3, 1, "fs") for _ in range(2)]
    assert all(r.decision is Decision.WAITING for r in waiting)
    full = qs.start_request(3, 1, "fs")
    assert (full.decision, full.reason) == (Decision.REJECT, QUEUE_FULL)
    other = qs.start_request(4, 1, "fs")  # another queue still has room
    assert other.decision is Decision.WAITING

    reject = QueueSet(1, None, _Clock())
    assert reject.start_request(0, 1, "fs").decision is Decision.EXECUTE
    refused = reject.start_request(0, 1, "fs")
    assert (refused.decision, refused.reason) == (Decision.REJECT, CONCURRENCY_LIMIT)


def test_the_exempt_level_never_waits() -> None:
    qs = QueueSet(0, None, _Clock(), exempt=True)
    assert all(qs.start_request(0, 5, "fs").decision is Decision.EXECUTE for _ in range(1000))


def test_a_wide_request_waits_for_its_seats_and_one_wider_than_the_limit_runs_alone() -> None:
    qs = _qs(4)
    small = [qs.start_request(0, 1, "fs") for _ in range(2)]
    wide = qs.start_request(1, 3, "list")
    assert wide.decision is Decision.WAITING  # 2 + 3 > 4
    qs.finish(small[0])
    assert _decision(wide) is Decision.EXECUTE and qs.seats_in_use == 4
    qs.finish(small[1])
    qs.finish(wide)
    huge = qs.start_request(2, 9, "list")
    assert huge.decision is Decision.EXECUTE  # alone
    after = qs.start_request(3, 1, "fs")
    assert after.decision is Decision.WAITING


def test_a_waiting_request_that_gives_up_leaves_its_queue() -> None:
    qs = _qs(1)
    running = qs.start_request(0, 1, "fs")
    waiting = qs.start_request(0, 1, "fs")
    assert qs.give_up(waiting, TIME_OUT)
    assert (waiting.decision, waiting.reason, qs.waiting) == (Decision.REJECT, TIME_OUT, 0)
    qs.finish(running)
    assert qs.executing == 0
    assert not qs.give_up(running, TIME_OUT)  # (it was executing, not waiting)


def _ratio_by_summing(qs: QueueSet) -> float:
    """getVirtualTimeRatioLocked as upstream computes it: a loop over every queue."""
    active = asked = 0
    for q in qs._queues:
        asked += q.seats_in_use + sum(r.seats for r in q.waiting)
        active += bool(q.waiting or q.executing)
    return min(asked, qs.concurrency_limit) / active if active else 0.0


def test_the_virtual_time_ratio_kept_as_queues_change_is_upstreams_sum() -> None:
    """The seats asked and the active queues are kept as requests arrive, start, give up and
    finish, rather than summed over every queue at each sync: the same ratio at every step."""
    rng = random.Random(7)
    clock = _Clock()
    qs = QueueSet(4, QueuingConfig(8, 2, 5), clock)
    live: list[Request] = []
    for _ in range(2000):
        clock.t += rng.random() / 100
        op = rng.random()
        waiting = [r for r in live if r.decision is Decision.WAITING]
        executing = [r for r in live if r.decision is Decision.EXECUTE]
        if op < 0.5:
            r = qs.start_request(rng.getrandbits(64), rng.choice((1, 1, 2, 5)), "fs")
            if r.decision is not Decision.REJECT:
                live.append(r)
        elif op < 0.6 and waiting:
            r = rng.choice(waiting)
            assert qs.give_up(r, TIME_OUT)
            live.remove(r)
        elif executing:
            r = rng.choice(executing)
            qs.finish(r)
            live.remove(r)
        assert qs._virtual_time_ratio() == _ratio_by_summing(qs)
