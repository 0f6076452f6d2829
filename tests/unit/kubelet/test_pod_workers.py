"""Pod lifecycle on FakeClient + FakeClock: admission, start-up, run duration, graceful
termination timings, status merging and checkpoint restore."""

from __future__ import annotations

from pathlib import Path

import pytest

from kemu.api.v1 import types_pb2
from kemu.client.fake import FakeClient
from kemu.component.clock import FakeClock
from kemu.testing.builders import make_pod
from kemu.testing.fake_time import settle, wait_until
from kubelet.checkpoint import Checkpoint
from kubelet.pod_manager import NodePods
from kubelet.runtime import PodState
from kubelet.settings import PodWorkerOptions

from .helpers import ALLOCATABLE, Env, advance, running_workers, wait_running
from .test_allocation import Recorder

pytestmark = pytest.mark.anyio


def pod(name: str, cpu: str = "1", node: str = "n1", **annotations: str) -> types_pb2.Pod:
    b = make_pod(name).req(cpu=cpu, memory="1Gi").node(node)
    for key, value in annotations.items():
        b = b.annotation(f"kubelet.kemu.io/{key.replace('_', '-')}", value)
    return b.obj()


async def start_running(env: Env, name: str, **kw: str) -> types_pb2.Pod:
    await env.fake.create(pod(name, **kw))
    return await wait_running(env, name)


async def test_admitted_pod_runs_after_the_startup_delay_with_full_status():
    async with running_workers() as env:
        created = await env.fake.create(
            make_pod("p")
            .req(cpu="1", memory="1Gi")
            .lim(cpu="2", memory="1Gi")
            .node("n1")
            .condition("PodScheduled")
            .obj()
        )
        await settle()
        await advance(env.clock, 0.4)
        assert (await env.pod("p")).status.phase == ""  # still being created
        await advance(env.clock, 0.2)
        p = await env.pod("p")
        assert p.status.phase == "Running"
        assert p.status.HasField("start_time")
        conds = {c.type: c.status for c in p.status.conditions}
        assert conds == {
            "PodScheduled": "True",
            "PodReadyToStartContainers": "True",
            "Initialized": "True",
            "Ready": "True",
            "ContainersReady": "True",
        }
        (cs,) = p.status.container_statuses
        assert cs.HasField("state") and cs.state.HasField("running") and cs.ready
        assert dict(cs.allocated_resources) == {"cpu": "1", "memory": "1Gi"}
        assert dict(cs.resources.requests) == {"cpu": "1", "memory": "1Gi"}
        assert dict(cs.resources.limits) == {"cpu": "2", "memory": "1Gi"}
        assert p.metadata.uid == created.metadata.uid
        # Level-based: more syncs with nothing new write nothing.
        writes = env.fake.verbs("pods").count("update_status")
        env.workers.queue.add(p.metadata.uid)
        await advance(env.clock, 5)
        assert env.fake.verbs("pods").count("update_status") == writes


async def test_startup_delay_annotation_overrides_the_flag():
    async with running_workers() as env:
        await env.fake.create(pod("slow", startup_delay="3s"))
        await advance(env.clock, 2.9)
        assert await env.phase("slow") == ""
        await advance(env.clock, 0.2)
        assert await env.phase("slow") == "Running"


@pytest.mark.parametrize(
    ("existing", "new", "reason", "message"),
    [
        (
            {"cpu": "3"},
            {"cpu": "2"},
            "OutOfcpu",
            "Node didn't have enough resource: cpu, requested: 2000, used: 3000, capacity: 4000",
        ),
        (
            {"cpu": "1", "memory": "3Gi"},
            {"cpu": "1", "memory": "2Gi"},
            "OutOfmemory",
            "Node didn't have enough resource: memory, requested: 2147483648, "
            "used: 3221225472, capacity: 4294967296",
        ),
    ],
)
async def test_a_pod_that_does_not_fit_is_rejected(existing, new, reason, message):
    async with running_workers() as env:
        await env.fake.create(make_pod("first").req(existing).node("n1").obj())
        await env.fake.create(make_pod("second").req(new).node("n1").obj())
        await advance(env.clock, 1)
        first, second = await env.pod("first"), await env.pod("second")
        assert first.status.phase == "Running"
        assert second.status.phase == "Failed"
        assert second.status.reason == reason
        assert second.status.message == f"Pod was rejected: {message}"
        assert not second.status.container_statuses


