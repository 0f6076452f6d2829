"""The Job controller's Workload and PodGroup at emulated 1.37 (WorkloadWithJob with
Job.spec.scheduling) on real processes: etcd, an apiserver, a scheduler, a kubelet and the
controller-manager's job, garbage collector and podgroup-protection controllers, GenericWorkload
and WorkloadWithJob on. Nothing here waits for a gang to be placed together.

Scenarios (docs/controller-manager.md, "Pod groups"):
- S-PGC-5: a Job without spec.scheduling gets a Basic Workload (template `<job>-pgt-0`) and
  PodGroup, its pods name the group, and it completes.
- S-PGC-6: a Job whose spec.scheduling asks for a gang without minCount gets a gang of its
  parallelism; the apiserver stores spec.scheduling.
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
from kemu.testing import Cluster, eventually, make_job
from kemu.testing.names import unique_name

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

NS = "default"
VERSION = "1.37"
GATES = {"GenericWorkload": True, "WorkloadWithJob": True}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with Cluster(tmp_path_factory.mktemp("pod-groups-1-37")) as c:
        c.start_etcd()
        c.start_apiserver(
            emulated_version=VERSION,
            feature_gates=GATES,
            runtime_config={"scheduling.k8s.io/v1beta1": "true"},
        )
        c.start_scheduler(emulated_version=VERSION, feature_gates=GATES)
        c.start_kubelet(
            "pg37-a",
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


async def _objects(c: Client, job: types_pb2.Job) -> tuple[types_pb2.Workload, types_pb2.PodGroup]:
    workload_name = compute_workload_name(job.metadata.name, job.metadata.uid)
    group_name = compute_pod_group_name(workload_name, f"{job.metadata.name}-pgt-0")

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


async def test_s_pgc_5_a_job_without_spec_scheduling_gets_a_basic_pod_group(cluster):
    name = unique_name("basic")
    async with Client(cluster.server, timeout=10.0) as c:
        job = await c.create(make_job(name).completions(2).parallelism(2).run_duration("1s").obj())
        workload, group = await _objects(c, job)
        [template] = workload.spec.pod_group_templates
        assert template.name == f"{name}-pgt-0"
        assert template.scheduling_policy.HasField("basic")
        assert group.spec.scheduling_policy.HasField("basic")
        assert group.spec.workload_ref.template_name == f"{name}-pgt-0"

        async def complete() -> bool:
            done = await c.get(types_pb2.Job, name, NS)
            assert batch.find_condition(done, batch.COMPLETE) is not None, done.status
            return True

        await eventually(complete, timeout=60)
        selector = f"batch.kubernetes.io/job-name={name}"
        pods = (await c.list(types_pb2.Pod, NS, label_selector=selector)).items
        assert len(pods) == 2
        assert {p.spec.scheduling_group.pod_group_name for p in pods} == {group.metadata.name}


async def test_s_pgc_6_a_gang_without_min_count_gets_the_parallelism(cluster):
    name = unique_name("gang")
    async with Client(cluster.server, timeout=10.0) as c:
        spec = make_job(name).completions(3).parallelism(3).run_duration("1s").obj()
        spec.spec.scheduling.scheduling_policy.gang.SetInParent()
        job = await c.create(spec)
        assert job.spec.scheduling.scheduling_policy.HasField("gang")
        workload, group = await _objects(c, job)
        assert workload.spec.pod_group_templates[0].scheduling_policy.gang.min_count == 3
        assert group.spec.scheduling_policy.gang.min_count == 3
