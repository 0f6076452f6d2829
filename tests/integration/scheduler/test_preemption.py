"""DefaultPreemption scenarios of upstream's DefaultPreemption, pkg/scheduler/framework/plugins/defaultpreemption (S-PRE-1 … S-PRE-9) on real processes: etcd,
apiserver, controller-manager (PDB status), one real kubelet per node (victims terminate
gracefully), and two scheduler processes: the default one with asynchronous preemption (on, as
at 1.37) and "sync-scheduler" with SchedulerAsyncPreemption off. Both have the TokenFilter
emulation plugin (S-PRE-2/3; it leaves pods without its label alone); the default process also
runs "no-preemption-scheduler", a profile without the DefaultPreemption PostFilter (S-PRE-6).

Scenarios that execute a preemption run on both schedulers; those where nothing is preempted
are decided before any execution, so they run on the default one. Every scenario records its
pods through a watch and ends with the invariant checks (kemu.testing.invariants); the
"never" expectations (no nomination, never bound) are read from that complete history, after a
bounded observation window where the scenario has had its chance to go wrong.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager

import anyio
import pytest

from kemu.api.v1 import types_pb2
from kemu.component.featuregate import SCHEDULER_ASYNC_PREEMPTION
from kemu.machinery.errors import ApiError, NotFound
from kemu.testing import Cluster
from kemu.testing.invariants import PodHistory, assert_invariants, record_pods
from kemu.testing.scenarios import Scenario, disruption_target

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

DEFAULT_SCHEDULER = "default-scheduler"
SYNC_SCHEDULER = "sync-scheduler"
NO_PREEMPTION_SCHEDULER = "no-preemption-scheduler"
SCHEDULERS = [DEFAULT_SCHEDULER, SYNC_SCHEDULER]

LOW, MEDIUM, HIGH = 100, 200, 300

TOKEN_PLUGIN = "{multiPoint: {enabled: [{name: TokenFilter}]}}"
DEFAULT_CONFIG = f"""\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: {DEFAULT_SCHEDULER}
  plugins: {TOKEN_PLUGIN}
- schedulerName: {NO_PREEMPTION_SCHEDULER}
  plugins:
    postFilter: {{disabled: [{{name: DefaultPreemption}}]}}
"""
SYNC_CONFIG = f"""\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: {SYNC_SCHEDULER}
  plugins: {TOKEN_PLUGIN}
"""

# TokenFilter's labels and annotations (kemu/scheduling/emulation/token_filter.py).
TOKENS = "scheduling.kemu.io/tokens"
TOKEN = "scheduling.kemu.io/token"
TOKEN_CHECK = "scheduling.kemu.io/token-check"
TOKEN_UNRESOLVABLE = "scheduling.kemu.io/token-unresolvable"

NOT_HELPFUL = "Preemption is not helpful for scheduling"
TIMEOUT = 60.0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root = tmp_path_factory.mktemp("preemption")
    default_config = root / "default.yaml"
    default_config.write_text(DEFAULT_CONFIG)
    sync_config = root / "sync.yaml"
    sync_config.write_text(SYNC_CONFIG)
    with Cluster(root) as c:
        c.start_etcd()
        c.start_apiserver()
        c.start_controllermanager()
        c.start_scheduler(config=str(default_config), extra_args=["--seed", "1"])
        c.start_scheduler(
            name="scheduler-sync",
            config=str(sync_config),
            feature_gates={SCHEDULER_ASYNC_PREEMPTION: False},
            extra_args=["--seed", "1"],
        )
        yield c


@asynccontextmanager
async def scenario(cluster: Cluster, prefix: str) -> AsyncIterator[tuple[Scenario, PodHistory]]:
    """A Scenario whose pods are recorded from the start; once the block has succeeded, the
    invariants are checked on that history. Its pods still pending at the end are
    deleted, so that they do not linger in the shared schedulers' queues (every new node of a
    later scenario would retry them)."""
    async with Scenario.open(cluster, prefix) as s:
        try:
            async with record_pods(s.client, s.ns) as history:
                yield s, history
                await assert_invariants(s.client, history, s.ns)
        finally:
            with anyio.move_on_after(10, shield=True):
                await delete_pending(s)


async def delete_pending(s: Scenario) -> None:
    """Best effort: a failure here must not hide the test's own outcome."""
    with contextlib.suppress(ApiError):
        for pod in (await s.pods()).values():
            if not pod.spec.node_name:
                with contextlib.suppress(NotFound):
                    await s.client.delete(types_pb2.Pod, pod.metadata.name, s.ns)


