"""Preemption: the Evaluator (kemu.scheduling.preemption) and its DefaultPreemption policy,
against reference §2.1, §3.2-§3.8 and scenarios S-PRE-12, -13, -16, -17, -18.

Everything runs on the real pieces (default profile Framework with its plugins, Cache,
Snapshot, Nominator, informers, WaitingPodsMap, SchedulerMetrics) over kemu's FakeClient; the
only other fake is the event recorder (and the plugin tests' FakeHandle where only new()'s
argument checking and the gate-dependent registration are looked at).
"""

from __future__ import annotations

import json
import random
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
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
from kemu.component.featuregate import SCHEDULER_ASYNC_PREEMPTION, FeatureGates
from kemu.component.version import DEFAULT_VERSION
from kemu.machinery.errors import NotFound, Unavailable
from kemu.scheduling.events import ActionType, ClusterEvent, EventResource, QueueingHint
from kemu.scheduling.interface import (
    SCHEDULER_POD_FIELD_SELECTOR,
    CycleState,
    FitError,
    NodeToStatus,
)
from kemu.scheduling.nominator import Nominator
from kemu.scheduling.plugins import default_preemption
from kemu.scheduling.plugins.default_preemption import (
    NO_VICTIMS,
    WAITING_FOR_PREEMPTION,
    DefaultPreemption,
    calculate_num_candidates,
    filter_pods_with_pdb_violation,
)
from kemu.scheduling.plugins.registry import in_tree_registry
from kemu.scheduling.preemption import (
    DISRUPTION_TARGET,
    PREEMPTION_BY_SCHEDULER,
    Candidate,
    Victims,
    earliest_pod_start_time_ns,
    importance_key,
    more_important_pod,
    pick_one_node_for_preemption,
    pod_terminating_by_preemption,
)
from kemu.scheduling.runtime import Framework
from kemu.scheduling.snapshot import Snapshot
from kemu.scheduling.status import SUCCESS, Code, Status, unresolvable, unschedulable
from kemu.scheduling.types import NodeInfo, PodInfo, PostFilterResult
from kemu.scheduling.waiting_pods import WaitingPod, WaitingPodsMap
from kemu.testing.builders import make_node, make_pdb, make_pod
from scheduler.cache.cache import Cache
from scheduler.config import default_config
from scheduler.metrics import SchedulerMetrics
from scheduler.schedule_one import Scheduler
from tests.unit.scheduling.plugins.fakes import FakeHandle

SCHEDULER: str = "default-scheduler"
PREEMPTING_MESSAGE = f"{SCHEDULER}: preempting to accommodate a higher priority pod"
NOW = 1_700_000_000  # FakeClock's default wall time, in seconds
NOW_NS = NOW * 1_000_000_000
_READS = frozenset({"get", "list", "watch"})


def gates(*, async_preemption: bool) -> FeatureGates:
    return FeatureGates.for_version(DEFAULT_VERSION, {SCHEDULER_ASYNC_PREEMPTION: async_preemption})


def pod(
    name: str,
    priority: int,
    cpu: str = "1",
    *,
    node: str = "",
    started: float | None = None,
    labels: dict[str, str] | None = None,
) -> types_pb2.Pod:
    b = make_pod(name).priority(priority).req(cpu=cpu).scheduler_name(SCHEDULER)
    if node:
        b = b.node(node)
    if labels:
        b = b.labels(labels)
    p = b.obj()
    p.metadata.uid = f"uid-{name}"  # for the pure tests; the fake API assigns its own
    if started is not None:
        p.status.start_time.FromSeconds(int(started))
    return p


def names(pods: Any) -> list[str]:
    return [p.metadata.name for p in pods]


# ---------------------------------------------------------------- the harness


