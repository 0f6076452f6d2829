"""The scheduler process's pieces wired as scheduler/app.py wires them, over kemu's FakeClient
(informers, Cache, PriorityQueue with the profile's queueing hints, EventHandlers, a Framework
with the preemption executor, Scheduler); only the event recorder is a fake. Tests drive the
cycles one pod at a time (`Env.cycle`)."""

from __future__ import annotations

import functools
import json
import random
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import anyio
from google.protobuf.message import Message

from kemu.api.v1 import types_pb2
from kemu.client.fake import FakeClient
from kemu.client.informer import Informer, InformerFactory
from kemu.component.clock import FakeClock
from kemu.component.featuregate import FeatureGates
from kemu.component.version import Version
from kemu.machinery.errors import NotFound
from kemu.machinery.resources import PodResourcesOptions
from kemu.scheduling.composite_pod_groups import WorkloadForest, composite_pod_groups_enabled
from kemu.scheduling.config import default_config, scheduler_registry
from kemu.scheduling.deferred import resize_preemption_enabled
from kemu.scheduling.interface import SCHEDULER_POD_FIELD_SELECTOR
from kemu.scheduling.plugins.volumes import STORAGE_KINDS
from kemu.scheduling.pod_group_state import GroupMembership, MembershipField, PodGroupStates
from kemu.scheduling.profile import Profile
from kemu.scheduling.runtime import Framework, FrameworkOptions
from kemu.scheduling.waiting_pods import WaitingPodsMap
from kemu.testing.builders import make_node
from scheduler.cache.cache import Cache
from scheduler.event_handlers import EventHandlers
from scheduler.metrics import PodGroupMetrics, SchedulerMetrics
from scheduler.preemption_executor import Executor
from scheduler.queue.hints import build_queueing_hint_map
from scheduler.queue.pod_group_entity import ENTITY_QUEUE_SINCE, pod_group_queueing
from scheduler.queue.scheduling_queue import PriorityQueue
from scheduler.schedule_one import TURN_SECONDS, CycleSettings, Scheduler
from tests.unit.scheduling.deferred_builders import SCHEDULER, resize_gates

_READS = frozenset({"get", "list", "watch"})


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []
        self.messages: list[tuple[str, str, str, str, str]] = []

    def event(
        self,
        obj: types_pb2.Pod,
        event_type: str,
        reason: str,
        action: str,
        message: str,
        *,
        related: types_pb2.Pod | None = None,
    ) -> None:
        self.events.append((obj.metadata.name, reason))
        self.messages.append((obj.metadata.name, event_type, reason, action, message))


@dataclass
class Env:
    client: FakeClient
    cache: Cache
    queue: PriorityQueue
    scheduler: Scheduler
    recorder: Recorder
    fwk: Framework
    metrics: SchedulerMetrics

    def node(self, name: str, cpu: str, memory: str = "300", *disabled_by: str) -> None:
        b = make_node(name).capacity(cpu=cpu, memory=memory, pods="10")
        if disabled_by:
            b = b.disable_resize_preemption(*disabled_by)
        self.client.add(b.obj())

    def add(self, pod: types_pb2.Pod) -> types_pb2.Pod:
        stored = self.client.add(pod)
        assert isinstance(stored, types_pb2.Pod)
        return stored

    async def get(self, name: str) -> types_pb2.Pod | None:
        try:
            return await self.client.get(types_pb2.Pod, name, "default")
        except NotFound:
            return None

    async def update_status(self, pod: types_pb2.Pod) -> types_pb2.Pod:
        current = await self.get(pod.metadata.name)
        assert current is not None
        pod.metadata.resource_version = current.metadata.resource_version
        pod.metadata.uid = current.metadata.uid
        return await self.client.update_status(pod)

    async def patch_spec_cpu(self, name: str, cpu: str) -> None:
        """An in-place resize of the pod's first container (the API's spec, nothing else)."""
        current = await self.get(name)
        assert current is not None
        current.spec.containers[0].resources.requests["cpu"] = cpu
        await self.client.update(current)

    async def actuate_cpu(self, name: str, cpu: str) -> None:
        """A resize the kubelet also actuated: spec, allocated and actual all at `cpu` (the
        scheduler counts the largest, component-helpers resource.PodRequests, staging/src/k8s.io/component-helpers/resource/helpers.go)."""
        await self.patch_spec_cpu(name, cpu)
        current = await self.get(name)
        assert current is not None
        held = current.status.container_statuses[0]
        held.allocated_resources["cpu"] = cpu
        held.resources.requests["cpu"] = cpu
        await self.client.update_status(current)

    def queued(self) -> dict[str, list[str]]:
        return {
            "active": sorted(p.metadata.name for p in self.queue.pods_in_active_q()),
            "backoff": sorted(p.metadata.name for p in self.queue.pods_in_backoff_q()),
            "unschedulable": sorted(p.metadata.name for p in self.queue.unschedulable_pods()),
        }

    def where(self, name: str) -> str:
        for queue, names in self.queued().items():
            if name in names:
                return queue
        return ""

    def cached(self, name: str) -> bool:
        return any(
            pi.pod.metadata.name == name
            for ni in self.cache.dump().nodes.values()
            for pi in ni.pods
        )

    async def cycle(self) -> str:
        """Pops the next pod and runs its scheduling cycle; returns its name."""
        qpi = await self.queue.pop()
        assert qpi is not None
        await self.scheduler.schedule_one(qpi)
        await settle()
        return qpi.pod.metadata.name

    def writes(self) -> list[tuple[str, str, str]]:
        """(verb, pod, subresource) of every write to a pod."""
        return [
            (a.verb, a.name, a.subresource)
            for a in self.client.actions
            if a.verb not in _READS and a.resource == "pods"
        ]

    def patches(self, name: str) -> list[dict[str, object]]:
        return [
            json.loads(a.patch)
            for a in self.client.actions
            if a.verb == "patch" and a.name == name and a.patch
        ]