# ---------------------------------------------------------------- history helpers


def versions(history: PodHistory, name: str) -> list[types_pb2.Pod]:
    """Every recorded version of the pod `name` (of all its incarnations), in order. Call
    `history.sync()` first: then every change up to that point is there."""
    return [v.pod for uid in history.uids_of(name) for v in history.versions[uid]]


def deleted(history: PodHistory, name: str) -> bool:
    """Whether the last incarnation of `name` has been deleted."""
    uids = history.uids_of(name)
    last = history.latest(uids[-1]) if uids else None
    return last is not None and last.type == "DELETED"


def scheduled(pod: types_pb2.Pod) -> bool:
    return any(c.type == "PodScheduled" and c.status == "True" for c in pod.status.conditions)


def preempted_by_scheduler(pod: types_pb2.Pod) -> bool:
    c = disruption_target(pod)
    return c is not None and c.status == "True" and c.reason == "PreemptionByScheduler"


def assert_preempted(history: PodHistory, name: str) -> None:
    """The pod was marked DisruptionTarget (PreemptionByScheduler) and deleted."""
    seen = versions(history, name)
    assert seen, f"{name} not recorded"
    assert any(preempted_by_scheduler(p) for p in seen), (
        f"{name} never got DisruptionTarget/PreemptionByScheduler"
    )
    assert deleted(history, name), f"{name} not deleted"


def assert_never(
    history: PodHistory, name: str, what: str, bad: Callable[[types_pb2.Pod], bool]
) -> None:
    seen = versions(history, name)
    assert seen, f"{name} not recorded"
    hits = [p.metadata.resource_version for p in seen if bad(p)]
    assert not hits, f"{name} {what} (resourceVersions {hits})"


def assert_not_preempted(history: PodHistory, name: str) -> None:
    assert_never(
        history,
        name,
        "was preempted or deleted",
        lambda p: p.metadata.HasField("deletion_timestamp") or disruption_target(p) is not None,
    )
    assert not deleted(history, name), f"{name} deleted"


def assert_never_nominated(history: PodHistory, name: str) -> None:
    assert_never(history, name, "was nominated", lambda p: bool(p.status.nominated_node_name))


def assert_never_bound(history: PodHistory, name: str) -> None:
    assert_never(history, name, "was bound", lambda p: bool(p.spec.node_name) or scheduled(p))


def assert_nominated_before_binding(history: PodHistory, name: str, node: str) -> None:
    """The pod had nominatedNodeName `node` while it was unbound (the preemption's PATCH)."""
    seen = versions(history, name)
    assert any(not p.spec.node_name and p.status.nominated_node_name == node for p in seen), (
        f"{name} never nominated to {node}: "
        f"{[(p.metadata.resource_version, p.status.nominated_node_name) for p in seen]}"
    )


async def preemption_events(s: Scenario) -> dict[str, str]:
    """Victim name → the Preempted event's message."""
    return {e.involved_object.name: e.message for e in await s.events("Preempted")}


async def stays_unpreempted(s: Scenario, preemptor: str, victims: list[str], message: str) -> None:
    """The preemptor has been found unschedulable (with `message` in its condition, which
    proves that the PostFilter decision was made), and for an observation window after that
    it stays unbound and un-nominated while the victims keep running untouched."""
    cond = await s.eventually(lambda: _condition_with(s, preemptor, message), timeout=TIMEOUT)
    assert cond.reason == "Unschedulable", cond

    async def nothing_happens() -> None:
        p = await s.get(preemptor)
        assert not p.spec.node_name, f"{preemptor} bound to {p.spec.node_name}"
        assert not p.status.nominated_node_name, (
            f"{preemptor} nominated to {p.status.nominated_node_name}"
        )
        for name in victims:
            v = await s.get(name)
            assert v.status.phase == "Running", f"{name}: {v.status.phase}"
            assert not v.metadata.HasField("deletion_timestamp"), f"{name} is terminating"

    await s.holds(nothing_happens)
    assert not await s.events("Preempted")


