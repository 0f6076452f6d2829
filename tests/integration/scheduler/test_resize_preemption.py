"""KEP-5836 scenarios of upstream's test/integration/scheduler/preemption/deferred_resize_preemption_test.go (S-RPE-1 … S-RPE-10), scheduler preemption for Deferred
in-place resizes, in upstream's integration-test form
(test/integration/scheduler/preemption/deferred_resize_preemption_test.go): no kubelet. Nodes
are bare Node objects; the test plays the kubelet and writes the pods' statuses itself. A
"deferred" pod is created bound to its node, then given phase Running, PodScheduled=True,
PodResizePending=True reason Deferred and a container status whose allocatedResources and
resources are the allocated size while its spec requests the desired one. Other pods on the
node are created bound with no status at all (upstream's runPausePod without a kubelet: they
count at their spec), so a victim stays Terminating once deleted: "evicted" is
DisruptionTarget=True/PreemptionByScheduler and a deletionTimestamp.

One apiserver with InPlacePodVerticalScalingSchedulerPreemption on (or it would drop the nodes'
spec.podPreemptionPolicy) and two scheduler processes: "scheduler" with the gate on (profile
default-scheduler, and kubelet-like-scheduler: the same with NodeResourcesFit's
kemuKubeletLikeResizeAccounting, which is NOT upstream) and "scheduler-gate-off" with it off
(profile gate-off-scheduler); a pod picks one by its schedulerName. Each scenario runs in its own namespace on its own nodes,
records its pods and nodes from the start, and ends with the invariant checks, (9)
included (kemu.testing.invariants).

What the scheduler does with a deferred pod is read from its /metrics:
- "in the queue": `scheduler_pending_pods{queue}` (active, backoff, unschedulable, gated) of
  the process; "parked" is `{queue="unschedulable"}` plus `{queue="gated"}` (upstream's
  UnschedulablePods(), which these tests' upstream forms check, holds pods gated at
  PreEnqueue too: a preemptor whose asynchronous preemption is still running, which
  NodeResourcesFit's UpdatePodScaleUp hint can requeue into that state, as in S-RPE-10). The
  gauge is per process, so each
  scenario deletes its pods at the end and starts only once the queues are empty again: then
  what the gauge counts is the scenario's deferred pods.
- "attempts" (upstream's QueuedPodInfo.Attempts): `scheduler_schedule_attempts_total` of the
  pod's profile with result unschedulable or error, the results of a deferred pod's cycles
  (it never binds). The kemu scheduler counts a failed attempt before it puts the pod back in
  the unschedulable pool, so a pod seen parked has its attempt counted.
- "the scheduler has seen X" (before an observation window for something that must not
  happen): `caught_up`, a canary. The scenario's canary node gets a fresh label value and a
  canary pod selecting that value is created; once the scheduler has bound it, its node and
  pod informers (each in resourceVersion order) have delivered every event before those two
  writes, and their handlers (enqueueing, queueing hints) have run. Canaries have a profile
  of their own in the same process (same informers and queue): one that is tried before the
  scheduler sees the new label fails an attempt, which must not count as the deferred pod's.
Events on the canary node are on another node than the deferred pods', and it is too small
for any of them (a hint that still looks at resources skips it).

S-RPE-1..5, 9 and the enqueueing of S-RPE-8 run with the gate on and off; the rest (hints,
start-up, dequeueing, S-RPE-10) concern a pod that the gate-off scheduler never queues. S-RPE-9
runs on the kubelet-like profile too (beyond upstream: one victim instead of three).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Final

import anyio
import pytest
from prometheus_client.parser import text_string_to_metric_families

from kemu.api.v1 import types_pb2
from kemu.client.interface import DELETED
from kemu.component.featuregate import (
    IN_PLACE_POD_VERTICAL_SCALING,
    IN_PLACE_POD_VERTICAL_SCALING_SCHEDULER_PREEMPTION,
)
from kemu.machinery.errors import ApiError, NotFound
from kemu.machinery.storage import ANN_BIND_COMPLETED, READ_WRITE_ONCE_POD
from kemu.testing import Cluster, storage
from kemu.testing.builders import make_node
from kemu.testing.invariants import (
    NodeHistory,
    PodHistory,
    PodVersion,
    assert_invariants,
    record_nodes,
    record_pods,
)
from kemu.testing.scenarios import SCENARIO_LABEL, Scenario, disruption_target

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

GATE_ON_SCHEDULER: Final = "default-scheduler"
GATE_OFF_SCHEDULER: Final = "gate-off-scheduler"
LATE_SCHEDULER: Final = "late-scheduler"
# Not upstream: a profile of the gate-on process with kemuKubeletLikeResizeAccounting.
KUBELET_LIKE_SCHEDULER: Final = "kubelet-like-scheduler"
PROCESS: Final = {
    GATE_ON_SCHEDULER: "scheduler",
    GATE_OFF_SCHEDULER: "scheduler-gate-off",
    KUBELET_LIKE_SCHEDULER: "scheduler",
}
GATES_ON: Final = {
    IN_PLACE_POD_VERTICAL_SCALING: True,
    IN_PLACE_POD_VERTICAL_SCALING_SCHEDULER_PREEMPTION: True,
}
GATES_OFF: Final = {
    IN_PLACE_POD_VERTICAL_SCALING: True,
    IN_PLACE_POD_VERTICAL_SCALING_SCHEDULER_PREEMPTION: False,
}
GATE: Final = pytest.mark.parametrize("gate_on", [True, False], ids=["gate-on", "gate-off"])


def config(profile: str, *, kubelet_like: str = "") -> str:
    """A profile for the scenario's pods and one for its canaries (see `Rpe.caught_up`), so
    that a canary's failed attempts are not counted as the deferred pods'; `kubelet_like`:
    two more, the first with NodeResourcesFit's kemuKubeletLikeResizeAccounting."""
    more = ""
    if kubelet_like:
        more = f"""\
- schedulerName: {kubelet_like}
  pluginConfig:
  - name: NodeResourcesFit
    args: {{kemuKubeletLikeResizeAccounting: true}}
- schedulerName: {canary_profile(kubelet_like)}
"""
    return f"""\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: {profile}
- schedulerName: {canary_profile(profile)}
{more}"""


