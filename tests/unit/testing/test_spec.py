"""ClusterSpec.from_options: what @pytest.mark.kemu accepts, and one line naming what it does not."""

from __future__ import annotations

from pathlib import Path

import pytest

from kemu.machinery.latency import Latency, PathLatency
from kemu.machinery.virtual_time import ClockMode
from kemu.testing.cluster import DEFAULT_CAPACITY
from kemu.testing.spec import ClusterSpec


def test_the_defaults_are_one_node_at_kemus_defaults() -> None:
    spec = ClusterSpec.from_options()
    assert spec == ClusterSpec()
    assert spec.nodes == ("node-0",) and spec.version is None and spec.gates == {}
    assert spec.clock is ClockMode.REAL and spec.capacity == DEFAULT_CAPACITY
    assert spec.labels == {} and spec.scheduler_config is None


def test_every_option() -> None:
    spec = ClusterSpec.from_options(
        nodes=3,
        version="1.34",
        gates={"SchedulerAsyncPreemption": True},
        scheduler_config=Path("/etc/sched.yaml"),
        clock="virtual",
        capacity={"cpu": 2, "memory": "4Gi"},
        labels={"disk": "ssd"},
    )
    assert spec.nodes == ("node-0", "node-1", "node-2")
    assert spec.version == "1.34" and spec.gates == {"SchedulerAsyncPreemption": True}
    assert spec.scheduler_config == "/etc/sched.yaml" and spec.clock is ClockMode.VIRTUAL
    assert spec.capacity == {"cpu": "2", "memory": "4Gi"} and spec.labels == {"disk": "ssd"}
    assert ClusterSpec.from_options(nodes=["a", "b"]).nodes == ("a", "b")
    assert ClusterSpec.from_options(nodes=0).nodes == ()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"node": 2}, "unknown option 'node'"),
        ({"nodes": "three"}, "nodes must be a count or a list of names, not 'three'"),
        ({"nodes": True}, "nodes must be a count"),
        ({"nodes": -1}, "nodes must be 0 or more"),
        ({"nodes": ["a", "a"]}, "nodes names a node twice"),
        ({"version": 1.34}, "version must be a string"),
        ({"gates": {"X": "on"}}, "gates must map gate names to True or False"),
        ({"scheduler_config": 3}, "scheduler_config must be YAML text or a path"),
        ({"clock": "fast"}, "clock must be one of real, virtual, not 'fast'"),
        ({"capacity": "cpu=2"}, "capacity must map names to strings"),
        ({"labels": ["a"]}, "labels must map names to strings"),
    ],
)
def test_a_bad_option_is_named(options: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match="^kemu: ") as raised:
        ClusterSpec.from_options(**options)
    assert message in str(raised.value)


def test_the_api_paths_latency_is_one_value_of_the_marker() -> None:
    spec = ClusterSpec.from_options(
        apiserver_latency="200ms", etcd_latency="uniform:1ms-5ms", latency_seed=7
    )
    assert spec.latency == PathLatency(
        Latency.parse("200ms"), Latency.parse("uniform:1ms-5ms"), seed=7
    )
    assert ClusterSpec().latency.none


@pytest.mark.parametrize(
    ("options", "says"),
    [
        ({"apiserver_latency": 0.2}, "kemu: apiserver_latency must be a latency such as '200ms'"),
        ({"etcd_latency": "5"}, "kemu: etcd_latency: '5': time: missing unit in duration \"5\""),
        ({"latency_seed": "7"}, "kemu: latency_seed must be an integer"),
    ],
)
def test_a_bad_latency_option_is_one_line_naming_it(options: dict[str, object], says: str) -> None:
    with pytest.raises(ValueError) as e:
        ClusterSpec.from_options(**options)
    assert str(e.value).startswith(says)
