"""The Job controller against the fake client: parallelism and completions, the tracking
finalizer and uncounted pods, backoffLimit, the pod-failure backoff, activeDeadlineSeconds,
suspend, and a restarted controller that counts nothing twice."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import anyio
import pytest

from controllermanager.job.job_controller import JobController
from kemu.api.v1 import types_pb2
from kemu.client.fake import FakeClient
from kemu.client.informer import InformerFactory
from kemu.component.clock import FakeClock
from kemu.machinery import batch
from kemu.machinery.owners import controller_of
from kemu.testing.builders import make_job
from kemu.testing.fake_time import advance, settle, wait_until

pytestmark = pytest.mark.anyio

FINALIZER = batch.JOB_TRACKING_FINALIZER


@asynccontextmanager
async def running(fake: FakeClient, clock: FakeClock) -> AsyncIterator[JobController]:
    informers = InformerFactory(fake, clock=clock)
    jc = JobController(fake, informers, clock)
    async with anyio.create_task_group() as tg:
        informers.start(tg)
        await informers.wait_for_cache_sync()
        tg.start_soon(jc.run)
        yield jc
        tg.cancel_scope.cancel()


def pods(fake: FakeClient) -> list[types_pb2.Pod]:
    return [o for (r, _, _), o in fake._objects.items() if r == "pods"]  # type: ignore[misc]


def active(fake: FakeClient) -> list[types_pb2.Pod]:
    return [
        p
        for p in pods(fake)
        if p.status.phase not in ("Succeeded", "Failed")
        and not p.metadata.HasField("deletion_timestamp")
    ]


def stored_pod(fake: FakeClient, pod: types_pb2.Pod) -> types_pb2.Pod:
    obj = fake._objects[("pods", "default", pod.metadata.name)]
    assert isinstance(obj, types_pb2.Pod)
    return obj


def job(fake: FakeClient, name: str = "pi") -> types_pb2.Job:
    obj = fake._objects[("jobs", "default", name)]
    assert isinstance(obj, types_pb2.Job)
    return obj


def condition(fake: FakeClient, type_: str, name: str = "pi") -> types_pb2.JobCondition | None:
    return batch.find_condition(job(fake, name), type_)


async def finish(fake: FakeClient, pod: types_pb2.Pod, phase: str) -> None:
    await fake.patch(
        types_pb2.Pod, pod.metadata.name, {"status": {"phase": phase}}, subresource="status"
    )


async def test_runs_completions_with_at_most_parallelism_pods_then_completes() -> None:
    clock = FakeClock()
    fake = FakeClient(
        make_job("pi").manual_selector().completions(5).parallelism(2).obj(), clock=clock
    )
    async with running(fake, clock):

        def has_active(n: int) -> Callable[[], bool]:
            return lambda: len(active(fake)) == n

        def has_succeeded(n: int) -> Callable[[], bool]:
            return lambda: job(fake).status.succeeded == n

        finished = 0
        while finished < 5:
            await wait_until(has_active(min(2, 5 - finished)))
            owner = job(fake)
            for pod in active(fake):
                assert FINALIZER in pod.metadata.finalizers
                ref = controller_of(pod)
                assert ref is not None and ref.uid == owner.metadata.uid and ref.kind == "Job"
            await finish(fake, active(fake)[0], "Succeeded")
            finished += 1
            await wait_until(has_succeeded(finished))
        await wait_until(lambda: condition(fake, "Complete") is not None)
        status = job(fake).status
        assert status.succeeded == 5 and status.active == 0 and status.failed == 0
        assert status.HasField("completion_time") and status.HasField("start_time")
        success = condition(fake, "SuccessCriteriaMet")
        assert success is not None and success.reason == "CompletionsReached"
        assert not status.uncounted_terminated_pods.succeeded
        assert all(FINALIZER not in p.metadata.finalizers for p in pods(fake))
        assert len(pods(fake)) == 5


async def test_backoff_limit_fails_the_job_and_deletes_its_active_pods() -> None:
    clock = FakeClock()
    spec = make_job("pi").manual_selector().completions(4).parallelism(3).backoff_limit(1)
    fake = FakeClient(spec.obj(), clock=clock)
    async with running(fake, clock):
        await wait_until(lambda: len(active(fake)) == 3)
        first, second, third = active(fake)
        await finish(fake, first, "Failed")
        await finish(fake, second, "Failed")
        await wait_until(lambda: condition(fake, "Failed") is not None)
        cond = condition(fake, "Failed")
        assert cond is not None and cond.reason == "BackoffLimitExceeded"
        assert cond.message == "Job has reached the specified backoff limit"
        target = condition(fake, "FailureTarget")
        assert target is not None and target.reason == "BackoffLimitExceeded"
        assert job(fake).status.failed == 3  # the deleted pod counts as failed
        assert not fake._objects.get(("pods", "default", third.metadata.name))
        assert not job(fake).status.HasField("completion_time")


async def test_a_failure_delays_the_replacement_by_the_pod_failure_backoff() -> None:
    clock = FakeClock()
    fake = FakeClient(make_job("pi").manual_selector().obj(), clock=clock)
    async with running(fake, clock):
        await wait_until(lambda: len(active(fake)) == 1)
        await finish(fake, active(fake)[0], "Failed")
        await wait_until(lambda: job(fake).status.failed == 1)
        await advance(clock, 8)
        assert active(fake) == []
        await advance(clock, 3)
        await wait_until(lambda: len(active(fake)) == 1)


async def test_active_deadline_fails_the_job() -> None:
    clock = FakeClock()
    fake = FakeClient(
        make_job("pi").manual_selector().parallelism(2).active_deadline_seconds(30).obj(),
        clock=clock,
    )
    async with running(fake, clock):
        await wait_until(lambda: len(active(fake)) == 1)
        await advance(clock, 31, step=5)
        await wait_until(lambda: condition(fake, "Failed") is not None)
        cond = condition(fake, "Failed")
        assert cond is not None and cond.reason == "DeadlineExceeded"
        assert pods(fake) == []


async def test_suspended_job_runs_nothing_until_resumed() -> None:
    clock = FakeClock()
    fake = FakeClient(make_job("pi").manual_selector().suspend().obj(), clock=clock)
    async with running(fake, clock):
        await wait_until(lambda: condition(fake, "Suspended") is not None)
        cond = condition(fake, "Suspended")
        assert cond is not None and (cond.status, cond.reason) == ("True", "JobSuspended")
        assert pods(fake) == [] and not job(fake).status.HasField("start_time")
        await fake.patch(types_pb2.Job, "pi", {"spec": {"suspend": False}})
        await wait_until(lambda: len(active(fake)) == 1)
        await wait_until(lambda: (c := condition(fake, "Suspended")) and c.status == "False")
        assert job(fake).status.HasField("start_time")
        await fake.patch(types_pb2.Job, "pi", {"spec": {"suspend": True}})
        await wait_until(lambda: active(fake) == [])


async def test_a_restarted_controller_counts_uncounted_pods_once() -> None:
    """The previous instance wrote a pod's uid to uncountedTerminatedPods and removed its
    finalizer, then died: the new one moves it into the counter, and does not count the pod
    again."""
    clock = FakeClock()
    spec = make_job("pi").manual_selector().completions(2).obj()
    fake = FakeClient(spec, clock=clock)
    owner = await fake.get(types_pb2.Job, "pi")
    done = types_pb2.Pod()
    done.metadata.name = "pi-done"
    done.metadata.namespace = "default"
    done.metadata.labels["app"] = "pi"
    done.metadata.owner_references.append(
        types_pb2.OwnerReference(
            api_version="batch/v1", kind="Job", name="pi", uid=owner.metadata.uid, controller=True
        )
    )
    done.spec.containers.add(name="c", image="x")
    done = await fake.create(done)
    await finish(fake, done, "Succeeded")
    owner.status.uncounted_terminated_pods.succeeded.append(done.metadata.uid)
    owner.status.start_time.GetCurrentTime()
    await fake.update_status(owner)
    async with running(fake, clock):
        await wait_until(lambda: job(fake).status.succeeded == 1)
        await settle()
        assert not job(fake).status.uncounted_terminated_pods.succeeded
        await wait_until(lambda: len(active(fake)) == 1)
        await finish(fake, active(fake)[0], "Succeeded")
        await wait_until(lambda: condition(fake, "Complete") is not None)
        assert job(fake).status.succeeded == 2


async def test_deleting_a_job_removes_the_finalizers_of_its_pods() -> None:
    clock = FakeClock()
    fake = FakeClient(
        make_job("pi").manual_selector().parallelism(2).completions(2).obj(), clock=clock
    )
    async with running(fake, clock):
        await wait_until(lambda: len(active(fake)) == 2)
        await fake.delete(types_pb2.Job, "pi", propagation_policy="Background")
        await wait_until(lambda: all(FINALIZER not in p.metadata.finalizers for p in pods(fake)))


async def test_a_stale_job_in_the_informer_does_not_make_a_surplus_pod() -> None:
    """The Job informer lags behind the pods': a sync that counted a succeeded pod (its uid
    written to uncountedTerminatedPods, then its finalizer removed, then the counter) is
    followed by syncs that see the pod without its finalizer but the Job as it was before:
    counting from that Job would miss the success and start a pod too many, which is deleted
    at completion and counted failed. The controller waits until it sees its own write."""
    clock = FakeClock()
    fake = FakeClient(
        make_job("pi").manual_selector().completions(2).parallelism(2).obj(), clock=clock
    )
    async with running(fake, clock):
        await wait_until(lambda: len(active(fake)) == 2)
        await settle()
        first, second = active(fake)
        fake.hold_watches("jobs")
        await finish(fake, first, "Succeeded")
        await wait_until(lambda: job(fake).status.succeeded == 1)
        await wait_until(lambda: FINALIZER not in stored_pod(fake, first).metadata.finalizers)
        await settle()
        assert len(pods(fake)) == 2, [p.metadata.name for p in pods(fake)]
        fake.release_watches("jobs")
        await settle()
        await finish(fake, second, "Succeeded")
        await wait_until(lambda: condition(fake, "Complete") is not None)
        status = job(fake).status
        assert (status.succeeded, status.failed, status.active) == (2, 0, 0), status
        assert len(pods(fake)) == 2