def canary_profile(profile: str) -> str:
    return f"canary-{profile}"


# Upstream's LowPriority / HighPriority (test/integration/scheduler/preemption).
LOW, MEDIUM, HIGH = 100, 200, 300
TIMEOUT: Final = 30.0
# How long something that must not happen is watched for, once the scheduler has provably
# seen what it would react to (upstream sleeps 300-500 ms).
OBSERVATION: Final = 1.5
CONTAINER: Final = "c"  # the builders' container
POLICY_OWNER: Final = "test-operator"
SYNC_LABEL: Final = "kemu.io/sync"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root = tmp_path_factory.mktemp("resize-preemption")
    for profile in (GATE_OFF_SCHEDULER, LATE_SCHEDULER):
        (root / f"{profile}.yaml").write_text(config(profile))
    gate_on = config(GATE_ON_SCHEDULER, kubelet_like=KUBELET_LIKE_SCHEDULER)
    (root / f"{GATE_ON_SCHEDULER}.yaml").write_text(gate_on)
    with Cluster(root) as c:
        c.start_etcd()
        c.start_apiserver(feature_gates={IN_PLACE_POD_VERTICAL_SCALING_SCHEDULER_PREEMPTION: True})
        c.start_scheduler(
            name=PROCESS[GATE_ON_SCHEDULER],
            config=str(root / f"{GATE_ON_SCHEDULER}.yaml"),
            feature_gates=GATES_ON,
            extra_args=["--seed", "1"],
        )
        c.start_scheduler(
            name=PROCESS[GATE_OFF_SCHEDULER],
            config=str(root / f"{GATE_OFF_SCHEDULER}.yaml"),
            feature_gates=GATES_OFF,
            extra_args=["--seed", "1"],
        )
        yield c


# ---------------------------------------------------------------- metrics


def samples(cluster: Cluster, process: str, name: str) -> list[tuple[dict[str, str], float]]:
    out = []
    for family in text_string_to_metric_families(cluster.component(process).scrape()):
        for smp in family.samples:
            if smp.name == name:
                out.append((dict(smp.labels), float(smp.value)))
    return out


async def queued(cluster: Cluster, process: str) -> dict[str, int]:
    """scheduler_pending_pods of the process, by queue."""
    found = await anyio.to_thread.run_sync(samples, cluster, process, "scheduler_pending_pods")
    return {labels["queue"]: int(value) for labels, value in found}


async def failed_attempts(cluster: Cluster, profile: str, process: str = "") -> int:
    """The profile's scheduling attempts that did not bind (unschedulable or error)."""
    found = await anyio.to_thread.run_sync(
        samples, cluster, process or PROCESS[profile], "scheduler_schedule_attempts_total"
    )
    return int(
        sum(
            value
            for labels, value in found
            if labels.get("profile") == profile and labels.get("result") != "scheduled"
        )
    )


# ---------------------------------------------------------------- the scenario


