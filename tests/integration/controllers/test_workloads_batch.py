"""Jobs and DaemonSets on real processes: etcd, an apiserver, the scheduler, three kubelets and
the controller-manager's job, daemonset, garbage collector and pod GC controllers.

Pods finish through the kubelet's simulated run duration (kubelet.kemu.io/run-duration, and
kubelet.kemu.io/exit-code for a failure). Bounds are checked on every recorded pod event: a
watch records every version of the workload's pods."""

from __future__ import annotations

import io
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import anyio
import pytest

from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.client.interface import DELETED
from kemu.ctl.main import run as kemuctl
from kemu.machinery import batch
from kemu.testing import Cluster, eventually, make_daemon_set, make_job, make_node
from kemu.testing.builders import DaemonSetBuilder
from kemu.testing.names import unique_name

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

NODES = ("bj-a", "bj-b", "bj-c")
NS = "default"
SHUTDOWN = "kubelet.kemu.io/shutdown-duration"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with Cluster(tmp_path_factory.mktemp("workloads-batch")) as c:
        c.start_etcd()
        c.start_apiserver()
        c.start_scheduler()
        for node in NODES:
            c.start_kubelet(
                node,
                capacity={"cpu": "8", "memory": "16Gi", "pods": "110"},
                extra_args=["--pod-startup-delay", "100ms", "--node-labels", f"bj={node}"],
            )
        c.start_controllermanager(
            extra_args=[
                "--controllers",
                "job,daemonset,garbagecollector,podgc",
                "--pod-gc-quarantine",
                "1s",
            ],
            name="kcm",
        )
        yield c


def _active(pod: types_pb2.Pod) -> bool:
    return pod.status.phase not in ("Succeeded", "Failed") and not pod.metadata.HasField(
        "deletion_timestamp"
    )


def _ready(pod: types_pb2.Pod) -> bool:
    return _active(pod) and any(
        c.type == "Ready" and c.status == "True" for c in pod.status.conditions
    )


@dataclass
class PodHistory:
    pods: dict[str, types_pb2.Pod] = field(default_factory=dict)
    created: set[str] = field(default_factory=set)
    max_active: int = 0
    min_ready_after: int | None = None  # the fewest ready pods once `watch_ready` was set
    watch_ready: bool = False

    def apply(self, typ: str, pod: types_pb2.Pod) -> None:
        uid = pod.metadata.uid
        self.created.add(uid)
        if typ == DELETED:
            self.pods.pop(uid, None)
        else:
            self.pods[uid] = pod
        self.max_active = max(self.max_active, sum(1 for p in self.pods.values() if _active(p)))
        if self.watch_ready:
            ready = sum(1 for p in self.pods.values() if _ready(p))
            self.min_ready_after = (
                ready if self.min_ready_after is None else min(self.min_ready_after, ready)
            )


@asynccontextmanager
async def recording(c: Client, selector: str) -> AsyncIterator[PodHistory]:
    history = PodHistory()
    started = anyio.Event()

    async def watch() -> None:
        async with c.watch(types_pb2.Pod, NS, label_selector=selector) as events:
            started.set()
            async for ev in events:
                history.apply(ev.type, ev.object)

    async with anyio.create_task_group() as tg:
        tg.start_soon(watch)
        with anyio.fail_after(10):
            await started.wait()
        yield history
        tg.cancel_scope.cancel()


