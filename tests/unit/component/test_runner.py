from __future__ import annotations

import json
import logging
import random
import signal
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import anyio.abc
import pytest

from kemu.component.clock import FakeClock
from kemu.component.options import ComponentOptions
from kemu.component.runner import (
    ComponentContext,
    ConfigRefused,
    RestartInPlace,
    _Outcome,
    retry_until_ready,
    run_component_async,
)

from .http_get import http_request

pytestmark = pytest.mark.anyio

Body = Callable[[ComponentContext], Awaitable[None]]


async def start(
    tg: anyio.abc.TaskGroup, options: ComponentOptions, body: Body, codes: list[int], **kw: object
) -> ComponentContext:
    """Run a component in-process (no signal handling); its exit code is appended to `codes`."""

    async def run(*, task_status: anyio.abc.TaskStatus[ComponentContext]) -> None:
        codes.append(
            await run_component_async(
                options.component,
                options,
                body,
                handle_signals=False,
                task_status=task_status,
                **kw,  # type: ignore[arg-type]
            )
        )

    ctx: ComponentContext = await tg.start(run)
    return ctx


async def test_request_stop_drains_and_exits_0() -> None:
    events: list[str] = []

    async def body(ctx: ComponentContext) -> None:
        ctx.add_readiness_check("informers-synced", lambda: True)
        await ctx.stopping.wait()
        events.append("draining")
        # /readyz reports the shutdown while the body drains.
        status, _, text = await http_request(ctx.metrics_port or 0, "/readyz")
        failed = [line for line in text.decode().splitlines() if line.startswith("[-]")]
        events.append(f"readyz {status} {failed}")

    codes: list[int] = []
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            ctx = await start(tg, ComponentOptions.for_tests("c", metrics_port=0), body, codes)
            assert ctx.metrics_port
            assert (await http_request(ctx.metrics_port, "/readyz"))[:3:2] == (200, b"ok")
            ctx.request_stop()
    assert codes == [0]
    assert events == [
        "draining",
        "readyz 503 ['[-]shutdown failed: the component is shutting down']",
    ]


async def test_a_body_that_returns_by_itself_exits_0_and_stops_the_server() -> None:
    codes: list[int] = []

    async def body(ctx: ComponentContext) -> None:
        pass

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            await start(tg, ComponentOptions.for_tests(metrics_port=0), body, codes)
    assert codes == [0]


async def test_an_exception_is_logged_once_and_exits_1(caplog: pytest.LogCaptureFixture) -> None:
    async def body(ctx: ComponentContext) -> None:
        raise RuntimeError("boom")

    codes: list[int] = []
    with anyio.fail_after(5), caplog.at_level(logging.INFO):
        async with anyio.create_task_group() as tg:
            await start(tg, ComponentOptions.for_tests("broken"), body, codes)
    assert codes == [1]
    failures = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert [r.getMessage() for r in failures] == ["broken failed"]
    assert failures[0].exc_info is not None


@pytest.mark.parametrize("grouped", [False, True])
async def test_a_restart_request_is_no_failure_and_is_kept_for_the_entry_point(
    caplog: pytest.LogCaptureFixture, grouped: bool
) -> None:
    """A body raising RestartInPlace (alone, or as all a task group raised) is not logged as a
    failure; run_component execs the command line again when it is the process entry."""

    async def body(ctx: ComponentContext) -> None:
        lost = RestartInPlace("lost lease kube-system/x")
        if grouped:
            raise ExceptionGroup("tg", [ExceptionGroup("inner", [lost])])
        raise lost

    codes: list[int] = []
    outcome = _Outcome()
    with anyio.fail_after(5), caplog.at_level(logging.INFO):
        async with anyio.create_task_group() as tg:
            await start(tg, ComponentOptions.for_tests("elected"), body, codes, outcome=outcome)
    assert codes == [1]
    assert str(outcome.restart) == "lost lease kube-system/x"
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


