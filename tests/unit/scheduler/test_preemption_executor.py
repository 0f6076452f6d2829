"""Preemption in the scheduler process: the executor (scheduler.preemption_executor) that the
DefaultPreemption plugin hands its chosen candidate to, against pkg/scheduler/framework/preemption/preemption.go Evaluator.Preempt and prepareCandidate: the
DisruptionTarget condition, graceful DELETE, waiting pods, Preempted events, clearing lower
nominations, SchedulerAsyncPreemption, the plugin's reads of the informers and its metrics.

Everything runs on the real pieces (default profile Framework with its plugins and the
executor, Cache, Snapshot, Nominator, informers, WaitingPodsMap, SchedulerMetrics) over kemu's
FakeClient; the only other fake is the event recorder. The dry run alone is tested in
tests/unit/scheduling/test_preemption.py.
"""

from __future__ import annotations

import functools
import json
import random
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest
from prometheus_client import CollectorRegistry

from kemu.api.v1 import types_pb2
from kemu.client.fake import FakeClient
from kemu.client.informer import InformerFactory, Lister
from kemu.client.interface import M
from kemu.component.clock import FakeClock
from kemu.component.featuregate import FeatureGates
from kemu.component.version import Version
from kemu.machinery.errors import NotFound, Unavailable
from kemu.machinery.eviction import DISRUPTION_TARGET
from kemu.machinery.resources import SCHEDULER_DEFAULTS
from kemu.scheduling.config import default_config
from kemu.scheduling.interface import (
    SCHEDULER_POD_FIELD_SELECTOR,
    CycleState,
    FitError,
    NodeToStatus,
)
from kemu.scheduling.nominator import Nominator
from kemu.scheduling.plugins import default_preemption
from kemu.scheduling.plugins.default_preemption import WAITING_FOR_PREEMPTION, DefaultPreemption
from kemu.scheduling.plugins.registry import in_tree_registry
from kemu.scheduling.preemption import (
    PREEMPTION_BY_SCHEDULER,
    Candidate,
    Victims,
)
from kemu.scheduling.runtime import Framework, FrameworkOptions
from kemu.scheduling.snapshot import Snapshot
from kemu.scheduling.status import SUCCESS, Code, Status, unresolvable, unschedulable
from kemu.scheduling.types import NodeInfo, PodInfo, PostFilterResult
from kemu.scheduling.waiting_pods import WaitingPod, WaitingPodsMap
from kemu.testing.builders import make_node, make_pod
from scheduler.cache.cache import Cache
from scheduler.metrics import SchedulerMetrics
from scheduler.preemption_executor import Executor
from scheduler.schedule_one import CycleSettings, Scheduler
from tests.unit.scheduling.preemption_builders import (
    NOW,
    PREEMPTING_MESSAGE,
    SCHEDULER,
    gates,
    mark_terminating,
    pod,
)

_READS = frozenset({"get", "list", "watch"})

# ---------------------------------------------------------------- the harness


