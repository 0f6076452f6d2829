"""The lifecycle of a component process: startup, drain on SIGTERM, bounded shutdown.

A component's entry point reads:

    def main(argv: Sequence[str] | None = None) -> int:
        parser = build_parser()  # new_parser(...) and the component's own flags
        args, options = parse_component_args(parser, argv, "cloud")
        settings = settings_from_args(parser, args)  # one frozen tree; errors exit here
        return run_component("cloud", options, functools.partial(run, settings))

    async def run(settings: CloudSettings, ctx: ComponentContext) -> None: ...

The parsed flags (`argparse.Namespace`) stay in `main`: what runs takes the settings.

Contract of `run_component` / `run_component_async`:
- The body runs in a task group next to the health server (unless the metrics port is None)
  and a signal watcher. It receives a `ComponentContext`: options, gates, clock, its own
  Prometheus registry, health check registration and the `stopping` event.
- The first SIGTERM or SIGINT (or `ctx.request_stop()`) sets `ctx.stopping` and makes /readyz
  fail ("shutdown"); the body should then drain and return. It has
  `options.shutdown_grace_period` seconds (on `ctx.clock`) to do so; when they run out, or on
  another signal, everything is cancelled.
- Exit code: 0 when the body returned by itself (drained, or simply finished); 1 when the body
  raised (the traceback is logged here, once), when the grace period ran out or a second signal
  forced the stop (as upstream's second-signal exit).
- A port that cannot be bound (the metrics port here, or one the body serves: it raises
  `kemu.component.listen.ListenFailed`) exits 1 with one line naming the address, as
  upstream's "failed to listen on 127.0.0.1:6443: ... bind: address already in use", no
  traceback.
- A body that raises `ConfigRefused` (its configuration named something it cannot run: a
  plugin whose factory refused its args) exits CONFIG_REFUSED_EXIT (2) with the one line it
  carries, no traceback.
- A body that raises `RestartInPlace` (a leader that lost its lease) is started again from
  nothing: once the event loop has closed, the process execs its own command line (same pid,
  same log). Upstream's components exit there and what runs them (the kubelet, systemd)
  starts them again; under honcho nothing would, and one exiting process stops the whole local
  cluster. Run in-process (not as `python -m <component>`), `run_component` returns 1 instead.
- Run as `python -m <component>`, the process ends with its exit code once the event loop has
  closed and the logs are flushed, without the interpreter's finalization: grpc's C core still
  has threads then (connection backoff, its event engine), and tearing modules down under them
  aborted a scheduler that had drained and released its lease (SIGABRT, "Check failed:
  wakeup_fd_->Wakeup().ok()", once in a CI run of SIGTERM to every process at once).
- Cancellation is never swallowed; cleanup that must run while cancelled belongs under
  `cleanup_scope()` (shielded, with a deadline).
- SIGUSR2 (upstream kube-scheduler's cache debugger signal) calls every callback registered
  with `ctx.on_debug_signal` (synchronous and quick: they start work in the component's own
  tasks, see kemu.client.comparer); it neither drains nor stops. What the work finds is served
  by `ctx.add_debug_handler(name, fn)` at GET /debug/<name> on the metrics port.
"""

from __future__ import annotations

import functools
import logging
import os
import random
import signal
import sys
from collections.abc import Awaitable, Callable
from typing import Final, TypeVar

import anyio
from anyio.abc import TaskStatus
from prometheus_client import CollectorRegistry

from kemu.component.clock import Clock, RealClock
from kemu.component.featuregate import FeatureGates
from kemu.component.health import Check, DebugHandler, HealthChecks, HealthServer
from kemu.component.listen import ListenFailed
from kemu.component.logs import setup_logging
from kemu.component.metrics import new_registry
from kemu.component.options import CONFIG_REFUSED_EXIT, ComponentOptions
from kemu.component.secure_serving import ServingError
from kemu.component.version import BINARY_VERSION
from kemu.component.virtual_clock import VirtualClock
from kemu.machinery.virtual_time import ClockMode

logger = logging.getLogger(__name__)

T = TypeVar("T")

DEFAULT_CLEANUP_TIMEOUT: Final = 5.0