class Rpe:
    """A Scenario with the history of its pods and nodes, a canary node, and the writes the
    test makes as the kubelet would."""

    def __init__(
        self,
        cluster: Cluster,
        s: Scenario,
        history: PodHistory,
        nodes: NodeHistory,
        scheduler: str,
        process: str,
    ) -> None:
        self.cluster = cluster
        self.s = s
        self.history = history
        self.node_history = nodes
        self.scheduler = scheduler  # the profile (schedulerName) of the scenario's pods
        self.process = process
        self.externally_deleted: set[str] = set()
        self._syncs = 0

    @property
    def gate_on(self) -> bool:
        return self.scheduler != GATE_OFF_SCHEDULER

    # ------------------------------------------------------------ objects

    async def node(
        self, name: str, *, cpu: str, memory: str = "", disabled: bool = False, pods: str = "32"
    ) -> str:
        """A bare node (capacity = allocatable); `disabled`: its
        spec.podPreemptionPolicy.disableResizePreemption is [test-operator]."""
        full = self.s.node_name(name)
        capacity = {"cpu": cpu, "pods": pods, **({"memory": memory} if memory else {})}
        b = make_node(full).capacity(capacity).labels({SCENARIO_LABEL: self.s.ns})
        if disabled:
            b.disable_resize_preemption(POLICY_OWNER)
        created = await self.s.client.create(b.obj())
        policy = created.spec.pod_preemption_policy.disable_resize_preemption
        assert list(policy) == ([POLICY_OWNER] if disabled else []), (
            f"{full}: the apiserver kept disableResizePreemption {list(policy)}"
        )
        return full

    async def bound(
        self,
        name: str,
        node: str,
        *,
        priority: int,
        cpu: str,
        memory: str = "",
        never: bool = False,
        claim: str = "",
    ) -> types_pb2.Pod:
        """A pod created bound to the scenario node `node`, with no status (not running);
        `claim`: a PersistentVolumeClaim it mounts."""
        pod = (
            self.s.pod(name, priority=priority, never=never, cpu=cpu, memory=memory)
            .scheduler_name(self.scheduler)
            .node(self.s.node_name(node))
            .obj()
        )
        if claim:
            pod.spec.volumes.add(name="data").persistent_volume_claim.claim_name = claim
        return await self.s.create(pod)

    async def deferred(
        self,
        name: str,
        node: str,
        *,
        priority: int,
        cpu: str,
        allocated_cpu: str,
        memory: str = "",
        allocated_memory: str = "",
        never: bool = False,
        started: int | None = None,
        claim: str = "",
    ) -> types_pb2.Pod:
        """A running pod whose resize to (cpu, memory) the kubelet deferred: created bound,
        then its status written (allocated and actual = the allocated sizes; `started`: its
        status.startTime in seconds since the epoch). Returns the pod as the test's last write
        left it."""
        pod = await self.bound(
            name, node, priority=priority, cpu=cpu, memory=memory, never=never, claim=claim
        )
        allocated = {
            "cpu": allocated_cpu,
            **({"memory": allocated_memory} if allocated_memory else {}),
        }
        return await self.write_status(pod, allocated=allocated, deferred=True, started=started)

    async def running(
        self, name: str, node: str, *, priority: int, cpu: str, memory: str = ""
    ) -> types_pb2.Pod:
        """A pod created bound and reported running at its requested size, no resize pending
        (one whose resize the kubelet can then actuate)."""
        pod = await self.bound(name, node, priority=priority, cpu=cpu, memory=memory)
        allocated = {"cpu": cpu, **({"memory": memory} if memory else {})}
        return await self.write_status(pod, allocated=allocated, deferred=False)

    async def write_status(
        self,
        pod: types_pb2.Pod,
        *,
        allocated: Mapping[str, str],
        deferred: bool,
        started: int | None = None,
    ) -> types_pb2.Pod:
        """What a kubelet writes (UpdateStatus, resourceVersion CAS): Running, PodScheduled
        (kept), PodResizePending=True/Deferred iff `deferred`, the container's allocated and
        actual resources, startTime when `started` is given; other conditions are kept."""
        current = await self.s.get(pod.metadata.name)
        status = current.status
        status.phase = "Running"
        if started is not None:
            status.start_time.FromSeconds(started)
        kept = [c for c in status.conditions if c.type not in ("PodScheduled", "PodResizePending")]
        del status.conditions[:]
        status.conditions.add(type="PodScheduled", status="True")
        status.conditions.extend(kept)
        if deferred:
            status.conditions.add(type="PodResizePending", status="True", reason="Deferred")
        del status.container_statuses[:]
        cs = status.container_statuses.add(name=CONTAINER, ready=True, started=True)
        cs.state.running.SetInParent()
        cs.allocated_resources.update(allocated)
        cs.resources.requests.update(allocated)
        return await self.s.client.update_status(current)

    async def resize(self, name: str, **requests: str) -> types_pb2.Pod:
        """pods/resize: the container's requests become `requests` (the desired size)."""
        pod = await self.s.get(name)
        pod.spec.containers[0].resources.requests.update(requests)
        return await self.s.client.resize(pod)

    async def force_delete(self, *names: str) -> None:
        for name in names:
            self.externally_deleted.add(name)
            await self.s.client.delete(types_pb2.Pod, name, self.s.ns, grace_period_seconds=0)
        for name in names:
            await self.s.wait_gone(name, timeout=TIMEOUT)

    async def update_node(self, name: str, *, disabled: bool) -> None:
        node = await self.s.client.get(types_pb2.Node, self.s.node_name(name))
        node.spec.ClearField("pod_preemption_policy")
        if disabled:
            node.spec.pod_preemption_policy.disable_resize_preemption.append(POLICY_OWNER)
        await self.s.client.update(node)

    # ------------------------------------------------------------ the scheduler

    async def queued(self) -> dict[str, int]:
        return await queued(self.cluster, self.process)

    async def attempts(self) -> int:
        return await failed_attempts(self.cluster, self.scheduler, self.process)

    async def wait_parked(self, count: int = 1) -> int:
        """Until `count` pods are in the unschedulable pool (gated or not) and no other
        queue; the failed attempts then."""

        async def parked() -> bool:
            q = await self.queued()
            assert _parked(q) == count and _others(q) == 0, (
                f"{self.process}: queues {q}, want {count} unschedulable"
            )
            return True

        await self.s.eventually(parked, timeout=TIMEOUT)
        return await self.attempts()

    async def wait_queue_empty(self) -> None:
        async def empty() -> bool:
            q = await self.queued()
            assert sum(q.values()) == 0, f"{self.process}: queues {q}"
            return True

        await self.s.eventually(empty, timeout=TIMEOUT)

    async def wait_retried(self, since: int) -> None:
        async def retried() -> bool:
            n = await self.attempts()
            assert n > since, f"{self.scheduler}: {n} failed attempts, no retry since {since}"
            return True

        await self.s.eventually(retried, timeout=TIMEOUT)

    async def caught_up(self) -> None:
        """Until the scheduler has seen every write made so far (see the module docstring)."""
        self._syncs += 1
        value = str(self._syncs)
        canary = self.s.node_name("canary")
        await self.s.client.patch(
            types_pb2.Node, canary, {"metadata": {"labels": {SYNC_LABEL: value}}}
        )
        name = f"canary-{value}"
        pod = (
            self.s.pod(name, shutdown="never")
            .scheduler_name(canary_profile(self.scheduler))
            .node_selector({SYNC_LABEL: value})
        )
        await self.s.create(pod)
        assert await self.s.wait_bound(name, timeout=TIMEOUT) == canary

    async def assert_not_retried(self, since: int) -> None:
        """Once the scheduler has seen the trigger, the pod is still parked, and it is not
        attempted again for an observation window."""
        await self.caught_up()

        async def still_parked() -> None:
            q = await self.queued()
            assert _parked(q) == 1 and _others(q) == 0, f"queues {q}"
            n = await self.attempts()
            assert n == since, f"{self.scheduler}: retried ({since} -> {n} failed attempts)"

        await self.s.holds(still_parked, seconds=OBSERVATION)

    # ------------------------------------------------------------ the history

    async def sync(self) -> None:
        await self.history.sync(self.s.client, timeout=TIMEOUT)

    def versions(self, name: str) -> list[PodVersion]:
        return [v for uid in self.history.uids_of(name) for v in self.history.versions[uid]]

    def evicted(self) -> set[str]:
        """Pods that got DisruptionTarget=True/PreemptionByScheduler and a deletionTimestamp
        (they stay Terminating: no kubelet), or were deleted after getting the condition."""
        out = set()
        for versions in self.history.versions.values():
            marked = [v for v in versions if _preempted_by_scheduler(v.pod)]
            if any(
                v.type == DELETED or v.pod.metadata.HasField("deletion_timestamp") for v in marked
            ):
                out.add(versions[0].pod.metadata.name)
        return out

    def touched(self) -> set[str]:
        """Pods that ever got a DisruptionTarget condition or a deletionTimestamp."""
        return {
            versions[0].pod.metadata.name
            for versions in self.history.versions.values()
            if any(
                disruption_target(v.pod) is not None
                or v.pod.metadata.HasField("deletion_timestamp")
                for v in versions
            )
        }

    async def preempted_events(self) -> set[str]:
        return {e.involved_object.name for e in await self.s.events("Preempted")}

    def assert_stays_assigned(self, name: str) -> None:
        """KEP-5836's failure handling: never nominated, PodScheduled never lost."""
        seen = self.versions(name)
        assert seen, f"{name} not recorded"
        nominated = [
            v.pod.status.nominated_node_name for v in seen if v.pod.status.nominated_node_name
        ]
        assert not nominated, f"{name} was nominated: {nominated}"
        lost = [
            v.pod.metadata.resource_version
            for v in seen
            if v.type != DELETED
            and _deferred(v.pod)
            and not any(
                c.type == "PodScheduled" and c.status == "True" for c in v.pod.status.conditions
            )
        ]
        assert not lost, f"{name} lost PodScheduled=True at resourceVersions {lost}"

    def assert_not_written_after(self, pod: types_pb2.Pod) -> None:
        """Nothing changed the pod after the test's write that returned `pod`."""
        rv = int(pod.metadata.resource_version)
        later = [
            (v.type, v.pod.metadata.resource_version)
            for v in self.versions(pod.metadata.name)
            if v.resource_version is not None and v.resource_version > rv
        ]
        assert not later, f"{pod.metadata.name} written after the test's last write: {later}"