class Recorder:
    """The framework's EventRecorder: (object name, type, reason, action, message)."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, str, str, str]] = []
        self.related: list[str] = []

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
        self.events.append((obj.metadata.name, event_type, reason, action, message))
        self.related.append(related.metadata.name if related is not None else "")


class GatedClient(FakeClient):
    """A FakeClient whose DELETE of the pods named in `hold_before` waits for `release`
    before it is applied, and of those in `hold_after` is applied (the watch sees it) but
    does not return until `release`. `lag_watches()` holds every watch event back (the
    informers fall behind the API) until `catch_up()`."""

    def __init__(self, clock: FakeClock) -> None:
        super().__init__(clock=clock)
        self.hold_before: set[str] = set()
        self.hold_after: set[str] = set()
        self.release = anyio.Event()
        self._caught_up: anyio.Event | None = None

    def lag_watches(self) -> None:
        self._caught_up = anyio.Event()

    def catch_up(self) -> None:
        if self._caught_up is not None:
            self._caught_up.set()
            self._caught_up = None

    def watch(
        self, kind: type[M], namespace: str = "", **kwargs: Any
    ) -> AbstractAsyncContextManager[AsyncIterator[Any]]:
        inner = super().watch(kind, namespace, **kwargs)

        @asynccontextmanager
        async def lagging() -> AsyncIterator[AsyncIterator[Any]]:
            async with inner as events:

                async def delivered() -> AsyncIterator[Any]:
                    async for event in events:
                        while self._caught_up is not None:
                            await self._caught_up.wait()
                        yield event

                yield delivered()

        return lagging()

    async def delete(
        self,
        kind: type[M],
        name: str,
        namespace: str = "",
        *,
        grace_period_seconds: int | None = None,
        uid: str | None = None,
        resource_version: str | None = None,
        propagation_policy: str | None = None,
        orphan_dependents: bool | None = None,
    ) -> M:
        if name in self.hold_before:
            await self.release.wait()
        out = await super().delete(
            kind,
            name,
            namespace,
            grace_period_seconds=grace_period_seconds,
            uid=uid,
            resource_version=resource_version,
            propagation_policy=propagation_policy,
            orphan_dependents=orphan_dependents,
        )
        if name in self.hold_after:
            await self.release.wait()
        return out


@dataclass
class Cluster:
    """A default-profile Framework with its executor over a FakeClient, with the scheduler's
    cache, snapshot, nominator, waiting pods and metrics; `scheduler` runs the cycle's algorithm."""

    client: GatedClient
    clock: FakeClock
    cache: Cache
    snapshot: Snapshot
    fwk: Framework
    nominator: Nominator
    pod_lister: Lister[types_pb2.Pod]
    recorder: Recorder
    registry: CollectorRegistry
    waiting: WaitingPodsMap
    scheduler: Scheduler
    activated: list[types_pb2.Pod] = field(default_factory=list)

    @property
    def executor(self) -> Executor:
        executor = self.fwk.preemption_executor()
        assert isinstance(executor, Executor)
        return executor

    @property
    def plugin(self) -> DefaultPreemption:
        plugin = self.fwk.plugin(default_preemption.NAME)
        assert isinstance(plugin, DefaultPreemption)
        return plugin

    def node(self, name: str, cpu: str, memory: str = "64Gi", pods: str = "32") -> None:
        self.cache.add_node(make_node(name).capacity(cpu=cpu, memory=memory, pods=pods).obj())

    def add(
        self, p: types_pb2.Pod, *, terminating: bool = False, by_preemption: bool = True
    ) -> types_pb2.Pod:
        """Stores `p` in the API (which gives it its uid); a bound pod also goes to the cache,
        there being deleted gracefully if asked (a deletionTimestamp, and the DisruptionTarget
        condition when `by_preemption`): the fake API deletes at once, so only the
        scheduler's copy can show a graceful deletion."""
        stored = self.client.add(p)
        assert isinstance(stored, types_pb2.Pod)
        if stored.spec.node_name:
            cached = types_pb2.Pod()
            cached.CopyFrom(stored)
            if terminating:
                mark_terminating(cached, by_preemption=by_preemption)
            self.cache.add_pod(cached)
        return stored

    def nominate(self, p: types_pb2.Pod) -> None:
        """What the queue does for a pod with status.nominatedNodeName."""
        self.nominator.add_nominated_pod(PodInfo(p), None)

    def refresh(self) -> None:
        self.cache.update_snapshot(self.snapshot)
        self.fwk.set_snapshot(self.snapshot)

    def node_info(self, name: str) -> NodeInfo:
        self.refresh()
        ni = self.snapshot.node_infos().get(name)
        assert ni is not None
        return ni

    def cycle(self, p: types_pb2.Pod) -> tuple[CycleState, NodeToStatus]:
        """A scheduling cycle that must fail: its CycleState and the nodes' statuses."""
        state = CycleState()
        with pytest.raises(FitError) as err:
            self.scheduler.schedule_pod(self.fwk, state, p)
        return state, err.value.statuses

    async def stored(self, name: str) -> types_pb2.Pod | None:
        """The API's copy of pod `name`, None once deleted (for a bound victim: once its
        graceful deletion started; the kubelet that would finish it is not here)."""
        try:
            pod = await self.client.get(types_pb2.Pod, name, "default")
        except NotFound:
            return None
        return None if pod.metadata.HasField("deletion_timestamp") else pod

    def actions_on(self, name: str) -> list[tuple[str, str]]:
        """The writes sent for pod `name`: (verb, subresource)."""
        return [
            (a.verb, a.subresource)
            for a in self.client.actions
            if a.name == name and a.verb not in _READS
        ]

    def sample(self, metric: str, labels: dict[str, str] | None = None) -> float:
        return self.registry.get_sample_value(metric, labels or {}) or 0.0


async def settle() -> None:
    """Lets the informers and any background preemption run until they all wait."""
    await anyio.wait_all_tasks_blocked()


@asynccontextmanager
async def cluster(
    *,
    async_preemption: bool = False,
    seed: int = 0,
    feature_gates: FeatureGates | None = None,
) -> AsyncIterator[Cluster]:
    clock = FakeClock()
    client = GatedClient(clock)
    informers = InformerFactory(client, clock=clock)
    registry = CollectorRegistry()
    metrics = SchedulerMetrics(registry)
    recorder = Recorder()
    waiting = WaitingPodsMap()
    fg = feature_gates or gates(async_preemption=async_preemption)
    pod_lister = informers.informer(
        types_pb2.Pod, field_selector=SCHEDULER_POD_FIELD_SELECTOR
    ).lister
    fwk = Framework(
        default_config().profiles[0],
        in_tree_registry(),
        options=FrameworkOptions(
            client=client,
            clock=clock,
            gates=fg,
            event_recorder=recorder,
            informer_factory=informers,
            waiting_pods=waiting,
            metrics=metrics,
            rng=random.Random(seed),
            preemption_executor=functools.partial(
                Executor, client=client, pod_lister=pod_lister, metrics=metrics
            ),
        ),
    )
    nominator = Nominator(pod_lister)
    fwk.set_nominator(nominator)
    cache = Cache(clock, counting=SCHEDULER_DEFAULTS)
    scheduler = Scheduler(
        client=client,
        cache=cache,
        queue=None,  # type: ignore[arg-type]
        profiles={SCHEDULER: fwk},
        clock=clock,
        settings=CycleSettings.of(fg),
        metrics=metrics,
        pod_lister=pod_lister,
    )
    snapshot = scheduler.snapshot
    c = Cluster(
        client,
        clock,
        cache,
        snapshot,
        fwk,
        nominator,
        pod_lister,
        recorder,
        registry,
        waiting,
        scheduler,
    )
    fwk.set_pod_activator(c.activated.extend)
    async with anyio.create_task_group() as tg:
        informers.start(tg)
        await informers.wait_for_cache_sync()
        fwk.set_background(tg)
        try:
            yield c
        finally:
            fwk.set_background(None)
            tg.cancel_scope.cancel()