class ComponentContext:
    """What a component body gets from the runner; see the module docstring."""

    def __init__(
        self,
        name: str,
        options: ComponentOptions,
        *,
        clock: Clock,
        registry: CollectorRegistry,
        checks: HealthChecks,
    ) -> None:
        self.name = name
        self.options = options
        self.clock = clock
        self.registry = registry
        self.checks = checks
        self.stopping = anyio.Event()
        """Set once the component must drain: a signal or request_stop()."""
        self.metrics_port: int | None = None
        """The bound port of the health server once it listens; None when disabled."""
        self.debug_handlers: dict[str, DebugHandler] = {}
        self._debug_callbacks: list[Callable[[], None]] = []

    @property
    def gates(self) -> FeatureGates:
        return self.options.gates

    def add_readiness_check(self, name: str, check: Check) -> None:
        self.checks.add_readiness_check(name, check)

    def add_liveness_check(self, name: str, check: Check) -> None:
        self.checks.add_liveness_check(name, check)

    def add_debug_handler(self, name: str, handler: DebugHandler) -> None:
        """Serves `handler()`'s JSON document at GET /debug/<name>."""
        if name in self.debug_handlers:
            raise ValueError(f'debug handler "{name}" is already registered')
        self.debug_handlers[name] = handler

    def on_debug_signal(self, callback: Callable[[], None]) -> None:
        """Calls `callback` on every SIGUSR2 (see the module docstring)."""
        self._debug_callbacks.append(callback)

    def debug_signal(self) -> None:
        """What SIGUSR2 does: calls the debug callbacks (an exception is logged)."""
        for callback in list(self._debug_callbacks):
            try:
                callback()
            except Exception:
                logger.exception("debug callback %r failed", callback)

    def request_stop(self) -> None:
        """Start draining as if SIGTERM had arrived (the grace period starts now)."""
        self.stopping.set()


def cleanup_scope(timeout: float = DEFAULT_CLEANUP_TIMEOUT) -> anyio.CancelScope:
    """A shielded scope with a deadline, for cleanup that must run while being cancelled."""
    return anyio.move_on_after(timeout, shield=True)


class RestartInPlace(Exception):
    """Raised by a component's body to be started again as a fresh process (see above)."""


class ConfigRefused(Exception):
    """Raised by a component's body when its configuration cannot run (see above); the message
    names the flag and what it refused."""


class _Outcome:
    def __init__(self) -> None:
        self.code = 0
        self.restart: RestartInPlace | None = None


def run_component(
    name: str,
    options: ComponentOptions,
    body: Callable[[ComponentContext], Awaitable[None]],
    *,
    clock: Clock | None = None,
) -> int:
    """The process entry: set up logging, run the component on asyncio, return the exit code.

    The event loop is uvloop's (measured: 15-20% more apiserver throughput than the default
    loop on this machine); KEMU_UVLOOP=0 selects asyncio's own loop.
    """
    setup_logging(options.verbosity, name)
    outcome = _Outcome()
    code = anyio.run(
        functools.partial(run_component_async, name, options, body, clock=clock, outcome=outcome),
        backend="asyncio",
        backend_options={"use_uvloop": os.environ.get("KEMU_UVLOOP", "1") != "0"},
    )
    module = _main_module()
    if outcome.restart is not None and module is not None:
        logger.warning("%s: %s: starting again as a fresh process", name, outcome.restart)
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os.execv(sys.executable, [sys.executable, "-m", module, *sys.argv[1:]])
    if module is not None:
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


def _main_module() -> str | None:
    """The module this process runs as `python -m <module>` (also when the harness's fork server
    forked it, whose own command line is in sys.orig_argv); None for a test calling main()."""
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    name = getattr(spec, "name", None)
    if not isinstance(name, str) or os.path.basename(sys.argv[0]) != "__main__.py":
        return None
    return name.removesuffix(".__main__")


async def run_component_async(
    name: str,
    options: ComponentOptions,
    body: Callable[[ComponentContext], Awaitable[None]],
    *,
    clock: Clock | None = None,
    registry: CollectorRegistry | None = None,
    handle_signals: bool = True,
    outcome: _Outcome | None = None,
    task_status: TaskStatus[ComponentContext] = anyio.TASK_STATUS_IGNORED,
) -> int:
    """Run `body` under the lifecycle above and return the exit code.

    `handle_signals=False` lets tests run components in-process (signals need the main
    thread) and stop them with `ctx.request_stop()`. `task_status` reports the context once
    the health server listens, just before the body starts.
    """
    ctx = ComponentContext(
        name,
        options,
        clock=clock or (VirtualClock() if options.clock is ClockMode.VIRTUAL else RealClock()),
        registry=registry or new_registry(name, options.gates),
        checks=HealthChecks(),
    )
    ctx.add_readiness_check("shutdown", functools.partial(_not_stopping, ctx))
    gates = options.gates
    logger.info(
        "starting %s %s (emulated version %s, feature gates: %s)",
        name,
        BINARY_VERSION,
        gates.version,
        ",".join(f"{s.name}={str(s.enabled).lower()}" for s in gates.states()) or "none",
    )
    for warning in gates.warnings:
        logger.warning("%s", warning)

    outcome = outcome if outcome is not None else _Outcome()
    async with anyio.create_task_group() as tg:
        if handle_signals:
            await tg.start(_watch_signals, ctx, outcome, tg.cancel_scope)
        tg.start_soon(_enforce_grace_period, ctx, outcome, tg.cancel_scope)
        if options.metrics_port is not None:
            try:
                server = HealthServer(
                    component=name,
                    gates=gates,
                    registry=ctx.registry,
                    checks=ctx.checks,
                    debug=ctx.debug_handlers,
                    host=options.metrics_bind_address,
                    port=options.metrics_port,
                    ssl_context=(
                        options.metrics_serving.ssl_context()
                        if options.metrics_serving.enabled
                        else None
                    ),
                )
                ctx.metrics_port = await tg.start(server.serve)
            except (ListenFailed, ServingError) as exc:
                logger.error("%s: %s", name, exc)
                outcome.code = 1
                tg.cancel_scope.cancel()
        if outcome.code == 0:
            tg.start_soon(_run_body, name, body, ctx, outcome, tg.cancel_scope)
            task_status.started(ctx)
    if outcome.code == 0:
        logger.info("%s stopped", name)
    return outcome.code


