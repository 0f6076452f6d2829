"""The scheduler's binding cycle and failure handling as upstream's kube-scheduler (issue #13),
on real processes: etcd, apiserver, kube-scheduler with the SlowPreBind emulation plugin in its
default profile (only pods that ask for it take part); nodes are bare Node objects.

Each test is a scenario (kemu.testing.scenarios) whose pods' every version is recorded and
checked against the invariants of kemu.testing.invariants (kemu.testing.invariants)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Final

import anyio
import pytest
from prometheus_client.parser import text_string_to_metric_families

from kemu.api.v1 import types_pb2
from kemu.client.pod_status import patch_pod_status
from kemu.machinery.convert import message_to_dict
from kemu.machinery.errors import Invalid
from kemu.machinery.jsonvalue import JSONObject
from kemu.scheduling.emulation.slow_pre_bind import (
    ANNOTATION_DELAY,
    ANNOTATION_FAIL,
    ANNOTATION_FAIL_STATUS,
)
from kemu.scheduling.emulation.waiting_permit import (
    ALLOW,
    ANNOTATION_DECISION,
    ANNOTATION_WAIT,
    REJECT,
)
from kemu.testing import Cluster, make_node
from kemu.testing.invariants import PodHistory, assert_invariants, record_pods
from kemu.testing.scenarios import SCENARIO_LABEL, Scenario, disruption_target

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

CONFIG: Final = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
podInitialBackoffSeconds: 1
podMaxBackoffSeconds: 2
profiles:
- schedulerName: default-scheduler
  plugins: {multiPoint: {enabled: [{name: SlowPreBind}, {name: WaitingPermit}]}}
- schedulerName: other-scheduler
"""
# A 1.33 kube-scheduler beside it, for the rules that changed since (at -v 4: SlowPreBind's
# "PreBind of ... takes" line tells when a pod is in PreBind, which 1.33 shows nowhere else).
OLD_SCHEDULER: Final = "scheduler-1-33"
OLD_CONFIG: Final = f"""\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: {OLD_SCHEDULER}
  plugins: {{multiPoint: {{enabled: [{{name: SlowPreBind}}]}}}}
"""
TIMEOUT: Final = 20.0
NO_NODES: Final = "no nodes available to schedule pods"


@contextmanager
def _started(root: Path) -> Iterator[Cluster]:
    """etcd, apiserver and kube-scheduler with CONFIG (no nodes), and the 1.33 one."""
    with Cluster(root) as c:
        config = Path(c.root) / "scheduler.yaml"
        config.write_text(CONFIG)
        old_config = Path(c.root) / "scheduler-1-33.yaml"
        old_config.write_text(OLD_CONFIG)
        c.start_etcd()
        c.start_apiserver()
        c.start_scheduler(config=str(config), extra_args=["--seed", "1"])
        c.start_scheduler(
            name=OLD_SCHEDULER,
            config=str(old_config),
            emulated_version="1.33",
            extra_args=["--seed", "1", "--v", "4"],
        )
        yield c


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with _started(tmp_path_factory.mktemp("scheduler-fidelity")) as c:
        yield c


@asynccontextmanager
async def scenario(cluster: Cluster, prefix: str) -> AsyncIterator[tuple[Scenario, PodHistory]]:
    async with Scenario.open(cluster, prefix) as s, record_pods(s.client, s.ns) as history:
        yield s, history
        await assert_invariants(s.client, history, s.ns, externally_deleted={"slow", "p"})


def _pod_scheduled(pod: types_pb2.Pod) -> types_pb2.PodCondition | None:
    return next((c for c in pod.status.conditions if c.type == "PodScheduled"), None)


async def _in_pre_bind(s: Scenario, name: str, node: str) -> None:
    """The pod is in its binding cycle's PreBind: KEP-5278 made its nominatedNodeName the
    chosen node, and it is not bound."""
    pod = await s.wait_nominated(name, node, timeout=TIMEOUT)
    assert not pod.spec.node_name