async def test_a_pod_deleted_from_the_api_no_longer_counts_at_admission():
    """S-PRE-9's race: a victim deleted with grace 0 is gone from the API at once and the
    preemptor is bound right after; the kubelet's watch delivers the deletion first. Upstream's
    HandlePodRemoves drops the pod from the pod manager at once, so admitting the preemptor
    before the victim's worker has cleaned up must not count the victim (kemu counted it and
    rejected the preemptor with OutOfcpu)."""
    async with running_workers() as env:
        victim = await start_running(env, "victim", cpu="3")
        await env.fake.delete(types_pb2.Pod, "victim", grace_period_seconds=0)
        preemptor = await env.fake.create(pod("preemptor", cpu="3"))
        # Both events as the watch delivers them, with no worker turn in between.
        env.workers.on_pod_delete(victim)
        env.workers.on_pod(preemptor)
        rt = env.node().runtimes[preemptor.metadata.uid]
        assert rt.state is not PodState.REJECTED, rt.message
        await advance(env.clock, 1)
        assert await env.phase("preemptor") == "Running"
        assert victim.metadata.uid not in env.node().runtimes


async def test_pod_count_is_admitted_against_allocatable_pods():
    async with running_workers(nodes={"n1": {**ALLOCATABLE, "pods": 2}}) as env:
        for i in range(3):
            await env.fake.create(make_pod(f"p{i}").node("n1").obj())
        await advance(env.clock, 1)
        rejected = await env.pod("p2")
        assert rejected.status.reason == "OutOfpods"
        assert rejected.status.message == (
            "Pod was rejected: Node didn't have enough resource: pods, requested: 1, used: 2, "
            "capacity: 2"
        )


async def test_pods_of_other_nodes_are_not_touched():
    async with running_workers() as env:
        await env.fake.create(pod("elsewhere", node="n2"))
        await env.fake.create(make_pod("unbound").obj())
        await advance(env.clock, 1)
        assert await env.phase("elsewhere") == ""
        assert await env.phase("unbound") == ""


async def test_run_duration_ends_the_pod_succeeded_and_frees_its_allocation():
    async with running_workers() as env:
        await env.fake.create(pod("job", cpu="4", run_duration="10s"))
        await advance(env.clock, 5)
        assert await env.phase("job") == "Running"
        await env.fake.create(pod("waits", cpu="1"))
        await advance(env.clock, 1)
        assert (await env.pod("waits")).status.reason == "OutOfcpu"
        await advance(env.clock, 5)
        job = await env.pod("job")
        assert job.status.phase == "Succeeded"
        (cs,) = job.status.container_statuses
        assert cs.state.terminated.exit_code == 0 and cs.state.terminated.reason == "Completed"
        ready = next(c for c in job.status.conditions if c.type == "Ready")
        assert (ready.status, ready.reason) == ("False", "PodCompleted")
        await env.fake.create(pod("fits", cpu="4"))
        await advance(env.clock, 1)
        assert await env.phase("fits") == "Running"


async def test_exit_code_annotation_ends_the_pod_failed_with_that_code():
    async with running_workers() as env:
        await env.fake.create(pod("fails", run_duration="2s", exit_code="3"))
        await env.fake.create(pod("bad", run_duration="2s", exit_code="x"))
        await advance(env.clock, 3)
        failed = await env.pod("fails")
        assert failed.status.phase == "Failed"
        (cs,) = failed.status.container_statuses
        assert cs.state.terminated.exit_code == 3 and cs.state.terminated.reason == "Error"
        assert await env.phase("bad") == "Succeeded"  # a malformed code is ignored


# ---------------------------------------------------------------- graceful termination


async def _deleted_within(env, name: str, at_least: float, at_most: float) -> None:
    step = 0.1
    waited = 0.0
    while waited < at_least - step / 2:
        assert await env.exists(name), f"{name} went after {waited:.1f}s"
        await advance(env.clock, step)
        waited += step
    while await env.exists(name):
        assert waited <= at_most, f"{name} still there after {waited:.1f}s"
        await advance(env.clock, step)
        waited += step


async def test_grace_20s_with_shutdown_2s_is_gone_after_2s():
    async with running_workers() as env:
        await start_running(env, "p", shutdown_duration="2s")
        await env.mark_deleted("p", 20)
        await _deleted_within(env, "p", 1.9, 2.15)
        last = env.last_status_write()
        (cs,) = last.status.container_statuses
        assert cs.state.terminated.exit_code == 0
        assert last.status.phase == "Succeeded"
        assert env.node().runtimes == {}


