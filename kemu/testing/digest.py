"""What a run of a scenario did to its pods, as a record and a digest, so that two runs can be
compared (issue #30: in virtual time at rate max, the same seeded scenario gives the same
digest).

`RunRecorder` watches every pod from the scenario's start (a watch from outside the cluster:
it is not part of the clock's quiescence) and keeps, per pod: the node it was bound to, the
nominatedNodeName values it went through in order, the virtual time of its binding relative
to the start (the PodScheduled condition's lastTransitionTime, which the apiserver writes on
the cluster's clock) in milliseconds, whether the scheduler preempted it (its DisruptionTarget
condition, reason PreemptionByScheduler) and whether it was deleted.

    async with RunRecorder.watching(client) as run:
        ...  # create the scenario's objects, advance the clock
    print(run.digest())
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass, field

import anyio

from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.machinery.pod_conditions import get_pod_condition
from kemu.scheduling.preemption import PREEMPTION_BY_SCHEDULER


@dataclass
class PodRecord:
    node: str = ""
    """The node the pod was bound to ("" if never)."""
    nominated: list[str] = field(default_factory=list)
    """The nominatedNodeName values it went through after the none it starts with, in order
    ("" when cleared)."""
    bound_at_ms: int | None = None
    """Virtual milliseconds from the start to its binding."""
    preempted: bool = False
    deleted: bool = False


class RunRecorder:
    def __init__(self, start: float) -> None:
        """`start`: the virtual time (seconds since the epoch) the scenario starts at."""
        self.start = start
        self.pods: dict[str, PodRecord] = {}
        """By namespace/name."""
        self._live: dict[str, str] = {}
        """The resourceVersion of every pod not deleted, as last seen."""

    @classmethod
    @asynccontextmanager
    async def watching(cls, client: Client) -> AsyncIterator[RunRecorder]:
        """Records from now (the cluster clock's present instant is the start) until the
        block ends, and then until the watch has delivered every change made by then (the
        pods it has seen are the pods a list returns, at the same resourceVersions)."""
        start = (await client.clock_status()).now
        listed = await client.list_all(types_pb2.Pod)
        recorder = cls(start)
        for pod in listed.items:
            recorder.observe("ADDED", pod)
        async with anyio.create_task_group() as tg:

            async def follow() -> None:
                async with client.watch(
                    types_pb2.Pod, resource_version=listed.resource_version
                ) as events:
                    async for event in events:
                        recorder.observe(event.type, event.object)

            tg.start_soon(follow)
            yield recorder
            with anyio.fail_after(30):  # wall seconds: transport, not the cluster's time
                while True:
                    now = {
                        _key(p): p.metadata.resource_version
                        for p in (await client.list_all(types_pb2.Pod)).items
                    }
                    if now == recorder._live:
                        break
                    await anyio.sleep(0.05)
            tg.cancel_scope.cancel()

    def observe(self, kind: str, pod: types_pb2.Pod) -> None:
        key = _key(pod)
        if kind == "DELETED":
            self._live.pop(key, None)
        else:
            self._live[key] = pod.metadata.resource_version
        record = self.pods.setdefault(key, PodRecord())
        if pod.spec.node_name:
            record.node = pod.spec.node_name
        nominated = pod.status.nominated_node_name
        if (record.nominated[-1] if record.nominated else "") != nominated:
            record.nominated.append(nominated)
        scheduled = get_pod_condition(pod.status, "PodScheduled")
        if scheduled is not None and scheduled.status == "True" and record.bound_at_ms is None:
            t = scheduled.last_transition_time
            record.bound_at_ms = round((t.seconds + t.nanos / 1e9 - self.start) * 1000)
        target = get_pod_condition(pod.status, "DisruptionTarget")
        if target is not None and target.reason == PREEMPTION_BY_SCHEDULER:
            record.preempted = True
        if kind == "DELETED":
            record.deleted = True

    def summary(self) -> dict[str, dict[str, object]]:
        return {key: asdict(record) for key, record in sorted(self.pods.items())}

    def digest(self) -> str:
        """sha256 of the summary's canonical JSON."""
        text = json.dumps(self.summary(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()


def _key(pod: types_pb2.Pod) -> str:
    return f"{pod.metadata.namespace}/{pod.metadata.name}"