@pytest.mark.parametrize("grouped", [False, True])
async def test_a_refused_configuration_exits_2_with_one_line(
    caplog: pytest.LogCaptureFixture, grouped: bool
) -> None:
    """A body raising ConfigRefused (a plugin factory refused its args), alone or as all a task
    group raised: exit status 2 and the one line, no traceback."""

    async def body(ctx: ComponentContext) -> None:
        refused = ConfigRefused('--config: initializing plugin "Gang": permitWaitingTime: bad')
        if grouped:
            raise ExceptionGroup("tg", [refused])
        raise refused

    codes: list[int] = []
    with anyio.fail_after(5), caplog.at_level(logging.INFO):
        async with anyio.create_task_group() as tg:
            await start(tg, ComponentOptions.for_tests("refusing"), body, codes)
    assert codes == [2]
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert [r.getMessage() for r in errors] == [
        'refusing: error: --config: initializing plugin "Gang": permitWaitingTime: bad'
    ]
    assert errors[0].exc_info is None


async def test_a_restart_request_mixed_with_a_failure_is_a_failure() -> None:
    async def body(ctx: ComponentContext) -> None:
        raise ExceptionGroup("tg", [RestartInPlace("lost"), RuntimeError("boom")])

    codes: list[int] = []
    outcome = _Outcome()
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            await start(tg, ComponentOptions.for_tests("mixed"), body, codes, outcome=outcome)
    assert codes == [1] and outcome.restart is None


async def test_grace_period_expiry_cancels_the_body_and_exits_1() -> None:
    clock = FakeClock()
    cancelled = anyio.Event()

    async def body(ctx: ComponentContext) -> None:
        try:
            await anyio.sleep_forever()  # ignores ctx.stopping
        finally:
            cancelled.set()

    codes: list[int] = []
    options = ComponentOptions.for_tests(shutdown_grace_period=3)
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            ctx = await start(tg, options, body, codes, clock=clock)
            ctx.request_stop()
            await anyio.wait_all_tasks_blocked()
            clock.advance(2.9)
            await anyio.wait_all_tasks_blocked()
            assert not cancelled.is_set()
            clock.advance(0.1)
            await cancelled.wait()
    assert codes == [1]


async def test_unbindable_metrics_port_exits_1(caplog: pytest.LogCaptureFixture) -> None:
    started = []

    async def body(ctx: ComponentContext) -> None:
        started.append(True)

    with anyio.fail_after(5):
        async with await anyio.create_tcp_listener(local_host="127.0.0.1") as taken:
            port = taken.extra(anyio.abc.SocketAttribute.local_port)
            code = await run_component_async(
                "c",
                ComponentOptions.for_tests(metrics_port=port),
                body,
                handle_signals=False,
            )
    assert code == 1
    assert started == []
    address = f"127.0.0.1:{port}"
    assert (
        f"c: failed to listen on {address}: listen tcp {address}: bind: address already in use"
        in caplog.text
    )


