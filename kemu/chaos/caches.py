"""Caches checked against the truth after a chaos run (issue #28 item 4): every running
scheduler, controller-manager and autoscaler gets SIGUSR2, compares its caches with the truth
(kemu.client.comparer: its informers with fresh lists, the scheduler's cache and queue with its
informers and with fresh lists) and serves the result at GET /debug/caches. Each difference that
survived the comparison's catch-up rounds (a missed update, not a race) is a violation naming
the process, the cache, the object and what differed; so is a comparison that failed or never
answered, unless the process exited meanwhile.
"""

from __future__ import annotations

import os
import signal
from typing import Final, TypedDict

import anyio
import anyio.to_thread

from kemu.client.comparer import DEBUG_HANDLER, Difference
from kemu.testing.cluster import Cluster, Component
from kemu.testing.eventually import eventually

CHECKED_MODULES: Final = ("scheduler", "controllermanager", "autoscaler")
ANSWER_TIMEOUT: Final = 60.0
"""How long a process has to finish its comparison (two catch-up rounds per cache that differs,
and the fresh lists)."""


class CacheCompared(TypedDict):
    cache: str
    against: str
    objects: int
    raced: int


class Comparison(TypedDict):
    """The `last` of GET /debug/caches (kemu.client.comparer's result; the keys read here)."""

    trigger: int
    caches: list[CacheCompared]
    differences: list[dict[str, str]]
    errors: list[str]


class CachesReport(TypedDict):
    """GET /debug/caches (kemu.client.comparer.CacheComparer.report; the keys read here)."""

    triggers: int
    last: Comparison | None


def debug_url(proc: Component) -> str:
    return proc.debug_url(DEBUG_HANDLER)


async def _report(proc: Component) -> CachesReport:
    document: CachesReport = await anyio.to_thread.run_sync(proc.debug, DEBUG_HANDLER)
    return document


async def compare(proc: Component, *, timeout: float = ANSWER_TIMEOUT) -> Comparison:  # noqa: ASYNC109
    """Sends `proc` SIGUSR2 and returns the comparison it made after the signal (the `last`
    of its GET /debug/caches). AssertionError if none within `timeout` seconds."""

    async def reachable() -> CachesReport:
        # A process restarted just now may not listen yet.
        try:
            return await _report(proc)
        except OSError as e:
            if not proc.running:
                raise RuntimeError(f"{proc.name} exited") from e
            raise AssertionError(f"GET {debug_url(proc)}: {e}") from e

    before = await eventually(reachable, timeout=timeout, interval=0.2)
    if proc.pid is None:
        raise RuntimeError(f"{proc.name} is not running")
    os.kill(proc.pid, signal.SIGUSR2)

    async def answered() -> Comparison:
        last = (await _report(proc))["last"]
        assert last is not None and last["trigger"] > before["triggers"], (
            f"{proc.name} has made no comparison since the signal"
        )
        return last

    return await eventually(answered, timeout=timeout, interval=0.2)


def violations_of(name: str, result: Comparison) -> list[str]:
    """One violation per difference and per failed comparison of `result`."""
    out = [
        f"{name}: cache mismatch: {Difference.from_dict(d).line()}" for d in result["differences"]
    ]
    out += [f"{name}: cache comparison failed: {e}" for e in result["errors"]]
    return out


async def check(cluster: Cluster) -> list[str]:
    """Asks every running scheduler, controller-manager and autoscaler of `cluster` at once."""
    procs = [
        p
        for p in cluster.processes.values()
        if isinstance(p, Component) and p.module in CHECKED_MODULES and p.running
    ]
    violations: list[str] = []

    async def ask(proc: Component) -> None:
        try:
            result = await compare(proc)
        except (AssertionError, RuntimeError, OSError, ValueError) as e:
            if not proc.running:
                # It exited meanwhile (a scheduler that finds its lease lost exits, as
                # upstream's): no cache left to check.
                return
            violations.append(f"{proc.name}: no cache comparison: {e}")
            return
        violations.extend(violations_of(proc.name, result))

    async with anyio.create_task_group() as tg:
        for proc in procs:
            tg.start_soon(ask, proc)
    return sorted(violations)