def _parked(q: Mapping[str, int]) -> int:
    """Pods in the unschedulable pool, gated ones included (see the module docstring)."""
    return q.get("unschedulable", 0) + q.get("gated", 0)


def _others(q: Mapping[str, int]) -> int:
    return sum(n for queue, n in q.items() if queue not in ("unschedulable", "gated"))


def _deferred(pod: types_pb2.Pod) -> bool:
    return any(
        c.type == "PodResizePending" and c.status == "True" and c.reason == "Deferred"
        for c in pod.status.conditions
    )


def _preempted_by_scheduler(pod: types_pb2.Pod) -> bool:
    c = disruption_target(pod)
    return c is not None and c.status == "True" and c.reason == "PreemptionByScheduler"


@asynccontextmanager
async def scenario(
    cluster: Cluster, prefix: str, *, gate_on: bool = True, scheduler: str = "", process: str = ""
) -> AsyncIterator[Rpe]:
    """A scenario whose pods and nodes are recorded from the start, with a canary node; the
    invariants are checked once the block has succeeded. It starts once the scheduler's
    queues are empty and deletes its pods (grace 0) and nodes at the end."""
    profile = scheduler or (GATE_ON_SCHEDULER if gate_on else GATE_OFF_SCHEDULER)
    proc = process or PROCESS[profile]
    async with Scenario.open(cluster, prefix) as s:
        try:
            async with (
                record_pods(s.client, s.ns) as history,
                record_nodes(s.client, f"{SCENARIO_LABEL}={s.ns}") as nodes,
            ):
                r = Rpe(cluster, s, history, nodes, profile, proc)
                if proc in cluster.processes and cluster.processes[proc].running:
                    await r.wait_queue_empty()
                await r.node("canary", cpu="10m", memory="10", pods="100")
                yield r
                await assert_invariants(
                    s.client,
                    history,
                    s.ns,
                    clearing_gate_on=True,
                    resize_preemption_gate_on=r.gate_on,
                    nodes=nodes,
                    externally_deleted=r.externally_deleted,
                    sync_timeout=TIMEOUT,
                )
        finally:
            with anyio.move_on_after(10, shield=True):
                await delete_all(s)


async def delete_all(s: Scenario) -> None:
    """Best effort: a failure here must not hide the test's own outcome."""
    with contextlib.suppress(ApiError):
        for pod in (await s.pods()).values():
            with contextlib.suppress(NotFound):
                await s.client.delete(
                    types_pb2.Pod, pod.metadata.name, s.ns, grace_period_seconds=0
                )
        nodes = await s.client.list(types_pb2.Node, label_selector=f"{SCENARIO_LABEL}={s.ns}")
        for node in nodes.items:
            with contextlib.suppress(NotFound):
                await s.client.delete(types_pb2.Node, node.metadata.name)


def assert_only(what: str, got: set[str], want: set[str]) -> None:
    assert got == want, f"{what}: {sorted(got)}, want {sorted(want)}"


# ---------------------------------------------------------------- S-RPE-1 … 5


