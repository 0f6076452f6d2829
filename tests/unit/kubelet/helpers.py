"""Fakes and waits shared by the kubelet unit tests: a FakeClient, a FakeClock, a pod informer
and PodWorkers for one or more nodes, run in a task group."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import anyio
import anyio.lowlevel
from prometheus_client import CollectorRegistry

from kemu.api.v1 import types_pb2
from kemu.client.events import EventRecorder
from kemu.client.fake import FakeClient
from kemu.client.informer import Informer
from kemu.component.clock import FakeClock
from kemu.machinery.errors import NotFound
from kemu.testing import fake_time
from kemu.testing.fake_time import settle
from kubelet.checkpoint import Checkpoint
from kubelet.pod_manager import NodePods
from kubelet.pod_workers import PodWorkers
from kubelet.settings import PodWorkerOptions

ALLOCATABLE = {"cpu": 4000, "memory": 4 * 1024**3, "pods": 110}


async def wait_running(env: Env, name: str) -> types_pb2.Pod:
    """The pod once its status says Running (after the default start-up delay)."""
    await settle()
    await advance(env.clock, 0.5)
    for _ in range(100):
        got = await env.find(name)
        if got is not None and got.status.phase == "Running":
            return got
        await settle()
    raise AssertionError(f"{name} is not running: {got}")


@dataclass
class Env:
    fake: FakeClient
    clock: FakeClock
    workers: PodWorkers

    def node(self, name: str = "n1") -> NodePods:
        return self.workers.nodes[name]

    async def find(self, name: str) -> types_pb2.Pod | None:
        try:
            return await self.fake.get(types_pb2.Pod, name)
        except NotFound:
            return None

    async def pod(self, name: str) -> types_pb2.Pod:
        pod = await self.find(name)
        assert pod is not None, f"pod {name} is gone"
        return pod

    async def exists(self, name: str) -> bool:
        return await self.find(name) is not None

    async def phase(self, name: str) -> str:
        pod = await self.find(name)
        return "<gone>" if pod is None else pod.status.phase

    def last_status_write(self) -> types_pb2.Pod:
        """The pod the last update_status sent."""
        sent = [a.object for a in self.fake.actions if a.verb == "update_status"]
        assert sent, "no status was written"
        pod = sent[-1]
        assert isinstance(pod, types_pb2.Pod)
        return pod

    async def mark_deleted(self, name: str, grace: int) -> None:
        """A graceful delete of a bound pod (the fake marks it as the apiserver does: a shorter
        grace period replaces the deadline, a longer one does not)."""
        await self.fake.delete(types_pb2.Pod, name, grace_period_seconds=grace)


@asynccontextmanager
async def running_workers(
    *,
    nodes: Mapping[str, Mapping[str, int]] | None = None,
    fake: FakeClient | None = None,
    clock: FakeClock | None = None,
    root_dir: Path | None = None,
    options: PodWorkerOptions | None = None,
    recorder: EventRecorder | None = None,
    registry: CollectorRegistry | None = None,
) -> AsyncIterator[Env]:
    clock = clock or FakeClock()
    fake = fake or FakeClient(clock=clock)
    nodes = nodes or {"n1": ALLOCATABLE}
    workers = PodWorkers(
        fake,
        [NodePods(name, alloc, Checkpoint(root_dir, name)) for name, alloc in nodes.items()],
        clock=clock,
        options=options or PodWorkerOptions(startup_delay=0.5, workers=4),
        recorder=recorder,
        registry=registry,
    )
    workers.restore()
    informer = Informer(fake, types_pb2.Pod, field_selector="spec.nodeName!=", clock=clock)
    informer.add_event_handler(workers.handler())
    async with anyio.create_task_group() as tg:
        await tg.start(informer.run)
        await tg.start(workers.run)
        yield Env(fake, clock, workers)
        tg.cancel_scope.cancel()


async def advance(clock: FakeClock, seconds: float, step: float = 0.1) -> None:
    """The kubelet's timers are short (startup and actuation delays): steps of 0.1 s."""
    await fake_time.advance(clock, seconds, step=step)