async def test_shutdown_30s_with_grace_3s_is_killed_after_3s():
    async with running_workers() as env:
        await start_running(env, "p", shutdown_duration="30s")
        await env.mark_deleted("p", 3)
        await _deleted_within(env, "p", 2.9, 3.15)
        last = env.last_status_write()
        (cs,) = last.status.container_statuses
        assert (cs.state.terminated.exit_code, cs.state.terminated.reason) == (137, "Error")
        assert last.status.phase == "Failed"
        delete = [a for a in env.fake.actions if a.verb == "delete"]
        # the test's graceful one, then the kubelet's grace-0 one (and possibly a repeat
        # after it saw its own grace-0 mark, which finds the pod gone)
        assert len(delete) >= 2


async def test_an_ordinary_pod_exits_on_sigterm_at_once_with_the_kubelets_events():
    """S-KL-TERM-2, S-KL-EVT-1: without the shutdown annotation a pod's containers exit 0 on
    SIGTERM at once (a pause or nginx container does within a second), whatever its grace
    period; the kubelet records Pulled, Created and Started as they start and Killing at the
    SIGTERM, with upstream's messages."""
    clock = FakeClock()
    fake = FakeClient(clock=clock)
    recorder = Recorder(fake, clock)
    async with running_workers(fake=fake, clock=clock, recorder=recorder) as env:
        await start_running(env, "p")
        await env.mark_deleted("p", 30)
        await _deleted_within(env, "p", 0, 0.15)
        (cs,) = env.last_status_write().status.container_statuses
        assert cs.state.terminated.exit_code == 0
        c = make_pod("p").obj().spec.containers[0]
        assert [(r, m) for n, _, r, m in recorder.events if n == "p"] == [
            ("Pulled", f'Container image "{c.image}" already present on machine'),
            ("Created", f"Created container: {c.name}"),
            ("Started", f"Started container {c.name}"),
            ("Killing", f"Stopping container {c.name}"),
        ]


async def test_a_later_shorter_grace_period_replaces_the_deadline():
    async with running_workers() as env:
        await start_running(env, "p", shutdown_duration="never")  # lives its grace period
        await env.mark_deleted("p", 20)
        await advance(env.clock, 2)
        await env.mark_deleted("p", 3)
        await _deleted_within(env, "p", 2.9, 3.15)


async def test_a_second_delete_with_grace_0_ends_it_now():
    async with running_workers() as env:
        await start_running(env, "p", cpu="4", shutdown_duration="never")
        await env.mark_deleted("p", 30)
        await advance(env.clock, 1)
        assert env.node().runtimes[next(iter(env.node().runtimes))].state == PodState.TERMINATING
        await env.fake.delete(types_pb2.Pod, "p", grace_period_seconds=0)
        await wait_until(lambda: not env.node().runtimes)
        # The allocation went with it.
        await env.fake.create(pod("next", cpu="4"))
        await advance(env.clock, 1)
        assert await env.phase("next") == "Running"


async def test_a_pod_deleted_before_it_started_goes_at_once_without_status():
    async with running_workers() as env:
        await env.fake.create(pod("p", startup_delay="10s"))
        await advance(env.clock, 1)
        await env.mark_deleted("p", 30)
        await _deleted_within(env, "p", 0, 0.3)
        assert "update_status" not in env.fake.verbs("pods")


# ---------------------------------------------------------------- restart


async def test_restart_keeps_running_pods_and_finishes_terminating_ones(tmp_path: Path):
    clock = FakeClock()
    fake = FakeClient(clock=clock)
    async with running_workers(fake=fake, clock=clock, root_dir=tmp_path) as env:
        await start_running(env, "stays", cpu="2")
        await start_running(env, "ends", cpu="1", shutdown_duration="4s")
        await env.mark_deleted("ends", 30)
        await advance(env.clock, 1)
        stays = await env.pod("stays")
        allocation = dict(env.node().runtimes[stays.metadata.uid].allocation)
    # Killed: a new kubelet with a node that now has less room must not re-admit.
    fake.clear_actions()
    small = {"n1": {**ALLOCATABLE, "cpu": 1000}}
    async with running_workers(fake=fake, clock=clock, root_dir=tmp_path, nodes=small) as env:
        await settle()
        assert await env.phase("stays") == "Running"
        assert env.node().runtimes[stays.metadata.uid].allocation == allocation
        assert "update_status" not in fake.verbs("pods")
        await advance(env.clock, 2.8)
        assert await env.exists("ends")
        await advance(env.clock, 0.4)
        assert not await env.exists("ends")
        assert await env.phase("stays") == "Running"
        # The restored allocation counts: 2 cpu held on a node that now has 1.
        await env.fake.create(pod("new", cpu="1"))
        await advance(env.clock, 1)
        assert (await env.pod("new")).status.reason == "OutOfcpu"