async def preemptor_300m(r: Rpe, *, never: bool = False) -> types_pb2.Pod:
    """Upstream's preemptor: high, spec 300m/100, allocated and actual 100m/100, Deferred."""
    return await r.deferred(
        "preemptor-pod",
        "node1",
        priority=HIGH,
        cpu="300m",
        memory="100",
        allocated_cpu="100m",
        allocated_memory="100",
        never=never,
    )


async def expect_evictions(r: Rpe, preemptor: types_pb2.Pod, victims: set[str]) -> None:
    """Gate on: the victims are evicted, the preemptor stays queued (parked in the
    unschedulable pool), un-nominated and scheduled. Gate off: nothing happens to anybody
    once the scheduler has seen the Deferred pod: no eviction, no write to the preemptor,
    nothing queued or attempted."""
    name = preemptor.metadata.name
    if r.gate_on and victims:

        async def evicted() -> bool:
            await r.sync()
            assert_only("evicted", r.evicted(), victims)
            return True

        await r.s.eventually(evicted, timeout=TIMEOUT)
        await r.wait_parked()
    elif r.gate_on:
        # Decided once it has been attempted and parked.
        await r.wait_parked()
        await r.caught_up()

        async def nothing_evicted() -> None:
            for pod in (await r.s.pods()).values():
                assert not pod.metadata.HasField("deletion_timestamp"), (
                    f"{pod.metadata.name} is terminating"
                )
            q = await r.queued()
            assert _parked(q) == 1, f"queues {q}"

        await r.s.holds(nothing_evicted, seconds=OBSERVATION)
    else:
        before = await r.attempts()
        await r.caught_up()

        async def nothing_happens() -> None:
            assert sum((await r.queued()).values()) == 0, "the gate-off scheduler queued a pod"
            assert await r.attempts() == before
            p = await r.s.get(name)
            assert p.metadata.resource_version == preemptor.metadata.resource_version, (
                f"{name} was written"
            )
            for pod in (await r.s.pods()).values():
                assert not pod.metadata.HasField("deletion_timestamp"), (
                    f"{pod.metadata.name} is terminating"
                )

        await r.s.holds(nothing_happens, seconds=OBSERVATION)
    await r.sync()
    want = victims if r.gate_on else set()
    assert_only("evicted", r.evicted(), want)
    assert_only("touched", r.touched(), want)
    assert_only("Preempted events", await r.preempted_events(), want)
    r.assert_stays_assigned(name)
    if not r.gate_on:
        r.assert_not_written_after(preemptor)


@GATE
async def test_s_rpe_1_victim_evicted_for_a_deferred_resize(
    cluster: Cluster, gate_on: bool
) -> None:
    """Node 300m/300; victim-1 (low, 200m/100); the high preemptor's resize 100m → 300m is
    Deferred. The scheduler counts 200 + 300 > 300 (resolvable), and removing victim-1 makes
    300 ≤ 300: victim-1 is evicted; the preemptor keeps NNN "" and PodScheduled=True."""
    async with scenario(cluster, "s-rpe-1", gate_on=gate_on) as r:
        await r.node("node1", cpu="300m", memory="300")
        await r.bound("victim-1", "node1", priority=LOW, cpu="200m", memory="100")
        preemptor = await preemptor_300m(r)
        await expect_evictions(r, preemptor, {"victim-1"})


@GATE
async def test_s_rpe_2_several_victims_evicted(cluster: Cluster, gate_on: bool) -> None:
    """victim-1 and victim-2 (low, 100m/50 each): the preemptor's 300m alone fills the node,
    both go."""
    async with scenario(cluster, "s-rpe-2", gate_on=gate_on) as r:
        await r.node("node1", cpu="300m", memory="300")
        for name in ("victim-1", "victim-2"):
            await r.bound(name, "node1", priority=LOW, cpu="100m", memory="50")
        preemptor = await preemptor_300m(r)
        await expect_evictions(r, preemptor, {"victim-1", "victim-2"})


@GATE
async def test_s_rpe_3_preemption_policy_never_evicts_nothing(
    cluster: Cluster, gate_on: bool
) -> None:
    """As S-RPE-1 with the preemptor's preemptionPolicy Never: it stays queued, nothing goes."""
    async with scenario(cluster, "s-rpe-3", gate_on=gate_on) as r:
        await r.node("node1", cpu="300m", memory="300")
        await r.bound("victim-1", "node1", priority=LOW, cpu="200m", memory="100")
        preemptor = await preemptor_300m(r, never=True)
        assert preemptor.spec.preemption_policy == "Never"
        await expect_evictions(r, preemptor, set())


@GATE
async def test_s_rpe_4_resize_that_fits_is_parked(cluster: Cluster, gate_on: bool) -> None:
    """An empty node: the resize fits, the pod is rejected at Permit ("waiting for Kubelet
    actuation") and parked; nothing is evicted, nothing is written to the pod."""
    async with scenario(cluster, "s-rpe-4", gate_on=gate_on) as r:
        await r.node("node1", cpu="300m", memory="300")
        preemptor = await preemptor_300m(r)
        await expect_evictions(r, preemptor, set())
        if gate_on:
            r.assert_not_written_after(preemptor)


@GATE
async def test_s_rpe_5_node_policy_disables_resize_preemption(
    cluster: Cluster, gate_on: bool
) -> None:
    """As S-RPE-1 on a node with disableResizePreemption [test-operator]: the pod stays queued,
    victim-1 stays."""
    async with scenario(cluster, "s-rpe-5", gate_on=gate_on) as r:
        await r.node("node1", cpu="300m", memory="300", disabled=True)
        await r.bound("victim-1", "node1", priority=LOW, cpu="200m", memory="100")
        preemptor = await preemptor_300m(r)
        await expect_evictions(r, preemptor, set())


# ---------------------------------------------------------------- S-RPE-6, 7


