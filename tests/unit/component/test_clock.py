from __future__ import annotations

import time
from pathlib import Path

import anyio
import pytest

from kemu.component.clock import SKEW_FILE_ENV, Clock, FakeClock, RealClock, WallClockSkew


def test_clocks_satisfy_the_protocol() -> None:
    clocks: list[Clock] = [RealClock(), FakeClock()]
    assert all(c.now() > 1e9 for c in clocks)


@pytest.mark.anyio
async def test_fake_clock_wakes_sleepers_in_deadline_order() -> None:
    clock = FakeClock(now=100.0, monotonic=10.0)
    woken: list[str] = []

    async def sleeper(name: str, seconds: float) -> None:
        await clock.sleep(seconds)
        woken.append(f"{name}@{clock.monotonic():g}")

    with anyio.fail_after(2):
        async with anyio.create_task_group() as tg:
            tg.start_soon(sleeper, "late", 5.0)
            tg.start_soon(sleeper, "early", 1.0)
            tg.start_soon(sleeper, "early2", 1.0)
            await anyio.wait_all_tasks_blocked()
            assert clock.sleepers == 3
            assert clock.next_deadline() == 11.0

            clock.advance(0.5)
            await anyio.wait_all_tasks_blocked()
            assert woken == []

            clock.advance(0.5)
            await anyio.wait_all_tasks_blocked()
            assert woken == ["early@11", "early2@11"]
            assert clock.now() == 101.0

            clock.advance(10)
            await anyio.wait_all_tasks_blocked()
    assert woken == ["early@11", "early2@11", "late@21"]
    assert clock.sleepers == 0


@pytest.mark.anyio
async def test_cancelled_sleep_is_forgotten_and_zero_sleep_returns() -> None:
    clock = FakeClock()
    with anyio.fail_after(2):
        await clock.sleep(0)
        with anyio.move_on_after(0.01):
            await clock.sleep(60)
    assert clock.sleepers == 0
    with pytest.raises(ValueError):
        clock.advance(-1)


def test_wall_time_can_jump_without_moving_monotonic() -> None:
    clock = FakeClock(now=50.0, monotonic=5.0)
    clock.set_wall_time(10.0)
    assert (clock.now(), clock.monotonic()) == (10.0, 5.0)
    clock.advance(1)
    assert (clock.now(), clock.monotonic()) == (11.0, 6.0)


@pytest.mark.anyio
async def test_real_clock_sleeps() -> None:
    clock = RealClock()
    start = clock.monotonic()
    await clock.sleep(0.01)
    assert clock.monotonic() - start >= 0.009


def test_a_skew_file_moves_the_wall_clock_and_not_the_monotonic_one(tmp_path: Path) -> None:
    path = tmp_path / "skew"
    clock = RealClock(WallClockSkew(str(path), reread=0.0))
    assert abs(clock.now() - time.time()) < 1.0  # no file: no skew
    path.write_text("-120.5\n")
    assert clock.now() - time.time() == pytest.approx(-120.5, abs=1.0)
    assert abs(clock.monotonic() - time.monotonic()) < 1.0
    path.write_text("300")
    assert clock.now() - time.time() == pytest.approx(300, abs=1.0)
    path.write_text("")
    assert abs(clock.now() - time.time()) < 1.0


def test_the_skew_file_is_read_at_most_once_per_interval(tmp_path: Path) -> None:
    path = tmp_path / "skew"
    path.write_text("60")
    skew = WallClockSkew(str(path), reread=3600.0)
    assert skew.seconds() == 60.0
    path.write_text("-60")
    assert skew.seconds() == 60.0


@pytest.mark.parametrize("text", ["soon", "nan", "inf"])
def test_a_bad_skew_file_is_no_skew_and_named_in_a_warning(
    tmp_path: Path, text: str, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "skew"
    path.write_text(text)
    assert WallClockSkew(str(path)).seconds() == 0.0
    assert str(path) in caplog.text and "not a number of seconds" in caplog.text


def test_the_skew_file_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SKEW_FILE_ENV, "/some/file")
    assert WallClockSkew.from_environ().path == "/some/file"
    monkeypatch.delenv(SKEW_FILE_ENV)
    assert WallClockSkew.from_environ().path is None