async def ctl(cluster: Cluster, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    rc = await kemuctl(list(argv), out=out, err=err, environ={"KEMU_SERVER": cluster.server})
    return rc, out.getvalue(), err.getvalue()


def _condition(job: types_pb2.Job, type_: str) -> types_pb2.JobCondition | None:
    return batch.find_condition(job, type_)


async def _job_condition(c: Client, name: str, type_: str) -> types_pb2.Job:
    async def check() -> types_pb2.Job:
        job = await c.get(types_pb2.Job, name, NS)
        assert _condition(job, type_) is not None, job.status
        return job

    result: types_pb2.Job = await eventually(check, timeout=60)
    return result


# ---------------------------------------------------------------- Jobs


async def test_a_job_of_5_completions_runs_at_most_2_pods_at_a_time_and_completes(cluster):
    name = unique_name("pi")
    async with Client(cluster.server, timeout=10.0) as c:
        async with recording(c, f"batch.kubernetes.io/job-name={name}") as history:
            job = make_job(name).completions(5).parallelism(2).run_duration("300ms").obj()
            created = await c.create(job)
            uid = created.metadata.uid
            assert created.spec.selector.match_labels == {"batch.kubernetes.io/controller-uid": uid}
            done = await _job_condition(c, name, "Complete")
        st = done.status
        assert (st.succeeded, st.failed, st.active) == (5, 0, 0), st
        assert st.HasField("completion_time") and st.HasField("start_time")
        assert history.max_active <= 2, history.max_active
        assert len(history.created) == 5
        pods = (await c.list(types_pb2.Pod, NS, label_selector=f"job-name={name}")).items
        assert len(pods) == 5
        assert all(p.status.phase == "Succeeded" for p in pods)
        assert all(batch.JOB_TRACKING_FINALIZER not in p.metadata.finalizers for p in pods)
        rc, out, _ = await ctl(cluster, "get", "job", name)
        assert rc == 0
        assert out.splitlines()[0].split() == ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"]
        assert out.splitlines()[1].split()[:3] == [name, "Complete", "5/5"]


async def test_failing_pods_beyond_the_backoff_limit_fail_the_job(cluster):
    name = unique_name("fail")
    async with Client(cluster.server, timeout=10.0) as c:
        job = (
            make_job(name)
            .completions(4)
            .parallelism(2)
            .backoff_limit(1)
            .run_duration("200ms", exit_code=1)
            .obj()
        )
        await c.create(job)
        failed = await _job_condition(c, name, "Failed")
        cond = _condition(failed, "Failed")
        assert cond is not None and cond.reason == "BackoffLimitExceeded"
        assert failed.status.failed >= 2 and failed.status.succeeded == 0
        assert not failed.status.HasField("completion_time")


async def test_the_garbage_collector_deletes_a_jobs_pods_with_the_job(cluster):
    name = unique_name("gc")
    async with Client(cluster.server, timeout=10.0) as c:
        job = make_job(name).completions(4).parallelism(2)  # pods that never end
        await c.create(job.pod_annotation(SHUTDOWN, "100ms").obj())

        async def two_running() -> bool:
            pods = (await c.list(types_pb2.Pod, NS, label_selector=f"job-name={name}")).items
            assert sum(1 for p in pods if p.status.phase == "Running") == 2
            return True

        await eventually(two_running, timeout=30)
        await c.delete(types_pb2.Job, name, NS, propagation_policy="Background")

        async def gone() -> bool:
            pods = (await c.list(types_pb2.Pod, NS, label_selector=f"job-name={name}")).items
            assert pods == [], [p.metadata.name for p in pods]
            return True

        await eventually(gone, timeout=60)


async def test_a_job_deleted_without_a_policy_orphans_its_pods_kemuctl_delete_takes_them(cluster):
    """upstream jobStrategy.DefaultGarbageCollectionPolicy: a batch/v1 Job DELETE without
    propagationPolicy orphans (backwards compatibility): the pods stay, stripped of their
    owner reference and job-tracking finalizer. `kemuctl delete job`, as kubectl, sends
    propagationPolicy Background: the pods go with the Job."""
    orphaning, cascading = unique_name("orphaning"), unique_name("cascading")
    async with Client(cluster.server, timeout=10.0) as c:

        async def pods_of(name: str) -> list[types_pb2.Pod]:
            selector = f"job-name={name}"
            return list((await c.list(types_pb2.Pod, NS, label_selector=selector)).items)

        for name in (orphaning, cascading):
            job = make_job(name).completions(2).parallelism(2).pod_annotation(SHUTDOWN, "100ms")
            await c.create(job.obj())

        async def running() -> bool:
            for name in (orphaning, cascading):
                assert sum(p.status.phase == "Running" for p in await pods_of(name)) == 2
            return True

        await eventually(running, timeout=30)
        await c.delete(types_pb2.Job, orphaning, NS)
        rc, _, err = await ctl(cluster, "delete", "job", cascading)
        assert rc == 0, err

        async def settled() -> bool:
            assert await pods_of(cascading) == []
            left = await pods_of(orphaning)
            assert len(left) == 2 and all(p.status.phase == "Running" for p in left), left
            for p in left:
                assert not p.metadata.owner_references, p.metadata
                assert batch.JOB_TRACKING_FINALIZER not in p.metadata.finalizers, p.metadata
            jobs = [j.metadata.name for j in (await c.list(types_pb2.Job, NS)).items]
            assert orphaning not in jobs and cascading not in jobs, jobs
            return True

        await eventually(settled, timeout=60)
        for p in await pods_of(orphaning):
            await c.delete(types_pb2.Pod, p.metadata.name, NS)


# ---------------------------------------------------------------- DaemonSets


def _ds(name: str) -> DaemonSetBuilder:
    """A DaemonSet whose pods exit at once when deleted (a rolling update waits for them)."""
    return make_daemon_set(name).pod_annotation(SHUTDOWN, "100ms")


async def _ds_pods(c: Client, name: str) -> list[types_pb2.Pod]:
    return list((await c.list(types_pb2.Pod, NS, label_selector=f"app={name}")).items)


async def _nodes_of(c: Client, name: str, *, running: bool = True) -> list[str]:
    pods = [p for p in await _ds_pods(c, name) if _active(p)]
    if running:
        pods = [p for p in pods if p.status.phase == "Running"]
    return sorted(p.spec.node_name for p in pods)


async def test_a_daemon_set_runs_one_pod_per_eligible_node_and_follows_the_nodes(cluster):
    name = unique_name("agent")
    picky = unique_name("picky")
    async with Client(cluster.server, timeout=10.0) as c:
        tainted = make_node("bj-tainted").taint("dedicated", "x", "NoSchedule").obj()
        await c.create(tainted)
        await c.create(_ds(name).req(cpu="10m").obj())
        await c.create(_ds(picky).node_selector(bj="bj-b").obj())

        async def on_nodes(ds: str, nodes: list[str]) -> bool:
            assert await _nodes_of(c, ds) == nodes
            return True

        await eventually(lambda: on_nodes(name, sorted(NODES)), timeout=30)
        await eventually(lambda: on_nodes(picky, ["bj-b"]), timeout=30)
        pod = next(p for p in await _ds_pods(c, name) if p.spec.node_name == "bj-a")
        assert pod.metadata.labels["pod-template-generation"] == "1"
        assert pod.metadata.labels["controller-revision-hash"]

        # A deleted daemon pod is recreated on its node.
        await c.delete(types_pb2.Pod, pod.metadata.name, NS, grace_period_seconds=0)

        async def replaced() -> bool:
            pods = [p for p in await _ds_pods(c, name) if p.spec.node_name == "bj-a"]
            assert [p.status.phase for p in pods if _active(p)] == ["Running"]
            assert pod.metadata.uid not in {p.metadata.uid for p in pods}
            return True

        await eventually(replaced, timeout=30)

        # A node that joins later gets its pod; the status counts it.
        cluster.start_kubelet(
            "bj-d",
            capacity={"cpu": "8", "memory": "16Gi", "pods": "110"},
            extra_args=["--pod-startup-delay", "100ms", "--node-labels", "bj=bj-d"],
        )
        await eventually(lambda: on_nodes(name, sorted([*NODES, "bj-d"])), timeout=30)

        async def status() -> bool:
            st = (await c.get(types_pb2.DaemonSet, name, NS)).status
            assert (st.desired_number_scheduled, st.current_number_scheduled) == (4, 4), st
            assert (st.number_ready, st.number_available, st.updated_number_scheduled) == (
                4,
                4,
                4,
            ), st
            assert st.number_misscheduled == 0 and st.number_unavailable == 0, st
            return True

        await eventually(status, timeout=30)

        # A node without a kubelet gets a pod (bound, never running); when the node goes,
        # so does the pod (the pod GC).
        bare = make_node("bj-bare").capacity(cpu="4", memory="8Gi", pods="110").ready().obj()
        await c.create(bare)
        await eventually(lambda: _has_pod_on(c, name, "bj-bare"), timeout=30)
        await c.delete(types_pb2.Node, "bj-bare")

        async def gone_from_bare() -> bool:
            assert not await _has_pod_on(c, name, "bj-bare", check=False)
            return True

        await eventually(gone_from_bare, timeout=30)
        assert "bj-tainted" not in await _nodes_of(c, name, running=False)
        await c.delete(types_pb2.Node, "bj-tainted")
        rc, out, _ = await ctl(cluster, "get", "ds", name)
        assert out.splitlines()[0].split()[:7] == [
            "NAME",
            "DESIRED",
            "CURRENT",
            "READY",
            "UP-TO-DATE",
            "AVAILABLE",
            "NODE",
        ]
        for ds in (name, picky):
            await c.delete(types_pb2.DaemonSet, ds, NS)


async def _has_pod_on(c: Client, ds: str, node: str, *, check: bool = True) -> bool:
    found = any(p.spec.node_name == node and _active(p) for p in await _ds_pods(c, ds))
    if check:
        assert found, f"no pod of {ds} on {node}"
    return found


async def test_a_rolling_update_keeps_all_but_max_unavailable_pods_ready(cluster):
    name = unique_name("roll")
    async with Client(cluster.server, timeout=10.0) as c:
        await c.create(_ds(name).obj())

        async def all_ready(image: str) -> bool:
            ds = await c.get(types_pb2.DaemonSet, name, NS)
            st = ds.status
            assert st.observed_generation == ds.metadata.generation, st
            desired = st.desired_number_scheduled
            assert desired >= 3 and st.number_available == desired, st
            assert st.updated_number_scheduled == desired, st
            pods = [p for p in await _ds_pods(c, name) if _ready(p)]
            assert len(pods) == desired and {p.spec.containers[0].image for p in pods} == {image}
            return True

        await eventually(lambda: all_ready("registry.k8s.io/pause:3.10"), timeout=30)
        desired = (await c.get(types_pb2.DaemonSet, name, NS)).status.desired_number_scheduled
        async with recording(c, f"app={name}") as history:

            def replayed() -> bool:
                assert sum(1 for p in history.pods.values() if _ready(p)) == desired
                return True

            await eventually(replayed, timeout=10)  # the watch's initial events are in
            history.watch_ready = True
            await c.patch(
                types_pb2.DaemonSet,
                name,
                {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "v2"}]}}}},
                NS,
            )
            await eventually(lambda: all_ready("v2"), timeout=60)
        assert history.min_ready_after is not None
        assert history.min_ready_after >= desired - 1, (history.min_ready_after, desired)
        await c.delete(types_pb2.DaemonSet, name, NS)