async def test_restored_pods_gone_from_the_api_are_forgotten(tmp_path: Path):
    clock = FakeClock()
    fake = FakeClient(clock=clock)
    async with running_workers(fake=fake, clock=clock, root_dir=tmp_path) as env:
        await start_running(env, "p")
    await fake.delete(types_pb2.Pod, "p", grace_period_seconds=0)  # gone from the API
    async with running_workers(fake=fake, clock=clock, root_dir=tmp_path) as env:
        await wait_until(lambda: not env.node().runtimes)
    assert '"pods":[]' in (tmp_path / "checkpoints" / "n1.json").read_text()


async def test_hollow_nodes_keep_their_pods_apart():
    nodes = {f"h-{i}": {**ALLOCATABLE, "cpu": 1000} for i in range(3)}
    async with running_workers(nodes=nodes, options=PodWorkerOptions(workers=2)) as env:
        for i in range(3):
            await env.fake.create(pod(f"a{i}", cpu="1", node=f"h-{i}"))
        await env.fake.create(pod("extra", cpu="1", node="h-1"))
        await advance(env.clock, 1)
        for i in range(3):
            assert await env.phase(f"a{i}") == "Running"
        assert (await env.pod("extra")).status.reason == "OutOfcpu"
        assert [len(env.node(f"h-{i}").runtimes) for i in range(3)] == [1, 2, 1]


async def test_a_stale_checkpoint_never_counts_against_pods_found_at_start(tmp_path: Path):
    clock = FakeClock()
    fake = FakeClient(clock=clock)
    async with running_workers(fake=fake, clock=clock, root_dir=tmp_path) as env:
        await start_running(env, "old", cpu="4")
    await fake.delete(types_pb2.Pod, "old", grace_period_seconds=0)  # gone from the API
    await fake.create(pod("new", cpu="4"))  # bound while the kubelet was down
    async with running_workers(fake=fake, clock=clock, root_dir=tmp_path) as env:
        await advance(env.clock, 1)
        assert await env.phase("new") == "Running"


async def test_a_node_added_at_run_time_restores_its_pods_and_a_removed_one_is_let_go(
    tmp_path: Path,
):
    """--node-control: a node added to running workers starts as the nodes of the start do
    (its checkpoint restored, restored pods the API no longer has forgotten, the pods given
    admitted); once removed, its pods are no longer synced."""
    clock = FakeClock()
    fake = FakeClient(clock=clock)
    two = {"n1": ALLOCATABLE, "n2": ALLOCATABLE}
    async with running_workers(fake=fake, clock=clock, root_dir=tmp_path, nodes=two) as env:
        await env.fake.create(pod("keep", node="n2"))
        await env.fake.create(pod("gone", node="n2"))
        await wait_running(env, "keep")
        await wait_running(env, "gone")
    await fake.delete(types_pb2.Pod, "gone", grace_period_seconds=0)
    async with running_workers(fake=fake, clock=clock, root_dir=tmp_path) as env:
        keep = await env.pod("keep")
        fake.clear_actions()
        env.workers.add_node(NodePods("n2", ALLOCATABLE, Checkpoint(tmp_path, "n2")), [keep])
        await settle()
        runtimes = env.node("n2").runtimes
        assert [rt.key for rt in runtimes.values()] == ["default/keep"]
        assert runtimes[keep.metadata.uid].state == PodState.RUNNING
        assert "update_status" not in fake.verbs("pods")  # restored, not started again
        await env.fake.create(pod("late", node="n2"))
        await wait_running(env, "late")

        env.workers.remove_node("n2")
        assert "n2" not in env.workers.nodes
        await env.fake.create(pod("after", node="n2"))
        await advance(env.clock, 2)
        written = [
            a.object.metadata.name
            for a in fake.actions
            if a.verb == "update_status" and isinstance(a.object, types_pb2.Pod)
        ]
        assert "after" not in written  # never admitted: no kubelet runs n2 here any more