class Recorder:
    """The framework's EventRecorder: (object name, type, reason, action, message)."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, str, str, str]] = []

    def event(
        self, obj: types_pb2.Pod, event_type: str, reason: str, action: str, message: str
    ) -> None:
        self.events.append((obj.metadata.name, event_type, reason, action, message))


class GatedClient(FakeClient):
    """A FakeClient whose DELETE of the pods named in `hold_before` waits for `release`
    before it is applied, and of those in `hold_after` is applied (the watch sees it) but
    does not return until `release`."""

    def __init__(self, clock: FakeClock) -> None:
        super().__init__(clock=clock)
        self.hold_before: set[str] = set()
        self.hold_after: set[str] = set()
        self.release = anyio.Event()

    async def delete(
        self,
        kind: type[M],
        name: str,
        namespace: str = "",
        *,
        grace_period_seconds: int | None = None,
        uid: str | None = None,
        resource_version: str | None = None,
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
        )
        if name in self.hold_after:
            await self.release.wait()
        return out


@dataclass
class Cluster:
    """A default-profile Framework over a FakeClient, with the scheduler's cache, snapshot,
    nominator, waiting pods and metrics; `scheduler` runs the cycle's algorithm."""

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
        """The API's copy of pod `name`, None once deleted."""
        try:
            return await self.client.get(types_pb2.Pod, name, "default")
        except NotFound:
            return None

    def actions_on(self, name: str) -> list[tuple[str, str]]:
        """The writes sent for pod `name`: (verb, subresource)."""
        return [
            (a.verb, a.subresource)
            for a in self.client.actions
            if a.name == name and a.verb not in _READS
        ]

    def sample(self, metric: str, labels: dict[str, str] | None = None) -> float:
        return self.registry.get_sample_value(metric, labels or {}) or 0.0


def mark_terminating(p: types_pb2.Pod, *, by_preemption: bool) -> None:
    p.metadata.deletion_timestamp.FromSeconds(NOW)
    if by_preemption:
        p.status.conditions.add(
            type=DISRUPTION_TARGET, status="True", reason=PREEMPTION_BY_SCHEDULER
        )


async def settle() -> None:
    """Lets the informers and any background preemption run until they all wait."""
    await anyio.wait_all_tasks_blocked()


@asynccontextmanager
async def cluster(*, async_preemption: bool = False, seed: int = 0) -> AsyncIterator[Cluster]:
    clock = FakeClock()
    client = GatedClient(clock)
    informers = InformerFactory(client, clock=clock)
    registry = CollectorRegistry()
    metrics = SchedulerMetrics(registry)
    recorder = Recorder()
    waiting = WaitingPodsMap()
    fg = gates(async_preemption=async_preemption)
    fwk = Framework(
        default_config().profiles[0],
        in_tree_registry(),
        client=client,
        clock=clock,
        gates=fg,
        event_recorder=recorder,
        informer_factory=informers,
        waiting_pods=waiting,
        metrics=metrics,
        rng=random.Random(seed),
    )
    pod_lister = informers.informer(
        types_pb2.Pod, field_selector=SCHEDULER_POD_FIELD_SELECTOR
    ).lister
    nominator = Nominator(pod_lister)
    fwk.set_nominator(nominator)
    cache = Cache(clock, in_place_resize=True, per_container_max=False)
    snapshot = Snapshot()
    scheduler = Scheduler(
        client=client,
        cache=cache,
        queue=None,
        profiles={SCHEDULER: fwk},
        snapshot=snapshot,
        clock=clock,
        gates=fg,
        metrics=metrics,
        recorder=recorder,
        pod_lister=pod_lister,
        rng=random.Random(seed),
    )
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


# ---------------------------------------------------------------- §3.7 / S-PRE-13


def victims(*priorities: int, pdb: int = 0, started: float | None = None) -> Victims:
    return Victims(tuple(pod(f"v{i}", p, started=started) for i, p in enumerate(priorities)), pdb)


@pytest.mark.parametrize(
    ("a", "b", "chosen"),
    [
        pytest.param(victims(1, pdb=1), victims(100, 100), "B", id="1-fewest-pdb-violations"),
        pytest.param(victims(5), victims(3, 3), "B", id="2-lowest-highest-priority"),
        pytest.param(victims(3, 1), victims(3, 2), "A", id="3-smallest-priority-sum"),
        pytest.param(
            victims(0, -(2**31)), victims(0), "B", id="4-equal-shifted-sums-fewer-victims"
        ),
        pytest.param(
            victims(-10, -10), victims(-10), "B", id="3-shift-makes-negative-priorities-count"
        ),
        pytest.param(
            victims(3, started=NOW - 3600),
            victims(3, started=NOW - 3300),
            "B",
            id="5-latest-earliest-start",
        ),
    ],
)
def test_s_pre_13_pick_one_node_for_preemption(a: Victims, b: Victims, chosen: str) -> None:
    assert pick_one_node_for_preemption({"A": a, "B": b}, NOW_NS) == chosen
    assert pick_one_node_for_preemption({"B": b, "A": a}, NOW_NS) == chosen


