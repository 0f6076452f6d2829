"""The synthetic day: its priorities, services following the day's curve, batch pods that come
and go, deterministic from the seed, and valid CLUSTER.yaml values (static, or autoscaled)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from kemu.trace import cluster_config, files
from kemu.trace.__main__ import main
from kemu.trace.synthetic import (
    DEPLOYMENT_GVK,
    PRIORITIES,
    DayShape,
    replicas_at,
    synthetic_day,
    with_autoscaler,
    with_lease_duration,
)


def _name(obj: Mapping[str, Any]) -> str:
    return str(obj["metadata"]["name"])


SMALL = DayShape(nodes=20, span=4 * 3600.0, seed=7)


def test_a_day_has_priorities_services_and_batch_pods() -> None:
    trace, cluster = synthetic_day(SMALL)
    first = trace.events[0]
    kinds = [o["kind"] for o in first.applied]
    assert kinds[:3] == ["PriorityClass"] * 3
    assert {_name(o): o["value"] for o in first.applied[:3]} == PRIORITIES
    deployments = [o for e in trace.events for o in e.applied if o["kind"] == "Deployment"]
    assert len(deployments) == 2 * 4  # 2 services (20 nodes), rescaled each of 4 hours
    assert set(trace.index[DEPLOYMENT_GVK]) == {"day/svc-0", "day/svc-1"}
    pods: list[Any] = [o for e in trace.events for o in e.applied if o["kind"] == "Pod"]
    assert len(pods) == 20 * 0.5 * 4
    assert {p["spec"]["priorityClassName"] for p in pods} <= {"critical", "batch-low"}
    deleted = [_name(o) for e in trace.events for o in e.deleted]
    assert deleted and set(deleted) <= {_name(p) for p in pods}
    assert 0 < trace.span < SMALL.span
    assert [e.ts for e in trace.events] == sorted(e.ts for e in trace.events)
    assert cluster == {
        "nodes": [{"name": "pool", "count": 20, "capacity": {"cpu": "4", "memory": "16Gi",
                                                              "pods": "110"}}]
    }  # fmt: skip
    cluster_config.parse(yaml.safe_dump(cluster))


def test_the_services_follow_the_day() -> None:
    shape = DayShape(nodes=10, replicas_per_service=20)
    assert replicas_at(shape, 6 * 3600) == 10  # the night's low
    assert replicas_at(shape, 18 * 3600) == 30  # the evening's high
    assert replicas_at(shape, 0) == replicas_at(shape, 12 * 3600) == 20


def test_the_same_seed_gives_the_same_day() -> None:
    a, _ = synthetic_day(SMALL)
    b, _ = synthetic_day(SMALL)
    c, _ = synthetic_day(DayShape(nodes=20, span=4 * 3600.0, seed=8))
    assert a == b and a != c


def test_the_autoscaled_cluster_moves_half_the_nodes_into_two_groups() -> None:
    _, cluster = synthetic_day(SMALL)
    scaled = with_autoscaler(cluster, "most-pods")
    assert scaled["nodes"][0]["count"] == 10
    assert [g["name"] for g in scaled["nodeGroups"]] == ["small", "large"]
    assert scaled["autoscaler"] == {"expander": "most-pods"}
    config = cluster_config.parse(yaml.safe_dump(scaled))
    assert config.node_groups is not None


def test_a_large_day_keeps_most_nodes_static() -> None:
    _, cluster = synthetic_day(SMALL)
    scaled = with_autoscaler(cluster, "least-waste", static=16)
    assert scaled["nodes"][0]["count"] == 16
    assert [g["maxSize"] for g in scaled["nodeGroups"]] == [8, 2]  # 4 nodes' capacity each
    with pytest.raises(ValueError, match="static nodes: must be from 1 to 19, not 20"):
        with_autoscaler(cluster, "least-waste", static=20)


def test_a_longer_lease_reaches_every_kubelet_and_the_node_monitor() -> None:
    _, cluster = synthetic_day(SMALL)
    longer = with_lease_duration(with_autoscaler(cluster, "most-pods"), 240)
    config = cluster_config.parse(yaml.safe_dump(longer))
    assert config.nodes[0].kubelet_args == ("--node-lease-duration-seconds", "240")
    assert config.args == {"controllermanager": ("--node-monitor-grace-period", "300s")}
    assert config.node_groups is not None
    groups = yaml.safe_load(config.node_groups)["nodeGroups"]
    assert [g["template"]["kubeletArgs"] for g in groups] == [
        ["--node-lease-duration-seconds", "240"]
    ] * 2


def test_the_command_writes_the_trace_and_its_cluster(tmp_path: Path) -> None:
    out = tmp_path / "day.sktrace"
    assert main(["synthetic", "--out", str(out), "--nodes", "20", "--span", "4h",
                 "--seed", "7", "--expander", "least-waste"]) == 0  # fmt: skip
    assert files.load(out)[0] == synthetic_day(SMALL)[0]
    cluster = yaml.safe_load((tmp_path / "day.cluster.yaml").read_text())
    assert cluster["autoscaler"] == {"expander": "least-waste"}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--nodes", "5"], "--nodes/--span: nodes: must be at least 10, not 5"),
        (["--span", "a day"], "--span: "),
        (["--expander", "cheapest"], "--expander: unknown expander 'cheapest'"),
        (["--node-lease-duration-seconds", "0"], "--node-lease-duration-seconds: must be at"),
        (["--static-nodes", "5"], "--static-nodes: only with --expander"),
        (["--expander", "most-pods", "--static-nodes", "0"], "--static-nodes: static nodes: "),
    ],
)
def test_bad_arguments_are_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["synthetic", "--out", str(tmp_path / "d.sktrace"), *argv])
    assert exited.value.code == 2
    assert message in capsys.readouterr().err
