"""client-go work queue semantics: dedup, no concurrent processing of a key, delays, rate
limiting, shut down and drain; one queue for the controller-manager and the kubelet."""

from __future__ import annotations

import anyio
import pytest

from kemu.client.workqueue import WorkQueue
from kemu.component.clock import FakeClock
from kemu.testing.fake_time import advance, settle

pytestmark = pytest.mark.anyio


async def drain(q: WorkQueue) -> list[str]:
    """Every ready key, each marked done at once."""
    out = []
    while len(q):
        key = await q.get()
        assert key is not None
        out.append(key)
        q.done(key)
    return out


async def test_adding_a_waiting_key_twice_queues_it_once() -> None:
    q = WorkQueue(FakeClock())
    q.add("a")
    q.add("b")
    q.add("a")
    assert len(q) == 2
    assert await q.get() == "a"
    assert await q.get() == "b"
    assert len(q) == 0


async def test_a_key_readded_while_processing_is_handed_out_again_only_after_done() -> None:
    q = WorkQueue(FakeClock())
    q.add("a")
    key = await q.get()
    assert key == "a" and q.is_processing("a")
    q.add("a")
    q.add("a")
    assert len(q) == 0, "a key being processed must not be handed to another worker"
    q.done("a")
    assert len(q) == 1
    assert await q.get() == "a"
    q.done("a")
    assert len(q) == 0


async def test_done_without_readd_does_not_requeue() -> None:
    q = WorkQueue(FakeClock())
    q.add("a")
    await q.get()
    q.done("a")
    assert len(q) == 0


async def test_get_waits_for_an_add_and_returns_none_after_shut_down() -> None:
    q = WorkQueue(FakeClock())
    got: list[str | None] = []

    async def worker() -> None:
        while (key := await q.get()) is not None:
            got.append(key)
            q.done(key)
        got.append(None)

    async with anyio.create_task_group() as tg:
        tg.start_soon(worker)
        await settle()
        assert got == []
        q.add("x")
        await settle()
        assert got == ["x"]
        q.add("y")
        q.shut_down()
        q.add("z")  # ignored after shut_down
        with anyio.fail_after(1):
            while got[-1:] != [None]:
                await settle()
    assert got == ["x", "y", None]


async def test_add_after_adds_the_key_when_its_delay_has_passed() -> None:
    clock = FakeClock()
    q = WorkQueue(clock)
    async with anyio.create_task_group() as tg:
        tg.start_soon(q.run)
        await settle()
        q.add_after("late", 10)
        q.add_after("soon", 2)
        q.add_after("soon", 5)  # a later deadline does not replace an earlier one
        await settle()
        assert len(q) == 0
        clock.advance(2)
        await settle()
        assert await drain(q) == ["soon"]
        clock.advance(7.9)
        await settle()
        assert len(q) == 0
        clock.advance(0.1)
        await settle()
        assert await drain(q) == ["late"]
        assert clock.sleepers == 0
        tg.cancel_scope.cancel()


async def test_an_earlier_add_after_replaces_a_later_deadline() -> None:
    clock = FakeClock()
    q = WorkQueue(clock)
    async with anyio.create_task_group() as tg:
        tg.start_soon(q.run)
        q.add_after("k", 100)
        await settle()
        q.add_after("k", 1)
        await settle()
        clock.advance(1)
        await settle()
        assert await drain(q) == ["k"]
        clock.advance(100)
        await settle()
        assert len(q) == 0, "the superseded deadline must not add the key again"
        tg.cancel_scope.cancel()


async def test_rate_limited_adds_back_off_exponentially_until_forgotten() -> None:
    clock = FakeClock()
    q = WorkQueue(clock, base_delay=1.0, max_delay=4.0)
    async with anyio.create_task_group() as tg:
        tg.start_soon(q.run)
        delays = []
        for _ in range(4):
            q.add_rate_limited("k")
            await settle()
            waited = 0.0
            while not len(q):
                clock.advance(0.5)
                waited += 0.5
                await settle()
            delays.append(waited)
            assert await drain(q) == ["k"]
        assert delays == [1.0, 2.0, 4.0, 4.0], "doubling from base_delay, capped at max_delay"
        assert q.num_requeues("k") == 4
        q.forget("k")
        assert q.num_requeues("k") == 0
        q.add_rate_limited("k")
        assert q.waiting("k") == clock.monotonic() + 1.0
        tg.cancel_scope.cancel()


async def test_a_key_waits_once_and_is_requeued_if_added_while_processed() -> None:
    q = WorkQueue(FakeClock())
    q.add("a")
    q.add("a")
    q.add("b")
    assert await q.get() == "a"
    q.add("a")  # while processing: queued again after done()
    assert await q.get() == "b"
    q.done("b")
    q.done("a")
    assert await q.get() == "a"
    q.done("a")
    assert len(q) == 0


async def test_delayed_adds_come_due_in_order_on_the_clock() -> None:
    clock = FakeClock()
    q = WorkQueue(clock)
    got: list[str] = []
    async with anyio.create_task_group() as tg:
        await tg.start(q.run)

        async def consume() -> None:
            while (key := await q.get()) is not None:
                got.append(key)
                q.done(key)

        tg.start_soon(consume)
        q.add_after("late", 5)
        q.add_after("early", 1)  # earlier than the timer's current sleep
        q.add_after("now", 0)
        await settle()
        assert got == ["now"]
        await advance(clock, 1, step=0.1)
        assert got == ["now", "early"]
        await advance(clock, 3.9, step=0.1)
        assert got == ["now", "early"]
        await advance(clock, 0.1, step=0.1)
        assert got == ["now", "early", "late"]
        assert q.pending_timers == 0
        tg.cancel_scope.cancel()


async def test_each_key_wakes_one_waiting_worker_and_every_key_is_handed_out() -> None:
    q = WorkQueue(FakeClock())
    got: list[tuple[int, str]] = []

    async def worker(i: int) -> None:
        while (key := await q.get()) is not None:
            got.append((i, key))
            await settle(3)
            q.done(key)

    async with anyio.create_task_group() as tg:
        for i in range(8):
            tg.start_soon(worker, i)
        await settle()
        for key in "abc":
            q.add(key)
        await settle()
        assert sorted(k for _, k in got) == ["a", "b", "c"]
        assert len({i for i, _ in got}) == 3, "three keys went to three workers"
        q.shut_down()
    assert len(q) == 0


async def test_a_cancelled_worker_does_not_swallow_the_wake_up_of_a_later_key() -> None:
    q = WorkQueue(FakeClock())
    got: list[str] = []

    async def worker() -> None:
        while (key := await q.get()) is not None:
            got.append(key)
            q.done(key)

    doomed = anyio.CancelScope()

    async def doomed_worker() -> None:
        with doomed:
            await worker()

    async with anyio.create_task_group() as tg:
        tg.start_soon(doomed_worker)  # the first to wait
        await settle()
        tg.start_soon(worker)
        await settle()
        doomed.cancel()
        await settle()
        q.add("k")
        await settle()
        assert got == ["k"], "the live worker must be woken for the key"
        q.shut_down()


async def test_run_returns_once_shut_down_and_delays_are_dropped() -> None:
    clock = FakeClock()
    q = WorkQueue(clock)
    with anyio.fail_after(1):
        async with anyio.create_task_group() as tg:
            await tg.start(q.run)
            q.add_after("k", 10)
            await settle()
            q.shut_down()
    q.add_after("k", 1)
    q.add_rate_limited("k")
    assert len(q) == 0 and await q.get() is None
