"""The pod work queue: dedup while waiting, requeue while processing, delayed adds."""

from __future__ import annotations

import anyio
import pytest

from kemu.component.clock import FakeClock
from kubelet.workqueue import WorkQueue

from .helpers import advance, settle

pytestmark = pytest.mark.anyio


async def test_a_key_waits_once_and_is_requeued_if_added_while_processed():
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


async def test_delayed_adds_come_due_in_order_on_the_clock():
    clock = FakeClock()
    q = WorkQueue(clock)
    got: list[str] = []
    async with anyio.create_task_group() as tg:
        await tg.start(q.run_timers)

        async def consume() -> None:
            while True:
                key = await q.get()
                got.append(key)
                q.done(key)

        tg.start_soon(consume)
        q.add_after("late", 5)
        q.add_after("early", 1)  # earlier than the timer's current sleep
        q.add_after("now", 0)
        await settle()
        assert got == ["now"]
        await advance(clock, 1)
        assert got == ["now", "early"]
        await advance(clock, 3.9)
        assert got == ["now", "early"]
        await advance(clock, 0.1)
        assert got == ["now", "early", "late"]
        assert q.pending_timers == 0
        tg.cancel_scope.cancel()