def writes(c: Cluster) -> list[tuple[str, str]]:
    """The writes sent to the API: (verb, pod name)."""
    return [(a.verb, a.name) for a in c.client.actions if a.verb not in _READS]


def condition_patches(c: Cluster, name: str) -> list[dict[str, Any]]:
    """The DisruptionTarget conditions sent in status PATCHes of pod `name`."""
    out = []
    for a in c.client.actions:
        if a.verb == "patch" and a.name == name and a.subresource == "status":
            for cond in json.loads(a.patch)["status"].get("conditions", []):
                if cond["type"] == DISRUPTION_TARGET:
                    out.append(cond)
    return out


# ---------------------------------------------------------------- Evaluator.Preempt / S-PRE-17: nothing written


async def terminating_on_nominated_node(
    c: Cluster, *, by_preemption: bool = True, priority: int = 1
) -> types_pb2.Pod:
    c.node("n1", cpu="2")
    c.add(pod("victim", priority, "2", node="n1"), terminating=True, by_preemption=by_preemption)
    c.refresh()
    return make_pod("p").priority(10).nominated("n1").obj()


@pytest.mark.anyio
async def test_s_pre_17_not_eligible_through_post_filter_keeps_the_nomination() -> None:
    async with cluster() as c:
        await terminating_on_nominated_node(c)
        p = c.add(make_pod("p").priority(10).req(cpu="2").nominated("n1").obj())
        await settle()
        statuses = NodeToStatus()
        statuses.set("n1", unschedulable("Insufficient cpu", plugin="NodeResourcesFit"))
        result, status = await c.plugin.post_filter(CycleState(), p, statuses)
        assert result is None
        assert status == Status(
            Code.UNSCHEDULABLE,
            ("preemption: not eligible due to a terminating pod on the nominated node.",),
        )
        assert writes(c) == []


# ---------------------------------------------------------------- Evaluator.Preempt / prepareCandidate Preempt, sync


async def two_victims(c: Cluster) -> types_pb2.Pod:
    """n1 (cpu 4) full with v1 (started first) and v2, prio 1; the preemptor needs 4 cpu."""
    c.node("n1", cpu="4")
    c.add(pod("v1", 1, "2", node="n1", started=NOW - 100))
    c.add(pod("v2", 1, "2", node="n1", started=NOW - 50))
    p = c.add(pod("p", 10, "4"))
    await settle()
    return p


@pytest.mark.anyio
async def test_sync_preemption_marks_victims_then_deletes_them() -> None:
    async with cluster() as c:
        p = await two_victims(c)
        state, statuses = c.cycle(p)
        result, status = await c.plugin.post_filter(state, p, statuses)

        assert (result, status) == (PostFilterResult("n1"), SUCCESS)
        for name in ("v1", "v2"):
            assert c.actions_on(name) == [("patch", "status"), ("delete", "")]
            assert await c.stored(name) is None
            (cond,) = condition_patches(c, name)
            assert {k: cond[k] for k in ("status", "reason", "message")} == {
                "status": "True",
                "reason": PREEMPTION_BY_SCHEDULER,
                "message": PREEMPTING_MESSAGE,
            }
        assert c.activated == []


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("minor", "overrides", "reason"),
    [
        (25, {}, None),
        (25, {"PodDisruptionConditions": True}, "PreemptionByKubeScheduler"),
        (26, {}, "PreemptionByKubeScheduler"),
        (26, {"PodDisruptionConditions": False}, None),
        (27, {}, PREEMPTION_BY_SCHEDULER),
        (30, {"PodDisruptionConditions": False}, None),
        (34, {"SchedulerAsyncPreemption": False}, PREEMPTION_BY_SCHEDULER),
    ],
)
async def test_the_victims_condition_by_version(
    minor: int, overrides: dict[str, bool], reason: str | None
) -> None:
    """PodDisruptionConditions (alpha off 1.25, beta on 1.26): without it the victims are only
    deleted; the reason is PreemptionByKubeScheduler until kubernetes#114623 (1.27)."""
    fg = FeatureGates.for_version(Version(1, minor), overrides)
    async with cluster(feature_gates=fg) as c:
        p = await two_victims(c)
        state, statuses = c.cycle(p)
        result, status = await c.plugin.post_filter(state, p, statuses)

        assert (result, status) == (PostFilterResult("n1"), SUCCESS)
        for name in ("v1", "v2"):
            assert await c.stored(name) is None
            if reason is None:
                assert c.actions_on(name) == [("delete", "")]
            else:
                assert c.actions_on(name) == [("patch", "status"), ("delete", "")]
                (cond,) = condition_patches(c, name)
                assert (cond["status"], cond["reason"]) == ("True", reason)


@pytest.mark.anyio
async def test_sync_preemption_records_a_preempted_event_per_victim() -> None:
    async with cluster() as c:
        p = await two_victims(c)
        state, statuses = c.cycle(p)
        await c.plugin.post_filter(state, p, statuses)
        message = f"Preempted by pod {p.metadata.uid} on node n1"
        assert sorted(c.recorder.events) == [
            ("v1", "Normal", "Preempted", "Preempting", message),
            ("v2", "Normal", "Preempted", "Preempting", message),
        ]
        # upstream Eventf(victim, preemptor, ...): the preemptor is the related object.
        assert c.recorder.related == [p.metadata.name, p.metadata.name]