async def _condition_with(s: Scenario, name: str, message: str) -> types_pb2.PodCondition:
    p = await s.get(name)
    cond = [c for c in p.status.conditions if c.type == "PodScheduled"]
    assert cond and cond[0].status == "False" and message in cond[0].message, (
        f"{name}: PodScheduled {cond}, want a message with {message!r}"
    )
    return cond[0]


# ---------------------------------------------------------------- scenarios


@pytest.mark.parametrize("scheduler", SCHEDULERS)
async def test_s_pre_1_basic_preemption(cluster: Cluster, scheduler: str) -> None:
    """The victim is marked DisruptionTarget and deleted, the preemptor nominated to the node
    and then bound there."""
    async with scenario(cluster, "s-pre-1") as (s, history):
        await s.nodes("node1", cpu="500m", memory="500", pods="32")
        await s.run(
            s.pod("victim-pod", priority=LOW, cpu="400m", memory="200").scheduler_name(scheduler)
        )
        await s.create(
            s.pod("preemptor-pod", priority=HIGH, cpu="300m", memory="200").scheduler_name(
                scheduler
            )
        )
        await s.wait_gone("victim-pod", timeout=TIMEOUT)
        assert await s.wait_bound("preemptor-pod", timeout=TIMEOUT) == s.node_name("node1")
        preempted = await s.events("Preempted", "victim-pod")
        assert preempted and preempted[0].message.startswith("Preempted by pod ")
        await history.sync(s.client)
        assert_preempted(history, "victim-pod")
        # From the history rather than by polling: the nomination lasts only until the bind.
        assert_nominated_before_binding(history, "preemptor-pod", s.node_name("node1"))


@pytest.mark.parametrize("check", ["filter", "prefilter"])
@pytest.mark.parametrize("scheduler", SCHEDULERS)
async def test_s_pre_2_preemption_through_a_token_filter(
    cluster: Cluster, scheduler: str, check: str
) -> None:
    """The node has one token and resources for both pods: only the token filter (at Filter,
    or as a PreFilter rejection that gives every node its status) makes the victim go."""
    async with scenario(cluster, "s-pre-2") as (s, history):
        await s.nodes("node1", cpu="500m", memory="500", pods="32", labels={TOKENS: "1"})

        def token_pod(name: str, priority: int) -> types_pb2.Pod:
            return (
                s.pod(name, priority=priority, cpu="200m", memory="200")
                .scheduler_name(scheduler)
                .label(TOKEN, "true")
                .annotation(TOKEN_CHECK, check)
                .obj()
            )

        await s.run(token_pod("victim-pod", LOW))
        preemptor = await s.create(token_pod("preemptor-pod", HIGH))
        await s.wait_gone("victim-pod", timeout=TIMEOUT)
        assert await s.wait_bound("preemptor-pod", timeout=TIMEOUT) == s.node_name("node1")
        await history.sync(s.client)
        assert_preempted(history, "victim-pod")
        assert_nominated_before_binding(history, "preemptor-pod", s.node_name("node1"))
        events = await preemption_events(s)
        assert events == {
            "victim-pod": f"Preempted by pod {preemptor.metadata.uid} on node "
            f"{s.node_name('node1')}"
        }


