"""The CronJob controller against the fake client and a fake clock: Jobs at their schedule
times, concurrency policies, suspend, missed schedules, history limits, time zones."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from controllermanager import cronjob_utils as cu
from controllermanager.cronjob import CronJobController, CronJobOptions
from kemu.api.v1 import types_pb2
from kemu.client.fake import FakeClient
from kemu.client.informer import InformerFactory
from kemu.component.clock import FakeClock
from kemu.machinery import convert, kinds
from kemu.machinery.convert import timestamp
from kemu.machinery.cron import parse_standard
from kemu.testing.fake_time import advance, settle, wait_until

pytestmark = pytest.mark.anyio

# FakeClock's default: 2023-11-14T22:13:20Z, 100 s before 22:15.
START = 1_700_000_000.0
T_2215 = 1_700_000_100.0


def make_cronjob(
    name: str = "tick", schedule: str = "*/5 * * * *", **spec: Any
) -> types_pb2.CronJob:
    body: dict[str, Any] = {
        "schedule": schedule,
        "jobTemplate": {
            "metadata": {"labels": {"app": name}},
            "spec": {
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [{"name": "c", "image": "busybox"}],
                    }
                }
            },
        },
        **spec,
    }
    obj = convert.from_dict(
        kinds.BY_KIND["CronJob"],
        {"metadata": {"name": name, "namespace": "default"}, "spec": body},
    )
    assert isinstance(obj, types_pb2.CronJob)
    return obj


@asynccontextmanager
async def running(
    fake: FakeClient, clock: FakeClock, options: CronJobOptions | None = None
) -> AsyncIterator[CronJobController]:
    informers = InformerFactory(fake, clock=clock)
    cjc = CronJobController(fake, informers, clock, options=options)
    async with anyio.create_task_group() as tg:
        informers.start(tg)
        await informers.wait_for_cache_sync()
        tg.start_soon(cjc.run)
        yield cjc
        tg.cancel_scope.cancel()


def jobs(fake: FakeClient) -> dict[str, types_pb2.Job]:
    return {
        name: obj
        for (resource, _, name), obj in sorted(fake._objects.items())
        if resource == "jobs" and isinstance(obj, types_pb2.Job)
    }


def stored(fake: FakeClient, name: str = "tick") -> types_pb2.CronJob:
    obj = fake._objects[("cronjobs", "default", name)]
    assert isinstance(obj, types_pb2.CronJob)
    return obj


def events(fake: FakeClient, reason: str) -> list[str]:
    return [
        obj.message
        for (resource, _, _), obj in fake._objects.items()
        if resource == "events" and isinstance(obj, types_pb2.Event) and obj.reason == reason
    ]


def name_at(t: float, cronjob: str = "tick") -> str:
    return f"{cronjob}-{int(t) // 60}"


async def finish(fake: FakeClient, name: str, condition: str, start: float, end: float) -> None:
    status: dict[str, Any] = {
        "startTime": timestamp(start).ToJsonString(),
        "conditions": [{"type": condition, "status": "True"}],
    }
    if condition == "Complete":
        status["completionTime"] = timestamp(end).ToJsonString()
    await fake.patch(types_pb2.Job, name, {"status": status}, "default", subresource="status")


# ---------------------------------------------------------------- schedule arithmetic


def test_missed_schedules_are_counted_and_bounded_by_the_starting_deadline() -> None:
    schedule = parse_standard("* * * * *")
    cj = make_cronjob(schedule="* * * * *")
    cj.metadata.creation_timestamp.CopyFrom(timestamp(START - 3 * 3600))
    found = cu.most_recent_schedule_time(cj, START, schedule, starting_deadline=False)
    assert found.missed is cu.Missed.MANY  # 180 > 100: TooManyMissedTimes
    assert found.most_recent == 1_699_999_980.0  # 22:13:00, the latest not after now
    cj.spec.starting_deadline_seconds = 200
    scheduled, missed = cu.next_schedule_time(cj, START, schedule)
    assert (scheduled, missed) == (1_699_999_980.0, cu.Missed.FEW)
    # once started, the next sync is 100 ms after the next minute
    cj.status.last_schedule_time.CopyFrom(timestamp(1_699_999_980.0))
    assert cu.next_schedule_time(cj, START, schedule) == (None, cu.Missed.NONE)
    assert cu.next_schedule_delay(cj, START, schedule) == pytest.approx(40.1)


def test_job_names_and_the_scheduled_timestamp_annotation() -> None:
    cj = make_cronjob(timeZone="Asia/Tokyo")
    cj.metadata.uid = "uid-1"
    job = cu.job_from_template(cj, T_2215, scheduled_annotation=True, time_zones=True)
    assert job.metadata.name == "tick-28333335"
    assert (
        job.metadata.annotations[cu.SCHEDULED_TIMESTAMP_ANNOTATION] == "2023-11-15T07:15:00+09:00"
    )
    assert dict(job.metadata.labels) == {"app": "tick"}
    (ref,) = job.metadata.owner_references
    assert (ref.kind, ref.name, ref.uid, ref.controller) == ("CronJob", "tick", "uid-1", True)
    utc = cu.job_from_template(cj, T_2215, scheduled_annotation=True, time_zones=False)
    assert utc.metadata.annotations[cu.SCHEDULED_TIMESTAMP_ANNOTATION] == "2023-11-14T22:15:00Z"
    old = cu.job_from_template(cj, T_2215, scheduled_annotation=False, time_zones=True)
    assert cu.SCHEDULED_TIMESTAMP_ANNOTATION not in old.metadata.annotations


# ---------------------------------------------------------------- the controller


async def test_a_job_at_each_schedule_time_and_none_before() -> None:
    clock = FakeClock(now=START)
    fake = FakeClient(make_cronjob(), clock=clock)
    async with running(fake, clock):
        await advance(clock, 99, step=3)
        assert jobs(fake) == {}
        await advance(clock, 1.5, step=0.5)
        await wait_until(lambda: list(jobs(fake)) == [name_at(T_2215)])
        job = jobs(fake)[name_at(T_2215)]
        assert job.spec.template.spec.containers[0].image == "busybox"
        await wait_until(lambda: len(stored(fake).status.active) == 1)
        status = stored(fake).status
        assert status.last_schedule_time.seconds == int(T_2215)
        assert status.active[0].name == name_at(T_2215)
        await wait_until(lambda: events(fake, "SuccessfulCreate"))  # (recorded by a task)
        assert events(fake, "SuccessfulCreate") == [f"Created job {name_at(T_2215)}"]
        # Allow (the default): the next time starts another while the first runs.
        await advance(clock, 300, step=5)
        await wait_until(lambda: len(jobs(fake)) == 2)
        assert name_at(T_2215 + 300) in jobs(fake)


async def test_a_finished_job_leaves_the_active_list_and_sets_last_successful_time() -> None:
    clock = FakeClock(now=START)
    fake = FakeClient(make_cronjob(), clock=clock)
    async with running(fake, clock):
        await advance(clock, 101, step=3)
        await wait_until(lambda: len(stored(fake).status.active) == 1)
        await finish(fake, name_at(T_2215), "Complete", T_2215, T_2215 + 30)
        await wait_until(lambda: not stored(fake).status.active)
        assert stored(fake).status.last_successful_time.seconds == int(T_2215 + 30)
        await wait_until(lambda: events(fake, "SawCompletedJob"))  # (recorded by a task)
        assert events(fake, "SawCompletedJob") == [
            f"Saw completed job: {name_at(T_2215)}, condition: Complete"
        ]


async def test_forbid_skips_a_time_while_a_job_is_active() -> None:
    clock = FakeClock(now=START)
    fake = FakeClient(make_cronjob(concurrencyPolicy="Forbid"), clock=clock)
    async with running(fake, clock):
        await advance(clock, 101, step=3)
        await wait_until(lambda: len(stored(fake).status.active) == 1)
        await advance(clock, 300, step=5)
        await wait_until(lambda: events(fake, "JobAlreadyActive"))
        assert list(jobs(fake)) == [name_at(T_2215)]
        # Once it finishes, the time it skipped (the most recent unmet one) starts at once.
        await finish(fake, name_at(T_2215), "Complete", T_2215, T_2215 + 301)
        await wait_until(lambda: name_at(T_2215 + 300) in jobs(fake))
        assert len(jobs(fake)) == 2


async def test_replace_deletes_the_active_job_for_the_new_one() -> None:
    clock = FakeClock(now=START)
    fake = FakeClient(make_cronjob(concurrencyPolicy="Replace"), clock=clock)
    async with running(fake, clock):
        await advance(clock, 101, step=3)
        await wait_until(lambda: len(stored(fake).status.active) == 1)
        await advance(clock, 300, step=5)
        await wait_until(lambda: list(jobs(fake)) == [name_at(T_2215 + 300)])
        await wait_until(
            lambda: [r.name for r in stored(fake).status.active] == [name_at(T_2215 + 300)]
        )
        await wait_until(lambda: events(fake, "SuccessfulDelete"))  # (recorded by a task)
        assert events(fake, "SuccessfulDelete") == [f"Deleted job {name_at(T_2215)}"]


async def test_suspended_starts_nothing_and_resuming_starts_the_missed_time() -> None:
    clock = FakeClock(now=START)
    fake = FakeClient(make_cronjob(suspend=True), clock=clock)
    async with running(fake, clock):
        await advance(clock, 130, step=5)
        await settle()
        assert jobs(fake) == {}
        await fake.patch(types_pb2.CronJob, "tick", {"spec": {"suspend": False}}, "default")
        # The most recent unmet time (22:15), late but with no starting deadline.
        await wait_until(lambda: list(jobs(fake)) == [name_at(T_2215)])


async def test_a_starting_deadline_leaves_out_a_time_too_far_back() -> None:
    clock = FakeClock(now=START)
    fake = FakeClient(make_cronjob(suspend=True, startingDeadlineSeconds=20), clock=clock)
    async with running(fake, clock):
        await advance(clock, 130, step=5)
        await fake.patch(types_pb2.CronJob, "tick", {"spec": {"suspend": False}}, "default")
        await settle()
        assert jobs(fake) == {}  # 22:15 is 30 s back
        await advance(clock, 275, step=5)
        await wait_until(lambda: list(jobs(fake)) == [name_at(T_2215 + 300)])


async def test_history_limits_delete_the_oldest_finished_jobs() -> None:
    clock = FakeClock(now=START)
    cj = make_cronjob(schedule="* * * * *", successfulJobsHistoryLimit=2, failedJobsHistoryLimit=1)
    fake = FakeClient(cj, clock=clock)
    async with running(fake, clock):
        first = 1_700_000_040.0  # 22:14
        for i in range(5):
            t = first + 60 * i
            await advance(clock, t - clock.now() + 1, step=5)
            name = name_at(t)
            await wait_until(lambda: name in jobs(fake))  # noqa: B023 (awaited at once)
            await finish(fake, name, "Complete" if i != 1 else "Failed", t, t + 10)
        names = [name_at(first + 60 * i) for i in range(5)]
        # successes: 0, 2, 3, 4 (keep the two latest); failures: 1 (keep it)
        await wait_until(lambda: list(jobs(fake)) == [names[1], names[3], names[4]])
        # each deletion's event is recorded after the deletion itself
        expected = sorted(f"Deleted job {n}" for n in (names[0], names[2]))
        await wait_until(lambda: sorted(events(fake, "SuccessfulDelete")) == expected)


async def test_the_schedule_is_read_in_the_time_zone() -> None:
    # 09:00 in Tokyo is 00:00 UTC; the fake clock starts at 22:13:20 UTC.
    clock = FakeClock(now=START)
    fake = FakeClient(make_cronjob(schedule="0 9 * * *", timeZone="Asia/Tokyo"), clock=clock)
    async with running(fake, clock):
        midnight = 1_700_006_400.0  # 2023-11-15T00:00:00Z
        await advance(clock, midnight - START - 10, step=60)
        assert jobs(fake) == {}
        await advance(clock, 11, step=1)
        await wait_until(lambda: list(jobs(fake)) == [name_at(midnight)])
        job = jobs(fake)[name_at(midnight)]
        assert job.metadata.annotations[cu.SCHEDULED_TIMESTAMP_ANNOTATION] == (
            "2023-11-15T09:00:00+09:00"
        )


async def test_without_cron_job_time_zone_the_schedule_is_utc() -> None:
    # Before 1.24 (or with the gate off) spec.timeZone is not read: 09:00 is 09:00 UTC.
    clock = FakeClock(now=START)
    fake = FakeClient(make_cronjob(schedule="0 9 * * *", timeZone="Asia/Tokyo"), clock=clock)
    off = CronJobOptions(time_zones=False, scheduled_annotation=False)
    async with running(fake, clock, off):
        nine = 1_700_038_800.0  # 2023-11-15T09:00:00Z
        await advance(clock, 1_700_006_400.0 - START + 5, step=60)
        assert jobs(fake) == {}  # not at 00:00 UTC
        await advance(clock, nine - clock.now() + 1, step=60)
        await wait_until(lambda: list(jobs(fake)) == [name_at(nine)])
        assert not jobs(fake)[name_at(nine)].metadata.annotations


async def test_an_unknown_time_zone_or_a_bad_schedule_is_an_event_not_a_job() -> None:
    clock = FakeClock(now=START)
    fake = FakeClient(
        make_cronjob("zone", timeZone="Mars/Olympus"),
        make_cronjob("bad", schedule="61 * * * *"),
        clock=clock,
    )
    async with running(fake, clock):
        await wait_until(
            lambda: events(fake, "UnknownTimeZone") and events(fake, "UnparseableSchedule")
        )
        await advance(clock, 400, step=10)
        assert jobs(fake) == {}