@pytest.mark.anyio
async def test_victim_with_the_condition_already_set_is_only_deleted() -> None:
    async with cluster() as c:
        c.node("n1", cpu="4")
        v = pod("v", 1, "4", node="n1")
        v.status.conditions.add(
            type=DISRUPTION_TARGET,
            status="True",
            reason=PREEMPTION_BY_SCHEDULER,
            message=PREEMPTING_MESSAGE,
            observed_generation=1,  # the generation of a created pod
        )
        c.add(v)  # an earlier preemption patched it, then its DELETE failed
        p = c.add(pod("p", 10, "4"))
        await settle()
        state, statuses = c.cycle(p)
        assert (await c.plugin.post_filter(state, p, statuses))[1] == SUCCESS
        assert c.actions_on("v") == [("delete", "")]


@pytest.mark.anyio
async def test_victim_with_another_disruption_target_gets_it_overwritten() -> None:
    async with cluster() as c:
        c.node("n1", cpu="4")
        v = pod("v", 1, "4", node="n1")
        v.status.conditions.add(type="Ready", status="True")
        v.status.conditions.add(type=DISRUPTION_TARGET, status="False", reason="Other")
        c.add(v)
        p = c.add(pod("p", 10, "4"))
        await settle()
        state, statuses = c.cycle(p)
        assert (await c.plugin.post_filter(state, p, statuses))[1] == SUCCESS
        assert c.actions_on("v") == [("patch", "status"), ("delete", "")]
        (cond,) = condition_patches(c, "v")
        assert {k: cond[k] for k in ("status", "reason", "message")} == {
            "status": "True",
            "reason": PREEMPTION_BY_SCHEDULER,
            "message": PREEMPTING_MESSAGE,
        }
        assert "lastTransitionTime" in cond  # False -> True is a transition


@pytest.mark.anyio
async def test_condition_patch_retries_on_conflict_and_keeps_newer_conditions() -> None:
    async with cluster() as c:
        c.node("n1", cpu="4")
        c.add(pod("v", 1, "4", node="n1"))
        # The kubelet wrote a condition since the scheduler's copy was made.
        await c.client.patch(
            types_pb2.Pod,
            "v",
            {"status": {"conditions": [{"type": "Ready", "status": "True"}]}},
            "default",
            subresource="status",
        )
        c.client.clear_actions()
        p = c.add(pod("p", 10, "4"))
        await settle()
        state, statuses = c.cycle(p)
        assert (await c.plugin.post_filter(state, p, statuses))[1] == SUCCESS
        assert [(a.verb, a.name) for a in c.client.actions if a.name == "v"] == [
            ("patch", "v"),  # Conflict: stale resourceVersion
            ("get", "v"),
            ("patch", "v"),
            ("delete", "v"),
        ]
        last = json.loads([a for a in c.client.actions if a.verb == "patch"][-1].patch)
        assert [x["type"] for x in last["status"]["conditions"]] == ["Ready", DISRUPTION_TARGET]


@pytest.mark.anyio
async def test_victim_already_terminating_gets_no_api_call() -> None:
    async with cluster() as c:
        c.node("n1", cpu="4")
        c.add(pod("gone", 1, "2", node="n1"), terminating=True)
        c.add(pod("v", 1, "2", node="n1"))
        p = c.add(pod("p", 10, "4"))
        await settle()
        state, statuses = c.cycle(p)
        result, status = await c.plugin.post_filter(state, p, statuses)
        assert (result, status) == (PostFilterResult("n1"), SUCCESS)
        assert c.actions_on("gone") == []
        assert c.actions_on("v") == [("patch", "status"), ("delete", "")]
        assert names_of_events(c) == ["v"]


def names_of_events(c: Cluster) -> list[str]:
    return sorted(e[0] for e in c.recorder.events)


def assumed_victim(c: Cluster, name: str) -> types_pb2.Pod:
    """A pod of priority 1 asking 4 CPUs, assumed on n1 (in its binding cycle)."""
    victim = c.add(pod(name, 1, "4"))
    assumed = types_pb2.Pod()
    assumed.CopyFrom(victim)
    assumed.spec.node_name = "n1"
    c.cache.assume_pod(assumed)
    return assumed


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("minor", "outcome", "suffix"),
    [
        (35, Code.UNSCHEDULABLE, ""),
        (36, Code.ERROR, " (in kube-scheduler memory)."),
    ],
)
async def test_victim_waiting_at_permit_is_preempted_in_memory(
    minor: int, outcome: Code, suffix: str
) -> None:
    """Never deleted: rejected (Unschedulable) before 1.36, preempted (an Error, so that it
    backs off) since kubernetes#135719, whose event says "in kube-scheduler memory"."""
    fg = FeatureGates.for_version(Version(1, minor), {})
    async with cluster(feature_gates=fg) as c:
        c.node("n1", cpu="4")
        assumed = assumed_victim(c, "waiting")
        wp = WaitingPod(assumed, {"SomePermit": 60.0}, c.clock)
        c.waiting.add(wp)
        p = c.add(pod("p", 10, "4"))
        await settle()
        state, statuses = c.cycle(p)

        result, status = await c.plugin.post_filter(state, p, statuses)
        assert (result, status) == (PostFilterResult("n1"), SUCCESS)
        await settle()
        assert c.actions_on("waiting") == []
        assert await wp.wait() == Status(outcome, ("preempted",), "DefaultPreemption")
        assert names_of_events(c) == ["waiting"]
        message = c.recorder.events[0][4]
        assert message == f"Preempted by pod {p.metadata.uid} on node n1{suffix}"