@dataclass(frozen=True)
class HintSizes:
    """The cpu of node1, other-pod and the deferred pod's desired size in hint_setup
    (upstream's setUpPreemptionTest parameters; its defaults)."""

    node1: str = "200m"
    other: str = "200m"
    deferred: str = "100m"


async def hint_setup(
    r: Rpe, *, node1_disabled: bool = False, sizes: HintSizes = HintSizes()
) -> types_pb2.Pod:
    """Upstream's setUpPreemptionTest: node1 (cpu 200m) with other-pod (high, 200m) and the
    deferred pod (low, spec 100m, allocated and actual 50m): parked, nothing to preempt.
    node2 cpu 500m with irrelevant-pod (high, 200m)."""
    await r.node("node1", cpu=sizes.node1, disabled=node1_disabled)
    await r.node("node2", cpu="500m")
    await r.bound("other-pod", "node1", priority=HIGH, cpu=sizes.other)
    await r.bound("irrelevant-pod", "node2", priority=HIGH, cpu="200m")
    return await r.deferred(
        "deferred-pod", "node1", priority=LOW, cpu=sizes.deferred, allocated_cpu="50m"
    )


async def label_other_pod(r: Rpe) -> None:
    pod = await r.s.get("other-pod")
    pod.metadata.labels["updated-by-test"] = "true"
    await r.s.client.update(pod)


async def grow_node1(r: Rpe) -> None:
    node = await r.s.client.get(types_pb2.Node, r.s.node_name("node1"))
    node.status.capacity["cpu"] = "1000m"
    node.status.allocatable["cpu"] = "1000m"
    await r.s.client.update_status(node)


Trigger = Callable[[Rpe], Awaitable[object]]
# The scale-up rows of upstream's TestDeferredResizeQueueingHints as merged by
# kubernetes#140000 (NodeResourcesFit's UpdatePodScaleUp hints): node1 300m, the deferred pod
# desires 200m (parked: 200 + 200 > 300), or node1 500m and 400m for its own scale-up.
SCALE_UP: Final = HintSizes(node1="300m", deferred="200m")
OWN_SCALE_UP: Final = HintSizes(node1="500m", deferred="400m")
HINT_ROWS: Final[dict[str, tuple[Trigger, bool, HintSizes]]] = {
    # row id: (trigger, retried?, sizes)
    "irrelevant-pod-scaled-down": (
        lambda r: r.resize("irrelevant-pod", cpu="100m"),
        False,
        HintSizes(),
    ),
    "other-pod-scaled-down": (lambda r: r.resize("other-pod", cpu="100m"), True, HintSizes()),
    "irrelevant-pod-deleted": (lambda r: r.force_delete("irrelevant-pod"), False, HintSizes()),
    "other-pod-deleted": (lambda r: r.force_delete("other-pod"), True, HintSizes()),
    "irrelevant-pod-scaled-up": (
        lambda r: r.resize("irrelevant-pod", cpu="300m"),
        False,
        SCALE_UP,
    ),
    "other-pod-scaled-up": (lambda r: r.resize("other-pod", cpu="250m"), True, SCALE_UP),
    "other-pod-labelled": (label_other_pod, False, HintSizes()),
    "node1-allocatable-increased": (grow_node1, True, HintSizes()),
    "own-spec-scaled-down": (lambda r: r.resize("deferred-pod", cpu="80m"), True, HintSizes()),
    "own-spec-scaled-up": (lambda r: r.resize("deferred-pod", cpu="450m"), True, OWN_SCALE_UP),
}


@pytest.mark.parametrize("row", list(HINT_ROWS), ids=list(HINT_ROWS))
async def test_s_rpe_6_queueing_hints(cluster: Cluster, row: str) -> None:
    """The parked deferred pod is retried (attempts grow) on events on its own node that may
    make room or take it (another pod there scaling up, or its own scale-up: NodeResourcesFit's
    UpdatePodScaleUp hints, as merged by kubernetes#140000), and not on events elsewhere or
    label changes."""
    trigger, retried, sizes = HINT_ROWS[row]
    async with scenario(cluster, "s-rpe-6") as r:
        await hint_setup(r, sizes=sizes)
        attempts = await r.wait_parked()
        await trigger(r)
        if retried:
            await r.wait_retried(attempts)
        else:
            await r.assert_not_retried(attempts)
        await r.sync()
        r.assert_stays_assigned("deferred-pod")
        assert not r.touched() - r.externally_deleted, r.touched()


async def test_s_rpe_7_disabling_the_node_policy_does_not_retry(cluster: Cluster) -> None:
    async with scenario(cluster, "s-rpe-7") as r:
        await hint_setup(r)
        attempts = await r.wait_parked()
        await r.update_node("node1", disabled=True)
        await r.assert_not_retried(attempts)
        await r.sync()
        r.assert_stays_assigned("deferred-pod")


async def test_s_rpe_7_enabling_the_node_policy_retries(cluster: Cluster) -> None:
    async with scenario(cluster, "s-rpe-7") as r:
        await hint_setup(r, node1_disabled=True)
        attempts = await r.wait_parked()
        await r.update_node("node1", disabled=False)
        await r.wait_retried(attempts)
        await r.sync()
        r.assert_stays_assigned("deferred-pod")


async def test_s_rpe_7_policy_of_another_node_does_not_retry(cluster: Cluster) -> None:
    async with scenario(cluster, "s-rpe-7") as r:
        await hint_setup(r)
        attempts = await r.wait_parked()
        await r.update_node("node2", disabled=True)
        await r.assert_not_retried(attempts)
        await r.sync()
        r.assert_stays_assigned("deferred-pod")


# ---------------------------------------------------------------- S-RPE-8


