"""A process's VirtualClock (kemu/component/virtual_clock.py): virtual time from the cluster
clock's segment, sleeps that follow rate changes, pending timers counted."""

from __future__ import annotations

import random
import time

import anyio
import pytest

from kemu.component.clock import FakeClock, RealClock
from kemu.component.virtual_clock import VirtualClock, move_on_after, sleep_jittered
from kemu.machinery.virtual_time import ClockSegment

pytestmark = pytest.mark.anyio

START = 1_800_000_000.0


def _segment(rate: float, generation: int = 1) -> ClockSegment:
    return ClockSegment(base_wall=time.time(), base_virtual=START, rate=rate, generation=generation)


async def test_until_attached_the_clock_is_the_hosts() -> None:
    clock = VirtualClock()
    attached = clock.attached
    assert not attached
    assert abs(clock.now() - time.time()) < 1.0
    clock.set_segment(_segment(1.0))
    assert clock.attached
    assert START <= clock.now() < START + 1.0


async def test_an_older_segment_is_ignored() -> None:
    clock = VirtualClock()
    assert clock.set_segment(_segment(1.0, generation=2))
    assert not clock.set_segment(_segment(50.0, generation=1))
    assert clock.segment is not None and clock.segment.rate == 1.0


async def test_a_sleep_lasts_virtual_seconds_at_the_rate() -> None:
    clock = VirtualClock()
    clock.set_segment(_segment(1_000.0))
    before = clock.monotonic()
    with anyio.fail_after(5):  # 30 virtual seconds are 30 ms of wall time
        await clock.sleep(30.0)
    assert clock.monotonic() - before >= 30.0


async def test_a_held_clock_keeps_its_sleepers_until_it_moves_again() -> None:
    clock = VirtualClock()
    clock.set_segment(_segment(0.0))
    woke = anyio.Event()

    async def sleeper() -> None:
        await clock.sleep(5.0)
        woke.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(sleeper)
        await anyio.sleep(0.2)
        assert not woke.is_set()
        assert clock.timers == 1
        assert clock.next_deadline() == pytest.approx(START + 5.0, abs=0.01)
        held = clock.segment
        assert held is not None
        clock.set_segment(held.with_rate(1_000.0, time.time()))
        with anyio.fail_after(5):
            await woke.wait()
    assert clock.timers == 0


async def test_timer_changes_are_signalled_for_the_clock_session() -> None:
    clock = VirtualClock()
    clock.set_segment(_segment(0.0))
    assert clock.take_timers() == (0, None)
    changed = clock.timers_changed
    async with anyio.create_task_group() as tg:
        tg.start_soon(clock.sleep, 1.0)
        with anyio.fail_after(5):
            await changed.wait()
        count, deadline = clock.take_timers()
        assert count == 1 and deadline == pytest.approx(START + 1.0, abs=0.01)
        tg.cancel_scope.cancel()
    assert clock.timers == 0 and clock.timers_changed.is_set()


async def test_a_timeout_on_the_virtual_clock_follows_its_rate() -> None:
    clock = VirtualClock()
    clock.set_segment(_segment(0.0))
    async with move_on_after(clock, 1.0) as held:
        await anyio.sleep(0.2)  # a held clock never times out
    assert not held.cancelled_caught
    segment = clock.segment
    assert segment is not None
    clock.set_segment(segment.with_rate(1_000.0, time.time()))
    with anyio.fail_after(5):
        async with move_on_after(clock, 10.0) as fast:  # 10 virtual seconds: 10 ms
            await anyio.sleep(3)
    assert fast.cancelled_caught
    assert clock.timers == 0  # the timer went with the scope


async def test_a_timeout_on_the_host_clock_is_anyios() -> None:
    async with move_on_after(RealClock(), 0.01) as scope:
        await anyio.sleep(3)
    assert scope.cancelled_caught


def _held_at(clock: VirtualClock, virtual: float) -> None:
    """An event-driven jump: the clock held at `virtual` (a newer generation)."""
    segment = clock.segment
    assert segment is not None
    clock.set_segment(segment.advancing(0.0, time.time()).jumped(virtual, time.time()))