def test_s_pre_13_full_tie_takes_the_first_candidate() -> None:
    same = victims(3, 1, started=NOW - 60)
    assert pick_one_node_for_preemption({"B": same, "A": same, "C": same}, NOW_NS) == "B"
    assert pick_one_node_for_preemption({"C": same, "A": same}, NOW_NS) == "C"


def test_pick_one_node_with_no_candidates_is_empty() -> None:
    assert pick_one_node_for_preemption({}, NOW_NS) == ""


def test_pick_one_node_start_time_of_victims_without_one_is_now() -> None:
    # A's victim has not started (counts as now): its earliest start is the latest.
    a = victims(3)
    b = victims(3, started=NOW - 1)
    assert pick_one_node_for_preemption({"B": b, "A": a}, NOW_NS) == "A"


# ---------------------------------------------------------------- §2.1 importance


def test_more_important_pod_is_higher_priority_whatever_the_start_time() -> None:
    old_low = pod("old", 1, started=NOW - 1000)
    new_high = pod("new", 2, started=NOW - 1)
    assert more_important_pod(new_high, old_low, NOW_NS)
    assert not more_important_pod(old_low, new_high, NOW_NS)


def test_more_important_pod_on_equal_priority_is_the_one_started_earlier() -> None:
    earlier = pod("earlier", 5, started=NOW - 100)
    later = pod("later", 5, started=NOW - 10)
    assert more_important_pod(earlier, later, NOW_NS)
    assert not more_important_pod(later, earlier, NOW_NS)
    assert not more_important_pod(earlier, earlier, NOW_NS)


def test_a_pod_without_start_time_counts_as_now_least_important_among_equals() -> None:
    unstarted = pod("unstarted", 5)
    started = pod("started", 5, started=NOW - 1)
    assert more_important_pod(started, unstarted, NOW_NS)
    assert not more_important_pod(unstarted, started, NOW_NS)
    # ...but its priority still comes first.
    assert more_important_pod(pod("high", 6), started, NOW_NS)


def test_importance_key_sorts_most_important_first() -> None:
    pods = [
        pod("unstarted", 1),
        pod("t2", 1, started=NOW - 50),
        pod("t1", 1, started=NOW - 100),
        pod("prio2", 2),
        pod("negative", -5, started=NOW - 1000),
    ]
    ordered = sorted(pods, key=lambda p: importance_key(PodInfo(p), NOW_NS))
    assert names(ordered) == ["prio2", "t1", "t2", "unstarted", "negative"]


def test_earliest_start_time_looks_only_at_the_highest_priority_victims() -> None:
    v = Victims(
        (
            pod("a", 5, started=NOW - 300),
            pod("b", 5, started=NOW - 200),
            pod("c", 1, started=NOW - 10_000),
        )
    )
    assert earliest_pod_start_time_ns(v, NOW_NS) == (NOW - 300) * 1_000_000_000
    assert earliest_pod_start_time_ns(Victims((pod("x", 1),)), NOW_NS) == NOW_NS


# ---------------------------------------------------------------- §3.6 PDB split


def pdb(
    name: str,
    allowed: int,
    *,
    namespace: str = "default",
    disrupted: tuple[str, ...] = (),
    **selector: str,
) -> types_pb2.PodDisruptionBudget:
    b = make_pdb(name).namespace(namespace)
    if selector:
        b = b.selector(**selector)
    out = b.obj()
    out.status.disruptions_allowed = allowed
    for n in disrupted:
        out.status.disrupted_pods[n].FromSeconds(NOW)
    return out


def infos(*pods: types_pb2.Pod) -> list[PodInfo]:
    return [PodInfo(p) for p in pods]


def split(
    pods: list[PodInfo], pdbs: list[types_pb2.PodDisruptionBudget]
) -> tuple[list[str], list[str]]:
    violating, non_violating = filter_pods_with_pdb_violation(pods, pdbs)
    return names(pi.pod for pi in violating), names(pi.pod for pi in non_violating)


def web(name: str, **labels: str) -> types_pb2.Pod:
    return pod(name, 1, labels={"app": "web", **labels})


