"""WorkloadWithJob (KEP-5547, 1.36): the names of a Job's Workload and PodGroup as upstream's
computeWorkloadName and computePodGroupName, the gang-eligibility rules, the Indexed pods'
completion indexes, and the Job controller against the fake client creating the Workload and
PodGroup before the pods, whose spec.schedulingGroup names the group."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import anyio
import pytest

from controllermanager.job.indexed_job_utils import (
    completion_index,
    indexed_template,
    indexes_to_create,
    pod_generate_name_with_index,
)
from controllermanager.job.job_controller import JobController
from controllermanager.job.scheduling_manager import (
    build_pod_group_template_1_37,
    compute_pod_group_name,
    compute_workload_name,
    gang_min_count,
    is_gang_scheduling_eligible,
    is_new_job,
    owning_job_key,
    should_manage_workload_for_job,
)
from kemu.api.v1 import types_pb2
from kemu.client.fake import FakeClient
from kemu.client.informer import InformerFactory
from kemu.component.clock import FakeClock
from kemu.component.featuregate import GENERIC_WORKLOAD, WORKLOAD_WITH_JOB, FeatureGates
from kemu.component.strategy_options import strategy_options
from kemu.component.version import Version
from kemu.machinery import batch
from kemu.machinery.apps import fnv32a, safe_encode
from kemu.machinery.strategy import STRATEGIES
from kemu.testing.builders import make_job, make_pod
from kemu.testing.fake_time import settle, wait_until

pytestmark = pytest.mark.anyio


def test_fnv32a_is_go_s_fnv_new32a() -> None:
    # The FNV-1a reference vectors (hash/fnv's tests): "" and "a".
    assert fnv32a(b"") == 0x811C9DC5
    assert fnv32a(b"a") == 0xE40C292C


def test_the_workload_name_hashes_the_spew_dump_of_the_job_uid() -> None:
    digest = safe_encode(str(fnv32a(b'(types.UID)"0e2a4d6c-1111-4222-8333-944455556666"')))
    name = compute_workload_name("train", "0e2a4d6c-1111-4222-8333-944455556666")
    assert name == f"train-{digest}"
    assert name == "train-594f7c8754"  # Sum32 1509374310
    assert compute_workload_name("train", "other-uid") != name
    long = compute_workload_name("j" * 300, "u")
    digest = long.rsplit("-", 1)[1]
    assert len(long) == 253 and long == "j" * (253 - len(digest) - 1) + "-" + digest


@pytest.mark.parametrize(
    ("workload", "template", "kept"),
    [
        ("my-workload", "my-template", lambda room: (11, 11)),
        ("w" * 250, "tpl", lambda room: (room - 3, 3)),  # the template fits its half
        ("wl", "t" * 250, lambda room: (2, room - 2)),  # the workload name fits its half
        # both long: half each, the workload name gets the odd character
        ("w" * 200, "t" * 200, lambda room: (room - room // 2, room // 2)),
    ],
)
def test_the_pod_group_name_cuts_the_longer_part(
    workload: str, template: str, kept: Callable[[int], tuple[int, int]]
) -> None:
    name = compute_pod_group_name(workload, template)
    digest = safe_encode(str(fnv32a((workload + template).encode())))
    kept_workload, kept_template = kept(253 - len(digest) - 2)
    assert name == f"{workload[:kept_workload]}-{template[:kept_template]}-{digest}"
    assert len(name) <= 253
    assert compute_pod_group_name(workload, template + "x") != name


def _indexed(parallelism: int, completions: int) -> types_pb2.Job:
    job = (
        make_job("train").manual_selector().completions(completions).parallelism(parallelism).obj()
    )
    job.spec.completion_mode = batch.INDEXED
    return job


def _owned_by_a_cron_job(job: types_pb2.Job) -> types_pb2.Job:
    job.metadata.owner_references.add(
        api_version="batch/v1", kind="CronJob", name="nightly", uid="cj-uid", controller=True
    )
    return job


def _opted_out(job: types_pb2.Job) -> types_pb2.Job:
    job.spec.template.spec.scheduling_group.pod_group_name = "mine"
    return job


def test_gang_eligibility() -> None:
    assert is_gang_scheduling_eligible(_indexed(3, 3))
    assert not is_gang_scheduling_eligible(_indexed(1, 1))  # parallelism must exceed 1
    assert not is_gang_scheduling_eligible(_indexed(3, 4))  # completions == parallelism
    non_indexed = _indexed(3, 3)
    non_indexed.spec.completion_mode = batch.NON_INDEXED
    assert not is_gang_scheduling_eligible(non_indexed)
    opted_out = _indexed(3, 3)
    opted_out.spec.template.spec.scheduling_group.pod_group_name = "mine"
    assert not is_gang_scheduling_eligible(opted_out)


def test_objects_queue_the_job_that_owns_them() -> None:
    meta = types_pb2.ObjectMeta(namespace="ns")
    meta.owner_references.add(api_version="apps/v1", kind="Job", name="x")
    assert owning_job_key(meta) is None
    meta.owner_references.add(api_version="batch/v1", kind="Job", name="train")
    assert owning_job_key(meta) == "ns/train"


def test_indexed_pods_carry_their_index() -> None:
    template = _indexed(3, 3).spec.template
    out = indexed_template(template, "train", 2)
    assert out.metadata.annotations[batch.JOB_COMPLETION_INDEX_ANNOTATION] == "2"
    assert out.metadata.labels[batch.JOB_COMPLETION_INDEX_ANNOTATION] == "2"
    assert out.spec.hostname == "train-2"
    env = [e for e in out.spec.containers[0].env if e.name == "JOB_COMPLETION_INDEX"]
    assert len(env) == 1
    assert env[0].value_from.field_ref.field_path == (
        "metadata.annotations['batch.kubernetes.io/job-completion-index']"
    )
    assert not template.spec.hostname  # a copy
    assert pod_generate_name_with_index("train", 2) == "train-2-"
    assert pod_generate_name_with_index("j" * 60, 12) == "j" * 54 + "-12-"


def test_the_lowest_free_indexes_are_created() -> None:
    def pod(index: int, phase: str) -> types_pb2.Pod:
        p = make_pod(f"p{index}").obj()
        p.metadata.annotations[batch.JOB_COMPLETION_INDEX_ANNOTATION] = str(index)
        p.status.phase = phase
        return p

    pods = [pod(0, "Succeeded"), pod(1, "Failed"), pod(2, "Running")]
    assert completion_index(pods[2]) == 2
    assert indexes_to_create(5, pods, 2) == [1, 3]
    assert indexes_to_create(3, pods, 5) == [1]


def _gates(minor: int, *, workload_with_job: bool) -> FeatureGates:
    return FeatureGates.for_version(
        Version(1, minor), {GENERIC_WORKLOAD: True, WORKLOAD_WITH_JOB: workload_with_job}
    )


@asynccontextmanager
async def running(fake: FakeClient, clock: FakeClock, gates: FeatureGates) -> AsyncIterator[None]:
    informers = InformerFactory(fake, clock=clock)
    jc = JobController(fake, informers, clock, gates=gates)
    async with anyio.create_task_group() as tg:
        informers.start(tg)
        await informers.wait_for_cache_sync()
        tg.start_soon(jc.run)
        yield
        tg.cancel_scope.cancel()


def objects(fake: FakeClient, resource: str) -> list[object]:
    return [o for (r, _, _), o in fake._objects.items() if r == resource]


async def test_a_gang_job_gets_its_workload_and_pod_group_before_its_pods() -> None:
    clock = FakeClock()
    fake = FakeClient(_indexed(3, 3), clock=clock)
    async with running(fake, clock, _gates(36, workload_with_job=True)):
        await wait_until(lambda: len(objects(fake, "pods")) == 3)
        job = fake._objects[("jobs", "default", "train")]
        assert isinstance(job, types_pb2.Job)
        [wl] = objects(fake, "workloads")
        [pg] = objects(fake, "podgroups")
        assert isinstance(wl, types_pb2.Workload) and isinstance(pg, types_pb2.PodGroup)
        assert wl.metadata.name == compute_workload_name("train", job.metadata.uid)
        [owner] = wl.metadata.owner_references
        assert (owner.kind, owner.name, owner.controller) == ("Job", "train", True)
        assert (wl.spec.controller_ref.api_group, wl.spec.controller_ref.kind) == ("batch", "Job")
        [template] = wl.spec.pod_group_templates
        assert template.name == "train-worker-0"
        assert template.scheduling_policy.gang.min_count == 3
        assert pg.metadata.name == compute_pod_group_name(wl.metadata.name, "train-worker-0")
        assert [(r.kind, r.controller) for r in pg.metadata.owner_references] == [
            ("Job", True),
            ("Workload", False),
        ]
        assert pg.spec.workload_ref.workload_name == wl.metadata.name
        assert pg.spec.workload_ref.template_name == "train-worker-0"
        assert pg.spec.scheduling_policy.gang.min_count == 3
        pods = [p for p in objects(fake, "pods") if isinstance(p, types_pb2.Pod)]
        assert {p.spec.scheduling_group.pod_group_name for p in pods} == {pg.metadata.name}
        assert sorted(completion_index(p) for p in pods) == [0, 1, 2]  # type: ignore[type-var]
        assert all(p.metadata.name.startswith(f"train-{completion_index(p)}-") for p in pods)
        reasons = {e.reason for e in objects(fake, "events") if isinstance(e, types_pb2.Event)}
        assert {"WorkloadCreated", "PodGroupCreated"} <= reasons


@pytest.mark.parametrize(
    ("job", "gates"),
    [
        (_indexed(3, 3), _gates(36, workload_with_job=False)),
        (_indexed(1, 1), _gates(36, workload_with_job=True)),
        (_indexed(2, 4), _gates(36, workload_with_job=True)),
        (_owned_by_a_cron_job(_indexed(2, 2)), _gates(37, workload_with_job=True)),
        (_opted_out(_indexed(2, 2)), _gates(37, workload_with_job=True)),
    ],
)
async def test_other_jobs_get_none(job: types_pb2.Job, gates: FeatureGates) -> None:
    clock = FakeClock()
    fake = FakeClient(job, clock=clock)
    async with running(fake, clock, gates):
        await wait_until(lambda: len(objects(fake, "pods")) == job.spec.parallelism)
        await settle()
        assert not objects(fake, "workloads") and not objects(fake, "podgroups")
        pods = [p for p in objects(fake, "pods") if isinstance(p, types_pb2.Pod)]
        own = job.spec.template.spec  # the user's own group, if any, is kept
        assert all(p.spec.scheduling_group == own.scheduling_group for p in pods)


def test_1_37_manages_every_job_without_a_parent_or_its_own_group() -> None:
    assert should_manage_workload_for_job(make_job("plain").obj())
    assert not should_manage_workload_for_job(_owned_by_a_cron_job(make_job("child").obj()))
    assert not should_manage_workload_for_job(_opted_out(make_job("own").obj()))


def test_1_37_creates_for_a_new_job_only() -> None:
    job = make_job("train").obj()
    assert is_new_job(job, has_pods=False)
    assert not is_new_job(job, has_pods=True)
    started = make_job("train").obj()
    started.status.start_time.seconds = 1
    assert not is_new_job(started, has_pods=False)
    failed = make_job("train").obj()
    failed.status.failed = 1
    assert not is_new_job(failed, has_pods=False)
    suspended = make_job("train").obj()
    suspended.status.conditions.add(type=batch.SUSPENDED, status="False")
    assert not is_new_job(suspended, has_pods=False)


def test_1_37_compiles_spec_scheduling_basic_by_default() -> None:
    job = make_job("train").parallelism(4).obj()
    template = build_pod_group_template_1_37(job)
    assert template.name == "train-pgt-0"
    assert template.scheduling_policy.HasField("basic")
    assert not template.scheduling_policy.HasField("gang")
    assert gang_min_count(job) is None
    job.spec.scheduling.scheduling_policy.gang.SetInParent()
    job.spec.scheduling.scheduling_constraints.topology.add(key="topology.kubernetes.io/rack")
    job.spec.scheduling.disruption_mode.all.SetInParent()
    job.spec.scheduling.resource_claims.add(name="gpus", resource_claim_template_name="gpu")
    template = build_pod_group_template_1_37(job)
    assert template.scheduling_policy.gang.min_count == 4  # the parallelism
    assert [c.key for c in template.scheduling_constraints.topology] == [
        "topology.kubernetes.io/rack"
    ]
    assert template.disruption_mode.HasField("all")
    [claim] = template.resource_claims
    assert (claim.name, claim.resource_claim_template_name) == ("gpus", "gpu")
    assert not claim.HasField("resource_claim_name")
    job.spec.scheduling.scheduling_policy.gang.min_count = 2
    assert build_pod_group_template_1_37(job).scheduling_policy.gang.min_count == 2


async def test_1_37_every_job_gets_a_basic_workload_and_pod_group() -> None:
    clock = FakeClock()
    plain = make_job("train").manual_selector().completions(2).parallelism(2).obj()
    fake = FakeClient(plain, clock=clock)
    async with running(fake, clock, _gates(37, workload_with_job=True)):
        await wait_until(lambda: len(objects(fake, "pods")) == 2)
        [wl] = objects(fake, "workloads")
        [pg] = objects(fake, "podgroups")
        assert isinstance(wl, types_pb2.Workload) and isinstance(pg, types_pb2.PodGroup)
        [template] = wl.spec.pod_group_templates
        assert template.name == "train-pgt-0"
        assert template.scheduling_policy.HasField("basic")
        assert pg.spec.scheduling_policy.HasField("basic")
        assert pg.spec.workload_ref.template_name == "train-pgt-0"
        pods = [p for p in objects(fake, "pods") if isinstance(p, types_pb2.Pod)]
        assert {p.spec.scheduling_group.pod_group_name for p in pods} == {pg.metadata.name}
        notes = {e.message for e in objects(fake, "events") if isinstance(e, types_pb2.Event)}
        assert f"Created Workload {wl.metadata.name} for Job train" in notes
        assert f"Created PodGroup {pg.metadata.name} for Job train" in notes


async def test_1_37_a_gang_follows_the_job_s_parallelism() -> None:
    clock = FakeClock()
    gang = make_job("train").manual_selector().completions(3).parallelism(3).obj()
    gang.spec.scheduling.scheduling_policy.gang.SetInParent()
    fake = FakeClient(gang, clock=clock)
    async with running(fake, clock, _gates(37, workload_with_job=True)):
        await wait_until(lambda: len(objects(fake, "pods")) == 3)

        def min_counts() -> tuple[int, int]:
            [wl] = objects(fake, "workloads")
            [pg] = objects(fake, "podgroups")
            assert isinstance(wl, types_pb2.Workload) and isinstance(pg, types_pb2.PodGroup)
            return (
                wl.spec.pod_group_templates[0].scheduling_policy.gang.min_count,
                pg.spec.scheduling_policy.gang.min_count,
            )

        assert min_counts() == (3, 3)
        # A merge patch, as `kubectl scale`/`patch` send: no resourceVersion to conflict with
        # the controller's own status writes (a get-then-update lost that race 1 in ~20).
        await fake.patch(types_pb2.Job, "train", {"spec": {"parallelism": 2}}, "default")
        await wait_until(lambda: min_counts() == (2, 2))


@pytest.mark.parametrize(
    ("minor", "workload_with_job", "kept"),
    [(36, True, False), (37, False, False), (37, True, True)],
)
def test_the_apiserver_keeps_spec_scheduling_only_where_it_exists(
    minor: int, workload_with_job: bool, kept: bool
) -> None:
    opts = strategy_options(_gates(minor, workload_with_job=workload_with_job))
    strategy = STRATEGIES["Job"]
    job = make_job("train").obj()
    job.spec.scheduling.scheduling_policy.basic.SetInParent()
    strategy.prepare_for_create(job, opts, 0.0)
    assert job.spec.HasField("scheduling") is kept
    stored = make_job("train").obj()
    stored.spec.scheduling.scheduling_policy.basic.SetInParent()
    updated = types_pb2.Job()
    updated.CopyFrom(stored)
    strategy.prepare_for_update(updated, stored, opts)
    assert updated.spec.HasField("scheduling")  # a stored Job that uses it keeps it