@pytest.mark.parametrize("check", ["filter", "prefilter"])
async def test_s_pre_3_unresolvable_filter_preempts_nothing(cluster: Cluster, check: str) -> None:
    """As S-PRE-2 but the token filter rejects with UnschedulableAndUnresolvable: the node is
    no candidate, preemption is not helpful, nothing is preempted and no NNN is set."""
    async with scenario(cluster, "s-pre-3") as (s, history):
        await s.nodes("node1", cpu="500m", memory="500", pods="32", labels={TOKENS: "1"})

        def token_pod(name: str, priority: int) -> types_pb2.Pod:
            return (
                s.pod(name, priority=priority, cpu="200m", memory="200")
                .label(TOKEN, "true")
                .annotation(TOKEN_CHECK, check)
                .annotation(TOKEN_UNRESOLVABLE, "true")
                .obj()
            )

        await s.run(token_pod("victim-pod", LOW))
        await s.create(token_pod("preemptor-pod", HIGH))
        await stays_unpreempted(s, "preemptor-pod", ["victim-pod"], message=NOT_HELPFUL)
        await history.sync(s.client)
        assert_not_preempted(history, "victim-pod")
        assert_never_nominated(history, "preemptor-pod")


@pytest.mark.parametrize("scheduler", SCHEDULERS)
async def test_s_pre_4_preemption_to_satisfy_anti_affinity(
    cluster: Cluster, scheduler: str
) -> None:
    """pod-0 (medium) repels the preemptor, pod-1 (low) is repelled by it: both must go."""
    async with scenario(cluster, "s-pre-4") as (s, history):
        node = s.node_name("node1")
        await s.nodes("node1", cpu="500m", memory="500", pods="32", labels={"node": node})
        await s.run(
            s.pod("pod-0", priority=MEDIUM, cpu="100m", memory="100")
            .scheduler_name(scheduler)
            .label("pod", "p0")
        )
        await s.run(
            s.pod("pod-1", priority=LOW, cpu="100m", memory="100")
            .scheduler_name(scheduler)
            .label("pod", "p1")
            .anti_affinity({"pod": "preemptor"}, "node")
        )
        preemptor = await s.create(
            s.pod("preemptor-pod", priority=HIGH, cpu="100m", memory="100")
            .scheduler_name(scheduler)
            .label("pod", "preemptor")
            .anti_affinity({"pod": "p0"}, "node")
        )
        await s.wait_gone("pod-0", timeout=TIMEOUT)
        await s.wait_gone("pod-1", timeout=TIMEOUT)
        assert await s.wait_bound("preemptor-pod", timeout=TIMEOUT) == node
        await history.sync(s.client)
        assert_preempted(history, "pod-0")
        assert_preempted(history, "pod-1")
        assert_nominated_before_binding(history, "preemptor-pod", node)
        message = f"Preempted by pod {preemptor.metadata.uid} on node {node}"
        assert await preemption_events(s) == {"pod-0": message, "pod-1": message}


async def test_s_pre_4_anti_affinity_of_an_equal_priority_pod_prevents_preemption(
    cluster: Cluster,
) -> None:
    """Variant: pod-1 has the preemptor's priority, so it is no victim and its anti-affinity
    keeps the preemptor off the node whatever is removed: nothing is preempted."""
    async with scenario(cluster, "s-pre-4v") as (s, history):
        node = s.node_name("node1")
        await s.nodes("node1", cpu="500m", memory="500", pods="32", labels={"node": node})
        await s.run(s.pod("pod-0", priority=MEDIUM, cpu="100m", memory="100").label("pod", "p0"))
        await s.run(
            s.pod("pod-1", priority=HIGH, cpu="100m", memory="100")
            .label("pod", "p1")
            .anti_affinity({"pod": "preemptor"}, "node")
        )
        await s.create(
            s.pod("preemptor-pod", priority=HIGH, cpu="100m", memory="100")
            .label("pod", "preemptor")
            .anti_affinity({"pod": "p0"}, "node")
        )
        # One node and no victims that would help: "preemption: 0/N nodes are available".
        await stays_unpreempted(s, "preemptor-pod", ["pod-0", "pod-1"], message="preemption: 0/")
        await history.sync(s.client)
        assert_not_preempted(history, "pod-0")
        assert_not_preempted(history, "pod-1")
        assert_never_nominated(history, "preemptor-pod")