@pytest.mark.anyio
async def test_victim_allowed_at_permit_before_its_preemption_is_deleted() -> None:
    """1.36: `preempt` refuses a waiting pod that already has its outcome (allowed): the
    victim is then preempted through the API."""
    async with cluster() as c:
        c.node("n1", cpu="4")
        assumed = assumed_victim(c, "waiting")
        wp = WaitingPod(assumed, {"SomePermit": 60.0}, c.clock)
        c.waiting.add(wp)
        wp.allow("SomePermit")
        p = c.add(pod("p", 10, "4"))
        await settle()
        state, statuses = c.cycle(p)

        result, status = await c.plugin.post_filter(state, p, statuses)
        assert (result, status) == (PostFilterResult("n1"), SUCCESS)
        await settle()
        assert c.actions_on("waiting") == [("patch", "status"), ("delete", "")]


@pytest.mark.anyio
@pytest.mark.parametrize("minor", [35, 36])
async def test_victim_in_pre_bind_is_cancelled_in_memory_from_1_36(minor: int) -> None:
    """kubernetes#135502: a victim registered in PreBind has its binding cycle cancelled, no
    API call; before 1.36 it is marked and deleted. Once prebound it is deleted at 1.36 too."""
    fg = FeatureGates.for_version(Version(1, minor), {})
    async with cluster(feature_gates=fg) as c:
        c.node("n1", cpu="4")
        assumed = assumed_victim(c, "binding")
        entry = c.fwk.add_pod_in_pre_bind(assumed.metadata.uid)
        p = c.add(pod("p", 10, "4"))
        await settle()
        state, statuses = c.cycle(p)

        result, status = await c.plugin.post_filter(state, p, statuses)
        assert (result, status) == (PostFilterResult("n1"), SUCCESS)
        await settle()
        if minor >= 36:
            assert c.actions_on("binding") == []
            assert entry.cause == "preempted by DefaultPreemption"
            assert entry.scope.cancel_called
            assert not entry.mark_prebound()
            assert c.recorder.events[0][4].endswith(" (in kube-scheduler memory).")
        else:
            assert c.actions_on("binding") == [("patch", "status"), ("delete", "")]
            assert entry.cause is None


@pytest.mark.anyio
async def test_victim_past_pre_bind_is_deleted() -> None:
    async with cluster() as c:
        c.node("n1", cpu="4")
        assumed = assumed_victim(c, "binding")
        entry = c.fwk.add_pod_in_pre_bind(assumed.metadata.uid)
        assert entry.mark_prebound()
        p = c.add(pod("p", 10, "4"))
        await settle()
        state, statuses = c.cycle(p)

        await c.plugin.post_filter(state, p, statuses)
        await settle()
        assert c.actions_on("binding") == [("patch", "status"), ("delete", "")]
        assert entry.cause is None


@pytest.mark.anyio
async def test_lower_priority_nominations_on_the_node_are_cleared_equal_ones_kept() -> None:
    async with cluster() as c:
        c.node("n1", cpu="4")
        c.add(pod("v", 1, "4", node="n1"))
        lower = c.add(make_pod("lower").priority(2).req(cpu="1").nominated("n1").obj())
        equal = c.add(make_pod("equal").priority(10).req(cpu="1").nominated("n1").obj())
        elsewhere = c.add(make_pod("elsewhere").priority(2).req(cpu="1").nominated("n2").obj())
        p = c.add(pod("p", 10, "2"))
        await settle()
        for x in (lower, equal, elsewhere):
            c.nominate(x)
        state, statuses = c.cycle(p)

        result, status = await c.plugin.post_filter(state, p, statuses)
        assert (result, status) == (PostFilterResult("n1"), SUCCESS)
        nnn = {}
        for name in ("lower", "equal", "elsewhere"):
            stored = await c.stored(name)
            assert stored is not None
            nnn[name] = stored.status.nominated_node_name
        assert nnn == {"lower": "", "equal": "n1", "elsewhere": "n2"}
        assert c.actions_on("equal") == []
        # Cleared after the victims' deletion (sync mode).
        verbs = [(a.verb, a.name) for a in c.client.actions]
        assert verbs.index(("delete", "v")) < verbs.index(("patch", "lower"))


@pytest.mark.anyio
async def test_s_pre_18_preemption_clears_the_lower_priority_nomination() -> None:
    async with cluster() as c:
        c.node("n1", cpu="4")
        c.add(pod("l", 1, "4", node="n1"))
        h1 = c.add(make_pod("h1").priority(50).req(cpu="2").nominated("n1").obj())
        h2 = c.add(pod("h2", 100, "2"))
        await settle()
        c.nominate(h1)
        state, statuses = c.cycle(h2)
        result, status = await c.plugin.post_filter(state, h2, statuses)
        assert (result, status) == (PostFilterResult("n1"), SUCCESS)
        stored = await c.stored("h1")
        assert stored is not None and stored.status.nominated_node_name == ""


@pytest.mark.anyio
async def test_no_candidate_clears_the_nomination_with_upstreams_message() -> None:
    async with cluster() as c:
        c.node("n0", cpu="2")
        c.add(pod("high", 100, "2", node="n0"))  # Unschedulable, but nothing to preempt
        c.node("n1", cpu="1")  # the pod can never fit: UnschedulableAndUnresolvable
        c.node("n2", cpu="1")
        p = c.add(pod("p", 10, "2"))
        await settle()
        state, statuses = c.cycle(p)
        assert statuses.get("n1").code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE

        result, status = await c.plugin.post_filter(state, p, statuses)
        assert result == PostFilterResult("")
        assert status == Status(
            Code.UNSCHEDULABLE,
            (
                "preemption: 0/3 nodes are available: 1 No preemption victims found for "
                "incoming pod, 2 Preemption is not helpful for scheduling.",
            ),
        )
        assert writes(c) == []


