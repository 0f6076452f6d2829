from __future__ import annotations

from typing import Any

import anyio
import pytest

from kemu.api.v1 import types_pb2
from kemu.scheduling.emulation import slow_pre_bind
from kemu.scheduling.interface import CycleState
from kemu.scheduling.status import Status
from kemu.testing.builders import make_pod
from tests.unit.scheduling.plugins.fakes import FakeHandle

DELAY = slow_pre_bind.ANNOTATION_DELAY
FAIL = slow_pre_bind.ANNOTATION_FAIL


def pod(annotations: dict[str, str] | None = None, labels: dict[str, str] | None = None) -> Any:
    b = make_pod("p").uid("uid-p")
    for k, v in (annotations or {}).items():
        b.annotation(k, v)
    for k, v in (labels or {}).items():
        b.label(k, v)
    return b.obj()


class _Run:
    """Runs pre_bind in a task and keeps its result."""

    def __init__(self, pl: slow_pre_bind.SlowPreBind, p: types_pb2.Pod) -> None:
        self.pl, self.pod = pl, p
        self.status: Status | None = None
        self.cancelled = False

    async def __call__(self) -> None:
        try:
            self.status = await self.pl.pre_bind(CycleState(), self.pod, "n1")
        except anyio.get_cancelled_exc_class():
            self.cancelled = True
            raise


def test_pre_flight_skips_pods_that_do_not_ask() -> None:
    pl = slow_pre_bind.new({}, FakeHandle())
    assert pl.pre_bind_pre_flight(CycleState(), pod(), "n1").is_skip()
    assert pl.pre_bind_pre_flight(CycleState(), pod({DELAY: "2s"}), "n1").is_success()
    assert pl.pre_bind_pre_flight(CycleState(), pod({FAIL: "1"}), "n1").is_success()


@pytest.mark.anyio
async def test_pre_bind_of_other_pods_returns_at_once() -> None:
    handle = FakeHandle()
    pl = slow_pre_bind.new({}, handle)
    with anyio.fail_after(1):
        assert (await pl.pre_bind(CycleState(), pod(), "n1")).is_success()
    assert handle.clock.sleepers == 0


@pytest.mark.anyio
async def test_pre_bind_waits_the_annotated_delay_on_the_clock() -> None:
    handle = FakeHandle()
    pl = slow_pre_bind.new({}, handle)
    run = _Run(pl, pod({DELAY: "2s"}))
    with anyio.fail_after(2):
        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            await anyio.wait_all_tasks_blocked()
            assert handle.clock.sleepers == 1
            handle.clock.advance(1.9)
            await anyio.wait_all_tasks_blocked()
            assert run.status is None
            handle.clock.advance(0.1)
    assert run.status is not None and run.status.is_success()


@pytest.mark.anyio
async def test_forever_waits_until_cancelled() -> None:
    handle = FakeHandle()
    pl = slow_pre_bind.new({}, handle)
    run = _Run(pl, pod({DELAY: "forever"}))
    assert pl.pre_bind_pre_flight(CycleState(), run.pod, "n1").is_success()
    with anyio.fail_after(2):
        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            await anyio.wait_all_tasks_blocked()
            handle.clock.advance(10 * 365 * 86400)
            await anyio.wait_all_tasks_blocked()
            assert run.status is None
            tg.cancel_scope.cancel()
    assert run.cancelled
    assert run.status is None
    assert pl.attempts("uid-p") == 0


@pytest.mark.anyio
async def test_prebind_fail_fails_the_first_n_attempts_after_the_delay() -> None:
    handle = FakeHandle()
    pl = slow_pre_bind.new({}, handle)
    p = pod({DELAY: "500ms", FAIL: "2"})
    results: list[Status] = []
    with anyio.fail_after(2):
        for _ in range(3):
            run = _Run(pl, p)
            async with anyio.create_task_group() as tg:
                tg.start_soon(run)
                await anyio.wait_all_tasks_blocked()
                assert run.status is None  # the failure comes after the delay
                handle.clock.advance(0.5)
            assert run.status is not None
            results.append(run.status)
    assert [s.is_error() for s in results] == [True, True, False]
    assert "1/2" in results[0].message()
    assert pl.attempts("uid-p") == 3


@pytest.mark.anyio
async def test_prebind_fail_counts_per_pod_uid() -> None:
    pl = slow_pre_bind.new({}, FakeHandle())
    a = pod({FAIL: "1"})
    b = make_pod("q").uid("uid-q").annotation(FAIL, "1").obj()
    assert (await pl.pre_bind(CycleState(), a, "n1")).is_error()
    assert (await pl.pre_bind(CycleState(), b, "n1")).is_error()
    assert (await pl.pre_bind(CycleState(), a, "n1")).is_success()


@pytest.mark.anyio
async def test_pod_selector_applies_the_default_delay() -> None:
    handle = FakeHandle()
    pl = slow_pre_bind.new(
        {"defaultDelay": "3s", "podSelector": {"matchLabels": {"slow": "yes"}}}, handle
    )
    assert pl.pre_bind_pre_flight(CycleState(), pod(labels={"slow": "no"}), "n1").is_skip()
    matching = pod(labels={"slow": "yes"})
    assert pl.pre_bind_pre_flight(CycleState(), matching, "n1").is_success()
    run = _Run(pl, matching)
    with anyio.fail_after(2):
        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            await anyio.wait_all_tasks_blocked()
            assert handle.clock.next_deadline() == handle.clock.monotonic() + 3
            handle.clock.advance(3)
    assert run.status is not None and run.status.is_success()


@pytest.mark.parametrize(
    "annotations", [{DELAY: "soon"}, {DELAY: "-1s"}, {FAIL: "many"}, {FAIL: "-2"}]
)
def test_unparsable_annotations_are_errors_at_pre_flight(annotations: dict[str, str]) -> None:
    pl = slow_pre_bind.new({}, FakeHandle())
    status = pl.pre_bind_pre_flight(CycleState(), pod(annotations), "n1")
    assert status.is_error()
    assert next(iter(annotations)) in status.message()


@pytest.mark.parametrize(
    ("args", "field"),
    [
        ({"defaultDelay": "later"}, "defaultDelay"),
        ({"defaultDelay": 5}, "defaultDelay"),
        ({"defaultDelay": "5"}, 'defaultDelay: time: missing unit in duration "5"'),
        ({"defaultDelay": "-1s"}, "defaultDelay: .*must not be negative"),
        ({"podSelector": {"matchLabels": {"a": "b"}, "x": 1}}, "podSelector.x"),
        ({"podSelector": {"matchExpressions": [{"key": "a", "operator": "Near"}]}}, "podSelector"),
        ({"delay": "1s"}, "delay"),
    ],
)
def test_invalid_args_name_the_field(args: dict[str, Any], field: str) -> None:
    with pytest.raises(ValueError, match=field):
        slow_pre_bind.new(args, FakeHandle())
