"""The requests PodInfos share (types.pod_requests) are read-only: a plugin that changed one
would change every pod of equal requests in the process."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from kemu.scheduling.types import PodInfo, Resource, SharedResource
from kemu.testing.builders import make_pod


def test_pods_of_equal_requests_share_read_only_resources() -> None:
    a = PodInfo(make_pod("a").req(cpu="500m", memory="1Gi").obj())
    b = PodInfo(make_pod("b").req(cpu="500m", memory="1Gi").obj())
    assert a.requests is b.requests and a.non_zero_requests is b.non_zero_requests
    assert isinstance(a.requests, SharedResource)
    assert a.requests == Resource(500, 1024**3) and Resource(500, 1024**3) == a.requests
    writes: list[Callable[[], object]] = [
        lambda: setattr(a.requests, "milli_cpu", 1),
        lambda: a.requests.add(Resource(1)),
        lambda: a.requests.sub(Resource(1)),
        lambda: a.requests.set_max(Resource(1)),
        lambda: a.requests.set("cpu", 1),
        lambda: a.requests.scalar.__setitem__("example.com/gpu", 1),
    ]
    for write in writes:
        with pytest.raises(TypeError, match="read-only"):
            write()
    changed = a.requests.clone()
    changed.add(Resource(100))
    assert changed.milli_cpu == 600 and b.requests.milli_cpu == 500
    assert type(changed) is Resource
