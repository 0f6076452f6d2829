"""convert's upstream wire details: time precision and fieldValidation's unknown fields."""

from __future__ import annotations

from typing import Any

import pytest

from kemu.api.v1 import types_pb2
from kemu.machinery import convert
from kemu.machinery.errors import BadRequest, Invalid
from kemu.machinery.kinds import BY_KIND
from kemu.testing.builders import make_pod


def test_wire_times_are_seconds_for_time_and_microseconds_for_micro_time() -> None:
    pod = make_pod("p").obj()
    pod.metadata.creation_timestamp.CopyFrom(convert.timestamp(1795543200.123456789))
    wire: Any = convert.to_dict(pod, wire=True)
    assert wire["metadata"]["creationTimestamp"] == "2026-11-24T18:00:00Z"
    # without wire, what is stored survives a round trip (the registry's patches), to the
    # nanosecond (the float clock's; the start time of a pod that a patch of its status wrote
    # at microseconds broke preemption's latestStartTime tie between two victims)
    stored: Any = convert.to_dict(pod)
    assert stored["metadata"]["creationTimestamp"] == "2026-11-24T18:00:00.123456768Z"
    back = convert.from_dict(BY_KIND["Pod"], stored)
    assert isinstance(back, types_pb2.Pod)
    assert back.metadata.creation_timestamp == pod.metadata.creation_timestamp
    pod.metadata.creation_timestamp.nanos = 123456000
    micro: Any = convert.to_dict(pod)
    assert micro["metadata"]["creationTimestamp"] == "2026-11-24T18:00:00.123456Z"


@pytest.mark.parametrize(
    ("text", "nanos"),
    [
        ("2026-11-24T18:00:00Z", 0),
        ("2026-11-24T18:00:00.5Z", 500_000_000),
        ("2026-11-24T18:00:00.123456Z", 123_456_000),
        ("2026-11-24T18:00:00.123456789Z", 123_456_789),
        ("2026-11-24T18:00:00.1234567891Z", 123_456_789),  # (Go keeps nine digits too)
        ("2026-11-24T19:00:00.000000001+01:00", 1),
    ],
)
def test_times_are_read_to_the_nanosecond(text: str, nanos: int) -> None:
    ts = convert.parse_time(text, "metadata.creationTimestamp")
    assert (ts.seconds, ts.nanos) == (1795543200, nanos)
    lease = types_pb2.Lease()
    lease.metadata.name = "l"
    lease.spec.renew_time.CopyFrom(convert.timestamp(1795543200))
    lease.spec.acquire_time.CopyFrom(convert.timestamp(1795543200.5))
    spec = convert.to_dict(lease, wire=True)["spec"]
    assert spec == {
        "renewTime": "2026-11-24T18:00:00.000000Z",
        "acquireTime": "2026-11-24T18:00:00.500000Z",
    }


def _manifest() -> dict[str, object]:
    return {
        "metadata": {"name": "p", "bogus": 1},
        "spec": {"containers": [{"name": "c", "image": "i", "colour": "red"}]},
    }


def test_unknown_fields_are_invalid_without_field_validation() -> None:
    with pytest.raises(Invalid) as err:
        convert.from_dict(BY_KIND["Pod"], _manifest())
    assert err.value.causes[0].field == "metadata.bogus"


def test_unknown_fields_are_dropped_and_listed_or_strict() -> None:
    unknown = convert.UnknownFields()
    pod = convert.from_dict(BY_KIND["Pod"], _manifest(), unknown)
    assert isinstance(pod, types_pb2.Pod) and pod.spec.containers[0].image == "i"
    assert unknown.found == [
        'unknown field "metadata.bogus"',
        'unknown field "spec.containers[0].colour"',
    ]
    with pytest.raises(BadRequest) as err:
        convert.from_dict(BY_KIND["Pod"], _manifest(), convert.UnknownFields(strict=True))
    assert err.value.message == (
        'strict decoding error: unknown field "metadata.bogus", '
        'unknown field "spec.containers[0].colour"'
    )
