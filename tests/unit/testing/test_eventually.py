import time

import pytest

from kemu.testing.eventually import eventually, eventually_sync


class Counter:
    def __init__(self, succeed_at: int) -> None:
        self.calls = 0
        self.succeed_at = succeed_at

    def check(self) -> str:
        self.calls += 1
        assert self.calls >= self.succeed_at, f"only {self.calls} calls"
        return f"done after {self.calls}"


@pytest.mark.anyio
async def test_eventually_retries_assertions_and_returns_the_first_truthy_value():
    counter = Counter(succeed_at=3)
    assert await eventually(counter.check, timeout=5, interval=0.001) == "done after 3"


@pytest.mark.anyio
async def test_eventually_awaits_async_checks_and_retries_falsy_results():
    results = iter([None, "", 0, {"x": 1}])

    async def check() -> object:
        return next(results)

    assert await eventually(check, timeout=5, interval=0.001) == {"x": 1}


@pytest.mark.anyio
async def test_eventually_times_out_with_the_timeout_message_and_last_assertion():
    counter = Counter(succeed_at=10**9)
    began = time.monotonic()
    with pytest.raises(AssertionError) as caught:
        await eventually(counter.check, timeout=0.2, interval=0.01, message="pod p bound")
    assert 0.2 <= time.monotonic() - began < 1.0
    text = str(caught.value)
    assert text.startswith("pod p bound: condition not met within 0.2s")
    assert f"only {counter.calls} calls" in text  # the last attempt's error
    assert isinstance(caught.value.__cause__, AssertionError)


@pytest.mark.anyio
async def test_eventually_does_not_retry_other_exceptions():
    calls = []

    def check() -> bool:
        calls.append(1)
        raise KeyError("bug")

    with pytest.raises(KeyError):
        await eventually(check, timeout=5)
    assert len(calls) == 1


def test_eventually_sync_retries_then_returns():
    counter = Counter(succeed_at=2)
    assert eventually_sync(counter.check, timeout=5, interval=0.001) == "done after 2"


def test_eventually_sync_explains_a_check_that_only_asserts():
    with pytest.raises(AssertionError, match="must return True"):
        eventually_sync(lambda: None, timeout=0.05, interval=0.01)