async def test_s_rpe_8_deferred_pod_present_at_scheduler_start_is_enqueued(
    cluster: Cluster,
) -> None:
    """A scheduler started after the pod became Deferred enqueues it from its initial list
    (AddPod): it is attempted and parked (it fits: rejected at Permit)."""
    late = "scheduler-late"
    async with scenario(cluster, "s-rpe-8", scheduler=LATE_SCHEDULER, process=late) as r:
        await r.node("node1", cpu="200m")
        await r.deferred("deferred-pod", "node1", priority=LOW, cpu="100m", allocated_cpu="50m")
        path = cluster.root / f"{LATE_SCHEDULER}.yaml"
        await anyio.to_thread.run_sync(
            lambda: cluster.start_scheduler(name=late, config=str(path), feature_gates=GATES_ON)
        )
        try:
            assert await r.wait_parked() >= 1
            await r.sync()
            r.assert_stays_assigned("deferred-pod")
        finally:
            await anyio.to_thread.run_sync(cluster.terminate, late)


@GATE
async def test_s_rpe_8_pod_enqueued_when_it_becomes_deferred(
    cluster: Cluster, gate_on: bool
) -> None:
    """A running pod without a pending resize is not queued; once its resize is Deferred it
    is (gate on), or still not (gate off)."""
    async with scenario(cluster, "s-rpe-8", gate_on=gate_on) as r:
        await r.node("node1", cpu="200m")
        pod = await r.running("deferred-pod", "node1", priority=LOW, cpu="50m")
        before = await r.attempts()
        await r.caught_up()
        assert sum((await r.queued()).values()) == 0
        assert await r.attempts() == before
        await r.resize("deferred-pod", cpu="100m")
        pod = await r.write_status(pod, allocated={"cpu": "50m"}, deferred=True)
        if gate_on:
            assert await r.wait_parked() > before
        else:
            await r.caught_up()

            async def not_queued() -> None:
                assert sum((await r.queued()).values()) == 0
                assert await r.attempts() == before

            await r.s.holds(not_queued, seconds=OBSERVATION)
            await r.sync()
            r.assert_not_written_after(pod)
        await r.sync()
        r.assert_stays_assigned("deferred-pod")


async def test_s_rpe_8_pod_leaves_the_queue_when_no_longer_deferred(cluster: Cluster) -> None:
    """The kubelet accepts the resize (allocated = desired, no PodResizePending): the pod
    leaves the queue."""
    async with scenario(cluster, "s-rpe-8") as r:
        await r.node("node1", cpu="200m")
        pod = await r.deferred(
            "deferred-pod", "node1", priority=LOW, cpu="100m", allocated_cpu="50m"
        )
        await r.wait_parked()
        await r.write_status(pod, allocated={"cpu": "100m"}, deferred=False)
        await r.wait_queue_empty()
        await r.sync()
        r.assert_stays_assigned("deferred-pod")


async def test_s_rpe_8_deleted_deferred_pod_leaves_queue_and_cache(cluster: Cluster) -> None:
    """Deleting the deferred pod takes it out of the queue and out of the cache: a pod that did
    not fit beside it (100m + 150m > 200m) is then scheduled to its node."""
    async with scenario(cluster, "s-rpe-8") as r:
        node = await r.node("node1", cpu="200m")
        await r.deferred("deferred-pod", "node1", priority=LOW, cpu="100m", allocated_cpu="50m")
        await r.wait_parked()
        probe = (
            r.s.pod("probe", cpu="150m")
            .scheduler_name(r.scheduler)
            .node_selector({"kubernetes.io/hostname": node})
        )
        await r.s.create(probe)
        await r.wait_parked(2)
        assert not (await r.s.get("probe")).spec.node_name
        await r.force_delete("deferred-pod")
        assert await r.s.wait_bound("probe", timeout=TIMEOUT) == node
        await r.wait_queue_empty()


# ---------------------------------------------------------------- S-RPE-9, 10


@GATE
async def test_s_rpe_9_alpha_accounting_over_preempts(cluster: Cluster, gate_on: bool) -> None:
    """The KEP's example with X = 1000m: node 2X; pod-1 (high) resizing X/2 → X, pods 2, 3, 4
    (low) resizing X/2 → 2X, all Deferred. The scheduler counts the low pods at 2X each, so
    no low pod can be reprieved (X + 2X > 2X): all three are evicted, where kubelet-like
    accounting (allocated sizes) would evict one."""
    async with scenario(cluster, "s-rpe-9", gate_on=gate_on) as r:
        await r.node("node1", cpu="2000m", memory="1000")
        lows = {"pod-2", "pod-3", "pod-4"}
        for name in sorted(lows):
            await r.deferred(
                name, "node1", priority=LOW, cpu="2000m", allocated_cpu="500m", memory="10",
                allocated_memory="10",
            )  # fmt: skip
        preemptor = await r.deferred(
            "pod-1", "node1", priority=HIGH, cpu="1000m", allocated_cpu="500m", memory="10",
            allocated_memory="10",
        )  # fmt: skip
        if gate_on:

            async def evicted() -> bool:
                await r.sync()
                assert_only("evicted", r.evicted(), lows)
                return True

            await r.s.eventually(evicted, timeout=TIMEOUT)
            # All four stay queued: pod-1 until the victims are gone, the lows with nothing
            # of lower priority to preempt.
            await r.wait_parked(4)
            await r.sync()
            assert len(r.evicted()) == 3
            assert_only("Preempted events", await r.preempted_events(), lows)
            for name in ("pod-1", *lows):
                r.assert_stays_assigned(name)
        else:
            await expect_evictions(r, preemptor, set())