def test_pdb_budget_is_spent_pod_by_pod_in_order() -> None:
    pods = infos(web("w1"), web("w2"), pod("other", 1, labels={"app": "db"}), web("w3"))
    assert split(pods, [pdb("p", 1, app="web")]) == (["w2", "w3"], ["w1", "other"])
    assert split(pods, [pdb("p", 0, app="web")]) == (["w1", "w2", "w3"], ["other"])
    assert split(pods, [pdb("p", 3, app="web")]) == ([], ["w1", "w2", "other", "w3"])


def test_pdb_disrupted_pods_do_not_spend_the_budget() -> None:
    pods = infos(web("w1"), web("w2"), web("w3"))
    # w1 was already counted by the apiserver: w2 takes the one disruption left.
    assert split(pods, [pdb("p", 1, disrupted=("w1",), app="web")]) == (["w3"], ["w1", "w2"])


def test_pdb_of_another_namespace_or_with_an_empty_selector_is_ignored() -> None:
    pods = infos(web("w1"), web("w2"))
    assert split(pods, [pdb("p", 0, namespace="other", app="web")]) == ([], ["w1", "w2"])
    assert split(pods, [pdb("p", 0)]) == ([], ["w1", "w2"])


def test_pod_without_labels_never_violates() -> None:
    assert split(infos(pod("bare", 1)), [pdb("p", 0, app="web")]) == ([], ["bare"])


def test_a_pod_violates_if_any_of_its_pdbs_runs_out() -> None:
    pods = infos(web("w1", tier="a"), web("w2", tier="b"))
    pdbs = [pdb("roomy", 5, app="web"), pdb("tight", 0, tier="b")]
    assert split(pods, pdbs) == (["w2"], ["w1"])


# ---------------------------------------------------------------- calculate_num_candidates, new()


@pytest.mark.parametrize(
    ("nodes", "percentage", "absolute", "expected"),
    [
        (0, 10, 100, 0),
        (10, 10, 100, 10),  # small clusters: all potential nodes
        (100, 10, 100, 100),
        (150, 10, 100, 100),
        (1000, 10, 100, 100),
        (1001, 10, 100, 100),  # 100.1% rounds down
        (5000, 10, 100, 500),
        (50, 0, 5, 5),
        (200, 50, 0, 100),
        (3, 100, 1, 3),
    ],
)
def test_calculate_num_candidates(
    nodes: int, percentage: int, absolute: int, expected: int
) -> None:
    assert calculate_num_candidates(nodes, percentage, absolute) == expected


