"""The controller-manager's part of pod groups on real processes at emulated 1.36 with
GenericWorkload and WorkloadWithJob on: etcd, an apiserver, a scheduler, two kubelets and the
controller-manager's job, garbage collector and podgroup-protection controllers. GangScheduling
stays off: the scheduler binds the members one by one, and nothing here waits for a gang.

Scenarios (docs/controller-manager.md, "Pod groups"):
- S-PGC-1: an Indexed Job of parallelism and completions 3 gets its Workload (one template
  `<job>-worker-0`, gang minCount 3) and PodGroup, named as upstream's computeWorkloadName and
  computePodGroupName, owned by the Job; its three pods name the PodGroup and carry indexes
  0, 1 and 2; the Job completes.
- S-PGC-2: deleting the Job (Background) collects its Workload and PodGroup with its pods.
- S-PGC-3: a PodGroup a running pod references holds scheduling.k8s.io/podgroup-protection;
  deleted, it stays (Terminating) until the pod has finished, then goes.
- S-PGC-4: a Job not eligible for gang scheduling (parallelism 1) gets neither.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from controllermanager.job.scheduling_manager import (
    compute_pod_group_name,
    compute_workload_name,
)
from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.machinery import batch
from kemu.machinery.errors import NotFound
from kemu.machinery.podgroups import POD_GROUP_PROTECTION_FINALIZER
from kemu.testing import Cluster, eventually, make_job
from kemu.testing.builders import make_pod
from kemu.testing.names import unique_name

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

NS = "default"
VERSION = "1.36"
GATES = {"GenericWorkload": True, "WorkloadWithJob": True}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with Cluster(tmp_path_factory.mktemp("pod-groups")) as c:
        c.start_etcd()
        c.start_apiserver(
            emulated_version=VERSION,
            feature_gates=GATES,
            runtime_config={"scheduling.k8s.io/v1alpha2": "true"},
        )
        c.start_scheduler(emulated_version=VERSION, feature_gates=GATES)
        for node in ("pg-a", "pg-b"):
            c.start_kubelet(
                node,
                capacity={"cpu": "8", "memory": "16Gi", "pods": "110"},
                emulated_version=VERSION,
                extra_args=["--pod-startup-delay", "100ms"],
            )
        c.start_controllermanager(
            emulated_version=VERSION,
            feature_gates=GATES,
            extra_args=["--controllers", "job,garbagecollector,podgroup-protection-controller"],
        )
        yield c


def _indexed_job(name: str, parallelism: int, run: str) -> types_pb2.Job:
    job = make_job(name).completions(parallelism).parallelism(parallelism).run_duration(run).obj()
    job.spec.completion_mode = batch.INDEXED
    return job


async def _workload_and_group(
    c: Client, job: types_pb2.Job
) -> tuple[types_pb2.Workload, types_pb2.PodGroup]:
    workload_name = compute_workload_name(job.metadata.name, job.metadata.uid)
    group_name = compute_pod_group_name(workload_name, f"{job.metadata.name}-worker-0")

    async def both() -> tuple[types_pb2.Workload, types_pb2.PodGroup] | None:
        try:
            return (
                await c.get(types_pb2.Workload, workload_name, NS),
                await c.get(types_pb2.PodGroup, group_name, NS),
            )
        except NotFound:
            return None

    result = await eventually(both, timeout=30)
    assert result is not None
    return result


async def _absent(
    c: Client, kind: type[types_pb2.Workload | types_pb2.PodGroup], name: str
) -> bool:
    try:
        await c.get(kind, name, NS)
    except NotFound:
        return True
    return False


async def _pods_of(c: Client, job_name: str) -> list[types_pb2.Pod]:
    return list(
        (
            await c.list(
                types_pb2.Pod, NS, label_selector=f"batch.kubernetes.io/job-name={job_name}"
            )
        ).items
    )


async def test_s_pgc_1_an_indexed_gang_job_gets_its_workload_and_pod_group(cluster):
    name = unique_name("gang")
    async with Client(cluster.server, timeout=10.0) as c:
        job = await c.create(_indexed_job(name, 3, "3s"))
        workload, group = await _workload_and_group(c, job)
        [template] = workload.spec.pod_group_templates
        assert template.name == f"{name}-worker-0"
        assert template.scheduling_policy.gang.min_count == 3
        assert workload.spec.controller_ref.kind == "Job"
        assert workload.spec.controller_ref.name == name
        assert [(r.kind, r.uid, r.controller) for r in workload.metadata.owner_references] == [
            ("Job", job.metadata.uid, True)
        ]
        assert [r.kind for r in group.metadata.owner_references] == ["Job", "Workload"]
        assert group.spec.workload_ref.workload_name == workload.metadata.name
        assert group.spec.scheduling_policy.gang.min_count == 3

        async def three_members() -> list[types_pb2.Pod]:
            pods = await _pods_of(c, name)
            assert len(pods) == 3, [p.metadata.name for p in pods]
            return pods

        pods = await eventually(three_members, timeout=30)
        assert {p.spec.scheduling_group.pod_group_name for p in pods} == {group.metadata.name}
        indexes = sorted(
            p.metadata.annotations[batch.JOB_COMPLETION_INDEX_ANNOTATION] for p in pods
        )
        assert indexes == ["0", "1", "2"]

        async def protected_while_running() -> bool:
            pg = await c.get(types_pb2.PodGroup, group.metadata.name, NS)
            assert POD_GROUP_PROTECTION_FINALIZER in pg.metadata.finalizers
            return True

        await eventually(protected_while_running, timeout=30)

        async def complete() -> bool:
            done = await c.get(types_pb2.Job, name, NS)
            assert batch.find_condition(done, batch.COMPLETE) is not None, done.status
            assert done.status.succeeded == 3
            return True

        await eventually(complete, timeout=60)


async def test_s_pgc_2_deleting_the_job_collects_its_workload_and_pod_group(cluster):
    name = unique_name("gone")
    async with Client(cluster.server, timeout=10.0) as c:
        job = await c.create(_indexed_job(name, 3, "1h"))
        workload, group = await _workload_and_group(c, job)

        async def running() -> bool:
            pods = await _pods_of(c, name)
            assert sum(1 for p in pods if p.status.phase == "Running") == 3
            return True

        await eventually(running, timeout=30)
        await c.delete(types_pb2.Job, name, NS, propagation_policy="Background")

        async def collected() -> bool:
            assert await _absent(c, types_pb2.Workload, workload.metadata.name)
            assert await _absent(c, types_pb2.PodGroup, group.metadata.name)
            assert await _pods_of(c, name) == []
            return True

        await eventually(collected, timeout=90)


async def test_s_pgc_3_a_pod_group_is_kept_while_a_member_runs(cluster):
    group_name = unique_name("pg")
    async with Client(cluster.server, timeout=10.0) as c:
        pg = types_pb2.PodGroup()
        pg.metadata.name = group_name
        pg.metadata.namespace = NS
        pg.spec.scheduling_policy.basic.SetInParent()
        await c.create(pg)
        member = make_pod(unique_name("member")).obj()
        member.metadata.annotations["kubelet.kemu.io/run-duration"] = "5s"
        member.spec.restart_policy = "Never"
        member.spec.scheduling_group.pod_group_name = group_name
        member = await c.create(member)

        async def running_and_protected() -> bool:
            pod = await c.get(types_pb2.Pod, member.metadata.name, NS)
            assert pod.status.phase == "Running", pod.status.phase
            got = await c.get(types_pb2.PodGroup, group_name, NS)
            assert POD_GROUP_PROTECTION_FINALIZER in got.metadata.finalizers
            return True

        await eventually(running_and_protected, timeout=30)
        await c.delete(types_pb2.PodGroup, group_name, NS)
        held = await c.get(types_pb2.PodGroup, group_name, NS)
        assert held.metadata.HasField("deletion_timestamp")
        pod = await c.get(types_pb2.Pod, member.metadata.name, NS)
        assert pod.status.phase == "Running"  # still held because the member still runs

        async def released() -> bool:
            assert await _absent(c, types_pb2.PodGroup, group_name)
            return True

        await eventually(released, timeout=30)
        done = await c.get(types_pb2.Pod, member.metadata.name, NS)
        assert done.status.phase == "Succeeded"


async def test_s_pgc_4_a_job_not_eligible_gets_no_pod_group(cluster):
    name = unique_name("solo")
    async with Client(cluster.server, timeout=10.0) as c:
        job = await c.create(_indexed_job(name, 1, "300ms"))

        async def complete() -> bool:
            done = await c.get(types_pb2.Job, name, NS)
            assert batch.find_condition(done, batch.COMPLETE) is not None, done.status
            return True

        await eventually(complete, timeout=60)
        [pod] = await _pods_of(c, name)
        assert not pod.spec.HasField("scheduling_group")
        workload_name = compute_workload_name(name, job.metadata.uid)
        assert await _absent(c, types_pb2.Workload, workload_name)