async def test_a_jump_ends_the_sleeps_it_reaches_in_deadline_order() -> None:
    clock = VirtualClock()
    clock.set_segment(_segment(0.0))
    woken: list[float] = []

    async def sleeper(seconds: float) -> None:
        await clock.sleep(seconds)
        woken.append(seconds)

    async with anyio.create_task_group() as tg:
        for seconds in (3.0, 1.0, 2.0):
            tg.start_soon(sleeper, seconds)
        await anyio.wait_all_tasks_blocked()
        assert clock.timers == 3
        _held_at(clock, START + 2.0)
        await anyio.wait_all_tasks_blocked()
        assert woken == [1.0, 2.0]
        assert clock.timers == 1 and clock.next_deadline() == pytest.approx(START + 3.0)
        _held_at(clock, START + 3.0)
    assert woken == [1.0, 2.0, 3.0] and clock.timers == 0


async def test_a_sleep_with_slack_may_end_up_to_its_slack_later() -> None:
    # The clock reports the latest instant a sleep must end by; a jump to it ends every sleep
    # due by then (the event-driven clock's one jump for several timers).
    clock = VirtualClock()
    clock.set_segment(_segment(0.0))
    woken: list[str] = []

    async def sleeper(name: str, seconds: float, slack: float) -> None:
        await clock.sleep(seconds, slack=slack)
        woken.append(name)

    async with anyio.create_task_group() as tg:
        tg.start_soon(sleeper, "a", 10.0, 0.4)
        tg.start_soon(sleeper, "b", 10.3, 0.4)
        tg.start_soon(sleeper, "c", 10.5, 0.4)
        await anyio.wait_all_tasks_blocked()
        assert clock.next_deadline() == pytest.approx(START + 10.4)
        _held_at(clock, START + 10.4)
        await anyio.wait_all_tasks_blocked()
        assert woken == ["a", "b"]
        assert clock.next_deadline() == pytest.approx(START + 10.9)
        tg.cancel_scope.cancel()
    assert clock.timers == 0 and clock.next_deadline() is None


async def test_a_jittered_sleep_on_the_virtual_clock_is_all_slack() -> None:
    # Upstream's wait.Jitter(2s, 1.2) sleeps 2 to 4.4 s: on the virtual clock nothing is drawn,
    # the whole range is slack (the same run twice waits the same).
    clock = VirtualClock()
    clock.set_segment(_segment(0.0))
    async with anyio.create_task_group() as tg:
        tg.start_soon(sleep_jittered, clock, 2.0, 1.2)
        await anyio.wait_all_tasks_blocked()
        assert clock.next_deadline() == pytest.approx(START + 4.4)
        _held_at(clock, START + 2.0)
    assert clock.timers == 0


async def test_a_jittered_sleep_on_the_fake_clock_draws_from_its_range() -> None:
    clock = FakeClock()
    async with anyio.create_task_group() as tg:
        tg.start_soon(sleep_jittered, clock, 2.0, 1.2, random.Random(7))
        await anyio.wait_all_tasks_blocked()
        deadline = clock.next_deadline()
        assert deadline is not None
        assert 2.0 <= deadline - clock.monotonic() <= 4.4
        clock.advance(4.4)


async def test_a_sleep_the_event_driven_clock_went_past_is_said_to_have_woken_late(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = VirtualClock()
    held = _segment(1.0).advancing(0.0, time.time())  # rate max: held between jumps
    clock.set_segment(held)
    start = clock.monotonic()
    async with anyio.create_task_group() as tg:
        tg.start_soon(clock.sleep, 2.0)
        tg.start_soon(clock.sleep, 10.0)
        await anyio.wait_all_tasks_blocked()
        with caplog.at_level("WARNING", logger="kemu.component.virtual_clock"):
            # a jump to the first one's instant: on time
            first = held.jumped(start + 2.0, time.time())
            clock.set_segment(first)
            await anyio.wait_all_tasks_blocked()
            assert clock.timers == 1
            assert not caplog.records
            # one past the second (its process left out of the jump): late, and said so
            clock.set_segment(first.jumped(start + 14.65, time.time()))
    assert [r.getMessage() for r in caplog.records] == [
        "1 timer(s) woke up to 4.650s of virtual time after they were due: the event-driven "
        "clock went past them"
    ]