@pytest.mark.parametrize(
    ("scheduler", "never"),
    [(DEFAULT_SCHEDULER, False), (SYNC_SCHEDULER, False), (DEFAULT_SCHEDULER, True)],
    ids=["nil-async", "nil-sync", "never"],
)
async def test_s_pre_5_preemption_policy(cluster: Cluster, scheduler: str, never: bool) -> None:
    """preemptionPolicy nil (PreemptLowerPriority) preempts; Never does not, and gets no NNN
    (the pod is still scheduled by priority, it just does not take room)."""
    async with scenario(cluster, "s-pre-5") as (s, history):
        await s.nodes("node1", cpu="500m", memory="500", pods="32")
        await s.run(
            s.pod("victim-pod", priority=LOW, cpu="400m", memory="200").scheduler_name(scheduler)
        )
        created = await s.create(
            s.pod(
                "preemptor-pod", priority=HIGH, never=never, cpu="300m", memory="200"
            ).scheduler_name(scheduler)
        )
        assert created.spec.preemption_policy == ("Never" if never else "PreemptLowerPriority")
        if never:
            await stays_unpreempted(
                s,
                "preemptor-pod",
                ["victim-pod"],
                message="preemption: not eligible due to preemptionPolicy=Never.",
            )
            await history.sync(s.client)
            assert_not_preempted(history, "victim-pod")
            assert_never_nominated(history, "preemptor-pod")
            return
        await s.wait_gone("victim-pod", timeout=TIMEOUT)
        assert await s.wait_bound("preemptor-pod", timeout=TIMEOUT) == s.node_name("node1")
        await history.sync(s.client)
        assert_preempted(history, "victim-pod")
        assert_nominated_before_binding(history, "preemptor-pod", s.node_name("node1"))


async def test_s_pre_6_preemption_disabled_in_the_profile(cluster: Cluster) -> None:
    """A profile without the DefaultPreemption PostFilter: the preemptor stays unschedulable
    (the FitError alone, no "preemption:" part), with no NNN, and the victim keeps running."""
    async with scenario(cluster, "s-pre-6") as (s, history):
        await s.nodes("node1", cpu="500m", memory="500", pods="32")
        await s.run(
            s.pod("victim-pod", priority=LOW, cpu="400m", memory="200").scheduler_name(
                NO_PREEMPTION_SCHEDULER
            )
        )
        await s.create(
            s.pod("preemptor-pod", priority=HIGH, cpu="300m", memory="200").scheduler_name(
                NO_PREEMPTION_SCHEDULER
            )
        )
        await stays_unpreempted(s, "preemptor-pod", ["victim-pod"], message="Insufficient cpu")
        cond = await s.wait_unschedulable("preemptor-pod")
        assert "preemption" not in cond.message.lower(), cond.message
        await history.sync(s.client)
        assert_not_preempted(history, "victim-pod")
        assert_never_nominated(history, "preemptor-pod")


@pytest.mark.parametrize("scheduler", SCHEDULERS)
async def test_s_pre_7_system_cluster_critical_pod_preempts_a_default_priority_pod(
    cluster: Cluster, scheduler: str
) -> None:
    """The scheduler side of S-PRE-7 (priority resolution itself is
    tests/integration/apiserver/test_apiserver.py::test_s_pre_7_system_priority_classes_and_unknown_class):
    a system-cluster-critical pod (2000000000 by admission) preempts a pod without a class."""
    async with scenario(cluster, "s-pre-7") as (s, history):
        await s.nodes("node1", cpu="500m", memory="500", pods="32")
        victim = await s.run(
            s.pod("victim-pod", cpu="400m", memory="200").scheduler_name(scheduler)
        )
        assert victim.spec.priority == 0
        critical = await s.create(
            s.pod("critical-pod", cpu="300m", memory="200")
            .scheduler_name(scheduler)
            .priority_class("system-cluster-critical")
        )
        assert critical.spec.priority == 2000000000
        await s.wait_gone("victim-pod", timeout=TIMEOUT)
        assert await s.wait_bound("critical-pod", timeout=TIMEOUT) == s.node_name("node1")
        await history.sync(s.client)
        assert_preempted(history, "victim-pod")
        assert_nominated_before_binding(history, "critical-pod", s.node_name("node1"))