async def test_a_pod_deleted_in_prebind_frees_its_node_for_another_pod_at_once(
    cluster: Cluster,
) -> None:
    """upstream handleAssumedPodDeletion (kubernetes#134157): the deleted pod's room is freed
    when the deletion is seen, not when its 60 s PreBind ends."""
    async with scenario(cluster, "assumed-delete") as (s, _):
        await s.bare_node("node", cpu="1", memory="1Gi", pods="10")
        await s.create(s.pod("slow", cpu="1").annotation(ANNOTATION_DELAY, "60s"))
        await _in_pre_bind(s, "slow", "node")
        await s.create(s.pod("next", cpu="1"))
        await s.wait_unschedulable("next", timeout=TIMEOUT)
        await s.client.delete(types_pb2.Pod, "slow", s.ns)
        assert await s.wait_bound("next", timeout=TIMEOUT) == s.node_name("node")


async def test_a_namesake_recreated_mid_binding_is_never_bound_to_the_old_pods_node(
    cluster: Cluster,
) -> None:
    """The binding carries the pod's uid, a storage precondition at the apiserver: the old
    pod's Bind, when its PreBind ends, fails with a Conflict instead of binding the new pod
    of the same name (which fits no node)."""
    async with scenario(cluster, "namesake") as (s, history):
        await s.bare_node("node", cpu="2", memory="1Gi", pods="10")
        old = await s.create(s.pod("p", cpu="1").annotation(ANNOTATION_DELAY, "3s"))
        await _in_pre_bind(s, "p", "node")
        await s.client.delete(types_pb2.Pod, "p", s.ns)
        await s.wait_gone("p", timeout=TIMEOUT)
        new = await s.create(s.pod("p", cpu="1").node_selector({"no-such": "label"}))
        assert new.metadata.uid != old.metadata.uid
        await s.wait_logged("scheduler", 'Operation cannot be fulfilled on pods "p"')

        async def unbound() -> None:
            assert not (await s.get("p")).spec.node_name

        await s.holds(unbound, seconds=2.0)
        await history.sync(s.client, timeout=TIMEOUT)
        assert not any(v.pod.spec.node_name for v in history.versions[new.metadata.uid])


@pytest.mark.parametrize(
    ("scheduler", "inherits"),
    [("default-scheduler", False), (OLD_SCHEDULER, True)],
    ids=["1.37", "1.33"],
)
async def test_a_namesake_recreated_mid_binding_gets_none_of_the_old_pods_failure(
    cluster: Cluster, scheduler: str, inherits: bool
) -> None:
    """The old pod's Bind fails (its uid precondition) while the informer holds a namesake,
    created gated so that it is never scheduled itself. From 1.34 (kubernetes#138324) the
    failure handling, which finds the pod by name, sees another uid and leaves the namesake
    alone; 1.33 requeued it and gave it the old pod's PodScheduled=False and FailedScheduling."""
    process = "scheduler" if scheduler == "default-scheduler" else OLD_SCHEDULER
    conflict = 'Operation cannot be fulfilled on pods "p"'
    async with scenario(cluster, "namesake-failure") as (s, _):
        node = await s.bare_node("node", cpu="2", memory="1Gi", pods="10")
        old = await s.create(
            s.pod("p", cpu="1").annotation(ANNOTATION_DELAY, "3s").scheduler_name(scheduler)
        )
        if inherits:  # 1.33: no nominatedNodeName while PreBind works (KEP-5278 is 1.34)
            await s.wait_logged(process, f"PreBind of {s.ns}/p on {node} takes", TIMEOUT)
        else:
            await _in_pre_bind(s, "p", "node")
        await s.client.delete(types_pb2.Pod, "p", s.ns)
        await s.wait_gone("p", timeout=TIMEOUT)
        new = await s.create_held(s.pod("p", cpu="1").scheduler_name(scheduler))
        assert new.metadata.uid != old.metadata.uid
        await s.wait_logged(process, conflict, TIMEOUT)

        async def failure_of(uid: str) -> list[str]:
            pod = await s.get("p")
            assert pod.metadata.uid == uid
            condition = _pod_scheduled(pod)
            events = [
                e.message
                for e in await s.events("FailedScheduling", "p")
                if e.involved_object.uid == uid
            ]
            if condition is not None and conflict in condition.message:
                events.append(f"PodScheduled: {condition.message}")
            return events

        if inherits:

            async def inherited() -> bool:
                got = await failure_of(new.metadata.uid)
                assert any(conflict in m for m in got), got
                assert any(m.startswith("PodScheduled: ") for m in got), got
                return True

            await s.eventually(inherited, timeout=TIMEOUT)
        else:

            async def untouched() -> None:
                assert not await failure_of(new.metadata.uid)

            await s.holds(untouched, seconds=2.0)


