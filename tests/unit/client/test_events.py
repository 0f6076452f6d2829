"""EventRecorder: events are queued without blocking and written once; repeats bump count."""

from __future__ import annotations

from typing import TypeVar

import anyio
import pytest
from google.protobuf.message import Message

from kemu.api.v1 import types_pb2
from kemu.client.events import EventApi, EventRecorder
from kemu.client.fake import FakeClient
from kemu.component.clock import FakeClock
from kemu.machinery.kinds import EVENT_NORMAL, EVENT_WARNING
from kemu.testing import eventually, make_pod

pytestmark = pytest.mark.anyio

M = TypeVar("M", bound=Message)


async def test_events_are_written_and_repeats_are_counted() -> None:
    client = FakeClient()
    pod = await client.create(make_pod("p").namespace("ns").obj())
    recorder = EventRecorder(client, "default-scheduler", clock=FakeClock())
    async with anyio.create_task_group() as tg:
        await tg.start(recorder.run)
        recorder.event(
            pod, EVENT_WARNING, "FailedScheduling", "Scheduling", "0/1 nodes are available"
        )
        recorder.event(
            pod, EVENT_WARNING, "FailedScheduling", "Scheduling", "0/1 nodes are available"
        )
        recorder.event(
            pod, EVENT_NORMAL, "Scheduled", "Binding", "Successfully assigned ns/p to n1"
        )

        async def written() -> list[types_pb2.Event]:
            events = (await client.list(types_pb2.Event, "ns")).items
            assert sorted((e.reason, e.count) for e in events) == [
                ("FailedScheduling", 2),
                ("Scheduled", 1),
            ]
            return events

        events = await eventually(written, timeout=5)
        tg.cancel_scope.cancel()
    failed = next(e for e in events if e.reason == "FailedScheduling")
    assert failed.involved_object.name == "p" and failed.involved_object.kind == "Pod"
    assert failed.involved_object.uid == pod.metadata.uid
    assert failed.type == EVENT_WARNING and failed.source.component == "default-scheduler"


async def test_a_full_queue_drops_events_instead_of_blocking() -> None:
    recorder = EventRecorder(FakeClient(), "x", buffer=2)
    pod = make_pod("p").obj()
    for _ in range(5):
        recorder.event(pod, EVENT_NORMAL, "R", "A", "m")
    assert recorder.dropped == 3


async def test_a_component_view_reports_as_its_component_with_a_related_object() -> None:
    """Each scheduler profile reports as its schedulerName (upstream's per-profile
    recorders), through one writer; a Preempted event names the preemptor as related."""
    client = FakeClient()
    victim = await client.create(make_pod("victim").namespace("ns").obj())
    preemptor = await client.create(make_pod("preemptor").namespace("ns").obj())
    recorder = EventRecorder(
        client, "default-scheduler", api=EventApi.EVENTS_V1, host="h", clock=FakeClock()
    )
    other = recorder.for_component("other-scheduler")
    async with anyio.create_task_group() as tg:
        await tg.start(recorder.run)
        other.event(victim, EVENT_NORMAL, "Preempted", "Preempting", "m", related=preemptor)

        async def written() -> types_pb2.Event:
            events = (await client.list(types_pb2.Event, "ns")).items
            assert len(events) == 1, events
            return events[0]

        event = await eventually(written, timeout=5)
        tg.cancel_scope.cancel()
    assert (event.reporting_component, event.reporting_instance) == (
        "other-scheduler",
        "other-scheduler-h",
    )
    assert (event.source.component, event.source.host) == ("", "")  # (no deprecatedSource)
    assert (event.related.name, event.related.uid) == ("preemptor", preemptor.metadata.uid)


async def test_two_recorders_at_one_instant_do_not_lose_an_event_to_a_name_clash() -> None:
    """Two controllers of one process record on one object while a virtual clock holds: the
    names `<object>.<hex nanoseconds>` meet, and the second is written under the next name."""
    client = FakeClient()
    pod = await client.create(make_pod("p").namespace("ns").obj())
    clock = FakeClock()
    first = EventRecorder(client, "persistentvolume-controller", clock=clock)
    second = EventRecorder(client, "kemu.io/simulated_host", clock=clock)
    async with anyio.create_task_group() as tg:
        await tg.start(first.run)
        await tg.start(second.run)
        first.event(pod, EVENT_NORMAL, "ExternalProvisioning", "", "waiting")
        second.event(pod, EVENT_NORMAL, "Provisioning", "", "provisioning")

        async def written() -> bool:
            events = (await client.list(types_pb2.Event, "ns")).items
            assert sorted(e.reason for e in events) == ["ExternalProvisioning", "Provisioning"]
            return True

        await eventually(written, timeout=2)
        tg.cancel_scope.cancel()


class _HeldCreates(FakeClient):
    """Holds every create until released, counting how many are in flight at once."""

    def __init__(self) -> None:
        super().__init__()
        self.release = anyio.Event()
        self.in_flight = 0
        self.most_in_flight = 0

    async def create(self, obj: M) -> M:
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            await self.release.wait()
            return await super().create(obj)
        finally:
            self.in_flight -= 1