@pytest.mark.anyio
async def test_no_potential_node_at_all_is_not_helpful_everywhere() -> None:
    async with cluster() as c:
        c.node("n0", cpu="1")
        c.node("n1", cpu="1")
        p = c.add(pod("p", 10, "2"))
        await settle()
        state, statuses = c.cycle(p)
        result, status = await c.plugin.post_filter(state, p, statuses)
        assert result == PostFilterResult("")
        assert status.message() == (
            "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
        )


@pytest.mark.anyio
async def test_preemption_picks_the_node_by_upstream_criteria() -> None:
    async with cluster() as c:
        # S-PRE-10: node "a" needs two victims, node "b" one (smaller shifted sum).
        c.node("a", cpu="4")
        c.add(pod("victim-1", 1, "2", node="a"))
        c.add(pod("victim-2", 1, "2", node="a"))
        c.node("b", cpu="4")
        c.add(pod("victim-3", 1, "3", node="b"))
        p = c.add(pod("p", 100, "4"))
        await settle()
        state, statuses = c.cycle(p)
        result, status = await c.plugin.post_filter(state, p, statuses)
        assert (result, status) == (PostFilterResult("b"), SUCCESS)
        assert [await c.stored(n) is None for n in ("victim-1", "victim-2", "victim-3")] == [
            False,
            False,
            True,
        ]


@pytest.mark.anyio
async def test_sync_api_error_fails_the_preemption_and_keeps_the_nomination() -> None:
    async with cluster() as c:
        p = await two_victims(c)
        c.client.fail("delete", Unavailable("etcd is down"))
        state, statuses = c.cycle(p)
        result, status = await c.plugin.post_filter(state, p, statuses)
        assert result is None
        assert status.code == Code.ERROR
        assert status.message() == "preemption: etcd is down"


@pytest.mark.anyio
async def test_post_filter_through_the_framework_names_the_plugin() -> None:
    async with cluster() as c:
        c.node("n0", cpu="1")
        p = c.add(pod("p", 10, "2"))
        await settle()
        state, statuses = c.cycle(p)
        result, status = await c.fwk.run_post_filter_plugins(state, p, statuses)
        assert result == PostFilterResult("")
        assert status.code == Code.UNSCHEDULABLE
        # DynamicResources' PostFilter runs first (upstream's default profile puts it before
        # DefaultPreemption) and, the pod having no claims, is the first to say no: upstream's
        # runPostFilterPlugins names it and joins every plugin's reasons.
        assert status.plugin == "DynamicResources"
        assert status.message().startswith(
            "no new claims to deallocate, preemption: 0/1 nodes are available"
        )


@pytest.mark.anyio
async def test_executor_prepares_the_candidate_it_is_given() -> None:
    async with cluster() as c:
        p = await two_victims(c)
        v1 = await c.stored("v1")
        assert v1 is not None
        # The dry run is not consulted: the executor removes exactly the victims it is handed.
        status = await c.executor.prepare_candidate(
            default_preemption.NAME, Candidate("n1", Victims((v1,))), p
        )
        assert status == SUCCESS
        assert c.actions_on("v1") == [("patch", "status"), ("delete", "")]
        assert c.actions_on("v2") == []
        assert names_of_events(c) == ["v1"]
        assert c.sample("scheduler_preemption_victims_sum") == 1.0


# ---------------------------------------------------------------- prepareCandidate async


@pytest.mark.anyio
async def test_async_preemption_runs_in_the_background_and_gates_pre_enqueue() -> None:
    async with cluster(async_preemption=True) as c:
        p = await two_victims(c)
        c.client.hold_before.add("v2")  # the last victim (least important)
        state, statuses = c.cycle(p)

        result, status = await c.plugin.post_filter(state, p, statuses)
        assert (result, status) == (PostFilterResult("n1"), SUCCESS)
        assert writes(c) == []  # nothing yet: it runs in the background
        waiting = unresolvable(WAITING_FOR_PREEMPTION)
        assert c.plugin.pre_enqueue(p) == waiting
        assert c.fwk.run_pre_enqueue_plugins(p) == waiting.with_plugin("DefaultPreemption")

        await settle()  # v1 is gone; the DELETE of v2 has not been issued
        assert await c.stored("v1") is None
        assert await c.stored("v2") is not None
        assert c.plugin.pre_enqueue(p) == waiting

        c.client.release.set()
        await settle()
        assert await c.stored("v2") is None
        assert c.plugin.pre_enqueue(p) == SUCCESS
        assert c.activated == []
        assert (
            c.sample("scheduler_preemption_goroutines_execution_total", {"result": "success"})
            == 1.0
        )


@pytest.mark.anyio
async def test_async_preemption_lets_the_pod_in_once_the_last_deletion_is_visible() -> None:
    async with cluster(async_preemption=True) as c:
        p = await two_victims(c)
        c.client.hold_after.add("v2")  # applied, but the call has not returned
        state, statuses = c.cycle(p)
        await c.plugin.post_filter(state, p, statuses)
        await settle()
        assert await c.stored("v2") is None
        # Still inside the last DELETE call (no event for v2 yet), yet not gated any more.
        assert names_of_events(c) == ["v1"]
        assert c.plugin.pre_enqueue(p) == SUCCESS
        c.client.release.set()
        await settle()
        assert names_of_events(c) == ["v1", "v2"]