async def test_an_unschedulable_prebind_failure_backs_off_instead_of_waiting_in_the_pool(
    cluster: Cluster,
) -> None:
    """Nothing after Permit makes a pod unschedulable (upstream bindingCycle): a PreBind
    that answers Unschedulable sends the pod to backoff, retried within seconds, not to the
    unschedulable pool where it would wait for an event or the 5-minute flush."""
    async with scenario(cluster, "prebind-unschedulable") as (s, history):
        await s.bare_node("node", cpu="2", memory="1Gi", pods="10")
        await s.create(
            s.pod("f", cpu="1")
            .annotation(ANNOTATION_FAIL, "1")
            .annotation(ANNOTATION_FAIL_STATUS, "Unschedulable")
        )
        assert await s.wait_bound("f", timeout=TIMEOUT) == s.node_name("node")
        await history.sync(s.client, timeout=TIMEOUT)
        (uid,) = history.uids_of("f")
        reasons = [
            (c.status, c.reason)
            for v in history.versions[uid]
            if (c := _pod_scheduled(v.pod)) is not None and c.status == "False"
        ]
        assert ("False", "Unschedulable") in reasons, reasons


async def test_the_binding_cycle_nominated_node_patch_retries_no_other_pod(
    cluster: Cluster,
) -> None:
    """Updates of an assumed pod are not queue events (upstream updatePodInSchedulingQueue):
    the KEP-5278 PATCH that moves a pod's nominatedNodeName from elsewhere to its chosen node
    does not retry the pods waiting in the unschedulable pool."""
    async with scenario(cluster, "assumed-update") as (s, _):
        await s.bare_node("node", cpu="2", memory="1Gi", pods="10")
        await s.create(s.pod("big", cpu="4"))
        await s.wait_unschedulable("big", timeout=TIMEOUT)

        async def failed_once() -> int:
            events = await s.events("FailedScheduling", "big")
            assert len(events) == 1, events
            return events[0].count

        before = await s.eventually(failed_once, timeout=TIMEOUT)
        await s.create_nominated(
            s.pod("a", cpu="1").annotation(ANNOTATION_DELAY, "8s"), "elsewhere"
        )
        await _in_pre_bind(s, "a", "node")

        async def big_not_retried() -> None:
            assert await failed_once() == before

        await s.holds(big_not_retried, seconds=4.0)
        assert await s.wait_bound("a", timeout=TIMEOUT) == s.node_name("node")


