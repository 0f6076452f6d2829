"""kemu.timeline.record on the fake client: what exists is seen at the start, changes as they
come, only the Events a timeline reads are kept, and the timeline is finished at the end."""

from __future__ import annotations

import pytest

from kemu.api.v1 import types_pb2
from kemu.client.fake import FakeClient
from kemu.testing.builders import make_node, make_pod
from kemu.testing.fake_time import wait_until
from kemu.timeline.model import PREEMPTED, TRIGGERED_SCALE_UP, MarkerKind, Timeline
from kemu.timeline.record import record_timeline


def event(name: str, reason: str, message: str, involved: types_pb2.Pod) -> types_pb2.Event:
    e = types_pb2.Event(reason=reason, message=message, type="Normal", count=1)
    e.metadata.name, e.metadata.namespace = name, "ns"
    e.involved_object.name = involved.metadata.name
    e.involved_object.namespace = involved.metadata.namespace
    e.involved_object.uid = involved.metadata.uid
    return e


@pytest.mark.anyio
async def test_pods_nodes_and_events_are_recorded_while_the_block_runs() -> None:
    fake = FakeClient(
        make_node("n1").ready().obj(), make_pod("old").namespace("ns").node("n1").obj()
    )
    timeline = Timeline("fake")
    async with record_timeline(fake, timeline) as recorded:
        assert recorded is timeline
        assert list(timeline.nodes) == ["n1"]
        assert [p.key for p in timeline.pods.values()] == ["ns/old"]
        assert timeline.notes and timeline.notes[0].startswith("cluster clock (real) at the start")
        victim = await fake.get(types_pb2.Pod, "old", "ns")
        new = await fake.create(make_pod("new").namespace("ns").priority(5).obj())
        await fake.bind("ns", "new", "n1")
        preempted = event(
            "old.1", PREEMPTED, f"Preempted by pod {new.metadata.uid} on node n1", victim
        )
        preempted.related.uid = new.metadata.uid
        await fake.create(preempted)
        message = "pod triggered scale-up: [{pool 0->1 (max: 3)}]"
        scale_up = await fake.create(event("new.1", TRIGGERED_SCALE_UP, message, new))
        await fake.create(event("new.2", "Scheduled", "bound to n1", new))
        await fake.delete(types_pb2.Pod, "old", "ns", grace_period_seconds=0)

        def seen() -> bool:
            old = next(p for p in timeline.pods.values() if p.key == "ns/old")
            assert old.deleted is not None and old.preempted is not None
            assert old.preempted_by == "ns/new"
            return bool(timeline.markers)

        await wait_until(seen)
        # The same Event again (its count went up): a second scale-up once it is not the
        # same loop's any more.
        scale_up.count = 2
        timeline.clock = lambda: timeline.markers[0].at + 60
        await fake.update(scale_up)
        await wait_until(lambda: len(timeline.markers) == 2)
    assert timeline.end is not None
    new_track = next(p for p in timeline.pods.values() if p.key == "ns/new")
    assert new_track.node == "n1" and new_track.bound is not None
    assert [m.kind for m in timeline.markers] == [MarkerKind.SCALE_UP, MarkerKind.SCALE_UP]