@pytest.mark.parametrize("scheduler", SCHEDULERS)
async def test_s_pre_8_no_starvation_of_the_preemptor(cluster: Cluster, scheduler: str) -> None:
    """Five running medium pods fill the node, five more medium ones wait (unschedulable,
    nothing to preempt at their priority). The high preemptor preempts three running ones and
    binds; the waiting medium pods, retried when the victims go, respect its nomination and
    never take the room."""
    async with scenario(cluster, "s-pre-8") as (s, history):
        await s.nodes("node1", cpu="500m", memory="500", pods="32")

        def medium(name: str) -> types_pb2.Pod:
            return (
                s.pod(name, priority=MEDIUM, cpu="100m", memory="100")
                .scheduler_name(scheduler)
                .grace(0)
                .obj()
            )

        running = [f"running-{i}" for i in range(5)]
        pending = [f"pending-{i}" for i in range(5)]
        for name in running:
            await s.run(medium(name))
        for name in pending:
            await s.create(medium(name))
        for name in pending:
            await s.wait_unschedulable(name, timeout=TIMEOUT)
        await s.create(
            s.pod("preemptor-pod", priority=HIGH, cpu="300m", memory="200").scheduler_name(
                scheduler
            )
        )
        node = s.node_name("node1")
        assert await s.wait_bound("preemptor-pod", timeout=TIMEOUT) == node
        events = await s.eventually(lambda: _preempted_count(s, 3), timeout=TIMEOUT)
        assert set(events) <= set(running), events
        for name in events:
            await s.wait_gone(name, timeout=TIMEOUT)
        await history.sync(s.client)
        for name in events:
            assert_preempted(history, name)
        assert_nominated_before_binding(history, "preemptor-pod", node)
        for name in pending:
            assert_never_bound(history, name)


async def _preempted_count(s: Scenario, n: int) -> dict[str, str]:
    events = await preemption_events(s)
    assert len(events) == n, f"Preempted events: {events}"
    return events


RACE_REPETITIONS = 3


@pytest.mark.parametrize("scheduler", SCHEDULERS)
async def test_s_pre_9_races_with_lower_priority_pods(cluster: Cluster, scheduler: str) -> None:
    """Two medium pods run; the high preemptor (4900m of 5000m) is created and right after it
    twenty medium pods. The preemptor preempts one medium pod and binds; none of the twenty is
    ever bound (from the watch history of every version), neither while the preemption runs
    nor after. Repeated, each time in a fresh scenario."""
    for repetition in range(RACE_REPETITIONS):
        await _race(cluster, scheduler, f"s-pre-9-{repetition}")


async def _race(cluster: Cluster, scheduler: str, prefix: str) -> None:
    async with scenario(cluster, prefix) as (s, history):
        await s.nodes("node1", cpu="5000m", memory="5000", pods="100")

        def medium(name: str) -> types_pb2.Pod:
            return (
                s.pod(name, priority=MEDIUM, cpu="100m", memory="100")
                .scheduler_name(scheduler)
                .grace(0)
                .obj()
            )

        for i in range(2):
            await s.run(medium(f"rpod-{i}"))
        await s.create(
            s.pod("preemptor-pod", priority=HIGH, cpu="4900m", memory="4900").scheduler_name(
                scheduler
            )
        )
        additional = [f"ppod-{i}" for i in range(20)]
        for name in additional:
            await s.create(medium(name))
        node = s.node_name("node1")
        assert await s.wait_bound("preemptor-pod", timeout=TIMEOUT) == node
        events = await s.eventually(lambda: _preempted_count(s, 1), timeout=TIMEOUT)
        assert set(events) <= {"rpod-0", "rpod-1"}, events
        for name in additional:
            await s.wait_unschedulable(name, timeout=TIMEOUT)

        async def none_bound() -> None:
            pods = await s.pods()
            bound = [n for n in additional if pods[n].spec.node_name]
            assert not bound, f"bound: {bound}"

        # A little longer, with the preemptor bound and the victim gone.
        await s.holds(none_bound, seconds=2.0)
        await history.sync(s.client)
        assert_nominated_before_binding(history, "preemptor-pod", node)
        for name in additional:
            assert_never_bound(history, name)