async def test_events_of_different_objects_are_written_concurrently() -> None:
    """As upstream's events.k8s.io broadcaster (a goroutine per event): one slow write does
    not hold up the others, so a scheduler binding hundreds of pods a second keeps up."""
    client = _HeldCreates()
    pods = [make_pod(f"p{i}").namespace("ns").uid(f"uid-{i}").obj() for i in range(40)]
    recorder = EventRecorder(client, "default-scheduler", clock=FakeClock(), writers=4)
    async with anyio.create_task_group() as tg:
        await tg.start(recorder.run)
        for pod in pods:
            recorder.event(pod, EVENT_NORMAL, "Scheduled", "Binding", "assigned")

        async def four_in_flight() -> bool:
            assert client.in_flight == 4
            return True

        await eventually(four_in_flight, timeout=5)
        client.release.set()

        async def all_written() -> bool:
            events = (await client.list(types_pb2.Event, "ns")).items
            assert len(events) == 40
            return True

        await eventually(all_written, timeout=5)
        tg.cancel_scope.cancel()
    assert client.most_in_flight == 4 and recorder.dropped == 0


async def test_one_objects_events_are_written_in_order_and_repeats_counted_once() -> None:
    """An object's events all go through one writer: a repeat recorded while the first is
    still being written bumps that Event's count instead of creating a second Event."""
    client = _HeldCreates()
    pod = make_pod("p").namespace("ns").uid("uid-p").obj()
    recorder = EventRecorder(client, "default-scheduler", clock=FakeClock(), writers=4)
    async with anyio.create_task_group() as tg:
        await tg.start(recorder.run)
        for _ in range(3):
            recorder.event(pod, EVENT_WARNING, "FailedScheduling", "Scheduling", "0/1 nodes")
        recorder.event(pod, EVENT_NORMAL, "Scheduled", "Binding", "assigned")

        async def one_in_flight() -> bool:
            assert client.in_flight == 1
            return True

        await eventually(one_in_flight, timeout=5)
        client.release.set()

        async def written() -> list[types_pb2.Event]:
            events = (await client.list(types_pb2.Event, "ns")).items
            assert sorted((e.reason, e.count) for e in events) == [
                ("FailedScheduling", 3),
                ("Scheduled", 1),
            ]
            return events

        events = await eventually(written, timeout=5)
        tg.cancel_scope.cancel()
    assert client.most_in_flight == 1
    failed, scheduled = sorted(events, key=lambda e: e.reason)
    assert failed.metadata.name < scheduled.metadata.name  # named in the order recorded


async def test_a_source_records_at_most_25_events_about_an_object_then_one_every_5_minutes() -> (
    None
):
    """client-go's EventSourceObjectSpamFilter (tools/record/events_cache.go): a token bucket
    per source and object, burst 25, refilled by one every 300 s. A second object's events and
    another source's are their own; events.k8s.io/v1's recorder has no such filter."""
    client = FakeClient()
    clock = FakeClock()
    p, q = make_pod("p").namespace("ns").uid("uid-p").obj(), make_pod("q").namespace("ns").obj()
    recorder = EventRecorder(client, "cluster-autoscaler", clock=clock)
    kubelet = recorder.for_component("kubelet")
    for i in range(30):
        recorder.event(p, EVENT_NORMAL, "NotTriggerScaleUp", "", f"pod didn't fit {i}")
    recorder.event(q, EVENT_NORMAL, "NotTriggerScaleUp", "", "pod didn't fit")
    kubelet.event(p, EVENT_NORMAL, "Pulled", "", "image present")
    assert recorder.skipped == 5
    clock.advance(299)
    recorder.event(p, EVENT_NORMAL, "ScaleDown", "", "still throttled")
    clock.advance(2)  # (a token after 300 s)
    recorder.event(p, EVENT_NORMAL, "ScaleDown", "", "one more")
    recorder.event(p, EVENT_NORMAL, "ScaleDown", "", "and no more")
    assert recorder.skipped == 7
    async with anyio.create_task_group() as tg:
        await tg.start(recorder.run)

        async def written() -> list[tuple[str, str]]:
            events = (await client.list(types_pb2.Event, "ns")).items
            assert len(events) == 28
            return sorted((e.involved_object.name, e.message) for e in events)

        seen = await eventually(written, timeout=5)
        tg.cancel_scope.cancel()
    assert seen.count(("p", "one more")) == 1 and ("p", "still throttled") not in seen
    assert sum(1 for name, _ in seen if name == "p") == 27  # 25 + the kubelet's + one more

    unfiltered = EventRecorder(FakeClient(), "default-scheduler", api=EventApi.EVENTS_V1)
    for i in range(30):
        unfiltered.event(p, EVENT_WARNING, "FailedScheduling", "Scheduling", f"0/{i} nodes")
    assert unfiltered.skipped == 0 and unfiltered.dropped == 0


def test_a_recorder_needs_a_writer() -> None:
    with pytest.raises(ValueError, match="writers must be at least 1, not 0"):
        EventRecorder(FakeClient(), "x", writers=0)