async def test_the_controllers_survive_a_sigkill_without_surplus_pods(cluster):
    job_name = unique_name("kjob")
    ds_name = unique_name("kds")
    async with Client(cluster.server, timeout=10.0) as c:
        async with recording(c, f"batch.kubernetes.io/job-name={job_name}") as jobs:
            await c.create(_ds(ds_name).obj())
            await c.create(
                make_job(job_name).completions(8).parallelism(3).run_duration("1s").obj()
            )

            async def started() -> bool:
                job = await c.get(types_pb2.Job, job_name, NS)
                assert job.status.succeeded >= 2, job.status
                return True

            await eventually(started, timeout=30, interval=0.05)
            cluster.kill("kcm")
            cluster.restart("kcm")
            done = await _job_condition(c, job_name, "Complete")
        assert done.status.succeeded == 8 and done.status.failed == 0, done.status
        assert len(jobs.created) == 8, len(jobs.created)
        assert jobs.max_active <= 3

        async def one_per_node() -> bool:
            nodes = await _nodes_of(c, ds_name, running=False)
            assert len(nodes) == len(set(nodes)), nodes
            st = (await c.get(types_pb2.DaemonSet, ds_name, NS)).status
            assert st.desired_number_scheduled == len(nodes) == st.number_available, st
            return True

        await eventually(one_per_node, timeout=30)
        await c.delete(types_pb2.DaemonSet, ds_name, NS)