@pytest.mark.anyio
async def test_async_preemption_holds_the_pod_until_the_scheduler_sees_the_last_deletion() -> None:
    """Issue #16: every DELETE has returned but the scheduler's informer has not seen them
    yet (its cache still counts the victims). The preemptor stays held at PreEnqueue: let
    in, it would fail on its node again and, the victims not looking terminating, preempt
    them a second time (1002 preemptions, 3003 victims for 1000 preemptors)."""
    async with cluster(async_preemption=True) as c:
        p = await two_victims(c)
        state, statuses = c.cycle(p)
        c.client.lag_watches()
        await c.plugin.post_filter(state, p, statuses)
        await settle()
        assert (await c.stored("v1"), await c.stored("v2")) == (None, None)
        assert c.pod_lister.get("v2", "default") is not None
        assert c.plugin.pre_enqueue(p) == unresolvable(WAITING_FOR_PREEMPTION)
        c.client.catch_up()
        await settle()
        seen = c.pod_lister.get("v2", "default")
        assert seen is None or seen.metadata.HasField("deletion_timestamp")
        assert c.plugin.pre_enqueue(p) == SUCCESS
        assert c.activated == []


@pytest.mark.anyio
async def test_async_preemption_whose_last_victim_was_already_gone_activates_the_preemptor() -> (
    None
):
    """Issue #16: a preemption whose victims the scheduler had already seen deleted when the
    last one was registered (another writer deleted them; the cycle's snapshot still had
    them). No deletion event is left to move the gated preemptor, so the executor activates
    it when it is done, rather than leaving it to the 5-minute flush."""
    async with cluster(async_preemption=True) as c:
        p = await two_victims(c)
        state, statuses = c.cycle(p)
        for name in ("v1", "v2"):
            await c.client.delete(types_pb2.Pod, name, "default", grace_period_seconds=0)
        await settle()
        assert c.pod_lister.get("v2", "default") is None  # the cache (fed by hand) still has it
        await c.plugin.post_filter(state, p, statuses)
        await settle()
        assert [x.metadata.uid for x in c.activated] == [p.metadata.uid]
        assert c.plugin.pre_enqueue(p) == SUCCESS


@pytest.mark.anyio
async def test_async_preemption_whose_last_victim_waited_at_permit_ends_the_hold_with_it() -> None:
    """A victim held at Permit is only rejected: it stays in the API (unbound), so no
    deletion will ever be seen and the hold ends with the task, as upstream."""
    async with cluster(async_preemption=True) as c:
        c.node("n1", cpu="4")
        waiting = c.add(pod("waiting", 1, "4"))
        assumed = types_pb2.Pod()
        assumed.CopyFrom(waiting)
        assumed.spec.node_name = "n1"
        c.cache.assume_pod(assumed)
        wp = WaitingPod(assumed, {"SomePermit": 60.0}, c.clock)
        c.waiting.add(wp)
        p = c.add(pod("p", 10, "4"))
        await settle()
        state, statuses = c.cycle(p)
        await c.plugin.post_filter(state, p, statuses)
        await settle()
        assert c.actions_on("waiting") == []
        assert c.pod_lister.get("waiting", "default") is not None
        assert c.plugin.pre_enqueue(p) == SUCCESS
        assert c.activated == []


@pytest.mark.anyio
async def test_async_preemption_whose_last_victim_was_in_pre_bind_ends_the_hold_with_it() -> None:
    """1.36+: the victim's binding cycle is cancelled, not deleted; the hold ends with the task,
    before the victim's binding cycle (a task of its own) can send its AssignedPodDelete, so
    that event finds the preemptor free (kubernetes#140082 cannot happen here)."""
    async with cluster(async_preemption=True) as c:
        c.node("n1", cpu="4")
        assumed = assumed_victim(c, "binding")
        entry = c.fwk.add_pod_in_pre_bind(assumed.metadata.uid)
        cancelled = anyio.Event()
        cancel_pod = entry.cancel_pod

        def cancel_and_tell(message: str) -> bool:
            done = cancel_pod(message)
            cancelled.set()
            return done

        entry.cancel_pod = cancel_and_tell  # type: ignore[method-assign]
        seen: list[Status] = []

        async def victims_binding_cycle() -> None:
            # Woken by the cancellation, it runs once the task that cancelled has yielded.
            await cancelled.wait()
            seen.append(c.plugin.pre_enqueue(p))

        p = c.add(pod("p", 10, "4"))
        async with anyio.create_task_group() as tg:
            tg.start_soon(victims_binding_cycle)
            await settle()
            state, statuses = c.cycle(p)
            await c.plugin.post_filter(state, p, statuses)
        assert seen == [SUCCESS]
        await settle()
        assert c.actions_on("binding") == []
        assert c.activated == []


@pytest.mark.anyio
async def test_async_preemption_clears_lower_nominations_before_deleting() -> None:
    async with cluster(async_preemption=True) as c:
        c.node("n1", cpu="4")
        c.add(pod("v", 1, "4", node="n1"))
        lower = c.add(make_pod("lower").priority(2).req(cpu="1").nominated("n1").obj())
        p = c.add(pod("p", 10, "2"))
        await settle()
        c.nominate(lower)
        state, statuses = c.cycle(p)
        await c.plugin.post_filter(state, p, statuses)
        await settle()
        verbs = [(a.verb, a.name) for a in c.client.actions]
        assert verbs.index(("patch", "lower")) < verbs.index(("delete", "v"))
        stored = await c.stored("lower")
        assert stored is not None and stored.status.nominated_node_name == ""