async def test_retry_until_ready_backs_off_and_logs_sparingly(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = FakeClock()
    calls: list[float] = []

    async def connect() -> str:
        calls.append(clock.monotonic())
        if len(calls) < 8:
            raise ConnectionError("connection refused")
        return "connected"

    result: list[str] = []

    async def waiter() -> None:
        result.append(
            await retry_until_ready(
                "the apiserver",
                connect,
                clock=clock,
                initial=0.2,
                max_delay=2.0,
                rng=random.Random(1),
            )
        )

    with anyio.fail_after(5), caplog.at_level(logging.INFO):
        async with anyio.create_task_group() as tg:
            tg.start_soon(waiter)
            while not result:
                await anyio.wait_all_tasks_blocked()
                deadline = clock.next_deadline()
                if deadline is not None:
                    clock.advance(deadline - clock.monotonic())
    assert result == ["connected"]
    gaps = [b - a for a, b in zip(calls, calls[1:], strict=False)]
    assert len(gaps) == 7
    assert 0.2 <= gaps[0] <= 0.24 and 0.4 <= gaps[1] <= 0.48
    assert all(gap <= 2.0 for gap in gaps) and gaps[-1] == 2.0
    waiting = [r.getMessage() for r in caplog.records if r.getMessage().startswith("waiting")]
    # 7 failures over ~9 s, logged at most every 5 s.
    assert waiting == ["waiting for the apiserver: connection refused"] * 2
    assert "the apiserver is ready after 8 attempts" in caplog.text


async def test_retry_until_ready_propagates_other_errors() -> None:
    async def broken() -> None:
        raise KeyError("bug")

    with pytest.raises(KeyError):
        await retry_until_ready("x", broken, clock=FakeClock(), retry_on=(ConnectionError,))


# --- real signals, in a child process so the test process is not hit -------------------------

CHILD = Path(__file__).with_name("signal_child.py")


class Child:
    def __init__(self, process: anyio.abc.Process) -> None:
        self.process = process
        self.out = ""

    async def wait_for_line(self, line: str) -> None:
        """Read stdout until `line` is one of its lines (bounded by the caller's deadline)."""
        assert self.process.stdout is not None
        while line not in self.out.splitlines():
            self.out += (await self.process.stdout.receive()).decode()

    async def stderr(self) -> str:
        assert self.process.stderr is not None
        data = b""
        async for chunk in self.process.stderr:
            data += chunk
        return data.decode()


async def run_child(mode: str, grace: float, signals: list[signal.Signals]) -> tuple[int, str, str]:
    with anyio.fail_after(10):
        async with await anyio.open_process(
            [sys.executable, str(CHILD), mode, str(grace)]
        ) as process:
            child = Child(process)
            assert process.stdout is not None
            while not child.out.startswith("ready "):
                child.out += (await process.stdout.receive()).decode()
            port = int(child.out.split()[1].split("\n")[0])
            assert (await http_request(port, "/readyz"))[0] == 200
            for i, signum in enumerate(signals):
                process.send_signal(signum)
                if i == 0:
                    await child.wait_for_line("draining")
            async for chunk in process.stdout:
                child.out += chunk.decode()
            err = await child.stderr()
            code = await process.wait()
    return code, child.out, err


async def test_sigterm_drains_and_exits_0() -> None:
    code, out, err = await run_child("drain", 10, [signal.SIGTERM])
    assert code == 0, err
    assert out.splitlines()[1:] == ["draining", "drained"]
    assert "received SIGTERM, draining (grace period 10s)" in err
    assert "child stopped" in err


async def test_sigint_drains_too() -> None:
    code, out, err = await run_child("drain", 10, [signal.SIGINT])
    assert code == 0, err
    assert "drained" in out.splitlines()


async def test_second_signal_cancels_and_exits_1() -> None:
    code, out, err = await run_child("stuck", 30, [signal.SIGTERM, signal.SIGTERM])
    assert code == 1, err
    assert out.splitlines()[1:] == ["draining", "cancelled"]
    assert "received SIGTERM while draining, stopping now" in err


async def test_grace_period_expiry_in_a_real_process_exits_1() -> None:
    code, out, err = await run_child("stuck", 0.2, [signal.SIGTERM])
    assert code == 1, err
    assert out.splitlines()[1:] == ["draining", "cancelled"]
    assert "did not stop within its 0.2s grace period" in err


async def test_sigusr2_runs_the_debug_callbacks_and_neither_drains_nor_stops() -> None:
    with anyio.fail_after(10):
        async with await anyio.open_process([sys.executable, str(CHILD), "drain", "10"]) as process:
            child = Child(process)
            assert process.stdout is not None
            while not child.out.startswith("ready "):
                child.out += (await process.stdout.receive()).decode()
            port = int(child.out.split()[1].split("\n")[0])
            for n in (1, 2):
                process.send_signal(signal.SIGUSR2)
                await child.wait_for_line(f"debug {n}")
            status, headers, body = await http_request(port, "/debug/count")
            assert (status, json.loads(body)) == (200, {"signals": 2})
            assert headers["content-type"] == "application/json"
            assert (await http_request(port, "/readyz"))[0] == 200
            process.send_signal(signal.SIGTERM)
            async for chunk in process.stdout:
                child.out += chunk.decode()
            err = await child.stderr()
            code = await process.wait()
    assert code == 0, err
    assert child.out.splitlines()[1:] == ["debug 1", "debug 2", "draining", "drained"]
    assert "received SIGUSR2: running the debug actions" in err