async def test_no_nodes_is_unschedulable_not_a_scheduler_error(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """upstream ErrNoNodesAvailable: PodScheduled=False reason Unschedulable, message "no
    nodes available to schedule pods", counted as result=unschedulable. Its own small cluster:
    the shared one has nodes."""
    with Cluster(tmp_path_factory.mktemp("no-nodes")) as c:
        c.start_etcd()
        c.start_apiserver()
        c.start_scheduler()
        async with Scenario.open(c, "no-nodes") as s, record_pods(s.client, s.ns) as history:
            await s.create(s.pod("p"))
            cond = await s.wait_unschedulable("p", timeout=TIMEOUT)
            assert (cond.reason, cond.message) == ("Unschedulable", NO_NODES)
            metrics = c.component("scheduler").scrape()
            attempts = 'scheduler_schedule_attempts_total{profile="default-scheduler",result="%s"}'
            assert attempts % "unschedulable" in metrics
            assert attempts % "error" not in metrics
            await assert_invariants(s.client, history, s.ns)


def _unschedulable_gauge(cluster: Cluster, plugin: str) -> float:
    prefix = f'scheduler_unschedulable_pods{{plugin="{plugin}",profile="default-scheduler"}} '
    for line in cluster.component("scheduler").scrape().splitlines():
        if line.startswith(prefix):
            return float(line[len(prefix) :])
    return 0.0


async def test_unschedulable_pods_gauge_follows_each_rejecting_plugin(cluster: Cluster) -> None:
    """scheduler_unschedulable_pods{plugin, profile} counts the pods a plugin keeps out (here
    NodeAffinity), and forgets them when they are deleted (upstream 1.36-1.37)."""
    async with scenario(cluster, "unschedulable-gauge") as (s, _):
        await s.bare_node("node", cpu="1", memory="1Gi", pods="10")
        before = _unschedulable_gauge(cluster, "NodeAffinity")
        await s.create(s.pod("p", cpu="100m").node_selector({"no-such": "label"}))
        await s.wait_unschedulable("p", timeout=TIMEOUT)

        def counted(delta: float) -> bool:
            assert _unschedulable_gauge(cluster, "NodeAffinity") == before + delta
            return True

        await s.eventually(lambda: counted(1), timeout=TIMEOUT)
        await s.client.delete(types_pb2.Pod, "p", s.ns)
        await s.eventually(lambda: counted(0), timeout=TIMEOUT)


async def test_events_and_conditions_name_their_profile_preemptor_and_generation(
    cluster: Cluster,
) -> None:
    """Each profile's events report as its schedulerName; a Preempted event's related object
    is the preemptor; PodScheduled and DisruptionTarget carry the pod's generation as
    observedGeneration (PodObservedGenerationTracking, GA at 1.37)."""
    async with scenario(cluster, "events") as (s, _):
        node = await s.bare_node("node", cpu="1", memory="1Gi", pods="10")
        await s.create(s.pod("other", cpu="4").scheduler_name("other-scheduler"))
        scheduled = await s.wait_unschedulable("other", timeout=TIMEOUT)
        assert scheduled.observed_generation == (await s.get("other")).metadata.generation == 1

        async def failed() -> types_pb2.Event:
            events = await s.events("FailedScheduling", "other")
            assert len(events) == 1, events
            return events[0]

        event = await s.eventually(failed, timeout=TIMEOUT)
        assert event.reporting_component == "other-scheduler"
        assert event.reporting_instance.startswith("other-scheduler-")

        victim = s.pod("victim", priority=100, cpu="1").obj()
        victim.spec.node_name = node
        await s.create(victim)
        preemptor = await s.create(s.pod("preemptor", priority=300, cpu="1"))

        async def preempted() -> types_pb2.Event:
            events = await s.events("Preempted", "victim")
            assert len(events) == 1, events
            return events[0]

        event = await s.eventually(preempted, timeout=TIMEOUT)
        assert event.reporting_component == "default-scheduler"
        assert (event.related.kind, event.related.name, event.related.uid) == (
            "Pod",
            "preemptor",
            preemptor.metadata.uid,
        )
        target = disruption_target(await s.get("victim"))
        assert target is not None and target.observed_generation == 1


async def test_a_gated_pod_stays_scheduling_gated_until_released(cluster: Cluster) -> None:
    """The apiserver creates a gated pod PodScheduled=False reason SchedulingGated; the
    scheduler keeps it out of its cycles (no FailedScheduling, the condition untouched) and
    schedules it once its gates are removed."""
    async with scenario(cluster, "gated") as (s, _):
        await s.bare_node("node", cpu="1", memory="1Gi", pods="10")
        created = await s.create_held(s.pod("g", cpu="100m"))
        (cond,) = [c for c in created.status.conditions if c.type == "PodScheduled"]
        assert (cond.status, cond.reason) == ("False", "SchedulingGated")

        async def still_gated() -> None:
            pod = await s.get("g")
            assert not pod.spec.node_name
            current = _pod_scheduled(pod)
            assert current is not None and current.reason == "SchedulingGated", current
            assert not await s.events("FailedScheduling", "g")

        await s.holds(still_gated, seconds=1.5)
        await s.release("g")
        assert await s.wait_bound("g", timeout=TIMEOUT) == s.node_name("node")


def _queue_moves(cluster: Cluster) -> dict[tuple[str, str], float]:
    """scheduler_queue_incoming_pods_total by (queue, event), the non-zero ones."""
    out: dict[tuple[str, str], float] = {}
    for family in text_string_to_metric_families(cluster.component("scheduler").scrape()):
        for smp in family.samples:
            if smp.name == "scheduler_queue_incoming_pods_total" and smp.value:
                out[(smp.labels["queue"], smp.labels["event"])] = smp.value
    return out


def _pending(cluster: Cluster, queue: str) -> float:
    for family in text_string_to_metric_families(cluster.component("scheduler").scrape()):
        for smp in family.samples:
            if smp.name == "scheduler_pending_pods" and smp.labels.get("queue") == queue:
                return float(smp.value)
    return 0.0


async def test_a_binding_cycle_failure_is_requeued_by_its_failure_never_by_its_own_forget(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """upstream handleBindingCycleError: a PreBind error sends the pod to backoffQ (one
    ScheduleAttemptFailure move, none to the unschedulable pool) and it is bound after its
    backoff; a rejection at WaitOnPermit sends it to the unschedulable pool, where it stays
    (beyond the 2 s maximum backoff) until its own update resolves the rejection. In both
    cases the AssignedPodDelete that forgetting the pod sends moves no pod: on this cluster
    of its own no other pod waits, so such a move could only be the failed pod itself."""
    with _started(tmp_path_factory.mktemp("binding-failure")) as c:
        async with Scenario.open(c, "binding-failure") as s, record_pods(s.client, s.ns) as h:
            node = await s.bare_node("node", cpu="2", memory="1Gi", pods="10")
            await s.create(s.pod("err", cpu="1").annotation(ANNOTATION_FAIL, "1"))
            assert await s.wait_bound("err", timeout=TIMEOUT) == node
            moves = _queue_moves(c)
            assert moves.get(("backoff", "ScheduleAttemptFailure")) == 1, moves
            assert not [k for k in moves if k[0] == "unschedulable"], moves
            await h.sync(s.client, timeout=TIMEOUT)
            failed = [
                cond.reason
                for v in h.versions[h.uids_of("err")[0]]
                if (cond := _pod_scheduled(v.pod)) is not None and cond.status == "False"
            ]
            assert set(failed) == {"SchedulerError"}, failed

            await s.create(s.pod("rej", cpu="1").annotation(ANNOTATION_WAIT, "1m"))
            await s.wait_nominated("rej", "node", timeout=TIMEOUT)  # waiting at Permit
            decision = {"metadata": {"annotations": {ANNOTATION_DECISION: REJECT}}}
            await s.client.patch(types_pb2.Pod, "rej", decision, s.ns)

            async def parked() -> bool:
                moves = _queue_moves(c)
                assert moves.get(("unschedulable", "ScheduleAttemptFailure")) == 1, moves
                assert not [k for k in moves if k[1] == "AssignedPodDelete"], moves
                assert _pending(c, "unschedulable") == 1
                assert not (await s.get("rej")).spec.node_name
                events = await s.events("FailedScheduling", "rej")
                assert [e.count for e in events] == [1], events
                return True

            await s.eventually(parked, timeout=TIMEOUT)
            await s.holds(parked, seconds=3.0)
            decision = {"metadata": {"annotations": {ANNOTATION_DECISION: ALLOW}}}
            await s.client.patch(types_pb2.Pod, "rej", decision, s.ns)
            assert await s.wait_bound("rej", timeout=TIMEOUT) == node
            await assert_invariants(s.client, h, s.ns)


HEARTBEAT: Final = "example.com/Heartbeat"


def _message_of(pod: types_pb2.Pod, type_: str) -> str | None:
    return next((c.message for c in pod.status.conditions if c.type == type_), None)


async def test_conditions_written_meanwhile_by_another_component_are_kept_both_ways(
    cluster: Cluster,
) -> None:
    """Another component rewrites a condition of its own on a pending pod every few
    milliseconds (read, change, compare-and-swap, as a kubelet or controller does) while the
    scheduler rewrites PodScheduled for each node added: neither write ever drops or rolls
    back the other's condition (in every recorded version, once present, each stays, and
    the heartbeat count never goes back), and the binding keeps the heartbeat too."""
    async with scenario(cluster, "conditions") as (s, history):
        await s.bare_node("small", cpu="1", memory="1Gi", pods="10")
        await s.create(s.pod("p", cpu="2"))
        first = await s.wait_unschedulable("p", timeout=TIMEOUT)
        stop = anyio.Event()
        beats = 0

        async def heartbeat() -> None:
            nonlocal beats
            while not stop.is_set():
                beats += 1

                def change(current: types_pb2.Pod, n: int = beats) -> JSONObject:
                    conditions = [c for c in current.status.conditions if c.type != HEARTBEAT]
                    beat = types_pb2.PodCondition(type=HEARTBEAT, status="True", message=str(n))
                    return {"conditions": [message_to_dict(c) for c in [*conditions, beat]]}

                await patch_pod_status(s.client, await s.get("p"), change)
                await anyio.sleep(0.01)

        async with anyio.create_task_group() as tg:
            tg.start_soon(heartbeat)
            message = first.message
            for i in range(3):
                # Fits by resources (so NodeResourcesFit's hint retries the pod) but is
                # cordoned: the pod fails again with one more node counted.
                node = make_node(s.node_name(f"cordoned-{i}")).capacity(cpu="4", pods="10")
                await s.client.create(node.labels({SCENARIO_LABEL: s.ns}).unschedulable().obj())

                async def rewritten(previous: str = message) -> str:
                    current = _message_of(await s.get("p"), "PodScheduled")
                    assert current is not None and current != previous, current
                    return current

                message = await s.eventually(rewritten, timeout=TIMEOUT)
            stop.set()
        await s.bare_node("big", cpu="4", memory="1Gi", pods="10")
        assert await s.wait_bound("p", timeout=TIMEOUT) == s.node_name("big")
        await history.sync(s.client, timeout=TIMEOUT)
        (uid,) = history.uids_of("p")
        versions = [v.pod for v in history.versions[uid]]
        assert _message_of(versions[-1], HEARTBEAT) == str(beats)
        scheduled_seen = beat_seen = 0
        messages: list[str] = []
        for pod in versions:
            scheduled = _message_of(pod, "PodScheduled")
            beat = _message_of(pod, HEARTBEAT)
            assert scheduled is not None or not scheduled_seen, "PodScheduled dropped"
            assert beat is not None or not beat_seen, "the heartbeat dropped"
            if beat is not None:
                assert int(beat) >= beat_seen, f"heartbeat rolled back to {beat}"
                beat_seen = int(beat)
            if scheduled is not None:
                scheduled_seen += 1
                if not messages or messages[-1] != scheduled:
                    messages.append(scheduled)
        assert len(messages) >= 4, messages  # the first failure, one per node, the binding
        assert len(set(messages)) == len(messages), f"PodScheduled rolled back: {messages}"


async def test_a_deleting_pending_pod_is_skipped_with_upstreams_event(cluster: Cluster) -> None:
    """A pending pod that a finalizer keeps after its DELETE (deletionTimestamp set) is not
    scheduled when an event retries it: a FailedScheduling event "skip schedule deleting pod:
    <namespace>/<name>" (upstream skipPodSchedule), and it is never bound."""
    async with scenario(cluster, "skip-deleting") as (s, _):
        obj = s.pod("p", cpu="100m").node_selector({"zone": "later"}).obj()
        obj.metadata.finalizers.append("example.com/hold")
        await s.create(obj)
        await s.wait_unschedulable("p", timeout=TIMEOUT)
        await s.client.delete(types_pb2.Pod, "p", s.ns)

        async def deleting() -> bool:
            return (await s.get("p")).metadata.HasField("deletion_timestamp")

        await s.eventually(deleting, timeout=TIMEOUT)
        node = make_node(s.node_name("later")).capacity(cpu="1", pods="10")
        await s.client.create(node.labels({SCENARIO_LABEL: s.ns, "zone": "later"}).obj())

        async def skipped() -> bool:
            messages = [e.message for e in await s.events("FailedScheduling", "p")]
            assert f"skip schedule deleting pod: {s.ns}/p" in messages, messages
            return True

        await s.eventually(skipped, timeout=TIMEOUT)

        async def unbound() -> None:
            assert not (await s.get("p")).spec.node_name

        await s.holds(unbound, seconds=2.0)
        await s.client.patch(types_pb2.Pod, "p", {"metadata": {"finalizers": None}}, s.ns)
        await s.wait_gone("p", timeout=TIMEOUT)


async def test_pod_level_requests_are_what_node_resources_fit_counts(cluster: Cluster) -> None:
    """KEP-2837 (PodLevelResources, beta and on from 1.34): spec.resources requests replace
    the containers' sum (noderesources fit.go computePodResourceRequest, SkipPodLevelResources
    false): a pod asking 3 cpu at pod level (1 cpu in its container) stays unschedulable on a
    2-cpu node, Insufficient cpu; one asking 2 cpu at pod level (1500m in its containers)
    fits; a pod-level limit of 3 cpu alone defaults its request to 3 (SetDefaults_Pod's
    defaultPodRequests) and stays pending; a pod-level request under its containers'
    aggregate is refused."""
    async with scenario(cluster, "pod-level") as (s, _):
        await s.bare_node("node", cpu="2", memory="1Gi", pods="10")
        await s.create(s.pod("big", cpu="1").pod_req(cpu="3"))
        cond = await s.wait_unschedulable("big", timeout=TIMEOUT)
        assert "Insufficient cpu" in cond.message, cond.message
        small = s.pod("small", cpu="1").container("second").req(cpu="500m").pod_req(cpu="2")
        await s.create(small)
        assert await s.wait_bound("small", timeout=TIMEOUT) == s.node_name("node")
        stored = await s.get("big")
        assert dict(stored.spec.resources.requests) == {"cpu": "3"}
        assert stored.status.qos_class == "Burstable"

        async def still_pending() -> None:
            assert not (await s.get("big")).spec.node_name

        await s.holds(still_pending, seconds=1.0)
        # defaultPodRequests: a pod-level limit alone defaults the pod-level request.
        limited = await s.create(s.pod("limited").pod_lim(cpu="3"))
        assert dict(limited.spec.resources.requests) == {"cpu": "3"}
        cond = await s.wait_unschedulable("limited", timeout=TIMEOUT)
        assert "Insufficient cpu" in cond.message, cond.message
        # validatePodResourceConsistency: pod-level requests cover the containers' aggregate.
        with pytest.raises(Invalid) as refused:
            await s.create(s.pod("under", cpu="1").container("b").req(cpu="1").pod_req(cpu="1"))
        assert [(c.field, c.message) for c in refused.value.causes] == [
            (
                "spec.resources.requests[cpu]",
                'Invalid value: "1": must be greater than or equal to aggregate container '
                "requests of 2",
            )
        ]


async def test_without_pod_level_resources_at_1_33_spec_resources_is_dropped(
    tmp_path: Path,
) -> None:
    """PodLevelResources is alpha (off) at 1.33: the apiserver drops spec.resources from a
    new pod (pkg/api/pod/util.go dropDisabledPodLevelResources), so a pod asking 3 cpu at pod
    level and 1 in its container is scheduled by its container onto a 2-cpu node."""
    with Cluster(tmp_path) as c:
        c.start_etcd()
        c.start_apiserver(emulated_version="1.33")
        c.start_scheduler(emulated_version="1.33")
        async with Scenario.open(c, "pod-level-off") as s:
            await s.bare_node("node", cpu="2", memory="1Gi", pods="10")
            created = await s.create(s.pod("big", cpu="1").pod_req(cpu="3"))
            assert not created.spec.HasField("resources"), created.spec.resources
            assert await s.wait_bound("big", timeout=TIMEOUT) == s.node_name("node")