async def test_the_example_manifests_apply_complete_and_describe(cluster):
    from pathlib import Path

    examples = Path(__file__).parents[3] / "examples"
    rc, out, err = await ctl(cluster, "apply", "-f", str(examples / "job.yaml"))
    assert (rc, out) == (0, "job.batch/pi created\n"), err
    rc, out, err = await ctl(cluster, "apply", "-f", str(examples / "daemonset.yaml"))
    assert (rc, out) == (0, "daemonset.apps/node-agent created\n"), err
    for manifest, what in (
        ("job.yaml", "job.batch/pi"),
        ("daemonset.yaml", "daemonset.apps/node-agent"),
    ):
        rc, out, err = await ctl(cluster, "apply", "-f", str(examples / manifest))
        assert (rc, out) == (0, f"{what} unchanged\n"), (out, err)
    rc, out, err = await ctl(
        cluster, "wait", "job/pi", "--for=condition=Complete", "--timeout", "60s"
    )
    assert rc == 0, (out, err)
    rc, out, err = await ctl(cluster, "describe", "job", "pi")
    assert rc == 0 and "Complete" in out, (out, err)
    async with Client(cluster.server, timeout=10.0) as c:

        async def agents() -> bool:
            st = (await c.get(types_pb2.DaemonSet, "node-agent", NS)).status
            assert st.desired_number_scheduled >= 3, st
            assert st.number_available == st.desired_number_scheduled, st
            return True

        await eventually(agents, timeout=30)
    rc, out, err = await ctl(cluster, "get", "ds", "node-agent", "-o", "wide")
    assert rc == 0 and "node-agent" in out and "app=node-agent" in out, (out, err)
    for kind, name in (("job", "pi"), ("ds", "node-agent")):
        rc, _, err = await ctl(cluster, "delete", kind, name)
        assert rc == 0, err