async def test_s_rpe_9_kubelet_like_accounting_evicts_only_pod_4(cluster: Cluster) -> None:
    """NOT upstream: S-RPE-9 on the gate-on process's profile with NodeResourcesFit's
    kemuKubeletLikeResizeAccounting (kemu's emulation of the accounting the KEP plans for
    beta). In pod-1's cycle the lows count at what they hold, X/2: X + 1.5X > 2X, so pod-1
    preempts; with the three gone X fits, and pod-2 (1.5X) and pod-3 (2X) are reprieved in
    start order, pod-4 (2.5X) is not. Exactly one eviction, pod-4; it stays Terminating (no
    kubelet), so pod-1 stays queued, and so do the lows (nothing of lower priority)."""
    async with scenario(cluster, "s-rpe-9-kubelet-like", scheduler=KUBELET_LIKE_SCHEDULER) as r:
        await r.node("node1", cpu="2000m", memory="1000")
        # Started in name order: pod-4, the latest, is the least important low pod.
        started = 1_700_000_000
        for i, name in enumerate(("pod-2", "pod-3", "pod-4")):
            await r.deferred(
                name, "node1", priority=LOW, cpu="2000m", allocated_cpu="500m", memory="10",
                allocated_memory="10", started=started + i,
            )  # fmt: skip
        await r.deferred(
            "pod-1", "node1", priority=HIGH, cpu="1000m", allocated_cpu="500m", memory="10",
            allocated_memory="10", started=started - 1,
        )  # fmt: skip

        async def evicted() -> bool:
            await r.sync()
            assert_only("evicted", r.evicted(), {"pod-4"})
            return True

        await r.s.eventually(evicted, timeout=TIMEOUT)
        await r.wait_parked(4)
        # Nothing more once the scheduler has seen everything, retries included.
        await r.caught_up()
        await r.s.holds(evicted, seconds=OBSERVATION)
        await r.sync()
        assert_only("evicted", r.evicted(), {"pod-4"})
        assert_only("touched", r.touched(), {"pod-4"})
        assert_only("Preempted events", await r.preempted_events(), {"pod-4"})
        for name in ("pod-1", "pod-2", "pod-3", "pod-4"):
            r.assert_stays_assigned(name)


async def test_s_rpe_10_competing_resize_takes_the_room(cluster: Cluster) -> None:
    """Node 1000m. A (medium) resizes 300m → 600m, Deferred; B (low, 300m), C (high, 100m,
    running), D (150, 100m). A's preemption evicts B only (D, more important than B, is
    reprieved: 600 + 100 + 100 ≤ 1000). While B terminates, C's resize to 400m is requested
    and the kubelet actuates it (C is more important). A is retried (at C's scale-up, by
    NodeResourcesFit's UpdatePodScaleUp hint as merged by kubernetes#140000, or when B is
    gone): 600 + 400 + 100 > 1000, so it preempts again and D goes. When D is gone A fits and
    is parked; it leaves the queue only when the kubelet accepts its resize."""
    async with scenario(cluster, "s-rpe-10") as r:
        await r.node("node1", cpu="1000m", memory="1000")
        await r.bound("b", "node1", priority=LOW, cpu="300m")
        c = await r.running("c", "node1", priority=HIGH, cpu="100m")
        await r.bound("d", "node1", priority=150, cpu="100m")
        a = await r.deferred("a", "node1", priority=MEDIUM, cpu="600m", allocated_cpu="300m")

        async def evicted(names: set[str]) -> bool:
            await r.sync()
            assert_only("evicted", r.evicted(), names)
            return True

        await r.s.eventually(lambda: evicted({"b"}), timeout=TIMEOUT)
        await r.wait_parked()
        await r.caught_up()
        await r.s.holds(lambda: evicted({"b"}), seconds=OBSERVATION)

        await r.resize("c", cpu="400m")
        await r.write_status(c, allocated={"cpu": "400m"}, deferred=False)
        await r.force_delete("b")
        await r.s.eventually(lambda: evicted({"b", "d"}), timeout=TIMEOUT)
        await r.wait_parked()

        attempts = await r.attempts()
        await r.force_delete("d")
        await r.wait_retried(attempts)
        await r.wait_parked()
        await r.write_status(a, allocated={"cpu": "600m"}, deferred=False)
        await r.wait_queue_empty()
        await r.sync()
        assert_only("evicted", r.evicted(), {"b", "d"})
        assert_only("Preempted events", await r.preempted_events(), {"b", "d"})
        r.assert_stays_assigned("a")


async def test_s_rpe_11_a_deferred_pod_holding_a_read_write_once_pod_claim_preempts(
    cluster: Cluster,
) -> None:
    """S-RPE-1 with the preemptor mounting a bound ReadWriteOncePod claim: the volume plugins
    Skip a deferred pod at PreFilter (KEP-5836), so VolumeRestrictions does not count the
    pod's own use of its claim as a conflict on its node, and victim-1 is evicted."""
    async with scenario(cluster, "s-rpe-11") as r:
        await r.node("node1", cpu="300m", memory="300")
        pv_name = f"{r.s.ns}-data"
        pv = storage.volume(pv_name, "", access_modes=(READ_WRITE_ONCE_POD,))
        pv.spec.claim_ref.namespace, pv.spec.claim_ref.name = r.s.ns, "data"
        await r.s.client.create(pv)
        claim = storage.claim(r.s.ns, "data", "", access_modes=(READ_WRITE_ONCE_POD,))
        claim.spec.volume_name = pv_name
        claim.metadata.annotations[ANN_BIND_COMPLETED] = "yes"
        await r.s.client.create(claim)
        await r.bound("victim-1", "node1", priority=LOW, cpu="200m", memory="100")
        preemptor = await r.deferred(
            "preemptor-pod",
            "node1",
            priority=HIGH,
            cpu="300m",
            memory="100",
            allocated_cpu="100m",
            allocated_memory="100",
            claim="data",
        )
        await expect_evictions(r, preemptor, {"victim-1"})