async def settle() -> None:
    await anyio.wait_all_tasks_blocked()


@asynccontextmanager
async def env(
    gates: FeatureGates | None = None,
    *,
    setup: object = None,
    profile: Profile | None = None,
    per_container_max: bool = False,
    turn_seconds: float = TURN_SECONDS,
) -> AsyncIterator[Env]:
    """The scheduler's pieces over a FakeClient, informers started after `setup(client)`."""
    gates = gates if gates is not None else resize_gates(True)
    clock = FakeClock()
    client = FakeClient(clock=clock)
    if callable(setup):
        setup(client)
    informers = InformerFactory(client, clock=clock)
    pods = informers.informer(types_pb2.Pod, field_selector=SCHEDULER_POD_FIELD_SELECTOR)
    nodes = informers.informer(types_pb2.Node)
    informers.informer(types_pb2.PodDisruptionBudget)
    storage = [informers.informer(kind) for kind in STORAGE_KINDS]
    # Pod groups as app.py has them (GenericWorkload).
    membership = GroupMembership.of(gates, resize_preemption=resize_preemption_enabled(gates))
    forest = (
        WorkloadForest(enabled=composite_pod_groups_enabled(gates))
        if membership.group_cycle
        else None
    )
    pod_groups = PodGroupStates(membership, clock, forest) if membership.enabled else None
    group_informers: list[Informer[Message]] = []
    if membership.field is MembershipField.WORKLOAD_REF:
        group_informers.append(informers.informer(types_pb2.Workload))
    elif membership.field is MembershipField.SCHEDULING_GROUP:
        group_informers.append(informers.informer(types_pb2.PodGroup))
        if composite_pod_groups_enabled(gates):
            group_informers.append(informers.informer(types_pb2.CompositePodGroup))
    metrics = SchedulerMetrics(None, entities=gates.version >= ENTITY_QUEUE_SINCE)
    recorder = Recorder()
    cache = Cache(
        clock,
        counting=PodResourcesOptions(
            use_status_resources=True, per_container_max=per_container_max
        ),
    )
    fwk = Framework(
        profile or default_config().profiles[0],
        scheduler_registry(),
        options=FrameworkOptions(
            client=client,
            clock=clock,
            gates=gates,
            event_recorder=recorder,
            informer_factory=informers,
            waiting_pods=WaitingPodsMap(),
            metrics=metrics,
            rng=random.Random(0),
            preemption_executor=functools.partial(
                Executor, client=client, pod_lister=pods.lister, metrics=metrics
            ),
            pod_group_states=pod_groups,
        ),
    )
    queue = PriorityQueue(
        clock=clock,
        pre_enqueue={SCHEDULER: fwk.run_pre_enqueue_plugins},
        queueing_hint_map={SCHEDULER: build_queueing_hint_map(fwk.enqueue_extensions())},
        pod_lister=pods.lister,
        pod_info_factory=cache.pod_info,
        metrics=metrics,
        pod_groups=pod_group_queueing(pod_groups, gates.version),
    )
    fwk.set_nominator(queue.nominator)
    fwk.set_pod_activator(queue.activate)
    handlers = EventHandlers(
        cache=cache,
        queue=queue,
        scheduler_names=[SCHEDULER],
        frameworks={SCHEDULER: fwk},
        resize_preemption=resize_preemption_enabled(gates),
        pod_groups=pod_groups,
    )
    handlers.register(pods, nodes)
    handlers.register_storage(*storage)
    handlers.register_pod_groups(*group_informers)
    pod_group_lister = None
    pod_group_metrics = None
    if membership.group_cycle:
        pod_group_lister = informers.informer(types_pb2.PodGroup).lister
        pod_group_metrics = PodGroupMetrics(None, typed=gates.version >= Version(1, 37))
    scheduler = Scheduler(
        client=client,
        cache=cache,
        queue=queue,
        profiles={SCHEDULER: fwk},
        clock=clock,
        settings=CycleSettings.of(gates, turn_seconds=turn_seconds),
        metrics=metrics,
        pod_lister=pods.lister,
        pod_groups=pod_groups,
        pod_group_lister=pod_group_lister,
        pod_group_metrics=pod_group_metrics,
    )
    async with anyio.create_task_group() as tg:
        informers.start(tg)
        await informers.wait_for_cache_sync()
        scheduler._binding_tasks = tg  # what Scheduler.run sets up
        fwk.set_background(tg)
        await settle()
        try:
            yield Env(client, cache, queue, scheduler, recorder, fwk, metrics)
        finally:
            fwk.set_background(None)
            tg.cancel_scope.cancel()