def _not_stopping(ctx: ComponentContext) -> bool:
    if ctx.stopping.is_set():
        raise RuntimeError("the component is shutting down")
    return True


async def _run_body(
    name: str,
    body: Callable[[ComponentContext], Awaitable[None]],
    ctx: ComponentContext,
    outcome: _Outcome,
    scope: anyio.CancelScope,
) -> None:
    try:
        await body(ctx)
    except Exception as e:
        refused = _only(e, ConfigRefused)
        if refused is not None:
            outcome.code = CONFIG_REFUSED_EXIT
            logger.error("%s: error: %s", name, refused)
            return
        unbound = _only(e, ListenFailed)
        if unbound is not None:
            outcome.code = 1
            logger.error("%s: %s", name, unbound)
            return
        outcome.code = 1
        outcome.restart = _only(e, RestartInPlace)
        if outcome.restart is None:
            logger.exception("%s failed", name)
    finally:
        # The body is done (or cancelled): stop the server, the signal watcher and the timer.
        scope.cancel()


_E = TypeVar("_E", bound=Exception)


def _only(exc: Exception, kind: type[_E]) -> _E | None:
    """The `kind` exception `exc` is, or the one its task groups raised with nothing else."""
    if isinstance(exc, kind):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        match, rest = exc.split(kind)
        if match is not None and rest is None:
            leaf: BaseException = match
            while isinstance(leaf, BaseExceptionGroup):
                leaf = leaf.exceptions[0]
            assert isinstance(leaf, kind)
            return leaf
    return None


async def _watch_signals(
    ctx: ComponentContext,
    outcome: _Outcome,
    scope: anyio.CancelScope,
    *,
    task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGUSR2) as signals:
        task_status.started()
        async for signum in signals:
            signame = signal.Signals(signum).name
            if signum == signal.SIGUSR2:
                logger.info("received %s: running the debug actions", signame)
                ctx.debug_signal()
                continue
            if not ctx.stopping.is_set():
                logger.info(
                    "received %s, draining (grace period %gs)",
                    signame,
                    ctx.options.shutdown_grace_period,
                )
                ctx.stopping.set()
            else:
                logger.warning("received %s while draining, stopping now", signame)
                outcome.code = 1
                scope.cancel()
                return


async def _enforce_grace_period(
    ctx: ComponentContext, outcome: _Outcome, scope: anyio.CancelScope
) -> None:
    await ctx.stopping.wait()
    await ctx.clock.sleep(ctx.options.shutdown_grace_period)
    logger.error(
        "%s did not stop within its %gs grace period, cancelling it",
        ctx.name,
        ctx.options.shutdown_grace_period,
    )
    outcome.code = 1
    scope.cancel()


async def retry_until_ready(
    what: str,
    fn: Callable[[], Awaitable[T]],
    *,
    clock: Clock,
    initial: float = 0.2,
    max_delay: float = 5.0,
    jitter: float = 0.2,
    log_every: float = 5.0,
    retry_on: tuple[type[Exception], ...] = (Exception,),
    rng: random.Random | None = None,
) -> T:
    """Call `fn` until it returns, sleeping with exponential backoff and jitter in between.

    For a dependency that is not up yet: it is waited for, never a crash. An exception in
    `retry_on` is logged as "waiting for <what>: <error>" at most every `log_every` seconds;
    any other exception propagates. Each sleep is min(max_delay, d * (1 + jitter * U[0,1)))
    where d doubles from `initial`. Cancel the caller to give up.
    """
    rng = rng or random.Random()
    delay = initial
    attempt = 0
    last_logged: float | None = None
    while True:
        attempt += 1
        try:
            result = await fn()
        except retry_on as exc:
            now = clock.monotonic()
            if last_logged is None or now - last_logged >= log_every:
                logger.info("waiting for %s: %s", what, str(exc) or type(exc).__name__)
                last_logged = now
            await clock.sleep(min(max_delay, delay * (1 + jitter * rng.random())))
            delay = min(max_delay, delay * 2)
            continue
        if attempt > 1:
            logger.info("%s is ready after %d attempts", what, attempt)
        return result
