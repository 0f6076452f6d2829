"""pods/log of the REST edge (apiserver/endpoints/rest/logs.py): the container a request names, its
options and the rendering of the lines."""

from __future__ import annotations

import pytest
from google.protobuf.timestamp_pb2 import Timestamp
from multidict import MultiDict

from apiserver.endpoints.rest import logs
from kemu.machinery.container_log import LogLine
from kemu.machinery.errors import BadRequest, Invalid
from kemu.testing.builders import make_pod

T0 = 1_700_000_000


def test_the_container_is_named_or_the_only_one() -> None:
    pod = make_pod("p").container("side").obj()
    pod.spec.init_containers.add(name="init", image="busybox")
    assert logs.container_name(pod, "init") == "init"
    with pytest.raises(BadRequest, match="container x is not valid for pod p"):
        logs.container_name(pod, "x")
    with pytest.raises(
        BadRequest,
        match=r"choose one of: \[c side\] or one of the init containers: \[init\]",
    ):
        logs.container_name(pod, "")
    assert logs.container_name(make_pod("q").obj(), "") == "c"


def test_log_options_are_validated_as_upstream() -> None:
    with pytest.raises(Invalid) as e:
        logs.log_options(MultiDict(tailLines="-1", limitBytes="0", sinceSeconds="0"), T0)
    assert [c.field for c in e.value.causes] == ["tailLines", "limitBytes", "sinceSeconds"]
    with pytest.raises(Invalid, match="at most one of `sinceTime` or `sinceSeconds`"):
        logs.log_options(MultiDict(sinceSeconds="5", sinceTime="2023-11-14T22:13:20Z"), T0)
    with pytest.raises(BadRequest):
        logs.log_options(MultiDict(follow="maybe"), T0)
    o = logs.log_options(MultiDict(sinceTime="2023-11-14T22:13:20Z", follow="true"), T0)
    assert o.since == T0 and o.follow


def test_render_tails_filters_stamps_and_limits_as_the_kubelet() -> None:
    lines = [
        LogLine(Timestamp(seconds=T0 + i, nanos=5), text)
        for i, text in enumerate(["one", "two", "three"])
    ]
    assert logs.render(lines, logs.LogOptions()) == b"one\ntwo\nthree\n"
    assert logs.render(lines, logs.LogOptions(tail_lines=2)) == b"two\nthree\n"
    assert logs.render(lines, logs.LogOptions(tail_lines=0)) == b""
    assert logs.render(lines, logs.LogOptions(since=T0 + 1)) == b"two\nthree\n"
    assert logs.render(lines, logs.LogOptions(limit_bytes=6)) == b"one\ntw"
    assert logs.render(lines[:1], logs.LogOptions(timestamps=True)) == (
        b"2023-11-14T22:13:20.000000005Z one\n"
    )
