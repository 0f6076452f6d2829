"""kemu.testing.cluster_time.ClusterClock: the cluster's time without a call per reading."""

from __future__ import annotations

import pytest

from kemu.api.v1 import clock_pb2
from kemu.client.fake import FakeClient
from kemu.machinery.virtual_time import ClockSegment, to_proto
from kemu.testing.cluster_time import ClusterClock, cluster_clock


class Wall:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def test_a_real_clock_is_the_wall_clock_with_the_apiservers_offset() -> None:
    wall = Wall()
    clock = ClusterClock(clock_pb2.ClockStatus(mode="real", now=1000.5), wall)
    assert not clock.virtual
    wall.t = 1010.0
    assert clock.now() == 1010.5


def test_a_virtual_clock_follows_its_segment_and_never_goes_back() -> None:
    wall = Wall()
    segment = ClockSegment(base_wall=1000.0, base_virtual=5000.0, rate=10.0)
    status = clock_pb2.ClockStatus(mode="virtual", now=5000.0, segment=to_proto(segment))
    clock = ClusterClock(status, wall)
    assert clock.virtual
    wall.t = 1002.0
    assert clock.now() == 5020.0
    # rate max: held between jumps; a jump is a new segment, seen at the next reading
    held = ClockSegment(base_wall=1002.0, base_virtual=5020.0, rate=0.0, event_driven=True)
    clock.update(clock_pb2.ClockStatus(mode="virtual", now=5020.0, segment=to_proto(held)))
    wall.t = 1003.0
    assert clock.now() == 5020.0
    jumped = ClockSegment(base_wall=1003.0, base_virtual=5300.0, rate=0.0, event_driven=True)
    clock.update(clock_pb2.ClockStatus(mode="virtual", now=5300.0, segment=to_proto(jumped)))
    assert clock.now() == 5300.0
    older = ClockSegment(base_wall=1003.0, base_virtual=5100.0, rate=0.0)
    clock.update(clock_pb2.ClockStatus(mode="virtual", now=5100.0, segment=to_proto(older)))
    assert clock.now() == 5300.0


@pytest.mark.anyio
async def test_cluster_clock_of_a_client() -> None:
    fake = FakeClient()
    async with cluster_clock(fake) as clock:
        assert not clock.virtual
        assert abs(clock.now() - fake.clock.now()) < 1.0
