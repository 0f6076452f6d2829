"""DefaultPreemption scenarios of upstream's DefaultPreemption, pkg/scheduler/framework/plugins/defaultpreemption, S-PRE-10 … S-PRE-18 (node and victim selection,
nomination clean-up, PDBs, graceful termination, nominated pods), on real processes: etcd,
apiserver, controller-manager (the disruption controller keeps PDB status), one real kubelet per
node (victims terminate gracefully), and two scheduler processes with `--seed 1`:

- the default process, SchedulerAsyncPreemption on (as at 1.37): profiles "default-scheduler"
  and "prebind-scheduler" (the SlowPreBind emulation plugin added, for S-PRE-15's PreBind row);
- "scheduler-sync", SchedulerAsyncPreemption off: "sync-scheduler" and "sync-prebind-scheduler".

Scenarios whose outcome may depend on how the preemption is executed (when victims are deleted,
when lower-priority nominations are cleared, the PreEnqueue hold) run on both; those decided by
the selection alone (S-PRE-12, 13, 16) and those upstream states for async preemption (S-PRE-10,
11) run on the default one. Every scenario records its pods through a watch from the start and
ends with the invariant checks (kemu.testing.invariants); "never" and ordering expectations
are read from that complete history.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Collection, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Final

import pytest

from kemu.api.v1 import types_pb2
from kemu.client.interface import DELETED
from kemu.component.featuregate import SCHEDULER_ASYNC_PREEMPTION
from kemu.testing import Cluster, Component, storage
from kemu.testing.builders import PodBuilder, make_pdb
from kemu.testing.informers import wait_cached
from kemu.testing.invariants import PodHistory, PodVersion, assert_invariants, record_pods
from kemu.testing.scenarios import Scenario, disruption_target

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

ASYNC_SCHEDULER: Final = "default-scheduler"
SYNC_SCHEDULER: Final = "sync-scheduler"
PREBIND_SCHEDULERS: Final = {
    ASYNC_SCHEDULER: "prebind-scheduler",
    SYNC_SCHEDULER: "sync-prebind-scheduler",
}
BOTH: Final = pytest.mark.parametrize(
    "scheduler", [ASYNC_SCHEDULER, SYNC_SCHEDULER], ids=["async", "sync"]
)

SLOW_PRE_BIND = "{multiPoint: {enabled: [{name: SlowPreBind}]}}"
ASYNC_CONFIG: Final = f"""\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: {ASYNC_SCHEDULER}
- schedulerName: {PREBIND_SCHEDULERS[ASYNC_SCHEDULER]}
  plugins: {SLOW_PRE_BIND}
"""
SYNC_CONFIG: Final = f"""\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: {SYNC_SCHEDULER}
- schedulerName: {PREBIND_SCHEDULERS[SYNC_SCHEDULER]}
  plugins: {SLOW_PRE_BIND}