@pytest.mark.anyio
async def test_async_api_error_activates_the_preemptor_and_releases_the_hold() -> None:
    async with cluster(async_preemption=True) as c:
        p = await two_victims(c)
        c.client.fail("delete", Unavailable("etcd is down"))
        state, statuses = c.cycle(p)
        result, status = await c.plugin.post_filter(state, p, statuses)
        assert (result, status) == (PostFilterResult("n1"), SUCCESS)
        await settle()
        assert [x.metadata.uid for x in c.activated] == [p.metadata.uid]
        assert c.plugin.pre_enqueue(p) == SUCCESS
        # v1 failed: the last victim is not even tried.
        assert c.actions_on("v2") == []
        assert (
            c.sample("scheduler_preemption_goroutines_execution_total", {"result": "error"}) == 1.0
        )


@pytest.mark.anyio
async def test_async_with_every_victim_already_terminating_starts_nothing() -> None:
    async with cluster(async_preemption=True) as c:
        c.node("n1", cpu="2")
        c.add(pod("gone", 1, "2", node="n1"), terminating=True)
        p = c.add(pod("p", 10, "2"))
        await settle()
        state, statuses = c.cycle(p)
        result, status = await c.plugin.post_filter(state, p, statuses)
        assert (result, status) == (PostFilterResult("n1"), SUCCESS)
        assert c.plugin.pre_enqueue(p) == SUCCESS
        await settle()
        assert writes(c) == []


@pytest.mark.anyio
async def test_pre_enqueue_never_gates_with_the_gate_off() -> None:
    async with cluster() as c:
        p = await two_victims(c)
        state, statuses = c.cycle(p)
        assert c.plugin.pre_enqueue(p) == SUCCESS
        result, _ = await c.plugin.post_filter(state, p, statuses)
        assert result == PostFilterResult("n1")
        assert c.plugin.pre_enqueue(p) == SUCCESS


# ---------------------------------------------------------------- metrics


@pytest.mark.anyio
async def test_every_post_filter_counts_an_attempt_even_when_not_eligible() -> None:
    async with cluster() as c:
        c.node("n0", cpu="1")
        never = c.add(make_pod("never").priority(10).req(cpu="2").preemption_policy("Never").obj())
        p = c.add(pod("p", 10, "2"))
        await settle()
        assert c.sample("scheduler_preemption_attempts_total") == 0.0
        state, statuses = c.cycle(never)
        result, status = await c.plugin.post_filter(state, never, statuses)
        assert (result, status.message()) == (
            None,
            "preemption: not eligible due to preemptionPolicy=Never.",
        )
        assert c.sample("scheduler_preemption_attempts_total") == 1.0
        state, statuses = c.cycle(p)
        await c.plugin.post_filter(state, p, statuses)
        assert c.sample("scheduler_preemption_attempts_total") == 2.0
        assert c.sample("scheduler_preemption_victims_count") == 0.0


@pytest.mark.anyio
async def test_victims_are_observed_once_per_preemption() -> None:
    async with cluster() as c:
        p = await two_victims(c)
        state, statuses = c.cycle(p)
        await c.plugin.post_filter(state, p, statuses)
        assert c.sample("scheduler_preemption_victims_count") == 1.0
        assert c.sample("scheduler_preemption_victims_sum") == 2.0


@pytest.mark.anyio
async def test_async_victims_are_observed_at_the_start() -> None:
    async with cluster(async_preemption=True) as c:
        p = await two_victims(c)
        c.client.hold_before.add("v1")
        c.client.hold_before.add("v2")
        state, statuses = c.cycle(p)
        await c.plugin.post_filter(state, p, statuses)
        assert c.sample("scheduler_preemption_victims_count") == 1.0
        assert c.sample("scheduler_preemption_victims_sum") == 2.0
        c.client.release.set()
        await settle()


# ---------------------------------------------------------------- the informers' copies


@pytest.mark.anyio
async def test_preemptor_gone_from_the_api_is_an_error_that_keeps_the_nomination() -> None:
    async with cluster() as c:
        c.node("n0", cpu="1")
        p = c.add(pod("p", 10, "2"))
        await settle()
        state, statuses = c.cycle(p)
        await c.client.delete(types_pb2.Pod, "p", "default")
        await settle()
        result, status = await c.plugin.post_filter(state, p, statuses)
        assert result is None
        assert status.code == Code.ERROR
        assert status.message() == 'preemption: pod "default/p" not found'


@pytest.mark.anyio
async def test_preempt_uses_the_latest_copy_of_the_pod() -> None:
    async with cluster() as c:
        c.node("n0", cpu="1")
        p = c.add(pod("p", 10, "2"))
        await settle()
        state, statuses = c.cycle(p)
        # The API copy now says Never (the cycle's copy does not): the lister's copy decides.
        await c.client.patch(types_pb2.Pod, "p", {"spec": {"preemptionPolicy": "Never"}})
        await settle()
        result, status = await c.plugin.post_filter(state, p, statuses)
        assert (result, status.message()) == (
            None,
            "preemption: not eligible due to preemptionPolicy=Never.",
        )