def test_new_accepts_valid_args_and_uses_them() -> None:
    plugin = default_preemption.new(
        {"minCandidateNodesPercentage": 50, "minCandidateNodesAbsolute": 0}, FakeHandle()
    )
    assert plugin.get_offset_and_num_candidates(200)[1] == 100
    assert default_preemption.new({}, FakeHandle()).get_offset_and_num_candidates(500)[1] == 100


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ({"minCandidateNodesPercentage": 101}, "minCandidateNodesPercentage"),
        ({"minCandidateNodesPercentage": -1}, "minCandidateNodesPercentage"),
        ({"minCandidateNodesAbsolute": -1}, "minCandidateNodesAbsolute"),
        (
            {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0},
            "minCandidateNodesPercentage and minCandidateNodesAbsolute cannot both be zero",
        ),
        ({"minCandidateNodesPercentage": "10"}, "minCandidateNodesPercentage: expected an int"),
        ({"minCandidateNodesAbsolute": 1.5}, "minCandidateNodesAbsolute: expected an integer"),
        ({"minCandidateNodesAbsolute": True}, "minCandidateNodesAbsolute: expected an integer"),
        ({"minCandidateNodes": 1}, 'unknown field "minCandidateNodes"'),
    ],
)
def test_new_rejects_bad_args_naming_the_field(args: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        default_preemption.new(args, FakeHandle())


def test_offset_is_random_within_the_potential_nodes() -> None:
    plugin = default_preemption.new({}, FakeHandle())
    offsets = {plugin.get_offset_and_num_candidates(7)[0] for _ in range(200)}
    assert offsets == set(range(7))


# ---------------------------------------------------------------- §3.6 victims on one node


@pytest.mark.anyio
async def test_s_pre_12_victims_are_picked_greedily_by_importance() -> None:
    async with cluster() as c:
        c.node("n1", cpu="5")
        c.add(pod("a", 1, node="n1", started=NOW - 100))
        c.add(pod("b", 1, node="n1", started=NOW - 50))
        c.add(pod("c", 2, "2", node="n1"))
        c.add(pod("d", 9, node="n1"))
        preemptor = c.add(pod("p", 5, "3"))
        state, statuses = c.cycle(preemptor)
        assert statuses.get("n1").code == Code.UNSCHEDULABLE

        found, violations, status = c.plugin.select_victims_on_node(
            state.clone(), preemptor, c.node_info("n1").clone(), []
        )
        assert status.is_success()
        assert (names(found), violations) == (["c", "b"], 0)


@pytest.mark.anyio
async def test_select_victims_leaves_the_snapshot_node_alone() -> None:
    async with cluster() as c:
        c.node("n1", cpu="2")
        c.add(pod("low", 1, "2", node="n1"))
        preemptor = c.add(pod("p", 5, "2"))
        state, _ = c.cycle(preemptor)
        original = c.node_info("n1")
        found, _, _ = c.plugin.select_victims_on_node(
            state.clone(), preemptor, original.clone(), []
        )
        assert names(found) == ["low"]
        assert names(pi.pod for pi in original.pods) == ["low"]


@pytest.mark.anyio
async def test_only_strictly_lower_priority_pods_are_victims() -> None:
    async with cluster() as c:
        c.node("n1", cpu="2")
        c.add(pod("equal", 5, "2", node="n1"))
        preemptor = c.add(pod("p", 5, "2"))
        state, _ = c.cycle(preemptor)
        found, _, status = c.plugin.select_victims_on_node(
            state.clone(), preemptor, c.node_info("n1").clone(), []
        )
        assert found == []
        assert status == unresolvable(NO_VICTIMS)


@pytest.mark.anyio
async def test_node_that_does_not_fit_without_lower_priority_pods_is_useless() -> None:
    async with cluster() as c:
        c.node("n1", cpu="4")
        c.add(pod("low", 1, "1", node="n1"))
        c.add(pod("high", 9, "3", node="n1"))
        preemptor = c.add(pod("p", 5, "2"))
        state, _ = c.cycle(preemptor)
        found, _, status = c.plugin.select_victims_on_node(
            state.clone(), preemptor, c.node_info("n1").clone(), []
        )
        assert found == []
        assert status.code == Code.UNSCHEDULABLE
        assert status.plugin == "NodeResourcesFit"


@pytest.mark.anyio
async def test_s_pre_16a_pdb_pods_reprieved_before_mid_priority() -> None:
    async with cluster() as c:
        c.node("n1", cpu="500m", memory="500")
        for name in ("low-pod1", "low-pod2"):
            p = make_pod(name).priority(100).req(cpu="100m", memory="100")
            c.add(p.labels(foo="bar").node("n1").obj())
        c.add(make_pod("mid-pod3").priority(200).req(cpu="100m", memory="100").node("n1").obj())
        preemptor = c.add(make_pod("p").priority(300).req(cpu="300m", memory="200").obj())
        budget = pdb("pdb", 0, foo="bar")
        state, _ = c.cycle(preemptor)
        found, violations, status = c.plugin.select_victims_on_node(
            state.clone(), preemptor, c.node_info("n1").clone(), [budget]
        )
        assert status.is_success()
        assert (names(found), violations) == (["mid-pod3"], 0)

        # Without the PDB the most important pod is reprieved first; one low pod goes.
        found, violations, _ = c.plugin.select_victims_on_node(
            state.clone(), preemptor, c.node_info("n1").clone(), []
        )
        assert (names(found), violations) == (["low-pod2"], 0)


@pytest.mark.anyio
async def test_pdb_violating_victims_are_counted_and_victims_sorted_by_importance() -> None:
    async with cluster() as c:
        c.node("n1", cpu="3")
        c.add(pod("guarded", 1, node="n1", started=NOW - 100, labels={"app": "web"}))
        c.add(pod("free-old", 1, node="n1", started=NOW - 200))
        c.add(pod("free-mid", 2, node="n1"))
        preemptor = c.add(pod("p", 5, "3"))
        state, _ = c.cycle(preemptor)
        found, violations, status = c.plugin.select_victims_on_node(
            state.clone(), preemptor, c.node_info("n1").clone(), [pdb("pdb", 0, app="web")]
        )
        assert status.is_success()
        # All three must go; the guarded one is counted, and the list is by importance.
        assert (names(found), violations) == (["free-mid", "free-old", "guarded"], 1)


# ---------------------------------------------------------------- §3.2 / S-PRE-18


async def nominated_pods_scenario(c: Cluster, h1_priority: int) -> list[str]:
    c.node("n1", cpu="4")
    c.add(pod("l1", 1, "2", node="n1", started=NOW - 100))
    c.add(pod("l2", 1, "2", node="n1", started=NOW - 50))
    h1 = make_pod("h1").priority(h1_priority).req(cpu="2").nominated("n1").obj()
    h1 = c.add(h1)
    h2 = c.add(pod("h2", 100, "2"))
    await settle()
    c.nominate(h1)
    state, _ = c.cycle(h2)
    found, _, status = c.plugin.select_victims_on_node(
        state.clone(), h2, c.node_info("n1").clone(), []
    )
    assert status.is_success()
    return names(found)


@pytest.mark.anyio
async def test_s_pre_18_higher_priority_nominated_pod_needs_room_too() -> None:
    async with cluster() as c:
        # h1 (200) reserves 2 cpu: h2 (100) fits only once both low pods are gone.
        assert await nominated_pods_scenario(c, 200) == ["l1", "l2"]


@pytest.mark.anyio
async def test_s_pre_18_equal_priority_nominated_pod_needs_room_too() -> None:
    async with cluster() as c:
        assert await nominated_pods_scenario(c, 100) == ["l1", "l2"]


@pytest.mark.anyio
async def test_s_pre_18_lower_priority_nomination_is_ignored() -> None:
    async with cluster() as c:
        assert await nominated_pods_scenario(c, 50) == ["l2"]


@pytest.mark.anyio
async def test_s_pre_18_a_nominated_pod_that_leaves_no_room_makes_the_node_useless() -> None:
    async with cluster() as c:
        c.node("n1", cpu="4")
        c.add(pod("l1", 1, "4", node="n1"))
        h1 = c.add(make_pod("h1").priority(200).req(cpu="3").nominated("n1").obj())
        h2 = c.add(pod("h2", 100, "2"))
        await settle()
        c.nominate(h1)
        state, _ = c.cycle(h2)
        found, _, status = c.plugin.select_victims_on_node(
            state.clone(), h2, c.node_info("n1").clone(), []
        )
        assert found == []
        assert status.code == Code.UNSCHEDULABLE


# ---------------------------------------------------------------- §3.5 eligibility / S-PRE-17


@pytest.mark.anyio
async def test_preemption_policy_never_is_not_eligible() -> None:
    async with cluster() as c:
        p = make_pod("p").priority(10).preemption_policy("Never").obj()
        assert c.plugin.pod_eligible_to_preempt_others(p, SUCCESS) == (
            False,
            "not eligible due to preemptionPolicy=Never.",
        )


async def terminating_on_nominated_node(
    c: Cluster, *, by_preemption: bool = True, priority: int = 1
) -> types_pb2.Pod:
    c.node("n1", cpu="2")
    c.add(pod("victim", priority, "2", node="n1"), terminating=True, by_preemption=by_preemption)
    c.refresh()
    return make_pod("p").priority(10).nominated("n1").obj()


@pytest.mark.anyio
async def test_s_pre_17_terminating_victim_on_the_nominated_node_blocks_preemption() -> None:
    async with cluster() as c:
        p = await terminating_on_nominated_node(c)
        assert c.plugin.pod_eligible_to_preempt_others(p, unschedulable("Insufficient cpu")) == (
            False,
            "not eligible due to a terminating pod on the nominated node.",
        )


@pytest.mark.anyio
async def test_s_pre_17_pod_deleted_for_another_reason_does_not_block() -> None:
    async with cluster() as c:
        p = await terminating_on_nominated_node(c, by_preemption=False)
        assert c.plugin.pod_eligible_to_preempt_others(p, unschedulable("x")) == (True, "")


@pytest.mark.anyio
async def test_terminating_pod_of_equal_priority_does_not_block() -> None:
    async with cluster() as c:
        p = await terminating_on_nominated_node(c, priority=10)
        assert c.plugin.pod_eligible_to_preempt_others(p, unschedulable("x")) == (True, "")


@pytest.mark.anyio
async def test_s_pre_17_unresolvable_nominated_node_is_eligible() -> None:
    async with cluster() as c:
        p = await terminating_on_nominated_node(c)
        status = unresolvable("node(s) had untolerated taint")
        assert c.plugin.pod_eligible_to_preempt_others(p, status) == (True, "")


@pytest.mark.anyio
async def test_nominated_node_missing_from_the_snapshot_is_eligible() -> None:
    async with cluster() as c:
        await terminating_on_nominated_node(c)
        p = make_pod("p").priority(10).nominated("gone").obj()
        assert c.plugin.pod_eligible_to_preempt_others(p, unschedulable("x")) == (True, "")


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


# ---------------------------------------------------------------- §3.5 dry run


async def dry_run_cluster(c: Cluster, guarded: set[int], n: int = 4) -> types_pb2.Pod:
    """Nodes n0..n{n-1}, each full with one low pod; those in `guarded` are PDB-protected;
    an extra node "z" holds only a high-priority pod (never a candidate)."""
    for i in range(n):
        c.node(f"n{i}", cpu="1")
        labels = {"app": "guarded"} if i in guarded else {"app": f"free{i}"}
        c.add(pod(f"low{i}", 1, node=f"n{i}", labels=labels))
    c.node("z", cpu="1")
    c.add(pod("high", 100, node="z"))
    return c.add(pod("p", 10))


def potential(c: Cluster, *nodes: str) -> list[NodeInfo]:
    c.refresh()
    out = []
    for name in nodes:
        ni = c.snapshot.node_infos().get(name)
        assert ni is not None
        out.append(ni)
    return out


GUARD = [pdb("guard", 0, app="guarded")]


@pytest.mark.anyio
async def test_dry_run_stops_at_num_candidates_once_one_does_not_violate() -> None:
    async with cluster() as c:
        p = await dry_run_cluster(c, guarded={0, 1})
        state, _ = c.cycle(p)
        nodes = potential(c, "n0", "n1", "n2", "n3", "z")
        found, statuses, errors = c.plugin.evaluator.dry_run_preemption(
            state, p, nodes, GUARD, 0, 2
        )
        # n0, n1 violate (2 = num, but none is clean yet), n2 is clean: stop before n3 and z.
        assert [(x.name, x.victims.num_pdb_violations) for x in found] == [
            ("n2", 0),
            ("n0", 1),
            ("n1", 1),
        ]
        assert (len(statuses), errors) == (0, [])


@pytest.mark.anyio
async def test_dry_run_with_only_violating_candidates_scans_every_node() -> None:
    async with cluster() as c:
        p = await dry_run_cluster(c, guarded={0, 1, 2, 3})
        state, _ = c.cycle(p)
        nodes = potential(c, "n0", "n1", "n2", "n3", "z")
        found, statuses, errors = c.plugin.evaluator.dry_run_preemption(
            state, p, nodes, GUARD, 0, 2
        )
        assert [x.name for x in found] == ["n0", "n1"]
        # The scan went on to the last node, looking for one without violations.
        assert [(name, s.message()) for name, s in statuses.items()] == [("z", NO_VICTIMS)]
        assert errors == []


@pytest.mark.parametrize(
    ("offset", "num", "expected"),
    [(0, 1, ["n0"]), (2, 1, ["n2"]), (3, 2, ["n3", "n0"]), (1, 4, ["n1", "n2", "n3", "n0"])],
)
@pytest.mark.anyio
async def test_dry_run_starts_at_the_offset_and_wraps(
    offset: int, num: int, expected: list[str]
) -> None:
    async with cluster() as c:
        p = await dry_run_cluster(c, guarded=set())
        state, _ = c.cycle(p)
        nodes = potential(c, "n0", "n1", "n2", "n3")
        found, _, _ = c.plugin.evaluator.dry_run_preemption(state, p, nodes, [], offset, num)
        assert [x.name for x in found] == expected
        assert [names(x.victims.pods) for x in found] == [[f"low{n[1]}"] for n in expected]


@pytest.mark.anyio
async def test_dry_run_a_node_where_the_pod_fits_without_victims_is_an_error() -> None:
    async with cluster() as c:
        c.node("n0", cpu="4")
        c.add(pod("low", 1, node="n0"))
        p = c.add(pod("p", 10))
        nodes = potential(c, "n0")
        state = CycleState()
        _, pre_status, _ = c.fwk.run_pre_filter_plugins(state, p, nodes)
        assert pre_status.is_success()
        found, statuses, errors = c.plugin.evaluator.dry_run_preemption(state, p, nodes, [], 0, 1)
        message = 'expected at least one victim pod on node "n0"'
        assert found == []
        assert statuses.get("n0").code == Code.ERROR
        assert statuses.get("n0").message() == message
        assert [e.message() for e in errors] == [message]


@pytest.mark.anyio
async def test_dry_run_runs_on_copies_of_the_state_and_nodes() -> None:
    async with cluster() as c:
        p = await dry_run_cluster(c, guarded=set(), n=2)
        state, _ = c.cycle(p)
        nodes = potential(c, "n0", "n1")
        c.plugin.evaluator.dry_run_preemption(state, p, nodes, [], 0, 2)
        assert [names(pi.pod for pi in ni.pods) for ni in nodes] == [["low0"], ["low1"]]
        assert c.fwk.run_filter_plugins(state, p, nodes[0]).code == Code.UNSCHEDULABLE


# ---------------------------------------------------------------- §3.5 / §3.8 Preempt, sync


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


@pytest.mark.parametrize(
    ("deleting", "condition", "expected"),
    [
        (True, ("True", PREEMPTION_BY_SCHEDULER), True),
        (True, ("True", "DeletionByTaintManager"), False),
        (True, ("False", PREEMPTION_BY_SCHEDULER), False),
        (True, None, False),
        (False, ("True", PREEMPTION_BY_SCHEDULER), False),
    ],
)
def test_pod_terminating_by_preemption(
    deleting: bool, condition: tuple[str, str] | None, expected: bool
) -> None:
    p = pod("p", 1)
    if deleting:
        p.metadata.deletion_timestamp.FromSeconds(NOW)
    if condition is not None:
        p.status.conditions.add(type=DISRUPTION_TARGET, status=condition[0], reason=condition[1])
    assert pod_terminating_by_preemption(p) is expected


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


@pytest.mark.anyio
async def test_victim_waiting_at_permit_is_rejected_not_deleted() -> None:
    async with cluster() as c:
        c.node("n1", cpu="4")
        waiting = c.add(pod("waiting", 1, "4"))  # not bound yet: assumed, held at Permit
        assumed = types_pb2.Pod()
        assumed.CopyFrom(waiting)
        assumed.spec.node_name = "n1"
        c.cache.assume_pod(assumed)
        wp = WaitingPod(assumed, {"SomePermit": 60.0}, c.clock)
        c.waiting.add(wp)
        p = c.add(pod("p", 10, "4"))
        await settle()
        state, statuses = c.cycle(p)

        result, status = await c.plugin.post_filter(state, p, statuses)
        assert (result, status) == (PostFilterResult("n1"), SUCCESS)
        assert c.actions_on("waiting") == []
        assert await wp.wait() == Status(Code.UNSCHEDULABLE, ("preempted",), "DefaultPreemption")
        assert names_of_events(c) == ["waiting"]


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
        assert status.plugin == "DefaultPreemption"
        assert status.message().startswith("preemption: 0/1 nodes are available")


# ---------------------------------------------------------------- §3.8 async


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


def test_events_to_register_depends_on_the_async_gate() -> None:
    sync_handle = FakeHandle()
    sync_handle.fake_gates = gates(async_preemption=False)
    assert default_preemption.new({}, sync_handle).events_to_register() == []

    async_handle = FakeHandle()
    async_handle.fake_gates = gates(async_preemption=True)
    (registered,) = default_preemption.new({}, async_handle).events_to_register()
    assert registered.event == ClusterEvent(EventResource.ASSIGNED_POD, ActionType.DELETE)
    assert registered.hint is not None
    assert registered.hint(pod("p", 1), pod("v", 0), None) == QueueingHint.SKIP


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


# ---------------------------------------------------------------- Evaluator odds and ends


@pytest.mark.anyio
async def test_select_candidate_returns_a_single_candidate_as_is() -> None:
    async with cluster() as c:
        only = Candidate("x", victims(5))
        assert c.plugin.evaluator.select_candidate([only]) is only
        assert c.plugin.evaluator.select_candidate([]) is None
        best = c.plugin.evaluator.select_candidate(
            [Candidate("a", victims(5)), Candidate("b", victims(3, 3))]
        )
        assert best is not None and best.name == "b"


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