"""

# kemu/scheduling/emulation/slow_pre_bind.py
PREBIND_FAIL: Final = "scheduling.kemu.io/prebind-fail"

LOW, MEDIUM, HIGH = 100, 200, 300
TIMEOUT: Final = 60.0
# Long enough for a preemptor to be retried while its victim terminates, short enough for CI
# (S-PRE-17 says 60 s).
GRACE: Final = 8
# A pod that stays terminating until the test force-deletes it (no kubelet would wait so long).
STUCK_GRACE: Final = 300
NOT_ELIGIBLE_TERMINATING: Final = "not eligible due to a terminating pod on the nominated node"
NOT_HELPFUL: Final = "Preemption is not helpful for scheduling"
NO_NODES: Final = "no nodes available to schedule pods"
RWOP: Final = "ReadWriteOncePod"
# (the default version's, 1.33+: kubernetes#129145)
RWOP_CONFLICT: Final = (
    "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode "
    "already in-use by another pod"
)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root = tmp_path_factory.mktemp("preemption-selection")
    async_config = root / "async.yaml"
    async_config.write_text(ASYNC_CONFIG)
    sync_config = root / "sync.yaml"
    sync_config.write_text(SYNC_CONFIG)
    with Cluster(root) as c:
        c.start_etcd()
        c.start_apiserver()
        c.start_controllermanager()
        c.start_scheduler(config=str(async_config), extra_args=["--seed", "1"])
        c.start_scheduler(
            name="scheduler-sync",
            config=str(sync_config),
            feature_gates={SCHEDULER_ASYNC_PREEMPTION: False},
            extra_args=["--seed", "1"],
        )
        yield c


class Recorded:
    """A Scenario with the history of its pods and the names the test deletes itself (exempt
    from invariant (2): the scheduler is not the only one deleting them)."""

    def __init__(self, s: Scenario, history: PodHistory) -> None:
        self.s = s
        self.history = history
        self.externally_deleted: set[str] = set()

    async def force_delete(self, *names: str) -> None:
        """DELETE with gracePeriodSeconds 0 (`kubectl delete --force`): gone at once."""
        for name in names:
            self.externally_deleted.add(name)
            await self.s.client.delete(types_pb2.Pod, name, self.s.ns, grace_period_seconds=0)
        for name in names:
            await self.s.wait_gone(name, timeout=TIMEOUT)

    async def delete(self, name: str) -> None:
        """A graceful DELETE by someone other than the scheduler."""
        self.externally_deleted.add(name)
        await self.s.client.delete(types_pb2.Pod, name, self.s.ns)

    async def sync(self) -> None:
        await self.history.sync(self.s.client, timeout=TIMEOUT)

    def versions(self, name: str) -> list[PodVersion]:
        """Every recorded version of the pod `name`, in order (call `sync` first)."""
        return [v for uid in self.history.uids_of(name) for v in self.history.versions[uid]]

    def nnn_changes(self, name: str, *, bound: bool = True) -> list[str]:
        """The pod's successive nominatedNodeName values (scenario node names, "" for none),
        consecutive repeats dropped; with `bound` False, only while it was not bound."""
        out: list[str] = []
        for v in self.versions(name):
            if v.type == DELETED or (not bound and v.pod.spec.node_name):
                continue
            nnn = self.short(v.pod.status.nominated_node_name)
            if not out or out[-1] != nnn:
                out.append(nnn)
        return out

    def preempted(self) -> set[str]:
        """Pods that ever carried DisruptionTarget=True/PreemptionByScheduler."""
        return {
            versions[0].pod.metadata.name
            for versions in self.history.versions.values()
            if any(preempted_by_scheduler(v.pod) for v in versions)
        }

    def terminated(self) -> set[str]:
        """Pods that were deleted or began terminating."""
        return {
            versions[0].pod.metadata.name
            for versions in self.history.versions.values()
            if any(
                v.type == DELETED or v.pod.metadata.HasField("deletion_timestamp") for v in versions
            )
        }

    async def preempted_events(self) -> set[str]:
        return {e.involved_object.name for e in await self.s.events("Preempted")}

    def short(self, node: str) -> str:
        """The scenario node name of a cluster-wide node name."""
        prefix = f"{self.s.ns}-"
        return node.removeprefix(prefix) if node else ""


@asynccontextmanager
async def scenario(cluster: Cluster, prefix: str) -> AsyncIterator[Recorded]:
    """A Scenario whose pods are recorded from the start; once the block has succeeded, the
    invariants are checked on that history."""
    async with Scenario.open(cluster, prefix) as s, record_pods(s.client, s.ns) as history:
        r = Recorded(s, history)
        yield r
        await assert_invariants(
            s.client,
            history,
            s.ns,
            clearing_gate_on=True,  # ClearingNominatedNodeNameAfterBinding, on at 1.37
            externally_deleted=r.externally_deleted,
            sync_timeout=TIMEOUT,
        )


def preempted_by_scheduler(pod: types_pb2.Pod) -> bool:
    c = disruption_target(pod)
    return c is not None and c.status == "True" and c.reason == "PreemptionByScheduler"


def pod_scheduled(pod: types_pb2.Pod) -> types_pb2.PodCondition | None:
    return next((c for c in pod.status.conditions if c.type == "PodScheduled"), None)


def start_ns(pod: types_pb2.Pod) -> int:
    assert pod.status.HasField("start_time"), f"{pod.metadata.name} has no startTime"
    return int(pod.status.start_time.ToNanoseconds())


async def wait_terminating(s: Scenario, *names: str) -> None:
    """Until each pod has a deletionTimestamp (and still exists)."""
    for name in names:

        async def terminating(name: str = name) -> bool:
            p = await s.get(name)
            assert p.metadata.HasField("deletion_timestamp"), f"{name} is not terminating"
            return True

        await s.eventually(terminating, timeout=TIMEOUT)


async def wait_event(s: Scenario, reason: str, name: str, text: str) -> types_pb2.Event:
    async def found() -> types_pb2.Event:
        events = [e for e in await s.events(reason, name) if text in e.message]
        assert events, f"no {reason} event of {name} with {text!r}"
        return events[0]

    result: types_pb2.Event = await s.eventually(found, timeout=TIMEOUT)
    return result


async def wait_pdb(
    s: Scenario, name: str, *, healthy: int, allowed: int, seen_by: Component
) -> None:
    """Until the disruption controller has written the PDB's status for the current pods, and
    the scheduler `seen_by` holds that status (upstream's waitCachedPDBsStable: the PDB comes on
    a watch of its own, which gives no order against the preemptor's pod watch)."""

    async def synced() -> types_pb2.PodDisruptionBudget:
        pdb = await s.client.get(types_pb2.PodDisruptionBudget, name, s.ns)
        st = pdb.status
        assert st.observed_generation == pdb.metadata.generation, f"{name}: not observed yet"
        assert (st.current_healthy, st.disruptions_allowed) == (healthy, allowed), (
            f"{name}: currentHealthy {st.current_healthy}, disruptionsAllowed "
            f"{st.disruptions_allowed}; want {healthy}, {allowed}"
        )
        return pdb

    await wait_cached(seen_by, await s.eventually(synced, timeout=TIMEOUT), timeout=TIMEOUT)


def assert_only(what: str, got: Collection[str], want: Collection[str]) -> None:
    assert set(got) == set(want), f"{what}: {sorted(got)}, want {sorted(want)}"


# ---------------------------------------------------------------- S-PRE-10, 11


async def test_s_pre_10_node_choice_moves_the_nomination(cluster: Cluster) -> None:
    """The preemptor, nominated to `node` beforehand, preempts on `node2`: both nodes have
    victims of priority 1 (criterion 2 ties), `node2` has the smaller sum of priorities
    (criterion 3: one victim instead of two). NNN goes node → node2, then binding clears it."""
    async with scenario(cluster, "s-pre-10") as r:
        s = r.s
        await s.nodes("node", "node2", cpu="4", memory="8Gi", pods="32")
        await s.run(s.pod("victim-1", priority=1, cpu="2"), node="node")
        await s.run(s.pod("victim-2", priority=1, cpu="2"), node="node")
        await s.run(s.pod("victim-3", priority=1, cpu="3"), node="node2")
        created = await s.create_nominated(s.pod("preemptor", priority=100, cpu="4"), "node")
        assert created.status.nominated_node_name == s.node_name("node")

        # (victim-3 ends at once: the nomination to node2 may last less than a poll; the
        # recorded history below has it)
        await s.wait_gone("victim-3", timeout=TIMEOUT)
        assert await s.wait_bound("preemptor", timeout=TIMEOUT) == s.node_name("node2")

        await r.sync()
        assert r.nnn_changes("preemptor") == ["", "node", "node2", ""]
        assert_only("preempted", r.preempted(), {"victim-3"})
        assert_only("terminated", r.terminated(), {"victim-3"})
        assert_only("Preempted events", await r.preempted_events(), {"victim-3"})


async def test_s_pre_11_basic_preemption_sets_nnn(cluster: Cluster) -> None:
    """The first cycle leaves the preemptor unschedulable (PodScheduled=False, Unschedulable)
    with NNN=node; once the victim is gone it binds there."""
    async with scenario(cluster, "s-pre-11") as r:
        s = r.s
        await s.nodes("node", cpu="4", memory="8Gi", pods="32")
        await s.run(s.pod("victim", priority=1, cpu="4"), node="node")
        await s.create(s.pod("preemptor", priority=100, cpu="2"))

        await s.wait_gone("victim", timeout=TIMEOUT)
        assert await s.wait_bound("preemptor", timeout=TIMEOUT) == s.node_name("node")

        await r.sync()
        assert r.nnn_changes("preemptor") == ["", "node", ""]
        nominated_unschedulable = [
            v.pod
            for v in r.versions("preemptor")
            if v.pod.status.nominated_node_name == s.node_name("node")
            and not v.pod.spec.node_name
            and (c := pod_scheduled(v.pod)) is not None
            and (c.status, c.reason) == ("False", "Unschedulable")
        ]
        assert nominated_unschedulable, "the preemptor was never unschedulable with NNN=node"
        assert_only("preempted", r.preempted(), {"victim"})
        await wait_event(s, "FailedScheduling", "preemptor", "Insufficient cpu")


# ---------------------------------------------------------------- S-PRE-12


async def test_s_pre_12_victims_greedy_by_importance(cluster: Cluster) -> None:
    """Node cpu 5 full: a (prio 1, cpu 1, started first), b (prio 1, cpu 1, started later),
    c (prio 2, cpu 2), d (prio 9, cpu 1); preemptor prio 5 cpu 3. Reprieve in importance order
    c, a, b: c does not fit back, a does, b does not → victims exactly c and b."""
    async with scenario(cluster, "s-pre-12") as r:
        s = r.s
        await s.nodes("node", cpu="5", memory="8Gi", pods="32")
        a = await s.run(s.pod("a", priority=1, cpu="1"), node="node")
        b = await s.run(s.pod("b", priority=1, cpu="1"), node="node")
        assert start_ns(a) < start_ns(b), (a.status.start_time, b.status.start_time)
        await s.run(s.pod("c", priority=2, cpu="2"), node="node")
        await s.run(s.pod("d", priority=9, cpu="1"), node="node")

        await s.create(s.pod("preemptor", priority=5, cpu="3"))
        assert await s.wait_bound("preemptor", timeout=TIMEOUT) == s.node_name("node")

        await r.sync()
        assert r.nnn_changes("preemptor") == ["", "node", ""]
        assert_only("preempted", r.preempted(), {"b", "c"})
        assert_only("terminated", r.terminated(), {"b", "c"})
        assert_only("Preempted events", await r.preempted_events(), {"b", "c"})
        pods = await s.pods()
        for name in ("a", "d"):
            assert pods[name].status.phase == "Running", pods[name].status
            assert not pods[name].metadata.HasField("deletion_timestamp")


# ---------------------------------------------------------------- S-PRE-13


@dataclass(frozen=True)
class PickRow:
    """One row of S-PRE-13: two nodes `a` and `b` (cpu 4 each) filled by victims of these
    priorities (cpu split evenly), a's started before b's unless `b_first`; the preemptor
    (prio 10, cpu 4) must remove all the pods of the node it picks."""

    a: tuple[int, ...]
    b: tuple[int, ...]
    chosen: str  # "a", "b"; "" for either (a full tie)
    pdb_on_a: bool = False  # a's victims are protected by a PDB with disruptionsAllowed 0
    b_first: bool = False
    bare: bool = False  # Node objects without kubelets: the victims never start


PICK_ROWS: Final = {
    # Criterion 1 wins over criterion 2 (which alone would pick a).
    "1-pdb": PickRow(a=(1,), b=(5,), chosen="b", pdb_on_a=True),
    "2-highest-priority": PickRow(a=(5,), b=(3, 3), chosen="b"),
    "3-sum-of-priorities": PickRow(a=(3, 1), b=(3, 2), chosen="a"),
    # Sums equal: (0 + 2^31) + (-2^31 + 2^31) = 2^31 = 0 + 2^31.
    "4-victim-count": PickRow(a=(0, -(2**31)), b=(0,), chosen="b"),
    "5-start-time": PickRow(a=(3,), b=(3,), chosen="b"),
    "5-start-time-reversed": PickRow(a=(3,), b=(3,), chosen="a", b_first=True),
    # Equal start times need victims that never started (both "now" to the scheduler): real
    # kubelets stamp startTime to the microsecond, so this row uses nodes without kubelets.
    "6-full-tie": PickRow(a=(3,), b=(3,), chosen="", bare=True),
}


@pytest.mark.parametrize("row", list(PICK_ROWS.values()), ids=list(PICK_ROWS))
async def test_s_pre_13_pick_one_node_for_preemption(cluster: Cluster, row: PickRow) -> None:
    async with scenario(cluster, "s-pre-13") as r:
        s = r.s
        if row.bare:
            for node in ("a", "b"):
                await s.bare_node(node, cpu="4", memory="8Gi", pods="32")
        else:
            await s.nodes("a", "b", cpu="4", memory="8Gi", pods="32")

        victims: dict[str, list[str]] = {"a": [], "b": []}
        started: dict[str, list[types_pb2.Pod]] = {"a": [], "b": []}
        order = ("b", "a") if row.b_first else ("a", "b")
        for node in order:
            priorities = row.a if node == "a" else row.b
            cpu = f"{4000 // len(priorities)}m"
            for i, priority in enumerate(priorities):
                name = f"{node}-{i}"
                pod = s.pod(name, priority=priority, cpu=cpu)
                if node == "a" and row.pdb_on_a:
                    pod.label("protected", "yes")
                if row.bare:
                    created = await s.create(pod.node(s.node_name(node)))
                    assert not created.status.HasField("start_time")
                else:
                    started[node].append(await s.run(pod, node=node))
                victims[node].append(name)
        if not row.bare:
            first, second = order
            assert max(map(start_ns, started[first])) < min(map(start_ns, started[second]))
        if row.pdb_on_a:
            await s.client.create(
                make_pdb("protect-a")
                .namespace(s.ns)
                .selector(protected="yes")
                .min_available(1)
                .obj()
            )
            await wait_pdb(
                s, "protect-a", healthy=1, allowed=0, seen_by=cluster.component("scheduler")
            )

        await s.create(s.pod("preemptor", priority=10, cpu="4"))

        async def nominated() -> str:
            p = await s.get("preemptor")
            nnn = r.short(p.status.nominated_node_name)
            assert nnn in ("a", "b"), f"preemptor: nominatedNodeName {nnn!r}"
            return nnn

        chosen: str = await s.eventually(nominated, timeout=TIMEOUT)
        if row.chosen:
            assert chosen == row.chosen
        await wait_terminating(s, *victims[chosen])
        if row.bare:
            # Nothing terminates on a node without a kubelet.
            await r.force_delete(*victims[chosen])
        assert await s.wait_bound("preemptor", timeout=TIMEOUT) == s.node_name(chosen)

        await r.sync()
        assert_only("preempted", r.preempted(), victims[chosen])
        assert_only("Preempted events", await r.preempted_events(), victims[chosen])
        other = "b" if chosen == "a" else "a"
        assert not set(victims[other]) & r.terminated()


# ---------------------------------------------------------------- S-PRE-14


@BOTH
async def test_s_pre_14_lower_priority_nominations_on_the_target_node_are_cleared(
    cluster: Cluster, scheduler: str
) -> None:
    """Node cpu 5 with low-1..4 (prio 100, cpu 1; they stay terminating until force-deleted, as
    on upstream's node without a kubelet). medium (200, cpu 3) preempts low-3, low-4 and gets
    NNN; high (300, cpu 4) preempts again on the same node and clears medium's nomination.
    After the force-deletion high binds; medium ends without a nomination, unbound."""
    async with scenario(cluster, "s-pre-14") as r:
        s = r.s
        await s.nodes("node", cpu="5", memory="8Gi", pods="32")
        lows = [f"low-{i}" for i in range(1, 5)]
        for name in lows:
            await s.run(
                s.pod(name, priority=LOW, cpu="1", shutdown="never")
                .grace(STUCK_GRACE)
                .scheduler_name(scheduler),
                node="node",
            )
        await s.create(s.pod("medium", priority=MEDIUM, cpu="3").scheduler_name(scheduler))
        await s.wait_nominated("medium", "node", timeout=TIMEOUT)
        await wait_terminating(s, "low-3", "low-4")

        await s.create(s.pod("high", priority=HIGH, cpu="4").scheduler_name(scheduler))
        await s.wait_nominated("high", "node", timeout=TIMEOUT)
        await s.wait_nominated("medium", None, timeout=TIMEOUT)
        await wait_terminating(s, "low-2")

        await r.force_delete(*lows)
        assert await s.wait_bound("high", timeout=TIMEOUT) == s.node_name("node")
        await s.wait_nominated("medium", None, timeout=TIMEOUT)
        assert not (await s.get("medium")).spec.node_name

        await r.sync()
        assert r.nnn_changes("medium") == ["", "node", ""]
        assert r.nnn_changes("high") == ["", "node", ""]
        assert_only("preempted", r.preempted(), {"low-2", "low-3", "low-4"})


# ---------------------------------------------------------------- S-PRE-15


@BOTH
async def test_s_pre_15_second_preemption_not_needed(cluster: Cluster, scheduler: str) -> None:
    """Node cpu 2: medium (cpu 2) preempts low (cpu 1) and is nominated; high (cpu 1) binds
    directly next to the terminating low (medium's lower-priority reservation does not count
    for it); once low is gone medium no longer fits and has nothing to preempt: NNN cleared."""
    async with scenario(cluster, "s-pre-15") as r:
        s = r.s
        await s.nodes("node", cpu="2", memory="8Gi", pods="32")
        await s.run(
            s.pod("low", priority=LOW, cpu="1", shutdown="never").grace(STUCK_GRACE), node="node"
        )
        await s.create(s.pod("medium", priority=MEDIUM, cpu="2").scheduler_name(scheduler))
        await s.wait_nominated("medium", "node", timeout=TIMEOUT)
        await wait_terminating(s, "low")

        await s.create(s.pod("high", priority=HIGH, cpu="1").scheduler_name(scheduler))
        assert await s.wait_bound("high", timeout=TIMEOUT) == s.node_name("node")
        await r.force_delete("low")
        await s.wait_nominated("medium", None, timeout=TIMEOUT)

        await r.sync()
        assert r.nnn_changes("medium") == ["", "node", ""]
        assert r.nnn_changes("high") == [""]
        assert_only("preempted", r.preempted(), {"low"})
        assert not (await s.get("medium")).spec.node_name


@BOTH
@pytest.mark.parametrize("tainted_node", [False, True], ids=["alone", "other-node-tainted"])
async def test_s_pre_15_nominated_node_deleted(
    cluster: Cluster, scheduler: str, tainted_node: bool
) -> None:
    """medium is nominated to `node` (its victim low still terminating), then the Node is
    deleted (and low force-deleted): medium's NNN is cleared. Upstream's cluster has no other
    node (ErrNoNodesAvailable) or only a NoSchedule-tainted one (no candidate). Here the module
    cluster normally still has the Node objects of earlier scenarios, none of which medium may
    use (node selector, taint): both rows then end through "no candidate" (Preemption is not
    helpful); run alone, the first one meets ErrNoNodesAvailable. Either way NNN is cleared."""
    async with scenario(cluster, "s-pre-15") as r:
        s = r.s
        await s.nodes("node", cpu="1", memory="8Gi", pods="32")
        if tainted_node:
            await s.nodes(
                "taint-node", cpu="1", memory="8Gi", pods="32", taints="kemu.io/taint=x:NoSchedule"
            )
        await s.run(
            s.pod("low", priority=LOW, cpu="1", shutdown="never").grace(STUCK_GRACE), node="node"
        )
        await s.create(s.pod("medium", priority=MEDIUM, cpu="1").scheduler_name(scheduler))
        await s.wait_nominated("medium", "node", timeout=TIMEOUT)
        await wait_terminating(s, "low")

        await s.client.delete(types_pb2.Node, s.node_name("node"))
        await r.force_delete("low")
        await s.wait_nominated("medium", None, timeout=TIMEOUT)

        async def why() -> bool:
            messages = [e.message for e in await s.events("FailedScheduling", "medium")]
            # Run alone, this test's nodes may be the cluster's only ones: ErrNoNodesAvailable.
            assert any(NOT_HELPFUL in m or NO_NODES in m for m in messages), messages
            if tainted_node:
                assert any("untolerated taint" in m for m in messages), messages
            return True

        await s.eventually(why, timeout=TIMEOUT)

        await r.sync()
        assert r.nnn_changes("medium") == ["", "node", ""]
        assert_only("preempted", r.preempted(), {"low"})


@BOTH
async def test_s_pre_15_prebind_fails_unexpectedly(cluster: Cluster, scheduler: str) -> None:
    """medium preempts low and is nominated; its first PreBind (SlowPreBind,
    `scheduling.kemu.io/prebind-fail: "1"`) fails. Upstream's test plugin returns
    Unschedulable, SlowPreBind an Error: either way the binding cycle fails and the failure
    handling clears NNN (pkg/scheduler/schedule_one.go handleSchedulingFailure, last row), with PodScheduled=False reason
    SchedulerError here. The retry then binds."""
    profile = PREBIND_SCHEDULERS[scheduler]
    async with scenario(cluster, "s-pre-15") as r:
        s = r.s
        await s.nodes("node", cpu="1", memory="8Gi", pods="32")
        await s.run(s.pod("low", priority=LOW, cpu="1").scheduler_name(profile), node="node")
        await s.create(
            s.pod("medium", priority=MEDIUM, cpu="1")
            .annotation(PREBIND_FAIL, "1")
            .scheduler_name(profile)
        )
        assert await s.wait_bound("medium", timeout=TIMEOUT) == s.node_name("node")
        await wait_event(s, "FailedScheduling", "medium", "injected PreBind failure")

        await r.sync()
        assert_only("preempted", r.preempted(), {"low"})
        # Preemption nominates; the failed binding clears; the retry's binding cycle sets the
        # expected node again (KEP-5278, PreBind work ahead); the binding clears it.
        assert r.nnn_changes("medium") == ["", "node", "", "node", ""]
        failed = [
            v.pod
            for v in r.versions("medium")
            if (c := pod_scheduled(v.pod)) is not None
            and c.status == "False"
            and "injected PreBind failure" in c.message
        ]
        assert failed, "no PodScheduled=False with the PreBind failure"
        condition = pod_scheduled(failed[0])
        assert condition is not None and condition.reason == "SchedulerError", condition
        assert failed[0].status.nominated_node_name == "", "the binding failure kept NNN"


# ---------------------------------------------------------------- S-PRE-16


async def test_s_pre_16a_pdb_pods_reprieved_before_mid_priority(cluster: Cluster) -> None:
    """low-pod1, low-pod2 (PDB minAvailable 2 → disruptionsAllowed 0) and mid-pod3 on one node;
    the PDB pods are reprieved first, then mid-pod3 does not fit back: only it is preempted."""
    async with scenario(cluster, "s-pre-16") as r:
        s = r.s
        await s.nodes("node-1", cpu="500m", memory="500", pods="32")
        await s.client.create(
            make_pdb("pdb").namespace(s.ns).selector(foo="bar").min_available(2).obj()
        )
        for name in ("low-pod1", "low-pod2"):
            await s.run(
                s.pod(name, priority=LOW, cpu="100m", memory="100").label("foo", "bar"),
                node="node-1",
            )
        await s.run(s.pod("mid-pod3", priority=MEDIUM, cpu="100m", memory="100"), node="node-1")
        await wait_pdb(s, "pdb", healthy=2, allowed=0, seen_by=cluster.component("scheduler"))

        await s.create(s.pod("preemptor", priority=HIGH, cpu="300m", memory="200"))
        assert await s.wait_bound("preemptor", timeout=TIMEOUT) == s.node_name("node-1")

        await r.sync()
        assert_only("preempted", r.preempted(), {"mid-pod3"})
        assert_only("terminated", r.terminated(), {"mid-pod3"})


async def test_s_pre_16b_node_without_pdb_violation_preferred(cluster: Cluster) -> None:
    """node-1: low-pod1 (PDB minAvailable 2, one matching pod → disruptionsAllowed 0); node-2:
    mid-pod2. The node whose victim violates no PDB wins despite the higher priority."""
    async with scenario(cluster, "s-pre-16") as r:
        s = r.s
        await s.nodes("node-1", "node-2", cpu="500m", memory="500", pods="32")
        await s.client.create(
            make_pdb("pdb").namespace(s.ns).selector(foo="bar").min_available(2).obj()
        )
        await s.run(
            s.pod("low-pod1", priority=LOW, cpu="100m", memory="100").label("foo", "bar"),
            node="node-1",
        )
        await s.run(s.pod("mid-pod2", priority=MEDIUM, cpu="100m", memory="100"), node="node-2")
        await wait_pdb(s, "pdb", healthy=1, allowed=0, seen_by=cluster.component("scheduler"))

        await s.create(s.pod("preemptor", priority=HIGH, cpu="500m", memory="200"))
        assert await s.wait_bound("preemptor", timeout=TIMEOUT) == s.node_name("node-2")

        await r.sync()
        assert_only("preempted", r.preempted(), {"mid-pod2"})
        assert_only("terminated", r.terminated(), {"mid-pod2"})


async def test_s_pre_16c_node_without_violation_and_lower_victims_preferred(
    cluster: Cluster,
) -> None:
    """node-1: low-pod1 (foo1, pdb-1 minAvailable 2 → allowed 0) + mid-pod1; node-2: low-pod2
    + mid-pod2 (foo2); node-3: low-pod4, 5, 6 (foo2; pdb-2 minAvailable 2 over 5 pods →
    allowed 3). node-1 violates pdb-1; nodes 2 and 3 violate nothing and node-3's highest
    victim priority is lower: low-pod4, 5, 6 are preempted."""
    async with scenario(cluster, "s-pre-16") as r:
        s = r.s
        await s.nodes("node-1", "node-2", "node-3", cpu="500m", memory="500", pods="32")
        for name, label in (("pdb-1", "foo1"), ("pdb-2", "foo2")):
            await s.client.create(
                make_pdb(name).namespace(s.ns).selector({label: "bar"}).min_available(2).obj()
            )
        placement = [
            ("low-pod1", LOW, "node-1", "foo1"),
            ("mid-pod1", MEDIUM, "node-1", ""),
            ("low-pod2", LOW, "node-2", "foo2"),
            ("mid-pod2", MEDIUM, "node-2", "foo2"),
            ("low-pod4", LOW, "node-3", "foo2"),
            ("low-pod5", LOW, "node-3", "foo2"),
            ("low-pod6", LOW, "node-3", "foo2"),
        ]
        for name, priority, node, label in placement:
            pod = s.pod(name, priority=priority, cpu="100m", memory="100")
            if label:
                pod.label(label, "bar")
            await s.run(pod, node=node)
        await wait_pdb(s, "pdb-1", healthy=1, allowed=0, seen_by=cluster.component("scheduler"))
        await wait_pdb(s, "pdb-2", healthy=5, allowed=3, seen_by=cluster.component("scheduler"))

        await s.create(s.pod("preemptor", priority=HIGH, cpu="500m", memory="400"))
        assert await s.wait_bound("preemptor", timeout=TIMEOUT) == s.node_name("node-3")

        await r.sync()
        want = {"low-pod4", "low-pod5", "low-pod6"}
        assert_only("preempted", r.preempted(), want)
        assert_only("terminated", r.terminated(), want)


# ---------------------------------------------------------------- S-PRE-17


async def _graceful_setup(s: Scenario, scheduler: str) -> None:
    """n (cpu 4) holds V (prio 1, cpu 4, grace GRACE, shut down only at the end of the grace
    period); n2 (cpu 4) holds W (prio 2, cpu 4), a victim P could take instead, and `churn`
    (no requests, prio 1000) whose deletion retries P. P (prio 100, cpu 4) preempts V on n
    (lowest highest-priority victim)."""
    await s.nodes("n", "n2", cpu="4", memory="8Gi", pods="32")
    await s.run(s.pod("v", priority=1, cpu="4", shutdown="never").grace(GRACE), node="n")
    await s.run(s.pod("w", priority=2, cpu="4"), node="n2")
    await s.run(s.pod("churn", priority=1000), node="n2")
    await s.create(s.pod("p", priority=100, cpu="4").scheduler_name(scheduler))
    await s.wait_nominated("p", "n", timeout=TIMEOUT)
    await wait_terminating(s, "v")


@BOTH
async def test_s_pre_17_no_double_preemption_while_the_victim_terminates(
    cluster: Cluster, scheduler: str
) -> None:
    """V terminates for its whole grace period (8 s here, 60 s in the scenario). P, retried
    meanwhile (a bound pod's deletion), fails Filter on n (V still counts) and is not eligible
    to preempt ("terminating pod on the nominated node"): W is never touched, P keeps NNN=n,
    and binds to n once V is gone."""
    async with scenario(cluster, "s-pre-17") as r:
        s = r.s
        await _graceful_setup(s, scheduler)
        await r.delete("churn")
        await wait_event(s, "FailedScheduling", "p", NOT_ELIGIBLE_TERMINATING)
        assert await s.wait_bound("p", timeout=TIMEOUT) == s.node_name("n")

        await r.sync()
        # V stops counting for the scheduler when its phase turns terminal (its informer leaves
        # Succeeded/Failed pods out, as upstream's), just before the kubelet removes it.
        v_gone = next(
            v.seq
            for v in r.versions("v")
            if v.type == DELETED or v.pod.status.phase in ("Succeeded", "Failed")
        )
        not_eligible = [
            v
            for v in r.versions("p")
            if (c := pod_scheduled(v.pod)) is not None and NOT_ELIGIBLE_TERMINATING in c.message
        ]
        assert not_eligible, "P's status never said it was not eligible"
        assert not_eligible[0].seq < v_gone, "P was not retried while V terminated"
        p_bound = next(v.seq for v in r.versions("p") if v.pod.spec.node_name)
        assert v_gone < p_bound, "P was bound before V was gone"
        # Over V's whole termination: no other victim, and P nominated to n until bound.
        assert_only("preempted", r.preempted(), {"v"})
        assert_only("terminated", r.terminated(), {"v", "churn"})
        assert r.nnn_changes("p") == ["", "n", ""]
        assert_only("Preempted events", await r.preempted_events(), {"v"})
        w = await s.get("w")
        assert w.status.phase == "Running" and not w.metadata.HasField("deletion_timestamp")


@BOTH
async def test_s_pre_17_terminating_for_another_reason_does_not_block(
    cluster: Cluster, scheduler: str
) -> None:
    """n (cpu 4): V (prio 1, cpu 2) deleted by a user (graceful, no DisruptionTarget) and X
    (prio 1, cpu 2). P (prio 100, cpu 4), nominated to n beforehand, is eligible: it preempts
    again on n (X; V is a victim too but already terminating, so not deleted again)."""
    async with scenario(cluster, "s-pre-17") as r:
        s = r.s
        await s.nodes("n", cpu="4", memory="8Gi", pods="32")
        await s.run(s.pod("v", priority=1, cpu="2", shutdown="never").grace(GRACE), node="n")
        await s.run(s.pod("x", priority=1, cpu="2"), node="n")
        await r.delete("v")
        await wait_terminating(s, "v")

        await s.create_nominated(s.pod("p", priority=100, cpu="4").scheduler_name(scheduler), "n")
        await s.wait_gone("x", timeout=TIMEOUT)
        await r.force_delete("v")  # no need to wait for its grace period
        assert await s.wait_bound("p", timeout=TIMEOUT) == s.node_name("n")

        await r.sync()
        assert_only("preempted", r.preempted(), {"x"})
        assert_only("Preempted events", await r.preempted_events(), {"x"})
        assert r.nnn_changes("p") == ["", "n", ""]


@BOTH
async def test_s_pre_17_nominated_node_unresolvable_allows_preemption_elsewhere(
    cluster: Cluster, scheduler: str
) -> None:
    """While V terminates, n is tainted NoSchedule: n is UnschedulableAndUnresolvable for P,
    so P is eligible again; it preempts W on n2 and its NNN moves there."""
    async with scenario(cluster, "s-pre-17") as r:
        s = r.s
        await _graceful_setup(s, scheduler)
        await s.client.patch(
            types_pb2.Node,
            s.node_name("n"),
            {"spec": {"taints": [{"key": "kemu.io/blocked", "effect": "NoSchedule"}]}},
        )

        async def tainted() -> bool:
            node = await s.client.get(types_pb2.Node, s.node_name("n"))
            assert any(t.key == "kemu.io/blocked" for t in node.spec.taints), node.spec.taints
            return True

        await s.eventually(tainted, timeout=TIMEOUT)
        await r.delete("churn")
        # (W ends at once: the nomination to n2 is in the recorded history below)
        assert await s.wait_bound("p", timeout=TIMEOUT) == s.node_name("n2")
        v = await s.get("v")
        assert v.metadata.HasField("deletion_timestamp"), "V should still be terminating"

        await r.sync()
        assert_only("preempted", r.preempted(), {"v", "w"})
        assert r.nnn_changes("p") == ["", "n", "n2", ""]


# ---------------------------------------------------------------- S-PRE-18


@BOTH
async def test_s_pre_18_nominated_pods_count_during_preemption(
    cluster: Cluster, scheduler: str
) -> None:
    """Node cpu 4 runs L (prio 1, cpu 4); H1 (prio 200, cpu 2) is held by a scheduling gate
    with NNN=node (a reservation). H2 (prio 100, cpu 3) would fit after preempting L without
    H1, not with it: preemption is not helpful, L stays. H2 (prio 100, cpu 2): removing L
    makes room for H1 and H2 → L is the victim, H2 is nominated, H1 keeps its NNN; H2 binds
    with H1 counted, and H1 fits next to it once released."""
    async with scenario(cluster, "s-pre-18") as r:
        s = r.s
        await s.nodes("node", cpu="4", memory="8Gi", pods="32")
        await s.run(s.pod("l", priority=1, cpu="4").scheduler_name(scheduler), node="node")
        await s.create_nominated(
            s.pod("h1", priority=200, cpu="2").scheduler_name(scheduler), "node", release=False
        )

        await s.create(s.pod("h2-big", priority=100, cpu="3").scheduler_name(scheduler))
        # The dry run removed L and counted H1: still Insufficient cpu on the node (upstream's
        # SelectVictimsOnNode status). "Preemption is not helpful" is said only of the nodes
        # the dry run left out, i.e. other scenarios' nodes when the module runs whole.
        event = await wait_event(s, "FailedScheduling", "h2-big", "preemption: 0/")
        assert "Insufficient cpu" in event.message.split("preemption: ", 1)[1], event.message
        await r.force_delete("h2-big")

        await s.create(s.pod("h2", priority=100, cpu="2").scheduler_name(scheduler))
        await s.wait_nominated("h2", "node", timeout=TIMEOUT)
        await s.wait_gone("l", timeout=TIMEOUT)
        assert await s.wait_bound("h2", timeout=TIMEOUT) == s.node_name("node")
        await s.release("h1")
        assert await s.wait_bound("h1", timeout=TIMEOUT) == s.node_name("node")

        await r.sync()
        assert_only("preempted", r.preempted(), {"l"})
        # H1 kept its nomination until its own binding cleared it.
        assert r.nnn_changes("h1", bound=False) == ["", "node"]
        assert r.nnn_changes("h2-big") == [""]
        assert r.nnn_changes("h2") == ["", "node", ""]


@BOTH
async def test_s_pre_18_lower_priority_nomination_cleared(cluster: Cluster, scheduler: str) -> None:
    """As S-PRE-18 with H1 at prio 50: H2 (prio 100) ignores H1's reservation, preempts L, and
    clears H1's NNN (a strictly lower-priority pod nominated to the chosen node)."""
    async with scenario(cluster, "s-pre-18") as r:
        s = r.s
        await s.nodes("node", cpu="4", memory="8Gi", pods="32")
        await s.run(s.pod("l", priority=1, cpu="4").scheduler_name(scheduler), node="node")
        await s.create_nominated(
            s.pod("h1", priority=50, cpu="2").scheduler_name(scheduler), "node", release=False
        )
        await s.create(s.pod("h2", priority=100, cpu="2").scheduler_name(scheduler))
        # (H2's nomination lasts while L's 200 ms shutdown does, a moment a poll can miss: the
        # recorded history below holds it; H1's cleared nomination stays while H1 is held.)
        await s.wait_nominated("h1", None, timeout=TIMEOUT)
        assert await s.wait_bound("h2", timeout=TIMEOUT) == s.node_name("node")
        await s.release("h1")
        assert await s.wait_bound("h1", timeout=TIMEOUT) == s.node_name("node")

        await r.sync()
        assert_only("preempted", r.preempted(), {"l"})
        # H2's preemption cleared H1's nomination before H1 was released.
        assert r.nnn_changes("h1", bound=False) == ["", "node", ""]
        assert r.nnn_changes("h2") == ["", "node", ""]


@BOTH
async def test_s_pre_19_read_write_once_pod(cluster: Cluster, scheduler: str) -> None:
    """TestReadWriteOncePodPreemption: a claim with ReadWriteOncePod, bound to its volume, is
    used by V (prio 100) running on node1; node2 is empty. P (prio 300) uses the same claim:
    VolumeRestrictions rejects it on every node while V holds the claim, and preemption's dry
    run on node1 removes V (RemovePod) → V is the only victim, P is nominated to node1 and
    binds there once V is gone (the claim is free on any node then, and node1 keeps P's
    nomination)."""
    async with scenario(cluster, "s-pre-19") as r:
        s = r.s
        await s.nodes("node1", "node2", cpu="4", memory="8Gi", pods="32")
        api = s.client
        sc = storage.storage_class(f"{s.ns}-rwop", wait_for_first_consumer=False)
        await api.create(sc)
        await api.create(storage.volume(f"{s.ns}-pv", sc.metadata.name, access_modes=[RWOP]))
        await api.create(storage.claim(s.ns, "rwop", sc.metadata.name, access_modes=[RWOP]))
        # The cluster's PersistentVolume controller binds the Immediate claim to the volume.
        await storage.wait_claim_bound(api, s.ns, "rwop", timeout=TIMEOUT)

        def with_claim(b: PodBuilder) -> types_pb2.Pod:
            pod = b.scheduler_name(scheduler).obj()
            pod.spec.volumes.add(name="data").persistent_volume_claim.claim_name = "rwop"
            return pod

        await s.run(with_claim(s.pod("v", priority=LOW, cpu="100m")), node="node1")
        await s.create(with_claim(s.pod("p", priority=HIGH, cpu="100m")))
        # (V ends at once: the nomination is in the recorded history below)
        await s.wait_gone("v", timeout=TIMEOUT)
        assert await s.wait_bound("p", timeout=TIMEOUT) == s.node_name("node1")
        await wait_event(s, "FailedScheduling", "p", RWOP_CONFLICT)

        await r.sync()
        assert_only("preempted", r.preempted(), {"v"})
        assert r.nnn_changes("p") == ["", "node1", ""]
